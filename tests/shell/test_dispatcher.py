"""The dispatcher: splitting, no-op lines, exit words, and every way a handler can fail."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from precision_shell.shell.dispatcher import Dispatcher, Outcome, write_traceback_log
from tests.shell.fake_commands import Calls, Listed, make_registry


@pytest.fixture
def calls() -> Calls:
    return Calls()


@pytest.fixture
def dispatcher(calls: Calls) -> Dispatcher:
    return Dispatcher(context=None, registry=make_registry(calls))


@pytest.fixture
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


def test_shlex_quotes_keep_a_value_with_spaces(dispatcher: Dispatcher) -> None:
    outcome = dispatcher.execute('  ls -n "a b" -c 2  ')
    assert outcome.ok
    assert outcome.line == 'ls -n "a b" -c 2'
    assert outcome.result == Listed("a b", 2, False)


def test_single_quotes_and_alias(dispatcher: Dispatcher) -> None:
    assert dispatcher.execute("list -n 'x;y z' -a").result == Listed("x;y z", None, True)


@pytest.mark.parametrize("line", ["", "   ", "\t", "# ls -n x", "   # comment"])
def test_blank_and_comment_lines_are_no_ops(
    dispatcher: Dispatcher, calls: Calls, line: str
) -> None:
    outcome = dispatcher.execute(line)
    assert outcome == Outcome(line=line.strip())
    assert outcome.ok and not outcome.exit_requested
    assert calls.seen == []


@pytest.mark.parametrize("line", ["exit", "quit", "  quit  "])
def test_exit_words_request_exit(dispatcher: Dispatcher, calls: Calls, line: str) -> None:
    outcome = dispatcher.execute(line)
    assert outcome.exit_requested
    assert outcome.ok and outcome.result is None
    assert calls.seen == []


@pytest.mark.parametrize("line", ["exit now", "quit 0"])
def test_exit_words_take_no_arguments(dispatcher: Dispatcher, line: str) -> None:
    outcome = dispatcher.execute(line)
    name, extra = line.split()
    assert outcome.error == f"{name}: unrecognized arguments: {extra}"
    assert not outcome.exit_requested


def test_unbalanced_quote_is_a_usage_error(dispatcher: Dispatcher) -> None:
    outcome = dispatcher.execute('ls -n "abc')
    assert outcome.error == "cannot split the line: No closing quotation (check the quotes)"
    assert not outcome.ok and outcome.internal_log is None


def test_unknown_command_reports_did_you_mean(dispatcher: Dispatcher) -> None:
    assert dispatcher.execute("nii foo").error == "unknown command 'nii'; did you mean ni?"


def test_bad_flag_names_command_and_flag(dispatcher: Dispatcher) -> None:
    error = dispatcher.execute("ni foo --bogus").error
    assert error is not None and error.startswith("ni: unrecognized arguments: --bogus")


def test_precision_error_is_its_one_line(dispatcher: Dispatcher, state_home: Path) -> None:
    outcome = dispatcher.execute("bad -f /data/x.npy")
    assert outcome.error == "/data/x.npy: truncated after 12 of 64 bytes"
    assert outcome.internal_log is None
    assert not outcome.ok
    assert not state_home.exists()  # no log for a user error


def test_unexpected_exception_is_one_line_plus_a_log(
    dispatcher: Dispatcher, state_home: Path
) -> None:
    outcome = dispatcher.execute("boom")
    assert outcome.error == "internal error: ValueError: boom went the handler"
    assert not outcome.ok
    log = Path(outcome.internal_log or "")
    assert log.parent == state_home / "precision_shell" / "logs"
    text = log.read_text(encoding="utf-8")
    assert text.startswith("command: boom\nTraceback (most recent call last):")
    assert "in boom_command" in text
    assert "ValueError: boom went the handler\nsecond line of the message" in text


def test_two_internal_errors_get_two_logs(dispatcher: Dispatcher, state_home: Path) -> None:
    first = dispatcher.execute("boom").internal_log
    second = dispatcher.execute("boom").internal_log
    assert first != second
    assert sorted(p.name for p in (state_home / "precision_shell" / "logs").iterdir()) == sorted(
        [Path(first or "").name, Path(second or "").name]
    )


def test_system_exit_in_a_handler_does_not_end_the_shell(
    dispatcher: Dispatcher, state_home: Path
) -> None:
    outcome = dispatcher.execute("bail")
    assert outcome.error == "internal error: SystemExit: 3"
    assert Path(outcome.internal_log or "").is_file()
    assert not outcome.exit_requested


def test_keyboard_interrupt_in_a_handler_is_interrupted(dispatcher: Dispatcher) -> None:
    outcome = dispatcher.execute("ctrlc")
    assert outcome.interrupted
    assert outcome.error == "interrupted"
    assert not outcome.ok


def test_result_with_error_message_fails_the_outcome(dispatcher: Dispatcher) -> None:
    outcome = dispatcher.execute("probe")
    assert outcome.error == "probe: exited with status 3"
    assert outcome.result is not None  # still shown
    assert not outcome.ok


def test_raw_command_gets_the_rest_verbatim_even_with_odd_quotes(
    dispatcher: Dispatcher, calls: Calls
) -> None:
    outcome = dispatcher.execute("raw echo it's   spaced\t'x'")
    assert outcome.ok
    assert outcome.result == "raw<echo it's   spaced\t'x'>"
    assert dispatcher.execute("raw").result == "raw<>"
    assert dispatcher.execute("raw\tx y").result == "raw<x y>"
    assert [c[1] for c in calls.seen] == ["echo it's   spaced\t'x'", "", "x y"]


def test_dash_h_on_a_command_without_flags_is_help(dispatcher: Dispatcher) -> None:
    outcome = dispatcher.execute("probe -h")
    assert outcome.ok
    assert outcome.result.text.startswith("usage: probe [-h]")


@pytest.fixture
def real_dispatcher() -> Dispatcher:
    import precision_shell.commands  # noqa: F401  (registers every command)

    return Dispatcher(context=None)


@pytest.mark.parametrize("line", ["!echo hi", "! echo hi", "run echo hi", "run   echo hi"])
def test_bang_and_run_route_to_the_run_command(real_dispatcher: Dispatcher, line: str) -> None:
    from precision_shell.commands.system import ShellRun

    outcome = real_dispatcher.execute(line)
    assert outcome.ok
    assert outcome.result == ShellRun("echo hi", 0, "hi\n", "")


def test_run_passes_quotes_to_the_shell_verbatim(real_dispatcher: Dispatcher) -> None:
    outcome = real_dispatcher.execute("""run printf '%s|' "a  b" it\\'s""")
    assert outcome.result.stdout == "a  b|it's|"


