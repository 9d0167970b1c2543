"""Tracker-neutral ingress (issue 20 §3): what every tracker's webhook and poller share.

``delivery`` (``Delivery``), ``kinds`` (the routed kinds and de-duplication keys),
``inbox`` + ``group_commit`` (the webhook inbox and its one writer), ``bridge_state``
(seen keys, handled deliveries, poll cursors), ``dispatcher`` (deliveries → the runtime),
``errors`` (``BridgeError``). Nothing here imports a tracker's bridge or a backend
(tests/test_layout.py).
"""

__all__ = ["bridge_state", "delivery", "dispatcher", "errors", "group_commit", "inbox", "kinds"]
