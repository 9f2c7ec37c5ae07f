"""The command registry: usage/summary from docstrings, duplicates, lookups, parser errors."""

from __future__ import annotations

import argparse

import pytest

from precision_shell.shell.dispatcher import Dispatcher, HelpText
from precision_shell.shell.registry import HelpShown, Registry, UsageError, argument, command
from tests.shell.fake_commands import make_registry


def test_usage_is_first_docstring_line_and_summary_the_next_nonempty_line() -> None:
    cmd = make_registry().get("ls")
    assert cmd is not None
    assert cmd.usage == "ls [-n NAME] [-c N] [-a]"
    assert cmd.summary == "List the fake ops."


def test_command_without_docstring_has_name_as_usage_and_no_summary() -> None:
    reg = Registry()

    @command("bare", registry=reg)
    def bare(ctx: object, args: argparse.Namespace) -> None:
        return None

    cmd = reg.lookup("bare")
    assert (cmd.usage, cmd.summary) == ("bare", "")


def test_every_real_command_has_usage_summary_and_help_for_each_argument() -> None:
    import precision_shell.commands  # noqa: F401  (registers every command)
    from precision_shell.shell.registry import REGISTRY

    commands = REGISTRY.commands()
    assert {"ls", "ni", "pt", "cp", "dc", "run", "help"} <= {c.name for c in commands}
    problems = []
    for cmd in commands:
        if not (cmd.handler.__doc__ or "").strip():
            problems.append(f"{cmd.name}: no docstring")
            continue
        if not cmd.usage.startswith(cmd.name):
            problems.append(f"{cmd.name}: usage line {cmd.usage!r} does not start with the name")
        if not cmd.summary:
            problems.append(f"{cmd.name}: no summary line after the usage line")
        lines = [ln.strip() for ln in cmd.handler.__doc__.strip().splitlines()]
        after = lines[lines.index(cmd.summary) + 1 :]
        if after and after[0] and not cmd.summary.endswith("."):  # help shows it alone
            problems.append(f"{cmd.name}: summary line runs on: {cmd.summary!r}")
        for arg in cmd.arguments:
            if not str(arg.options.get("help") or "").strip():
                problems.append(f"{cmd.name}: {'/'.join(arg.flags)} has no help text")
    assert problems == []


def test_aliases_resolve_to_the_command_and_are_listed() -> None:
    reg = make_registry()
    assert reg.get("list") is reg.get("ls")
    assert "list" in reg.all_names()
    assert "list" not in [c.name for c in reg.commands()]


def test_duplicate_name_or_alias_raises_and_leaves_registry_unchanged() -> None:
    reg = make_registry()
    before = reg.all_names()

    def handler(ctx: object, args: argparse.Namespace) -> None:
        """x"""

    with pytest.raises(ValueError, match="command name 'ls' registered twice"):
        command("ls", registry=reg)(handler)
    with pytest.raises(ValueError, match="command name 'list' registered twice"):
        command("fresh", aliases=("list",), registry=reg)(handler)
    with pytest.raises(ValueError, match="command name 'twin' registered twice"):
        command("twin", aliases=("twin",), registry=reg)(handler)
    assert reg.all_names() == before


def test_argument_above_command_is_refused_instead_of_dropped() -> None:
    reg = Registry()

    def handler(ctx: object, args: argparse.Namespace) -> None:
        """late"""

    registered = command("late", registry=reg)(handler)
    with pytest.raises(TypeError, match="must be placed below @command"):
        argument("-x", help="too late")(registered)


def test_unknown_command_near_miss_gets_did_you_mean() -> None:
    with pytest.raises(UsageError) as err:
        make_registry().lookup("lss")
    assert str(err.value) == "unknown command 'lss'; did you mean ls?"


def test_unknown_command_far_miss_points_to_help() -> None:
    with pytest.raises(UsageError) as err:
        make_registry().lookup("zzzzzz")
    assert str(err.value) == "unknown command 'zzzzzz'; type help for the list"


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--bogus"], "ls: unrecognized arguments: --bogus"),
        (["-n"], "ls: argument -n/--name: expected one argument"),
        (["-c", "many"], "ls: argument -c/--count: invalid int value: 'many'"),
        (["--na", "x"], "ls: unrecognized arguments: --na x"),  # no abbreviations
    ],
)
def test_parser_errors_raise_usage_error_naming_command_and_flag(
    argv: list[str], fragment: str
) -> None:
    cmd = make_registry().lookup("ls")
    with pytest.raises(UsageError) as err:
        cmd.parse(argv)
    text = str(err.value)
    assert text.startswith(fragment)
    assert text.endswith("(usage: ls [-h] [-n NAME] [-c COUNT] [-a])")


def test_parse_returns_namespace_with_values() -> None:
    args = make_registry().lookup("ls").parse(["-n", "conv", "-c", "3", "-a"])
    assert (args.name, args.count, args.everything) == ("conv", 3, True)


def test_dash_h_raises_help_shown_with_the_text() -> None:
    with pytest.raises(HelpShown) as shown:
        make_registry().lookup("ls").parse(["-h"])
    assert shown.value.text.startswith("usage: ls [-h] [-n NAME] [-c COUNT] [-a]")
    assert "List the fake ops." in shown.value.text
    assert "op name substring" in shown.value.text


def test_dash_h_through_dispatcher_is_help_text_not_system_exit() -> None:
    outcome = Dispatcher(None, make_registry()).execute("ls -h")
    assert outcome.ok
    assert isinstance(outcome.result, HelpText)
    assert "-n NAME, --name NAME  op name substring" in outcome.result.text


def test_flags_lists_short_and_long_forms_with_help() -> None:
    flags = dict(make_registry().lookup("ls").flags())
    assert flags == {
        "-h": "show this help",
        "-n": "op name substring",
        "--name": "op name substring",
        "-c": "how many to show",
        "--count": "how many to show",
        "-a": "show everything",
        "--all": "show everything",
    }


def test_argument_order_follows_source_order() -> None:
    cmd = make_registry().lookup("cp")
    assert [a.flags for a in cmd.arguments] == [
        ("left",),
        ("right",),
        ("-n", "--names"),
        ("-p", "--print"),
    ]
    assert [a.flags[0] for a in cmd.positionals()] == ["left", "right"]


def test_a_program_typed_as_a_command_is_told_of_run() -> None:
    """QA: `echo hi` said "unknown command 'echo'", not how to run a program."""
    with pytest.raises(UsageError) as err:
        make_registry().lookup("echo")
    assert (
        str(err.value)
        == "unknown command 'echo'; `run echo ...` (or `!echo ...`) runs the program echo"
    )
