"""Run the ``loopgate`` console script without paying for a fresh interpreter each time.

A CLI call from a test used to be ``subprocess.run([loopgate, ...])``: a new Python that
imports click, PyGithub, gql, requests, psycopg, jinja2 ... before it does ~0.1 s of work.
On a loaded 2-core machine that start cost 2-4 s per call, and one end-to-end walk makes
about fifty calls (issue 23 §5: the suite took 25 min).

:func:`run_loopgate` keeps what a subprocess gives a test and drops only that start:
a *fork server* (one per test process and interpreter setting) starts once, imports every
loopgate module, and then forks one child per call. The child is a new process with the
call's own environment, working directory, stdin, stdout and stderr (files), and
``sys.argv``; it runs the console script's entry point (``sys.exit(main())`` from
``bot.cli``) and exits through the interpreter as the script does (atexit handlers,
uncaught exceptions printed as a traceback with exit 1). The exit status reaches the test
as :class:`subprocess.CompletedProcess` ``returncode`` (negative for a signal).

Not covered here (use :mod:`subprocess`): long-running processes such as ``loopgate
serve`` that a test signals while they run, and output to a terminal (pty) — the child's
stdio are files. Tests that are about the console script itself (its shebang, its
installation) spawn it for real; every end-to-end walk still makes one real spawn.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["run", "run_loopgate", "console_argv", "stop_all"]

REPO_ROOT = Path(__file__).resolve().parents[1]
#: Environment variables read while the interpreter starts (stdio buffering and encoding,
#: sys.path, flags): calls differing in them get different fork servers.
_START_VARIABLES = ("LANG", "LC_ALL", "LC_CTYPE")
_READY_TIMEOUT_S = 120.0


# -- the fork server's own code (runs in the server process) -----------------------------
_SERVER = r'''
import gc, importlib, json, os, pkgutil, sys, threading

requests_fd, replies_fd = int(sys.argv[1]), int(sys.argv[2])
# The console script's sys.path[0] is its own folder (the venv's bin), never a cwd.
sys.path[0] = os.path.dirname(sys.argv[3])
sys.argv = sys.argv[:1]


def preload():
    """Import every loopgate module once, so each child starts with them in place."""
    import bot.cli  # noqa: F401 - the entry point first
    for package in ("bot", "bridges", "engine"):
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, package + "."):
            if info.name.rsplit(".", 1)[-1] == "__main__":
                continue
            try:
                importlib.import_module(info.name)
            except Exception:  # an optional dependency: the child imports it as usual
                pass
    try:  # the shipped graph, compiled once (cached per process): a pure function of files
        from engine.graph.compiler import shipped_graph
        shipped_graph()
    except Exception:  # the child compiles it again and reports the error itself
        pass


def reply(out, **fields):
    out.write(json.dumps(fields) + "\n")
    out.flush()


def child(request, out, inbox):
    """In the forked child: become the call, then run the console script's entry point."""
    out.close()
    inbox.close()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, path, flags in ((0, request["stdin"], os.O_RDONLY),
                            (1, request["stdout"], os.O_WRONLY),
                            (2, request["stderr"], os.O_WRONLY)):
        opened = os.open(path, flags)
        os.dup2(opened, fd)
        os.close(opened)
    sys.argv = [request["argv0"], *request["args"]]
    from bot.cli import main
    sys.exit(main())


def serve():
    preload()
    # Everything loaded so far is frozen out of the collector: a child's exit would
    # otherwise touch (and so copy) every page of it, about a second per call.
    gc.collect()
    gc.freeze()
    inbox = os.fdopen(requests_fd, "r", encoding="utf-8")
    out = os.fdopen(replies_fd, "w", encoding="utf-8")
    threads = threading.active_count()
    reply(out, ready=threads == 1, threads=threads)
    for line in inbox:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            child(request, out, inbox)  # never returns: sys.exit unwinds the child
        reply(out, id=request["id"], pid=pid)
        _, status = os.waitpid(pid, 0)
        reply(out, id=request["id"], code=os.waitstatus_to_exitcode(status))


