"""A compare killed mid-run leaves no process behind and closes its stdout.

The run happens in a child python, with the process backend on the tiny demo; its workers
block in a task (as a slow tensor would) when the child is killed. The polls below bound how
long we wait for the processes to go: a liveness bound, not a speed requirement.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from precision_shell.compare.pipeline.plan import FileTask
from precision_shell.compare.pipeline.worker import CompareOptions, FileResult, compare_file
from tests.process_tree import alive, descendants

_REPO = Path(__file__).resolve().parents[2]
_LIVENESS_S = 30.0

_SCRIPT = """
import sys
from precision_shell.compare.pipeline.engine import run_tasks
from precision_shell.compare.pipeline.plan import benchmark_plan
from precision_shell.compare.pipeline.worker import CompareOptions
from precision_shell.workspace.workspace import Workspace
from tests.compare.test_worker_death import say, stuck_after_two

ws = Workspace.open(sys.argv[1], use_cache=False)
run = ws.run()
plan = benchmark_plan(ws, run, run.dump_graph())
say(f"tasks {len(plan.tasks)}")
for result in run_tasks(plan.tasks, CompareOptions(), 2, work=stuck_after_two, backend="processes"):
    say(f"result {result.seq}")
"""


def say(line: str) -> None:
    """One line in one write(2): the parent and both workers share the pipe, and a print can
    take a write per argument (it does under PYTHONUNBUFFERED), so their lines would interleave
    mid-line; a write of under PIPE_BUF bytes to a pipe is atomic."""
    os.write(1, f"{line}\n".encode())


def stuck_after_two(task: FileTask, options: CompareOptions) -> FileResult:
    """The first two files compare; every later one hangs, as a huge tensor on a slow disk."""
    if task.seq < 2:
        return compare_file(task, options)
    say(f"busy {os.getpid()}")
    time.sleep(3600)
    return compare_file(task, options)


def _start(root: Path) -> tuple[subprocess.Popen, queue.Queue]:
    env = dict(os.environ, PYTHONPATH=str(_REPO))
    proc = subprocess.Popen(
        [sys.executable, "-c", _SCRIPT, str(root)],
        cwd=_REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,  # one process group to end, whatever the test's outcome
    )
    lines: queue.Queue = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.strip())
        lines.put(None)  # EOF: every holder of the pipe's write end has closed it

    threading.Thread(target=pump, daemon=True).start()
    return proc, lines


def _wait_for_busy_workers(proc: subprocess.Popen, lines: queue.Queue) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + 120  # start-up of the forkserver and two workers
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            continue
        assert line is not None, f"the compare ended early: {seen}"
        seen.append(line)
        if len(_busy_pids(seen)) == 2:
            return seen
    proc.kill()
    pytest.fail(f"the workers never got busy: {seen}")


def _busy_pids(seen: list[str]) -> set[int]:
    return {int(line.split()[1]) for line in seen if line.startswith("busy ")}


def _reaches_eof(lines: queue.Queue) -> bool:
    deadline = time.monotonic() + _LIVENESS_S
    while time.monotonic() < deadline:
        try:
            if lines.get(timeout=0.5) is None:
                return True
        except queue.Empty:
            pass
    return False


def _survivors(procs: dict[int, int]) -> list[int]:
    deadline = time.monotonic() + _LIVENESS_S
    while time.monotonic() < deadline:
        left = [pid for pid, start in procs.items() if alive(pid, start)]
        if not left:
            return []
        time.sleep(0.2)
    return left


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_compare_leaves_no_process_and_closes_stdout(tiny_demo, sig):
    root, _ = tiny_demo
    proc, lines = _start(root)
    try:
        _kill_and_check(proc, lines, sig)
    finally:
        # a failed assertion must not leave the stuck compare running (no test outlives us)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=_LIVENESS_S)


def _kill_and_check(proc: subprocess.Popen, lines: queue.Queue, sig: int) -> None:
    seen = _wait_for_busy_workers(proc, lines)
    assert seen[0].startswith("tasks ") and int(seen[0].split()[1]) > 4
    below = descendants(proc.pid)
    busy = _busy_pids(seen)
    # the forkserver, both workers, and the resource tracker
    assert busy <= set(below) and len(below) >= 3
    os.kill(proc.pid, sig)
    assert proc.wait(timeout=_LIVENESS_S) == -sig
    left = _survivors(below)
    for pid in left:  # do not leave them to the next test either
        os.kill(pid, signal.SIGKILL)
    assert left == []
    assert _reaches_eof(lines)
