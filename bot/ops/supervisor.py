"""One owner for every background thread of a loopgate process.

``loopgate serve`` runs several threads that share the state database and the webhook
inbox: the dispatcher, the poller, the inbox replay, the Slack worker, Socket Mode and the
HTTP server (whose own worker threads run the receiver and the Slack routes). Closing a
SQLite connection while another thread is inside a statement on it crashes the process
(issue 10 §4: an inbox-replay thread outlived ``SqliteStore.close``), so one
:class:`Supervisor` owns them all:

* **started together**, in the order they were added (consumers first: the dispatcher is
  running before anything can feed it);
* **stopped together**: :meth:`Supervisor.stop` first sets the shared stop event, so every
  loop winds down at once, then stops each member in reverse order (producers first:
  the HTTP server takes no more requests before the dispatcher drains its queue) and
  waits for its threads;
* **joined before what they use is closed**: the closers (:meth:`Supervisor.on_close`:
  the inbox, the store) run only once every member reports no thread alive. If one is
  still alive after its timeout, nothing is closed and the report names it: leaking a
  connection to a process that is exiting is harmless, closing it under a thread is not.

A member is either a :class:`Service` (it runs its own threads: ``start()``,
``stop(timeout)``, ``running``) or a loop (:meth:`Supervisor.add_loop`): a function of the
shared stop event that the supervisor runs in a thread it creates and joins. A loop that
raises is logged with its name and stops the whole process (:attr:`StopReport.failed`):
a server that keeps answering while its poller is dead would fail silently.

Example::

    supervisor = Supervisor()
    supervisor.on_close("store", services.close)
    supervisor.add("dispatcher", dispatcher)
    supervisor.add_loop("poller", lambda stop: poller.run(60, stop))
    supervisor.add("http", Server(app, host, port))
    supervisor.start()
    supervisor.wait()            # until request_stop() (a signal handler) or a death
    report = supervisor.stop()   # every thread joined, then the store closed
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol

__all__ = ["Service", "Supervisor", "StopReport", "ThreadPool", "DEFAULT_STOP_TIMEOUT"]

logger = logging.getLogger(__name__)

#: Seconds one member may take to stop (its thread in hand finishing) before it is
#: reported stuck.
DEFAULT_STOP_TIMEOUT = 10.0


class Service(Protocol):
    """A component that runs threads of its own."""

    def start(self) -> object:
        """Start its threads (returns at once)."""
        ...

    def stop(self, timeout: float) -> object:
        """Stop, finishing the work in hand, and wait up to ``timeout`` seconds for its
        threads to end."""
        ...

    @property
    def running(self) -> bool:
        """True while any of its threads is alive."""
        ...


@dataclass(frozen=True)
class StopReport:
    """What :meth:`Supervisor.stop` found.

    Attributes:
        stuck: members with a thread still alive after their stop timeout.
        failed: members that died before the stop was asked for (a loop that raised, a
            service whose threads ended on their own).
        closed: the closers that ran (none when a member was stuck).
    """

    stuck: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    closed: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        """True when nothing was stuck and nothing had died."""
        return not self.stuck and not self.failed


class _Loop:
    """A :class:`Service` running ``body(stop)`` in a thread the supervisor owns."""

    def __init__(self, name: str, body: Callable[[threading.Event], object],
                 stop: threading.Event, on_death: Callable[[str], None]) -> None:
        self.name = name
        self._body = body
        self._stop = stop
        self._on_death = on_death
        self._thread = threading.Thread(target=self._run, name=f"loopgate-{name}",
                                        daemon=True)

    def _run(self) -> None:
        try:
            self._body(self._stop)
        except BaseException:  # a dead loop must be seen, not lost in a daemon thread
            logger.exception("thread %s died", self.name)
            self._on_death(self.name)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float) -> None:
        self._stop.set()  # already set by Supervisor.stop; harmless when alone
        if self._thread.ident is not None:
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()


class ThreadPool:
    """A thread pool whose worker threads a supervisor joins (a :class:`Service`).

    Bolt runs its listeners after the ack in an executor (``listener_executor``); those
    threads write to the store (an Execute click advances an item), so they are members
    like any other. Work queued before the stop still runs (it was acknowledged), within
    the stop timeout.

    Args:
        name: the threads are ``loopgate-<name>_N``.
        workers: the most threads.
    """

    def __init__(self, name: str, workers: int = 10) -> None:
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._stopped = False
        self.executor = ThreadPoolExecutor(max_workers=workers,
                                           thread_name_prefix=f"loopgate-{name}",
                                           initializer=self._register)

    def _register(self) -> None:  # runs first in each worker thread
        with self._lock:
            self._threads.append(threading.current_thread())

    def start(self) -> None:
        """Nothing to do: threads start with the first work submitted."""

    def stop(self, timeout: float) -> None:
        """Take no more work, let the queued work finish, wait up to ``timeout`` seconds."""
        with self._lock:
            self._stopped = True
        self.executor.shutdown(wait=False)
        deadline = time.monotonic() + timeout
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    @property
    def running(self) -> bool:
        """True until :meth:`stop` (threads start only when work comes), then while any
        worker thread is alive."""
        with self._lock:
            return not self._stopped or any(t.is_alive() for t in self._threads)


@dataclass
class _Member:
    name: str
    service: Service
    timeout: float
    started: bool = False


class Supervisor:
    """Starts, stops and joins every background thread of one process, then closes what
    they used (see the module docstring for the order and why).

    Args:
        stop_timeout: default seconds each member may take to stop.
    """

    def __init__(self, *, stop_timeout: float = DEFAULT_STOP_TIMEOUT) -> None:
        self.stop_timeout = stop_timeout
        self._members: list[_Member] = []
        self._closers: list[tuple[str, Callable[[], object]]] = []
        self._stop_event = threading.Event()
        self._died: list[str] = []
        self._lock = threading.Lock()  # guards _died and _stopping
        self._stopping = False  # a death from then on is the stop's doing, not a failure
        self._stop_lock = threading.Lock()  # one stop at a time; a second call waits
        self._report: StopReport | None = None

    # -- building ----------------------------------------------------------------------
    def add(self, name: str, service: Service, *, timeout: float | None = None) -> None:
        """Add a member that runs its own threads.

        Args:
            name: how logs and reports name it (``dispatcher``, ``http`` ...).
            service: the component.
            timeout: seconds it may take to stop (default ``stop_timeout``).

        Raises:
            RuntimeError: the supervisor was already started.
        """
        self._check_not_started(name)
        self._members.append(_Member(name, service, self.stop_timeout
                                     if timeout is None else timeout))

    def add_loop(self, name: str, body: Callable[[threading.Event], object], *,
                 timeout: float | None = None) -> None:
        """Add a loop: ``body(stop)`` runs in a thread the supervisor creates; it must
        return soon after ``stop`` (the shared stop event) is set.

        Args:
            name: how logs and reports name it; the thread is ``loopgate-<name>``.
            body: the loop.
            timeout: seconds it may take to return once stopped (default ``stop_timeout``).

        Raises:
            RuntimeError: the supervisor was already started.
        """
        self.add(name, _Loop(name, body, self._stop_event, self._death), timeout=timeout)

    def on_close(self, name: str, close: Callable[[], object]) -> None:
        """Run ``close`` once every member's threads have ended (closers run in reverse
        order of registration, after all members stopped).

        Args:
            name: how the report names it.
            close: releases a resource the members used (a connection, a file).
        """
        self._closers.append((name, close))

    def _check_not_started(self, name: str) -> None:
        if any(m.started for m in self._members):
            raise RuntimeError(f"cannot add {name!r}: the supervisor has started")

    # -- running -----------------------------------------------------------------------
    @property
    def stopping(self) -> threading.Event:
        """The shared stop event (set by :meth:`request_stop`, :meth:`stop` or a death)."""
        return self._stop_event

    @property
    def names(self) -> tuple[str, ...]:
        """The members' names, in start order."""
        return tuple(m.name for m in self._members)

    def start(self) -> Supervisor:
        """Start every member in the order added.

        Returns:
            The supervisor.

        Raises:
            Exception: whatever a member's start raised, after the members already
                started were stopped and the closers ran (nothing is left running).
        """
        for member in self._members:
            try:
                member.service.start()
            except BaseException:
                logger.error("%s failed to start; stopping the others", member.name)
                self.stop()
                raise
            member.started = True
            logger.debug("started %s", member.name)
        return self

    def request_stop(self) -> None:
        """Ask :meth:`wait` to return (safe from a signal handler: it only sets an event)."""
        self._stop_event.set()

    def wait(self, poll: float = 0.5) -> None:
        """Block until a stop is requested or a started member died.

        Args:
            poll: seconds between liveness checks of the members.
        """
        while not self._stop_event.wait(poll):
            for member in self._members:
                if member.started and not member.service.running:
                    self._death(member.name)

    def _death(self, name: str) -> None:
        with self._lock:
            if name not in self._died and not self._stopping:
                self._died.append(name)
                logger.error("%s stopped on its own: stopping the process", name)
        self._stop_event.set()

    def stop(self) -> StopReport:
        """Stop every member, join their threads, then run the closers (idempotent).

        Returns:
            The :class:`StopReport` (the same one on a second call).
        """
        with self._stop_lock:
            if self._report is None:
                self._report = self._stop_once()
            return self._report

    def _stop_once(self) -> StopReport:
        with self._lock:
            self._stopping = True
            failed = tuple(self._died)
        self._stop_event.set()  # every loop winds down at once
        stuck = tuple(m.name for m in reversed(self._members)
                      if m.started and not self._stop_member(m))
        if stuck:
            logger.error("still running after their stop: %s; leaving %s open",
                         ", ".join(stuck), ", ".join(n for n, _ in self._closers) or "nothing")
            return StopReport(stuck=stuck, failed=failed)
        return StopReport(failed=failed, closed=self._close_all())

    def _stop_member(self, member: _Member) -> bool:
        """Stop one member; True when none of its threads is left alive."""
        try:
            member.service.stop(member.timeout)
        except Exception:  # one member's failure must not keep the others running
            logger.exception("stopping %s failed", member.name)
        return not member.service.running

    def _close_all(self) -> tuple[str, ...]:
        closed = []
        for name, close in reversed(self._closers):
            try:
                close()
            except Exception:  # the remaining resources must still be released
                logger.exception("closing %s failed", name)
                continue
            closed.append(name)
        return tuple(closed)

    # -- context manager ---------------------------------------------------------------
    def __enter__(self) -> Supervisor:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
