"""Rendering of `help` and `run` results."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from precision_shell.commands.system import CommandHelp, HelpIndex, ShellRun
from precision_shell.render.output import renders


@renders(HelpIndex)
def render_help_index(console: Console, result: HelpIndex) -> None:
    table = Table(show_header=True, show_edge=False, box=None, pad_edge=False)
    table.add_column("command", style="bold")
    table.add_column("usage")
    table.add_column("what it does")
    for e in result.entries:
        name = e.name + (f" ({', '.join(e.aliases)})" if e.aliases else "")
        table.add_row(name, e.usage, e.summary)
    console.print(table)
    console.print("help CMD shows every flag of CMD.")


@renders(CommandHelp)
def render_command_help(console: Console, result: CommandHelp) -> None:
    console.print(f"usage: {result.usage}", markup=False)
    if result.aliases:
        console.print(f"aliases: {', '.join(result.aliases)}", markup=False)
    console.print()
    console.print(_without_usage(result.text).rstrip(), markup=False)


def _without_usage(text: str) -> str:
    """argparse's help minus its own usage paragraph: the docstring's usage line says it once."""
    if not text.startswith("usage:"):
        return text
    _, sep, rest = text.partition("\n\n")
    return rest if sep else ""


@renders(ShellRun)
def render_shell_run(console: Console, result: ShellRun) -> None:
    if result.stdout:
        console.print(result.stdout.rstrip("\n"), markup=False, highlight=False)
    if result.stderr:
        console.print(result.stderr.rstrip("\n"), markup=False, highlight=False, style="yellow")
