"""The interactive shell in a real pseudo-terminal (pexpect), with a pinned 120x40 screen.

Modelled on pgcli's behave wrappers: spawn the program, wait for the prompt, type, expect.
prompt_toolkit redraws with cursor moves, so screen text is compared with escapes removed.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.process_tree import alive, descendants

pexpect = pytest.importorskip("pexpect")

REPO = Path(__file__).resolve().parents[1]
PROMPT = "PrecisionTool >"  # prompt_toolkit draws the trailing space as a cursor move
# CSI sequences, charset selects and keypad modes: what a terminal would act on, not show
ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]")
START_TIMEOUT = 60  # first start imports numpy and protobuf
STEP_TIMEOUT = 30


def _screen_text(raw: str) -> str:
    return ESCAPES.sub("", raw)


def _spawn(root: Path, home: Path):
    """The shell on `root` in a pty, with every XDG dir under `home`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "PYTEST"))}
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"):
        env[name] = str(home / name.lower())
    env.update(
        COLUMNS="120",
        LINES="40",
        TERM="xterm",
        PYTHONPATH=str(REPO),
        # pexpect is no terminal that answers cursor position requests
        PROMPT_TOOLKIT_NO_CPR="1",
    )
    return pexpect.spawn(
        sys.executable,
        ["-m", "precision_shell", str(root)],
        env=env,
        cwd=str(home),
        dimensions=(40, 120),
        encoding="utf-8",
        codec_errors="replace",
        timeout=STEP_TIMEOUT,
    )


@pytest.fixture
def shell(tiny_demo_shared, tmp_path):
    root, _ = tiny_demo_shared
    child = _spawn(root, tmp_path)
    yield child, tmp_path
    if child.isalive():
        child.terminate(force=True)


def test_tab_completion_node_info_bad_flag_and_exit(shell):
    child, home = shell
    child.expect_exact(PROMPT, timeout=START_TIMEOUT)
    banner = _screen_text(child.before)
    assert "debug_0" in banner and "Type help for the commands" in banner

    # "softmax/Sof" names one op: Tab completes it in place
    child.send("ni softmax/Sof")
    child.expect_exact("/Sof")  # the echo of what was typed
    typed = child.before + child.after
    child.send("\t")
    child.expect_exact("tmax")  # what the completion inserted after it
    line = _screen_text(typed + child.before + child.after)
    assert line.replace("\r", "").endswith("ni softmax/Softmax")

    child.send("\r")
    child.expect_exact("╰")  # the bottom edge of the node panel
    panel = _screen_text(child.before)
    child.expect_exact(PROMPT)
    assert "softmax/Softmax" in panel and "SoftmaxV2" in panel
    assert "softmax_Softmax.0." in panel  # its benchmark tensor

    child.sendline("ls --bogus")
    child.expect_exact("error:")
    child.expect_exact(PROMPT)
    error_lines = ("error:" + _screen_text(child.before)).strip().splitlines()
    assert len(error_lines) == 1
    assert error_lines[0].strip().startswith("error: ls: unrecognized arguments: --bogus")

    child.sendline("exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and child.signalstatus is None
    history = home / "xdg_state_home" / "precision_shell" / "history"
    assert "ni softmax/Softmax" in history.read_text()


def _forkservers(pid: int) -> list[int]:
    found = []
    for below in descendants(pid):
        with contextlib.suppress(OSError):
            if b"forkserver" in Path(f"/proc/{below}/cmdline").read_bytes():
                found.append(below)
    return found


@pytest.mark.skipif(
    (os.cpu_count() or 1) < 2 or not Path("/proc/self/stat").exists(),
    reason="processes are never picked on one core; /proc is Linux's",
)
def test_the_shell_starts_its_compare_workers_server_and_it_ends_with_the_shell(shell):
    """At start the shell runs the preloaded forkserver (a `vc` on processes then starts in
    ms); killed, even by SIGKILL, it leaves no process behind."""
    child, _ = shell
    child.expect_exact(PROMPT, timeout=START_TIMEOUT)
    deadline = time.monotonic() + START_TIMEOUT
    while not _forkservers(child.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _forkservers(child.pid), "no forkserver below the interactive shell"
    below = descendants(child.pid)
    child.kill(signal.SIGKILL)
    deadline = time.monotonic() + STEP_TIMEOUT
    while any(alive(p, start) for p, start in below.items()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p, start in below.items() if alive(p, start)] == []


def test_a_dir_without_precision_data_gets_one_hint_then_plain_errors(tmp_path):
    empty = tmp_path / "project"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "PYTEST"))}
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"):
        env[name] = str(tmp_path / name.lower())
    env.update(COLUMNS="120", LINES="40", TERM="xterm", PYTHONPATH=str(REPO),
               PROMPT_TOOLKIT_NO_CPR="1")  # fmt: skip
    child = pexpect.spawn(sys.executable, ["-m", "precision_shell", str(empty)], env=env,
                          cwd=str(tmp_path), dimensions=(40, 120), encoding="utf-8",
                          codec_errors="replace", timeout=STEP_TIMEOUT)  # fmt: skip
    try:
        child.expect_exact(PROMPT, timeout=START_TIMEOUT)
        banner = _screen_text(child.before)
        hint = f"{empty}: no precision_data/ here; run tf_run/tf_dump to create it"
        assert banner.count(hint) == 1 and "error:" not in banner
        child.sendline("ls")
        child.expect_exact("error:")
        child.expect_exact(PROMPT)
        after = "error:" + _screen_text(child.before)
        assert f"error: {empty / 'precision_data'}: no such directory" in after
        assert hint not in after
        child.sendline("exit")
        child.expect(pexpect.EOF)
    finally:
        if child.isalive():
            child.terminate(force=True)


def test_a_history_path_that_cannot_be_read_gives_one_warning_and_a_normal_session(
    tiny_demo_shared, tmp_path
):
    """A dir where the history file belongs (or a root-owned file after a sudo run): one
    warning, then commands run; no traceback at each prompt, no first command eaten."""
    history = tmp_path / "xdg_state_home" / "precision_shell" / "history"
    history.mkdir(parents=True)
    child = _spawn(tiny_demo_shared[0], tmp_path)
    try:
        child.expect_exact(PROMPT, timeout=START_TIMEOUT)
        banner = _screen_text(child.before)
        assert banner.count(f"history disabled: cannot read {history}: Is a directory") == 1
        for _ in range(2):  # the first command is not eaten, nor is any later one
            child.sendline("ls -t Cast")
            child.expect_exact("2 op(s) match type~'Cast'")
            shown = _screen_text(child.before)
            assert "debug_1 [Cast] trans_Cast_0" in shown
            child.expect_exact(PROMPT)
            shown += _screen_text(child.before)
            assert "Traceback" not in shown and "Press ENTER" not in shown
        child.sendline("exit")
        child.expect(pexpect.EOF)
    finally:
        if child.isalive():
            child.terminate(force=True)


def test_sigterm_at_the_prompt_ends_the_shell_in_one_line_with_143(shell):
    child, _ = shell
    child.expect_exact(PROMPT, timeout=START_TIMEOUT)
    child.kill(signal.SIGTERM)
    child.expect(pexpect.EOF)
    child.close()
    after = [line for line in _screen_text(child.before).splitlines() if line.strip()]
    # prompt_toolkit may redraw the prompt as it leaves; then the one line
    assert after[-1] == "error: terminated (SIGTERM)"
    assert set(after[:-1]) <= {"PrecisionTool >"}
    assert child.exitstatus == 143 and child.signalstatus is None
