"""The HTTP server of `loopgate serve` (issue 20 §3): one listener for webhooks, Slack
requests, the details page and operations endpoints, and its single-instance lock.
"""
