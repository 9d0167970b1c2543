"""Loopback test doubles (real HTTP servers on 127.0.0.1): GitHub and Slack."""