def test_run_with_failing_status_fails_the_outcome(real_dispatcher: Dispatcher) -> None:
    outcome = real_dispatcher.execute("!exit 3")
    assert outcome.result.returncode == 3
    assert outcome.error == "run: 'exit 3' exited with status 3"


def test_bare_bang_is_a_usage_error(real_dispatcher: Dispatcher) -> None:
    assert real_dispatcher.execute("!").error == (
        "run: give the shell command to run, e.g. run ls -l"
    )


def test_shell_commands_are_never_implicit(real_dispatcher: Dispatcher) -> None:
    outcome = real_dispatcher.execute("echo hi")
    assert outcome.result is None
    assert outcome.error is not None and outcome.error.startswith("unknown command 'echo'")


def test_a_failing_view_becomes_a_one_line_internal_error(tmp_path, monkeypatch):
    import io

    from rich.console import Console

    from precision_shell.render import output
    from precision_shell.shell.dispatcher import Outcome

    class Exploding:
        pass

    def boom(console, result):
        raise RuntimeError("view bug")

    monkeypatch.setitem(output._RENDERERS, Exploding, boom)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    out, err = io.StringIO(), io.StringIO()
    renderer = output.Renderer(Console(file=out), Console(file=err, width=300))
    outcome = Outcome(line="show", result=Exploding())
    renderer.outcome(outcome, line_number=3)
    assert not outcome.ok
    assert "internal error while printing: RuntimeError: view bug" in err.getvalue()
    assert "line 3:" in err.getvalue()
    assert outcome.internal_log and "view bug" in Path(outcome.internal_log).read_text()


def test_a_command_line_naming_a_non_utf8_file_is_logged_with_its_bytes(state_home: Path) -> None:
    line = "pt " + os.fsdecode(b"caf\xe9")  # a file name tab-completed in a Latin-1 dir
    try:
        raise ValueError("a bug")
    except ValueError:
        log = Path(write_traceback_log(line))
    assert log.parent == state_home / "precision_shell" / "logs"
    assert log.read_bytes().startswith(b"command: pt caf\xe9\nTraceback")
