"""The process entry (`python -m precision_shell`): Ctrl-C during start-up is one line and
exit status 130, never a traceback; SIGTERM stops a running `vc` as Ctrl-C does (workers
stopped, summary.json partial, the journal closed so `vc --resume` continues it), says so in
one line and exits 143, leaving no process behind and no multiprocessing warning.

Each case runs the shell in a child python of its own session. A signal is sent at a point
the test knows the child reached (an import it makes, its SIGTERM handler installed, the
journal's lines), so no case depends on timing; the waits below bound liveness only.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from precision_shell.compare.pipeline.journal import JOURNAL_NAME
from tests.commands.shell_fixture import open_shell, run_ok
from tests.process_tree import alive, descendants
from tests.slow_vc import SLOW_ENGINE

REPO = Path(__file__).resolve().parents[1]
_LIVENESS_S = 60.0

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# the shell as `python -m precision_shell ARGS`, sent SIGNAL by itself when it first imports
# MODULE (sys.argv[1:4]): a Ctrl-C or SIGTERM that lands exactly there
_SIGNAL_AT_IMPORT = """
import os, runpy, signal, sys
module, signame, args = sys.argv[1], sys.argv[2], sys.argv[3:]

class SignalAt:
    def find_spec(self, name, path=None, target=None):
        if name == module:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), getattr(signal, signame))
        return None

sys.meta_path.insert(0, SignalAt())
sys.argv = ["precision_shell", *args]
runpy.run_module("precision_shell", run_name="__main__", alter_sys=True)
"""

# the shell (as `python -m precision_shell` runs it) on ARGS, its compare engine taking 0.2 s
# per dump file, so that it can be stopped mid-run
_SLOW_VC = SLOW_ENGINE + (
    "from precision_shell.entry import main\nraise SystemExit(main(sys.argv[1:]))\n"
)


def _start(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # one process group to end, whatever the test's outcome
    )


def _finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=_LIVENESS_S)
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, out, err


@pytest.mark.parametrize(
    ("module", "signame"),
    [
        ("precision_shell.cli", "SIGINT"),  # the first import the entry makes
        ("numpy", "SIGINT"),  # the heaviest one, with the compare's worker server starting
        ("precision_shell.commands", "SIGINT"),
        ("precision_shell.commands", "SIGTERM"),
    ],
)
def test_a_signal_during_start_up_is_one_line_and_its_exit_status(tiny_demo, module, signame):
    root, _ = tiny_demo
    status, _, err = _finish(_start(_SIGNAL_AT_IMPORT, module, signame, str(root), "-e", "vc"))
    if signame == "SIGINT":
        assert (status, err) == (130, "error: interrupted\n")
    else:
        assert (status, err) == (143, "error: terminated (SIGTERM)\n")
    assert not (root / "precision_data/temp/vector_compare").exists()  # vc never ran


def _sigterm_caught(pid: int) -> bool:
    """Whether process `pid` has a handler of its own for SIGTERM (the entry installed it)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    return False


@pytest.mark.parametrize("delay", [0.0, 0.15, 0.4])
def test_ctrl_c_soon_after_start_never_prints_a_traceback(tiny_demo, delay):
    """Wherever it lands (imports, the index, the compare, or after the script), one line."""
    root, _ = tiny_demo
    proc = _start("from precision_shell.entry import main; raise SystemExit(main())", str(root))
    deadline = time.monotonic() + _LIVENESS_S
    while not _sigterm_caught(proc.pid):
        # its signal handling comes first, long before its start-up ends (the imports)
        assert proc.poll() is None, "the shell started without its signal handling"
        assert time.monotonic() < deadline, "the shell never started"
        time.sleep(0.005)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    status, _, err = _finish(proc)
    assert "Traceback" not in err
    # stdin is not a terminal: the shell reads its script from it (empty), so it ends at once
    # once started: 130 and one line if Ctrl-C came first, else as an empty script
    assert (status, err) in ((130, "error: interrupted\n"), (0, ""))
    if not delay:  # at once: in its start-up's imports
        assert status == 130


@pytest.mark.parametrize("target", ["shell", "group"])
def test_sigterm_stops_vc_as_ctrl_c_does_and_exits_143(tiny_demo, target):
    root, _ = tiny_demo
    proc = _start(_SLOW_VC, str(root), "--no-cache", "-e", "vc --backend processes -j 2")
    base = root / "precision_data/temp/vector_compare"
    try:
        deadline = time.monotonic() + _LIVENESS_S
        journal = None
        while time.monotonic() < deadline and proc.poll() is None:
            dirs = [d for d in base.iterdir() if d.is_dir()] if base.is_dir() else []
            found = [d / JOURNAL_NAME for d in dirs]  # not `.latest`
            if found and found[0].is_file() and found[0].read_bytes().count(b"\n") >= 3:
                journal = found[0]
                break
            time.sleep(0.02)
        assert journal is not None, "the compare did not start"
        below = descendants(proc.pid)
        assert len(below) >= 3  # the worker server, its workers and the resource tracker
        if target == "shell":
            proc.send_signal(signal.SIGTERM)
        else:  # as a terminal's hang-up or a service manager sends it: to every process
            os.killpg(proc.pid, signal.SIGTERM)
        status, _, err = _finish(proc)
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    out_dir = journal.parent
    saved = json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))
    assert saved["partial"] is True and 2 <= saved["files_done"] < saved["files_total"] == 14
    assert status == 143
    assert err == (
        f"error: line 1: terminated (SIGTERM): vc: interrupted (partial: {saved['files_done']} "
        "of 14 files); the rows written so far are kept\n"
    )
    deadline = time.monotonic() + _LIVENESS_S
    while any(alive(pid, start) for pid, start in below.items()):
        assert time.monotonic() < deadline, "a process outlived the shell"
        time.sleep(0.1)
    # the journal was closed (its lock dropped): vc --resume continues the run
    resumed = run_ok(open_shell(root), "vc --resume")
    assert resumed.out_dir == out_dir and not resumed.summary.partial
