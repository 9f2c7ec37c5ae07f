"""`run` / `!` and `help` through the real dispatcher."""

from __future__ import annotations

import pytest

from precision_shell.commands.system import CommandHelp, HelpIndex, ShellRun
from precision_shell.shell.registry import REGISTRY
from tests.commands.shell_fixture import open_shell, run_fail, run_ok


@pytest.fixture(scope="module")
def shell(tiny_demo_shared):
    return open_shell(tiny_demo_shared[0])


def test_run_echo_captures_stdout(shell):
    result = run_ok(shell, "run echo hi")
    assert result == ShellRun("echo hi", 0, "hi\n", "")
    assert result.error_message is None


def test_bang_is_run_and_keeps_the_line_verbatim(shell):
    result = run_ok(shell, """!printf '%s|' "a  b" c""")
    assert result.command == """printf '%s|' "a  b" c"""
    assert result.stdout == "a  b|c|"
    assert run_ok(shell, "run echo it\\'s").stdout == "it's\n"


def test_run_false_marks_the_outcome_failed_and_keeps_the_output(shell):
    outcome = run_fail(shell, "run false")
    assert outcome.error == "run: 'false' exited with status 1"
    assert isinstance(outcome.result, ShellRun) and outcome.result.returncode == 1
    outcome = run_fail(shell, "run echo out; echo err >&2; exit 3")
    assert outcome.error == "run: 'echo out; echo err >&2; exit 3' exited with status 3"
    assert (outcome.result.stdout, outcome.result.stderr) == ("out\n", "err\n")


def test_run_without_a_command_is_a_usage_error(shell):
    assert run_fail(shell, "run").error == "run: give the shell command to run, e.g. run ls -l"


def test_help_lists_every_registered_command(shell):
    result = run_ok(shell, "help")
    assert isinstance(result, HelpIndex)
    names = [e.name for e in result.entries]
    registered = {c.name for c in REGISTRY.commands()}
    assert {"ls", "ni", "pt", "cp", "dc", "run", "help"} <= registered
    assert set(names) == registered | {"exit"} and names == sorted(names)
    by_name = {e.name: e for e in result.entries}
    assert (
        by_name["ni"].usage
        == "ni [-n] NAME [-g GRAPH] [-r RUN] [-a [ATTR]] [-s DEPTH] [--rank R] [--step S]"
    )
    assert by_name["help"].aliases == ("?",)
    assert by_name["exit"].aliases == ("quit",)
    assert all(e.summary for e in result.entries), "every command has a one-line summary"


def test_help_ni_shows_its_flags(shell):
    result = run_ok(shell, "help ni")
    assert isinstance(result, CommandHelp) and result.name == "ni"
    for flag in ("-n NAME, --name NAME", "-g GRAPH, --graph GRAPH", "-r RUN, --run RUN",
                 "-a [ATTR], --attrs [ATTR]", "-s DEPTH, --subgraph DEPTH"):  # fmt: skip
        assert flag in result.text
    assert "also show every attribute" in result.text
    assert run_ok(shell, "? cp").name == "cp"


def test_every_flag_of_the_inspection_commands_has_help_text():
    for name in ("ls", "ni", "pt", "cp", "dc", "help"):
        cmd = REGISTRY.lookup(name)
        assert cmd.usage.startswith(name + " ") or cmd.usage == name
        for arg in cmd.arguments:
            assert arg.options.get("help"), f"{name} {arg.flags} has no help text"


def test_help_for_an_unknown_command_suggests_one(shell):
    assert run_fail(shell, "help nii").error == "unknown command 'nii'; did you mean ni?"
