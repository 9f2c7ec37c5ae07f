"""System commands: `help`, `run` / `!` and `reload`."""

from __future__ import annotations

import argparse
import subprocess
from dataclasses import dataclass

from precision_shell.shell.context import ShellContext
from precision_shell.shell.registry import REGISTRY, argument, command
from precision_shell.workspace.workspace import WorkspaceSummary


@dataclass(frozen=True)
class HelpEntry:
    name: str
    aliases: tuple[str, ...]
    usage: str
    summary: str


@dataclass(frozen=True)
class HelpIndex:
    """`help`: every command with its usage line and summary."""

    entries: list[HelpEntry]


@dataclass(frozen=True)
class CommandHelp:
    """`help CMD`: usage, summary and every flag."""

    name: str
    aliases: tuple[str, ...]
    usage: str
    text: str


@dataclass(frozen=True)
class ShellRun:
    """Output of `run CMD`."""

    command: str
    returncode: int
    stdout: str
    stderr: str

    @property
    def error_message(self) -> str | None:
        if self.returncode == 0:
            return None
        return f"run: {self.command!r} exited with status {self.returncode}"


@dataclass(frozen=True)
class WorkspaceReloaded:
    """`reload`: what reading every file of the workspace again found."""

    summary: WorkspaceSummary
    warnings: list[str]


@command("help", aliases=("?",))
@argument("name", nargs="?", complete="command", help="the command to explain")
def help_command(ctx: ShellContext, args: argparse.Namespace) -> HelpIndex | CommandHelp:
    """help [CMD]

    List the commands, or explain one with all of its flags.
    """
    if args.name in _EXIT.aliases or args.name == _EXIT.name:
        return CommandHelp(_EXIT.name, _EXIT.aliases, _EXIT.usage, f"{_EXIT.summary}\n")
    if args.name:
        cmd = REGISTRY.lookup(args.name)
        return CommandHelp(cmd.name, cmd.aliases, cmd.usage, cmd.parser().format_help())
    entries = [HelpEntry(c.name, c.aliases, c.usage, c.summary) for c in REGISTRY.commands()]
    entries.append(_EXIT)
    return HelpIndex(sorted(entries, key=lambda e: e.name))


# not a command: the dispatcher ends the session on these words (and on Ctrl-D)
_EXIT = HelpEntry("exit", ("quit",), "exit | quit | Ctrl-D", "Leave the shell (exit status 0).")


@command("run", raw_args=True)
def run_command(ctx: ShellContext, line: str) -> ShellRun:
    """run CMD | !CMD

    Run a shell command without leaving the shell (never implicit).
    """
    if not line:
        from precision_shell.shell.registry import UsageError

        raise UsageError("run: give the shell command to run, e.g. run ls -l")
    proc = subprocess.run(line, shell=True, capture_output=True, text=True, errors="replace")
    return ShellRun(line, proc.returncode, proc.stdout, proc.stderr)


@command("reload")
def reload_command(ctx: ShellContext, args: argparse.Namespace) -> WorkspaceReloaded:
    """reload

    Read the whole workspace again (no cache) and show what it holds.

    Changed files are noticed before every command anyway; this is for when in doubt.
    """
    ws = ctx.reload()
    return WorkspaceReloaded(ws.summary(), list(ws.warnings))
