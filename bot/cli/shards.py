"""Blocks of output made by forked worker processes and written in order (issue 21 §3:
``check --all`` over 100,000 items is CPU-bound Python, so one process cannot go faster
than one core).

:func:`run_blocks` hands block ``i`` to worker ``i % jobs``. A worker renders its blocks
one after another, each whole into memory, then sends it down its own pipe as frames
(``DATA`` chunks, then one ``END`` carrying the block's small result, pickled); the parent
reads block 0 from worker 0, block 1 from worker 1, … and writes the chunks through as
they come. So the output is byte for byte what one process writing the blocks in turn
would write, and memory stays flat: a worker holds one block (the caller sizes blocks;
``check --all``'s are about 5 MB) and waits on its full pipe until that block's turn
comes (a pipe holds :data:`PIPE_BYTES`, 1 MB, or 64 kB where the system allows no more);
the parent holds one chunk at a time. While the parent relays one worker's block, the
others render their next: a worker that sent its block as it rendered it stopped a
pipe's worth in, until the parent reached it, and the workers took turns.

Workers are made with ``os.fork`` after everything they need is built (the store, the
graph, what was read before), so none of them imports or compiles anything: a worker costs
a few milliseconds. A forked child runs only the thread that forked it, so a process with
other threads running must not fork (a lock one of them held would stay held for good):
:func:`can_fork` says so, and callers run the blocks in-process instead
(:func:`run_here`, the same calls in the same order). A worker ends with ``os._exit``:
no ``atexit`` handler, no flush of buffers it inherited.

Why not ``multiprocessing``: its pool pickles every result through one queue (a block's
5 MB of JSON copied twice more), and nothing in it bounds how far workers run ahead of
the block being written (results wait in the parent's memory); the pipes here do both.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import signal
import struct
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from contextlib import suppress
from functools import partial
from typing import IO, Any, TypeVar

__all__ = ["Write", "Render", "run_blocks", "run_here", "can_fork", "usable_cpus",
           "WorkerFailed"]

_B = TypeVar("_B")  # a block: what the caller's render reads (e.g. a span of items)
_R = TypeVar("_R")  # a block's result (picklable: a worker sends it to the parent)

#: ``write(data)``: a block's output, bytes in order.
Write = Callable[[bytes | bytearray], None]
#: ``render(block, write) -> result``: writes the block's output, returns its result.
Render = Callable[[_B, Write], _R]

#: The pipe size asked for (bytes): Linux's default ``/proc/sys/fs/pipe-max-size``, what
#: a process may set without privileges; about one chunk of the caller's output.
PIPE_BYTES = 1 << 20
#: Frame header: kind (one byte) and payload length (bytes, unsigned 64-bit).
_HEADER = struct.Struct(">BQ")
_DATA, _END, _ERROR = 1, 2, 3


class WorkerFailed(Exception):
    """A worker could not render its block.

    Attributes:
        message: the worker's error, as ``str(exception)`` (or why it stopped).
        exit_code: the error's ``exit_code`` (a ``LoopgateError``'s), else None.
        detail: the worker's traceback, when it raised.
    """

    def __init__(self, message: str, exit_code: int | None = None, detail: str = "") -> None:
        super().__init__(message if not detail else f"{message}\n{detail}")
        self.message = message
        self.exit_code = exit_code
        self.detail = detail


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, e.g. a container's cpuset),
    at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def can_fork() -> bool:
    """True when forking is safe here: a POSIX system and no other thread running, neither
    one :mod:`threading` knows nor one it does not (``_thread.start_new_thread``, a C
    library's: Linux counts them in ``/proc/self/status``, as Python 3.12's fork warning
    does)."""
    return (hasattr(os, "fork") and threading.active_count() == 1
            and _os_threads() in (None, 1))


def _os_threads() -> int | None:
    """The threads of this process as the kernel counts them; None where it cannot say
    (not Linux)."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"Threads:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def run_here(blocks: Sequence[_B], render: Render[_B, _R], write: Write) -> list[_R]:
    """Render ``blocks`` in this process, in order: what :func:`run_blocks` does with one
    job. Returns each block's result, in block order."""
    return [render(block, write) for block in blocks]


def run_blocks(blocks: Sequence[_B], jobs: int, render: Render[_B, _R], write: Write
               ) -> list[_R]:
    """Render ``blocks`` in ``jobs`` forked workers and ``write`` their output in block
    order, as :func:`run_here` would.

    Args:
        blocks: what each call of ``render`` reads (the workers inherit them).
        jobs: workers to fork (at most one per block; call only where :func:`can_fork`).
        render: ``(block, write) -> result``, called in a worker; its result is pickled.
        write: where the output goes, in order (called in this process).

    Returns:
        Each block's result, in block order.

    Raises:
        WorkerFailed: a worker raised (its message, exit code and traceback) or died
            before its block's end (its exit status). The other workers are stopped.
        Whatever ``write`` raises (e.g. ``BrokenPipeError``), the workers stopped first.
    """
    jobs = max(1, min(jobs, len(blocks)))
    for stream in (sys.stdout, sys.stderr):  # None: the process started with it closed
        if stream is not None:  # a worker inherits the buffers: nothing written twice
            stream.flush()
    pool = _Pool()
    try:
        readers = [pool.fork(partial(_work, blocks[k::jobs], render)) for k in range(jobs)]
        results = [_relay(readers[i % jobs], write) for i in range(len(blocks))]
    except BaseException:
        pool.stop()
        raise
    pool.join()
    return results


