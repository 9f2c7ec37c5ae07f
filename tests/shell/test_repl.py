"""The interactive prompt, driven through a pipe input with no terminal."""

from __future__ import annotations

from pathlib import Path

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from precision_shell.render.output import Renderer, make_console
from precision_shell.shell.completer import ShellCompleter
from precision_shell.shell.dispatcher import Dispatcher, Outcome
from precision_shell.shell.repl import history_path, make_session, run_repl
from tests.shell.fake_commands import make_registry


class RecordingDispatcher:
    """Stands in for `Dispatcher`: records each line and answers with a plain text result."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def execute(self, line: str) -> Outcome:
        self.lines.append(line)
        return Outcome(line=line, result=f"ran {line}")


@pytest.fixture
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


def _run(keys: str, dispatcher: object) -> int:
    renderer = Renderer(make_console(False), make_console(False, stderr=True))
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        session = make_session(
            ShellCompleter(registry=make_registry()), input=pipe, output=DummyOutput()
        )
        return run_repl(session, dispatcher, renderer)  # type: ignore[arg-type]


def test_two_commands_then_ctrl_d(state_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dispatcher = RecordingDispatcher()
    status = _run('ls -n "a b"\rni conv1\r\x04', dispatcher)
    assert status == 0
    assert dispatcher.lines == ['ls -n "a b"', "ni conv1"]
    out, _ = capsys.readouterr()
    assert out.splitlines() == ['ran ls -n "a b"', "ran ni conv1"]
    assert history_path() == state_home / "precision_shell" / "history"
    entries = [
        ln[1:] for ln in history_path().read_text(encoding="utf-8").splitlines() if ln[:1] == "+"
    ]
    assert entries == ['ls -n "a b"', "ni conv1"]


def test_ctrl_c_at_the_prompt_drops_the_line(
    state_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dispatcher = RecordingDispatcher()
    assert _run("half typed\x03ls\r\x03\x04", dispatcher) == 0
    assert dispatcher.lines == ["ls"]
    # precision_tool's users leave with Ctrl-C: told how to leave, once
    hints = [ln for ln in capsys.readouterr().out.splitlines() if "Ctrl-C clears" in ln]
    assert hints == ["Ctrl-C clears the line; Ctrl-D, exit or quit leaves the shell"]


def test_exit_leaves_and_errors_keep_the_prompt(
    state_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dispatcher = Dispatcher(None, make_registry())
    status = _run("ls --bogus\rplainfail\rls -n x\rexit\rls -n never\r", dispatcher)
    assert status == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == ["listed name=x count=None all=False"]
    assert err.splitlines()[0].startswith("error: ls: unrecognized arguments: --bogus")
    assert err.splitlines()[1] == "error: it broke"
