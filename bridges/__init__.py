"""Bridges between the pure engine and the outside: the GitHub bridge and the dispatcher
that routes its deliveries to the runtime."""

__all__ = ["dispatcher", "github"]