serve()
'''


class _ForkServer:
    """One fork server process and the pipes to it (one call at a time)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.lock = threading.Lock()
        self.log = tempfile.TemporaryFile()
        to_server, self._requests = os.pipe()
        self._replies, from_server = os.pipe()
        script = Path(sys.executable).with_name("loopgate")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _SERVER, str(to_server), str(from_server), str(script)],
            pass_fds=(to_server, from_server), env=env, cwd=tempfile.gettempdir(),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log)
        os.close(to_server)
        os.close(from_server)
        self._buffer = b""
        self._calls = 0
        ready = self._reply(time.monotonic() + _READY_TIMEOUT_S)
        self.usable = bool(ready and ready.get("ready"))
        if not self.usable:
            self.stop()

    def _reply(self, deadline: float, call: int | None = None) -> dict[str, Any] | None:
        """The next reply line (of call number ``call``: the late replies of an earlier,
        interrupted call are skipped), or None when ``deadline`` (monotonic) passed."""
        while True:
            found = self._line(deadline)
            if found is None or call is None or found.get("id") == call:
                return found

    def _line(self, deadline: float) -> dict[str, Any] | None:
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._replies], [], [], left)[0]:
                return None
            chunk = os.read(self._replies, 65536)
            if not chunk:
                self.log.seek(0)
                raise RuntimeError("the loopgate fork server died:\n"
                                   + self.log.read().decode(errors="replace"))
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return dict(json.loads(line))

    def call(self, request: dict[str, Any], timeout: float) -> tuple[int, bool]:
        """Run one call; returns ``(exit code, timed out)``. A call still running after
        ``timeout`` seconds is killed (SIGKILL), as :func:`subprocess.run` does."""
        self._calls += 1
        call = self._calls
        os.write(self._requests, (json.dumps({**request, "id": call}) + "\n").encode())
        started = self._reply(time.monotonic() + _READY_TIMEOUT_S, call)
        if started is None:
            raise RuntimeError("the loopgate fork server did not fork")
        try:
            done = self._reply(time.monotonic() + timeout, call)
        except BaseException:  # e.g. pytest-timeout's alarm: leave no child behind
            _kill(int(started["pid"]))
            raise
        if done is not None:
            return int(done["code"]), False
        _kill(int(started["pid"]))
        done = self._reply(time.monotonic() + _READY_TIMEOUT_S, call)
        return (int(done["code"]) if done else -9), True

    def stop(self) -> None:
        """Close the request pipe (the server's loop ends) and wait for it."""
        for fd in (self._requests, self._replies):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.log.close()


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:  # it ended meanwhile
        pass


_servers: dict[tuple[tuple[str, str], ...], _ForkServer] = {}
_servers_lock = threading.Lock()


def _server_for(env: dict[str, str]) -> _ForkServer | None:
    key = tuple(sorted((k, v) for k, v in env.items()
                       if k.startswith("PYTHON") or k in _START_VARIABLES))
    with _servers_lock:
        server = _servers.get(key)
        if server is None:
            start_env = {k: v for k, v in os.environ.items()
                         if not (k.startswith("PYTHON") or k in _START_VARIABLES)}
            server = _servers[key] = _ForkServer({**start_env, **dict(key)})
    return server if server.usable else None


def stop_all() -> None:
    """Stop every fork server of this process (the session's end calls it)."""
    with _servers_lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        if server.usable:
            server.stop()


def console_argv() -> list[str]:
    """How a user starts loopgate (as :func:`tests.e2e.stack.loopgate_argv`): the
    ``loopgate`` console script beside this interpreter, else the entry point via ``-c``."""
    script = Path(sys.executable).with_name("loopgate")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-c", "import sys; from bot.cli import main; sys.exit(main())"]


def run(argv: list[str], *, cwd: str | Path, env: dict[str, str] | None = None,
        timeout: float = 60.0, input: str | None = None,  # noqa: A002 - subprocess's name
        capture_output: bool = True, text: bool = True,
        check: bool = False) -> subprocess.CompletedProcess[str]:
    """:func:`subprocess.run` for ``[*console_argv(), ARGS...]`` with captured text output:
    the call is forked from a fork server (see the module's docstring); any other
    ``argv`` is handed to :func:`subprocess.run` as it is.

    Args:
        argv: the console script (:func:`console_argv`) and its arguments.
        cwd, env, timeout, input: as :func:`subprocess.run`.
        capture_output, text: must be True (what every caller here asks for).
        check: raise :class:`subprocess.CalledProcessError` on a non-zero exit.

    Returns:
        The finished call (``returncode``, ``stdout``, ``stderr``).

    Raises:
        subprocess.TimeoutExpired: the call ran longer than ``timeout`` (it was killed).
    """
    assert capture_output and text, "the fork server captures text output only"
    prefix = console_argv()
    if list(map(str, argv[:len(prefix)])) != prefix:
        return subprocess.run(argv, cwd=cwd, env=env, timeout=timeout, input=input,
                              capture_output=True, text=True, check=check)
    done = run_loopgate(argv[len(prefix):], cwd=cwd, env=env, timeout=timeout, input=input)
    if check:
        done.check_returncode()
    return done


def run_loopgate(args: list[str] | tuple[str, ...], *, cwd: str | Path,
                 env: dict[str, str] | None = None, timeout: float = 60.0,
                 input: str | None = None) -> subprocess.CompletedProcess[str]:  # noqa: A002
    """``loopgate ARGS`` in a new process, like ``subprocess.run([loopgate, *args],
    cwd=cwd, env=env, input=input, capture_output=True, text=True, timeout=timeout)``.

    Args:
        args: the arguments after ``loopgate``.
        cwd: the working directory.
        env: the whole environment (default: this process's).
        timeout: seconds before the call is killed.
        input: text on standard input (default: empty, as ``/dev/null``).

    Returns:
        The finished call: ``args`` (with the console script first), ``returncode``,
        ``stdout``, ``stderr`` (text).

    Raises:
        subprocess.TimeoutExpired: the call ran longer than ``timeout`` (it was killed).
    """
    env = dict(os.environ if env is None else env)
    prefix = console_argv()
    argv = [*prefix, *map(str, args)]
    server = _server_for(env) if len(prefix) == 1 else None
    if server is None or not server.lock.acquire(blocking=False):
        # No console script, no fork server (threads at its start) or another thread's
        # call in flight: start the process from scratch.
        return subprocess.run(argv, cwd=cwd, env=env, input=input, capture_output=True,
                              text=True, timeout=timeout, check=False)
    try:
        with tempfile.TemporaryDirectory(prefix="loopgate-call-") as tmp:
            files = {name: Path(tmp, name) for name in ("stdin", "stdout", "stderr")}
            files["stdin"].write_text(input or "", "utf-8")
            for name in ("stdout", "stderr"):
                files[name].touch()
            request = {"argv0": argv[0], "args": argv[1:], "cwd": str(cwd), "env": env,
                       **{k: str(v) for k, v in files.items()}}
            code, timed_out = server.call(request, timeout)
            out, err = (files[n].read_text("utf-8", errors="replace")
                        for n in ("stdout", "stderr"))
    finally:
        server.lock.release()
    if timed_out:
        raise subprocess.TimeoutExpired(argv, timeout, output=out, stderr=err)
    return subprocess.CompletedProcess(argv, code, out, err)
