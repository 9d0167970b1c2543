"""The work item's details page (issue 22 §2): the model and its rendering (``view``), and
the route with its GitHub sign-in and access check (``access``, ``routes``)."""
