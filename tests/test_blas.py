"""blas.single_blas_thread: numpy loads with one OpenBLAS thread and the worker server starts
with it, unless the user chose a number; the environment is put back for what starts later."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from precision_shell.blas import USER_CHOICES, VARIABLE, single_blas_thread

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")

# How many threads the process has once numpy is imported (with or without the scope), what
# the variable is inside the scope, and after it.
PROBE = """
import os, sys
from precision_shell.blas import VARIABLE, single_blas_thread
if sys.argv[1] == "scoped":
    with single_blas_thread():
        inside = os.environ.get(VARIABLE)
        import numpy
else:
    inside = os.environ.get(VARIABLE)
    import numpy
print(len(os.listdir("/proc/self/task")), inside, os.environ.get(VARIABLE))
"""


def _probe(mode: str, **env: str) -> list[str]:
    base = {k: v for k, v in os.environ.items() if k not in USER_CHOICES}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode],
        env={**base, "PYTHONPATH": str(REPO), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return out.stdout.split()


def test_numpy_loads_with_one_blas_thread_and_the_variable_goes_away_after() -> None:
    assert _probe("scoped") == ["1", "1", "None"]


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="OpenBLAS starts no thread on one core")
def test_without_the_scope_numpy_starts_blas_threads() -> None:
    threads, inside, after = _probe("bare")
    assert int(threads) > 1 and inside == after == "None"  # what the scope saves


def test_a_number_the_user_set_is_kept() -> None:
    assert _probe("scoped", **{VARIABLE: "3"}) == [_probe("bare", **{VARIABLE: "3"})[0], "3", "3"]
    # OMP_NUM_THREADS is the user's choice too (OpenBLAS reads it when its own is unset)
    omp = _probe("scoped", OMP_NUM_THREADS="2")
    assert omp == [_probe("bare", OMP_NUM_THREADS="2")[0], "None", "None"]


def test_the_worker_server_starts_with_one_blas_thread() -> None:
    """The shell starts its compare workers' server inside the scope: the server (and the
    workers it forks) load numpy with the variable set."""
    script = """
import os, sys, time
from precision_shell.blas import single_blas_thread
from precision_shell.compare.pipeline.process_start import warm_processes
from tests.process_tree import descendants
with single_blas_thread():
    warm_processes()
for _ in range(100):
    servers = [p for p in descendants(os.getpid())
               if b"forkserver" in open(f"/proc/{p}/cmdline", "rb").read()]
    if servers:
        break
    time.sleep(0.05)
env = open(f"/proc/{servers[0]}/environ", "rb").read().split(b"\\0")
print(b"OPENBLAS_NUM_THREADS=1" in env, os.environ.get("OPENBLAS_NUM_THREADS"))
"""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("no worker server on one core")
    base = {k: v for k, v in os.environ.items() if k not in USER_CHOICES}
    out = subprocess.run(
        [sys.executable, "-c", script],
        env={**base, "PYTHONPATH": str(REPO)},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout.split() == ["True", "None"]


def test_the_scope_puts_the_environment_back_on_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in USER_CHOICES:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(KeyboardInterrupt), single_blas_thread():
        assert os.environ[VARIABLE] == "1"
        raise KeyboardInterrupt
    assert VARIABLE not in os.environ


def test_a_program_the_shell_runs_gets_the_users_environment(tiny_demo_shared, tmp_path) -> None:
    root, _ = tiny_demo_shared
    base = {k: v for k, v in os.environ.items() if k not in USER_CHOICES}
    out = subprocess.run(
        [sys.executable, "-m", "precision_shell", str(root), "-e", f'run echo "[${VARIABLE}]"'],
        env={**base, "PYTHONPATH": str(REPO)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "\n[]\n" in out.stdout
