"""Compare worker processes fork from a server that preloaded the compare, started early."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
from multiprocessing import forkserver
from pathlib import Path

import pytest

from precision_shell.compare.pipeline import process_start
from precision_shell.compare.pipeline.engine import run_tasks
from precision_shell.compare.pipeline.plan import benchmark_plan
from precision_shell.compare.pipeline.process_start import runs_a_compare
from precision_shell.compare.pipeline.worker import CompareOptions
from precision_shell.workspace.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]
HAS_FORKSERVER = "forkserver" in multiprocessing.get_all_start_methods()


def test_process_workers_fork_from_a_server_that_preloaded_the_compare(tiny_demo):
    """A later pool's workers start without importing numpy and ours each (and then `auto`
    picks processes from less data)."""
    root, _ = tiny_demo
    ws = Workspace.open(root)
    run = ws.run()
    plan = benchmark_plan(ws, run, run.dump_graph())
    rows = [r.rows for r in run_tasks(plan.tasks[:2], CompareOptions(), 2, backend="processes")]
    assert len(rows) == 2 and all(rows)
    assert process_start.processes_warm() == HAS_FORKSERVER
    if HAS_FORKSERVER:
        # what the server was started with (multiprocessing keeps no public accessor)
        assert forkserver._forkserver._preload_modules == process_start.PRELOAD


def test_warm_processes_does_nothing_on_one_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process_start, "_started", False)
    monkeypatch.setattr(process_start.os, "cpu_count", lambda: 1)
    process_start.warm_processes()
    assert not process_start.processes_warm()
    monkeypatch.setattr(process_start.os, "cpu_count", lambda: 2)
    process_start.warm_processes()
    assert process_start.processes_warm() == HAS_FORKSERVER


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (["vc -r debug_0"], True),
        (["ls", "", "  ", "ac -c"], True),
        (["ls", "ni conv1", "vcs"], False),  # vcs reads a result; it runs no compare
        ([], False),
        (["vc"], True),
    ],
)
def test_runs_a_compare_looks_at_each_command_word(lines: list[str], expected: bool) -> None:
    assert runs_a_compare(lines) is expected


_WARM_AND_SHOW_SIGIGN = """
from multiprocessing import forkserver
from pathlib import Path
from precision_shell.compare.pipeline.process_start import warm_processes
warm_processes()
status = Path(f"/proc/{forkserver._forkserver._forkserver_pid}/status").read_text()
print(next(line.split()[1] for line in status.splitlines() if line.startswith("SigIgn:")))
"""


@pytest.mark.skipif(
    not HAS_FORKSERVER or not Path("/proc/self/status").exists() or (os.cpu_count() or 1) < 2,
    reason="a forkserver, /proc and two cores (none is started on one)",
)
def test_the_server_ignores_ctrl_c_from_its_start(tmp_path):
    """Ctrl-C to the shell's process group while the server still imports `PRELOAD` (as the
    shell starts) must not print the server's traceback: it ignores Ctrl-C from its exec on."""
    done = subprocess.run(
        [sys.executable, "-c", _WARM_AND_SHOW_SIGIGN],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert int(done.stdout, 16) >> (signal.SIGINT - 1) & 1
