"""The command registry: one `@command` decorator fills it; `help` is generated from it.

Each command has an argparse parser whose errors raise `UsageError` instead of exiting, a
docstring whose first line is the usage line, and a handler returning a result object.
"""

from __future__ import annotations

import argparse
import difflib
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from precision_shell.errors import PrecisionError


class UsageError(PrecisionError):
    """A command line that does not parse: bad flag, missing argument, unknown command."""


class HelpShown(Exception):
    """`CMD -h` asked for help; carries the text instead of printing it."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class CommandParser(argparse.ArgumentParser):
    """An argparse parser that never prints and never exits."""

    def error(self, message: str) -> NoReturn:
        # argparse wraps a long usage over lines; an error is one line
        usage = " ".join(self.format_usage().split()[1:])
        raise UsageError(f"{self.prog}: {message} (usage: {usage})")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            raise UsageError(message.strip())
        raise HelpShown(self.format_help())

    def print_help(self, file: Any = None) -> None:
        raise HelpShown(self.format_help())


@dataclass(frozen=True)
class Argument:
    flags: tuple[str, ...]
    options: dict[str, Any]
    complete: str | None = None  # "op", "tensor", "path", "command": what Tab offers for its value

    @property
    def positional(self) -> bool:
        return not self.flags[0].startswith("-")

    @property
    def takes_value(self) -> bool:
        return self.options.get("action") not in ("store_true", "store_false", "count")


@dataclass
class Command:
    name: str
    handler: Callable[..., Any]
    aliases: tuple[str, ...] = ()
    arguments: list[Argument] = field(default_factory=list)
    raw_args: bool = False  # the handler takes the rest of the line verbatim (e.g. `run`)

    @property
    def usage(self) -> str:
        doc = (self.handler.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else self.name

    @property
    def summary(self) -> str:
        lines = [ln.strip() for ln in (self.handler.__doc__ or "").strip().splitlines()]
        body = [ln for ln in lines[1:] if ln]
        return body[0] if body else ""

    @property
    def details(self) -> str | None:
        """The docstring after its summary line: rules and notes `help CMD` prints last."""
        lines = [ln.strip() for ln in (self.handler.__doc__ or "").strip().splitlines()[1:]]
        while lines and not lines[0]:
            lines.pop(0)
        text = "\n".join(lines[1:]).strip()
        return text or None

    def parser(self) -> CommandParser:
        parser = CommandParser(
            prog=self.name,
            description=self.summary,
            epilog=self.details,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            add_help=True,
            allow_abbrev=False,
        )
        for arg in self.arguments:
            parser.add_argument(*arg.flags, **arg.options)
        return parser

    def parse(self, argv: Sequence[str]) -> argparse.Namespace:
        return self.parser().parse_args(list(argv))

    def argument_for_flag(self, flag: str) -> Argument | None:
        return next((a for a in self.arguments if flag in a.flags), None)

    def positionals(self) -> list[Argument]:
        return [a for a in self.arguments if a.positional]

    def flags(self) -> list[tuple[str, str]]:
        """(flag, help) for completion, long and short forms."""
        out = [("-h", "show this help")]
        for arg in self.arguments:
            for flag in arg.flags:
                if flag.startswith("-"):
                    out.append((flag, arg.options.get("help", "")))
        return out


class Registry:
    def __init__(self) -> None:
        self._commands: dict[str, Command] = {}
        self._aliases: dict[str, str] = {}

    def add(self, cmd: Command) -> None:
        names = (cmd.name, *cmd.aliases)
        for name in names:
            if name in self._commands or name in self._aliases or names.count(name) > 1:
                raise ValueError(f"command name {name!r} registered twice")
        self._commands[cmd.name] = cmd
        for alias in cmd.aliases:
            self._aliases[alias] = cmd.name

    def get(self, name: str) -> Command | None:
        return self._commands.get(self._aliases.get(name, name))

    def lookup(self, name: str) -> Command:
        cmd = self.get(name)
        if cmd is None:
            close = difflib.get_close_matches(name, self.all_names(), n=6, cutoff=0.5)
            # One suggestion per command: "ls or list" names the same thing twice.
            best: dict[str, str] = {}
            for match in close:
                best.setdefault(self._aliases.get(match, match), match)
            suggestions = list(best.values())[:3]
            hint = (
                f"; did you mean {' or '.join(suggestions)}?"
                if suggestions
                else "; type help for the list"
            )
            if not suggestions and shutil.which(name) is not None:  # `echo hi`, `ls -l`...
                hint = f"; `run {name} ...` (or `!{name} ...`) runs the program {name}"
            raise UsageError(f"unknown command {name!r}{hint}")
        return cmd

    def commands(self) -> list[Command]:
        return list(self._commands.values())

    def all_names(self) -> list[str]:
        return sorted([*self._commands, *self._aliases])


REGISTRY = Registry()


def argument(
    *flags: str, complete: str | None = None, **options: Any
) -> Callable[[Callable], Callable]:
    """Declare one argparse argument of the command below (stack under `@command`)."""

    def decorate(fn: Callable) -> Callable:
        # Above `@command` the argument would be dropped silently: the command is already built.
        if "_registered_command" in fn.__dict__:
            raise TypeError(f"@argument{flags} must be placed below @command on {fn.__name__}")
        pending = fn.__dict__.setdefault("_pending_arguments", [])
        pending.insert(0, Argument(tuple(flags), dict(options), complete))
        return fn

    return decorate


def command(
    name: str,
    aliases: Sequence[str] = (),
    raw_args: bool = False,
    registry: Registry | None = None,
) -> Callable[[Callable], Callable]:
    """Register `fn(ctx, args)` as a shell command; its docstring's first line is the usage."""

    def decorate(fn: Callable) -> Callable:
        cmd = Command(
            name=name,
            handler=fn,
            aliases=tuple(aliases),
            arguments=list(fn.__dict__.get("_pending_arguments", [])),
            raw_args=raw_args,
        )
        (registry or REGISTRY).add(cmd)
        fn.__dict__["_registered_command"] = name
        return fn

    return decorate
