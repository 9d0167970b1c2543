"""``check --all`` in forked workers (issue 21 §3: one process is one core): whatever
``--jobs``, every form writes the same bytes, exit status and stderr as one process; the
workers really run; a worker that fails or dies ends the run with its cause, and no
worker outlives the run (a reader that stops reading included)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from bot.cli import check_cmd
from engine.store.rows import WHOLE
from tests import forkserver
from tests.cli.test_check_compact import _walked
from tests.cli.test_check_unreadable import STDERR, _spoil, _walk
from tests.cli.test_item_cli import home  # noqa: F401
from tests.e2e.stack import loopgate_argv

REPO = Path(__file__).resolve().parents[2]
FORMS = [("--format", "json"), ("--format", "json", "--compact"),
         ("--format", "json", "--history"), (), ("--compact",), ("--history",),
         ("--format", "json", "--fail-on", "unmet"), ("--fail-on", "block", "--compact"),
         ("--status", "parked", "--format", "json"), ("--node", "design"),
         ("--color", "always"), ("--recompute", "--compact", "--color", "always")]


@pytest.fixture
def spoiled(home: Path) -> Path:  # noqa: F811
    """Ten items in varied real states (parked, selected, skipped, forced, escalated, a
    blocked claim), two of them unreadable (a key that does not parse, a visits row that
    is not JSON)."""
    _walked(home)
    _walk(home)
    _spoil(home)
    return home


def _argv(home: Path, *args: str) -> list[str]:  # noqa: F811
    return ["--db", str(home / "db" / "loopgate.db"), "--config", str(home / "loopgate.yaml"),
            *args]


def _check(home: Path, *args: str) -> subprocess.CompletedProcess[str]:  # noqa: F811
    env = {k: v for k, v in os.environ.items() if k not in ("LOOPGATE_DB", "LOOPGATE_CONFIG")}
    return forkserver.run([*loopgate_argv(), *_argv(home, "check", "--all", *args)],
                          cwd=home, env=env, capture_output=True, text=True, timeout=120,
                          check=False)


@pytest.mark.parametrize("form", FORMS, ids=" ".join)
def test_every_form_is_the_same_bytes_whatever_the_jobs(spoiled: Path,
                                                        form: tuple[str, ...]) -> None:
    one = _check(spoiled, *form, "--jobs", "1")
    assert one.returncode == 3 and one.stderr == STDERR
    assert one.stdout.count("unreadable") >= 2
    for jobs in ("2", "3", "16"):  # 10 items: blocks of 2, 1 and 1 item
        many = _check(spoiled, *form, "--jobs", jobs)
        assert (many.returncode, many.stderr, many.stdout) == (
            one.returncode, one.stderr, one.stdout), (form, jobs)


def test_the_default_is_one_process_below_two_blocks_and_a_worker_per_cpu_above(
        monkeypatch: pytest.MonkeyPatch) -> None:
    store = _Spanned(total=check_cmd.MIN_FORKED - 1)
    services = _Services(store)
    monkeypatch.setattr(check_cmd, "can_fork", lambda: True)
    monkeypatch.setattr(check_cmd, "usable_cpus", lambda: 2)
    assert check_cmd._jobs(services, 0) == ([WHOLE], 1)
    store.total = check_cmd.MIN_FORKED
    spans, jobs = check_cmd._jobs(services, 0)
    assert (jobs, store.asked) == (2, [check_cmd.SPAN_ITEMS]) and len(spans) == 2
    monkeypatch.setattr(check_cmd, "usable_cpus", lambda: 64)
    assert check_cmd._jobs(services, 0)[1] == 2  # never more workers than blocks
    store.total = 100_000
    assert check_cmd._jobs(services, 0)[1] == check_cmd.MAX_JOBS
    # --jobs N: that many, in blocks of items / 4N (at most SPAN_ITEMS), whatever the count.
    store.total, store.asked = 10, []
    assert check_cmd._jobs(services, 3)[1] == 3 and store.asked == [1]
    store.total, store.asked = 100_000, []
    check_cmd._jobs(services, 3)
    assert store.asked == [check_cmd.SPAN_ITEMS]
    assert check_cmd._jobs(services, 1) == ([WHOLE], 1)
    monkeypatch.setattr(check_cmd, "can_fork", lambda: False)  # another thread runs
    assert check_cmd._jobs(services, 4) == ([WHOLE], 1)


def test_a_store_without_spans_is_read_in_one_process(monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    monkeypatch.setattr(check_cmd, "can_fork", lambda: True)
    assert check_cmd._jobs(_Services(object()), 4) == ([WHOLE], 1)  # e.g. PostgreSQL's


def test_can_fork_is_false_while_another_thread_runs() -> None:
    from bot.cli.shards import can_fork

    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert not can_fork()
    finally:
        release.set()
        other.join()


def test_can_fork_is_false_while_a_thread_threading_does_not_know_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import _thread

    from bot.cli.shards import can_fork

    started, release, ended = (_thread.allocate_lock() for _ in range(3))
    for lock in (started, release, ended):
        lock.acquire()

    def body() -> None:  # never calls into threading: active_count() does not see it
        started.release()
        release.acquire()
        ended.release()

    _thread.start_new_thread(body, ())
    started.acquire()
    # What threading counts is one (the suite's own threads, if any, left out too): only
    # the kernel's count can tell that another thread runs.
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    try:
        assert not can_fork()
    finally:
        release.release()
        ended.acquire()


class _Spanned:
    """A store that cuts ``total`` items into spans (records each size asked for)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.asked: list[int] = []

    def item_total(self) -> int:
        return self.total

    def spans(self, size: int) -> list[Any]:
        self.asked.append(size)
        count = -(-self.total // size)
        return [((i,), (i + 1,)) for i in range(count)]

    def load_all(self, on_unreadable: Any = None, span: Any = WHOLE) -> Any:
        raise AssertionError("not read here")


class _Services:
    def __init__(self, store: Any) -> None:
        self.store = store


# -- the workers themselves, in a real process of their own --------------------------------
def _wrapped(home: Path, prelude: str, *args: str, **popen: Any  # noqa: F811
             ) -> subprocess.Popen[bytes]:
    """The CLI in a fresh interpreter after ``prelude`` (which may patch loopgate's
    modules: the forked workers inherit it), in a session of its own."""
    code = textwrap.dedent(prelude) + "\nimport sys\nfrom bot.cli import main\nsys.exit(main())"
    env = {k: v for k, v in os.environ.items() if k not in ("LOOPGATE_DB", "LOOPGATE_CONFIG")}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.Popen([sys.executable, "-c", code, *_argv(home, "check", "--all",
                                                                 *args)],
                            cwd=home, env=env, start_new_session=True, **popen)


_COUNT_FORKS = """
    import os
    _fork = os.fork
    def fork():
        pid = _fork()
        if pid:
            with open(os.environ["FORKS"], "a") as log:
                log.write(f"{pid}\\n")
        return pid
    os.fork = fork
"""


def _finish(proc: subprocess.Popen[bytes]) -> tuple[int, bytes, bytes]:
    out, err = proc.communicate(timeout=120)
    _assert_no_process_left(proc.pid)
    return proc.returncode, out, err


def _assert_no_process_left(session: int) -> None:
    """Every process of the session (the CLI's workers included) has ended."""
    with pytest.raises(ProcessLookupError):
        os.killpg(session, 0)


def test_the_workers_really_run_and_end_with_the_run(spoiled: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    forks = spoiled / "forks.log"
    monkeypatch.setenv("FORKS", str(forks))
    proc = _wrapped(spoiled, _COUNT_FORKS, "--format", "json", "--jobs", "3",
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    code, out, err = _finish(proc)
    one = _check(spoiled, "--format", "json", "--jobs", "1")
    assert (code, err.decode(), out.decode()) == (3, one.stderr, one.stdout)
    assert len(forks.read_text().split()) == 3


_DIE_ON_THIRD = """
    import os, signal
    from bot.cli import check_cmd
    _render = check_cmd._render
    def render(reading, form, span, write):
        if span[0] is not None and span[0][2] == {number}:
            {action}
        return _render(reading, form, span, write)
    check_cmd._render = render
"""


@pytest.mark.parametrize(("action", "said", "code"), [
    ("os.kill(os.getpid(), signal.SIGKILL)",
     "loopgate: check --all stopped: a worker was killed by SIGKILL in the middle of its "
     "block\n", 1),
    ("raise ValueError('boom')", "loopgate: check --all stopped: boom\n", 1),
], ids=["killed", "raised"])
def test_a_worker_that_dies_or_raises_ends_the_run_with_its_cause(
        spoiled: Path, action: str, said: str, code: int) -> None:
    # --jobs 2 over 10 items: blocks of 2 (#1 #2, #3 #4, #5 #11, ...): the third, worker
    # 0's second, fails after the first two were written.
    prelude = _DIE_ON_THIRD.replace("{number}", "5").replace("{action}", action)
    proc = _wrapped(spoiled, prelude, "--format", "json", "--jobs", "2",
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    returncode, out, err = _finish(proc)
    assert returncode == code
    assert err.decode().endswith(said)
    if "raise" in action:  # the worker's traceback before that line (one process prints
        # Python's traceback alone, exit 1 too)
        assert "ValueError: boom" in err.decode()
    one = _check(spoiled, "--format", "json", "--jobs", "1").stdout
    # "[" and the first two blocks' items (the comma after the fourth is the fifth's lead).
    assert out.decode() == "\n".join(one.split("\n")[:5]).removesuffix(",")


def test_a_reader_that_stops_reading_stops_every_worker(spoiled: Path) -> None:
    # The full JSON of 10 items is larger than a pipe holds: the CLI blocks writing it,
    # the reader closes its end, the write fails; no worker may be left waiting.
    proc = _wrapped(spoiled, "", "--format", "json", "--history", "--jobs", "3",
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    assert proc.stdout.read(100).startswith(b"[\n{")
    proc.stdout.close()
    assert proc.wait(timeout=120) != 0  # click's broken-pipe exit
    _assert_no_process_left(proc.pid)


def test_the_bytes_reach_the_reader_whole_when_it_reads_slowly(spoiled: Path) -> None:
    proc = _wrapped(spoiled, "", "--format", "json", "--history", "--jobs", "3",
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    chunks = []
    while chunk := proc.stdout.read(4096):  # a pipe drained a page at a time
        chunks.append(chunk)
    assert proc.wait(timeout=120) == 3
    proc.stderr.close()
    proc.stdout.close()
    _assert_no_process_left(proc.pid)
    one = _check(spoiled, "--format", "json", "--history", "--jobs", "1").stdout
    assert b"".join(chunks).decode() == one and len(one) > 1 << 16


def test_a_signal_to_the_run_stops_the_workers(spoiled: Path) -> None:
    # Ctrl-C reaches every process of the foreground group: the workers ignore it, the
    # CLI stops them and ends as Python does on SIGINT.
    proc = _wrapped(spoiled, "", "--format", "json", "--history", "--jobs", "3",
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.read(200).startswith(b"[\n{")  # an item: the workers are forked
    os.killpg(proc.pid, signal.SIGINT)
    proc.stdout.close()
    assert proc.wait(timeout=120) != 0
    assert proc.stderr is not None
    proc.stderr.close()
    _assert_no_process_left(proc.pid)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_text_under_an_ascii_stdout_is_what_click_echo_writes(
        spoiled: Path, monkeypatch: pytest.MonkeyPatch, jobs: str) -> None:
    # The tables hold "—" and "größe". Where stdout says ASCII (PYTHONIOENCODING=ascii, a
    # misconfigured locale) click.echo writes UTF-8 instead of failing; check did too, and
    # every other command still does. ITEM's report and --all's must not fail either.
    monkeypatch.setenv("PYTHONIOENCODING", "utf-8")
    utf8 = _finish(_wrapped(spoiled, "", "--compact", "--jobs", jobs,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    monkeypatch.setenv("PYTHONIOENCODING", "ascii")
    ascii_ = _finish(_wrapped(spoiled, "", "--compact", "--jobs", jobs,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    assert utf8[0] == 3 and "—".encode() in utf8[1]
    assert ascii_ == utf8
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "PYTHONPATH": str(REPO)}
    env = {k: v for k, v in env.items() if k not in ("LOOPGATE_DB", "LOOPGATE_CONFIG")}
    one = subprocess.run([sys.executable, "-c", "import sys; from bot.cli import main; "
                          "sys.exit(main())", *_argv(spoiled, "check", "acme/widgets#3")],
                         cwd=spoiled, env=env, capture_output=True, timeout=120, check=False)
    assert (one.returncode, one.stderr) == (0, b"")
    assert "größe".encode() in one.stdout


@pytest.mark.parametrize("form", [("--compact",), ("--format", "json")], ids=" ".join)
def test_a_closed_stdout_drops_the_output_whatever_the_jobs(
        spoiled: Path, form: tuple[str, ...]) -> None:
    # Started with stdout closed, Python's sys.stdout is None: click.echo drops what it is
    # given (main's check --all text did: exit 3, the unreadable items named on stderr).
    env = {k: v for k, v in os.environ.items() if k not in ("LOOPGATE_DB", "LOOPGATE_CONFIG")}
    env["PYTHONPATH"] = str(REPO)
    for jobs in ("1", "2"):
        argv = [sys.executable, "-c", "import sys; from bot.cli import main; sys.exit(main())",
                *_argv(spoiled, "check", "--all", *form, "--jobs", jobs)]
        done = subprocess.run(["bash", "-c", 'exec "$@" >&-', "bash", *argv], cwd=spoiled,
                              env=env, capture_output=True, text=True, timeout=120,
                              check=False)
        assert (done.returncode, done.stderr) == (3, STDERR), (form, jobs)


def test_jobs_is_for_all_and_at_most_64(home: Path) -> None:  # noqa: F811
    from tests.cli.test_item_cli import run

    assert run(home, "start", "acme/widgets#1").exit_code == 0
    one = run(home, "check", "acme/widgets#1", "--jobs", "2")
    assert one.exit_code == 2 and "--jobs splits --all: give --all, not ITEM" in one.output
    many = run(home, "check", "--all", "--jobs", "65")
    assert many.exit_code == 2 and "65 is not in the range 0<=x<=64" in many.output
    assert run(home, "check", "--all", "--jobs", "64").exit_code == 0
