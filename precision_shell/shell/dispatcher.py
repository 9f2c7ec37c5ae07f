"""One command line -> one outcome: parse, look up, run the handler, catch what goes wrong.

The dispatcher never prints. It returns an `Outcome` holding the handler's result object or
the error; the REPL and the script runner hand it to the render layer.
"""

from __future__ import annotations

import datetime as _dt
import os
import shlex
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precision_shell import termination
from precision_shell.errors import PrecisionError
from precision_shell.file_name_text import TEXT_ERRORS
from precision_shell.shell.registry import REGISTRY, HelpShown, Registry, UsageError


@dataclass
class Outcome:
    """What running one line produced: a result, a user error, or an internal error."""

    line: str
    result: Any = None
    error: str | None = None
    internal_log: str | None = None  # path of the traceback log for unexpected exceptions
    interrupted: bool = False
    terminated: bool = False  # SIGTERM cut it: the shell stops after it (`termination`)
    exit_requested: bool = False
    # the workspace's warnings not shown before (its index, or one a command added)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None and not self.interrupted

    def mark_stopped(self) -> None:
        """Ctrl-C or SIGTERM cut the command (or the printing of its result): it fails with
        its own error, `interrupted`, or on SIGTERM `terminated (SIGTERM): ...` (said once)."""
        self.interrupted = True
        if self.terminated:
            return
        self.terminated = termination.received()
        self.error = termination.stopped_text(self.error)


@dataclass(frozen=True)
class HelpText:
    """Plain help text (from `CMD -h`)."""

    text: str


def split_line(line: str) -> list[str]:
    try:
        return shlex.split(line, comments=False, posix=True)
    except ValueError as exc:
        raise UsageError(f"cannot split the line: {exc} (check the quotes)") from None


def log_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "precision_shell" / "logs"


def write_traceback_log(line: str) -> str:
    """Save the current exception's traceback; return the log path for the one-line message."""
    text = f"command: {line}\n{traceback.format_exc()}"
    # Microseconds plus exclusive create: two failures in the same second must not share a log.
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    for directory in (log_dir(), Path(tempfile.gettempdir()) / "precision_shell"):
        try:
            directory.mkdir(parents=True, exist_ok=True)
            for attempt in range(100):
                suffix = f"-{attempt}" if attempt else ""
                path = directory / f"error-{stamp}-{os.getpid()}{suffix}.log"
                try:
                    with path.open("x", encoding="utf-8", errors=TEXT_ERRORS) as log:
                        log.write(text)
                    return str(path)
                except FileExistsError:
                    continue
        except OSError:
            continue
    return "(no writable log dir)"


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


class Dispatcher:
    """Runs command lines against a context object shared by all handlers."""

    EXIT_WORDS = frozenset({"exit", "quit"})

    def __init__(self, context: Any, registry: Registry | None = None) -> None:
        self.context = context
        self.registry = registry or REGISTRY

    def execute(self, line: str) -> Outcome:
        outcome = self._execute(line)
        if termination.received():  # a command may keep what it did and return: it was cut
            outcome.mark_stopped()
        # what the index (opened or brought up to date by this command) or the command
        # itself warned of, each shown once in a session: a script sees it too
        new_warnings = getattr(self.context, "new_warnings", None)
        if callable(new_warnings):
            outcome.warnings = new_warnings()
        return outcome

    def _execute(self, line: str) -> Outcome:
        stripped = line.strip()
        outcome = Outcome(line=stripped)
        if not stripped or stripped.startswith("#"):
            return outcome
        try:
            if stripped.startswith("!"):
                outcome.result = self._run_handler("run", stripped[1:].strip(), raw=True)
                outcome.error = getattr(outcome.result, "error_message", None)
                return outcome
            # A raw command (`run`) gets the rest of the line verbatim, so it must be found
            # before shlex, which would reject e.g. `run echo it's`.
            first, *rest_text = stripped.split(maxsplit=1)
            raw_cmd = self.registry.get(first)
            if raw_cmd is not None and raw_cmd.raw_args:
                verbatim = rest_text[0] if rest_text else ""
                outcome.result = self._run_handler(raw_cmd.name, verbatim, raw=True)
            else:
                words = split_line(stripped)
                if not words:
                    return outcome
                name, rest = words[0], words[1:]
                if name in self.EXIT_WORDS:
                    if rest:  # `exit now`: a typo, or a command meant for something else
                        raise UsageError(f"{name}: unrecognized arguments: {shlex.join(rest)}")
                    outcome.exit_requested = True
                    return outcome
                cmd = self.registry.lookup(name)
                if cmd.raw_args:  # reached only when the name was quoted
                    outcome.result = self._run_handler(cmd.name, shlex.join(rest), raw=True)
                else:
                    outcome.result = self._run_handler(cmd.name, rest)
            # A result may carry its own failure (e.g. `run` with a non-zero exit status), or
            # a Ctrl-C it absorbed to keep what was done (a partial compare): a script stops.
            outcome.error = getattr(outcome.result, "error_message", None)
            outcome.interrupted = bool(getattr(outcome.result, "user_interrupted", False))
        except HelpShown as shown:
            outcome.result = HelpText(shown.text)
        except KeyboardInterrupt:
            outcome.mark_stopped()
        except PrecisionError as exc:
            outcome.error = str(exc)
        # SystemExit too: a handler (or a library under it) calling sys.exit must not end the shell.
        except (Exception, SystemExit) as exc:
            outcome.internal_log = write_traceback_log(stripped)
            outcome.error = f"internal error: {type(exc).__name__}: {_first_line(str(exc))}"
        return outcome

    def _run_handler(self, name: str, argv: Any, raw: bool = False) -> Any:
        cmd = self.registry.lookup(name)
        args = argv if raw else cmd.parse(argv)
        # Files may have changed since the last command (a benchmark re-harvested outside):
        # the context then checks its index on the command's first use of it.
        begin = getattr(self.context, "begin_command", None)
        if callable(begin):
            begin()
        return cmd.handler(self.context, args)