class _Pool:
    """The forked workers: each one's pid and the read end of its pipe (a :class:`_Reader`)."""

    def __init__(self) -> None:
        self.readers: list[_Reader] = []

    def fork(self, body: Callable[[IO[bytes]], int]) -> _Reader:
        """Fork a worker running ``body(pipe)`` and then exiting with what it returns."""
        read_fd, write_fd = os.pipe()
        with suppress(AttributeError, OSError):  # Linux only; the pipe-max-size may be lower
            # A chunk in the pipe, not 64 kB: a chunk crosses in one read, not sixteen.
            fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        pid = os.fork()
        if pid == 0:  # the worker: never returns
            code = 70  # EX_SOFTWARE, should body itself fail
            try:
                os.close(read_fd)
                for reader in self.readers:  # earlier workers' pipes: theirs, not ours
                    reader.file.close()
                # Ctrl-C reaches the whole process group: the parent reports it, not us.
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                code = body(open(write_fd, "wb"))  # noqa: SIM115 (closed by _exit)
            finally:
                os._exit(code)
        os.close(write_fd)
        reader = _Reader(pid, open(read_fd, "rb"))  # noqa: SIM115 (closed in join/stop)
        self.readers.append(reader)
        return reader

    def join(self) -> None:
        """Wait for every worker (each has sent its last block) and close the pipes.

        Raises:
            WorkerFailed: a worker exited other than 0."""
        failed = []
        for reader in self.readers:
            reader.file.close()
            status = os.waitpid(reader.pid, 0)[1]
            if status != 0:
                failed.append(_stopped(status))
        if failed:
            raise WorkerFailed(f"a worker {failed[0]} after its last block")

    def stop(self) -> None:
        """Kill every worker and wait for them (the run is being abandoned)."""
        for reader in self.readers:
            reader.file.close()
            if reader.pid > 0:  # not reaped yet
                with suppress(ProcessLookupError):
                    os.kill(reader.pid, signal.SIGKILL)
                os.waitpid(reader.pid, 0)


class _Reader:
    """A worker's pid and the read end of its pipe."""

    def __init__(self, pid: int, file: IO[bytes]) -> None:
        self.pid = pid
        self.file = file

    def read(self, size: int) -> bytes:
        """Exactly ``size`` bytes. Raises WorkerFailed: the pipe ended first (the worker
        died: its exit status is in the message)."""
        data = self.file.read(size)
        if len(data) != size:
            status = os.waitpid(self.pid, 0)[1]
            self.pid = -1  # reaped: stop() must not wait for it again
            raise WorkerFailed(f"a worker {_stopped(status)} in the middle of "
                               "its block")
        return data


def _relay(reader: _Reader, write: Write) -> Any:
    """Write one block's ``DATA`` frames from ``reader``; return its ``END`` result."""
    while True:
        kind, size = _HEADER.unpack(reader.read(_HEADER.size))
        payload = reader.read(size)
        if kind == _DATA:
            write(payload)
        elif kind == _END:
            return pickle.loads(payload)
        else:
            message, exit_code, detail = pickle.loads(payload)
            raise WorkerFailed(message, exit_code, detail)


def _work(blocks: Sequence[Any], render: Callable[[Any, Write], Any], out: IO[bytes]) -> int:
    """A worker's life: render ``blocks`` in turn, framed down ``out``; the exit code."""
    def frame(kind: int, payload: bytes | bytearray) -> None:
        out.write(_HEADER.pack(kind, len(payload)))
        out.write(payload)

    try:
        for block in blocks:
            # Rendered whole before any of it is sent (see the module's docstring).
            chunks: list[bytes | bytearray] = []
            result = render(block, chunks.append)
            for chunk in chunks:
                frame(_DATA, chunk)
            chunks.clear()
            frame(_END, pickle.dumps(result))
            out.flush()  # the parent may be waiting for this block's end
        out.close()
        return 0
    except BrokenPipeError:  # the parent stopped reading (it is stopping us)
        return 1
    except BaseException as exc:  # sent to the parent, which reports it as its own
        with suppress(BaseException):
            frame(_ERROR, pickle.dumps((str(exc), getattr(exc, "exit_code", None),
                                        traceback.format_exc())))
            out.flush()
        return 1


def _stopped(status: int) -> str:
    """How a worker ended, from its ``waitpid`` status: ``exited 1``, ``was killed by
    SIGKILL``."""
    if os.WIFSIGNALED(status):
        return f"was killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exited {os.waitstatus_to_exitcode(status)}"
