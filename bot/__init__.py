"""The application (issue 20 §3): surfaces and operations around the engine.

Rooms: ``slack`` (the Slack surface), ``cli`` (the command line), ``web`` (the HTTP
server), ``itempage`` (the details page), ``ops`` (health, metrics, self-audit, supervisor,
logging), and the wiring: ``services`` (the typed composition root) and ``composition``
(what ``loopgate serve`` starts). docs/ARCHITECTURE.md is the map.
"""
