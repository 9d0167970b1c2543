"""The work item's details page served by ``loopgate serve`` (issue 22 §2) and the
``POST /api/simulate`` endpoint (issue 24 §4).

Modules: :mod:`bot.itempage.view` (the page's model and HTML), :mod:`bot.itempage.access`
(sign in with GitHub: configuration, sealed cookies, the user-token calls, the per-user
repository access cache), :mod:`bot.itempage.routes` (the Flask blueprint: ``/auth/*`` and
``/items/<owner>/<repo>/<n>``), :mod:`bot.itempage.simulate_api` (``POST /api/simulate``).
"""
