"""The Slack surface (issue 20 §3): the Bolt app, its listeners and Block Kit builders, the
Slack outbox worker and notifier, the App Home tab, Slack identity links and routing.

Nothing in engine/ or bridges/ imports this wing (tests/test_layout.py).
"""
