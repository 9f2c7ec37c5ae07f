"""A private registry of tiny fake commands, so shell tests need neither the real commands nor a
workspace. `make_registry()` builds a fresh one per test."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

from precision_shell.errors import FormatError, PrecisionError
from precision_shell.shell.registry import Registry, argument, command


@dataclass(frozen=True)
class Listed:
    """What the fake `ls` returns; rendered through `str()` (no view is registered)."""

    name: str | None
    count: int | None
    everything: bool

    def __str__(self) -> str:
        return f"listed name={self.name} count={self.count} all={self.everything}"


@dataclass(frozen=True)
class FailedRun:
    """A result that carries its own failure, like `run` with a non-zero status."""

    error_message: str = "probe: exited with status 3"


@dataclass
class Calls:
    """What the handlers were called with, in order."""

    seen: list[tuple[str, Any]] = field(default_factory=list)


def make_registry(calls: Calls | None = None) -> Registry:
    reg = Registry()
    calls = calls if calls is not None else Calls()

    @command("ls", aliases=("list",), registry=reg)
    @argument("-n", "--name", complete="op", help="op name substring")
    @argument("-c", "--count", type=int, help="how many to show")
    @argument("-a", "--all", dest="everything", action="store_true", help="show everything")
    def ls_command(ctx: Any, args: argparse.Namespace) -> Listed:
        """ls [-n NAME] [-c N] [-a]

        List the fake ops.
        Second line of the description.
        """
        calls.seen.append(("ls", args))
        return Listed(args.name, args.count, args.everything)

    @command("ni", registry=reg)
    @argument("name", nargs="?", complete="op", help="op name")
    @argument("-g", "--graph", help="graph name substring")
    @argument("-a", "--attrs", action="store_true", help="every attribute")
    def ni_command(ctx: Any, args: argparse.Namespace) -> str:
        """ni NAME [-g GRAPH] [-a]

        Fake node info.
        """
        calls.seen.append(("ni", args))
        return f"node {args.name}"

    @command("cp", registry=reg)
    @argument("left", nargs="?", complete="tensor", help="left tensor")
    @argument("right", nargs="?", complete="tensor", help="right tensor")
    @argument("-n", "--names", nargs=2, complete="op", help="the two ops")
    @argument("-p", "--print", dest="top", type=int, help="rows")
    def cp_command(ctx: Any, args: argparse.Namespace) -> str:
        """cp LEFT RIGHT [-p N]

        Fake compare.
        """
        return "compared"

    @command("dc", registry=reg)
    @argument("target", complete="op", help="what to decode")
    @argument("-o", "--output", complete="path", help="output dir")
    @argument("-f", "--format", help="layout")
    def dc_command(ctx: Any, args: argparse.Namespace) -> str:
        """dc NAME [-o OUTDIR] [-f FORMAT]

        Fake decode.
        """
        return "decoded"

    @command("help", registry=reg)
    @argument("name", nargs="?", complete="command", help="the command to explain")
    def help_command(ctx: Any, args: argparse.Namespace) -> str:
        """help [CMD]

        Fake help.
        """
        return "help text"

    @command("raw", raw_args=True, registry=reg)
    def raw_command(ctx: Any, line: str) -> str:
        """raw TEXT

        Gets the rest of the line verbatim.
        """
        calls.seen.append(("raw", line))
        return f"raw<{line}>"

    @command("bad", registry=reg)
    @argument("-f", "--file", default="bad.npy", help="file")
    def bad_command(ctx: Any, args: argparse.Namespace) -> None:
        """bad [-f FILE]

        Raises a user error.
        """
        raise FormatError(args.file, "truncated after 12 of 64 bytes")

    @command("plainfail", registry=reg)
    def plainfail_command(ctx: Any, args: argparse.Namespace) -> None:
        """plainfail

        Raises a PrecisionError.
        """
        raise PrecisionError("it broke")

    @command("boom", registry=reg)
    def boom_command(ctx: Any, args: argparse.Namespace) -> None:
        """boom

        Raises an unexpected exception.
        """
        raise ValueError("boom went the handler\nsecond line of the message")

    @command("bail", registry=reg)
    def bail_command(ctx: Any, args: argparse.Namespace) -> None:
        """bail

        Calls sys.exit like a careless library.
        """
        raise SystemExit(3)

    @command("ctrlc", registry=reg)
    def ctrlc_command(ctx: Any, args: argparse.Namespace) -> None:
        """ctrlc

        Behaves as if Ctrl-C arrived mid-command.
        """
        raise KeyboardInterrupt

    @command("probe", registry=reg)
    def probe_command(ctx: Any, args: argparse.Namespace) -> FailedRun:
        """probe

        Returns a result that failed.
        """
        return FailedRun()

    return reg
