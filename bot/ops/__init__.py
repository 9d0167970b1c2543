"""Operations of `loopgate serve` (issue 20 §3): readiness and health, /metrics, the
self-audit, the supervisor of its threads, and logging set-up.
"""
