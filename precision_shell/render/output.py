"""The one place that prints: turns outcomes and result objects into rich output.

Result types register their renderer with `@renders(ResultType)`; the script runner and the
REPL call `Renderer.outcome()`. Errors go to stderr as one red line.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any, TextIO, cast

from rich.console import Console, ConsoleOptions
from rich.segment import Segment
from rich.text import Text

from precision_shell.file_name_text import controls_shown, shown
from precision_shell.shell.dispatcher import HelpText, Outcome, write_traceback_log

PROMPT = "PrecisionTool > "
_RENDERERS: dict[type, Callable[[Console, Any], None]] = {}


def renders(result_type: type) -> Callable[[Callable[[Console, Any], None]], Callable]:
    def decorate(fn: Callable[[Console, Any], None]) -> Callable[[Console, Any], None]:
        _RENDERERS[result_type] = fn
        return fn

    return decorate


class ShownText(io.TextIOBase):
    """A text stream that shows each byte of a file name that was not UTF-8 as `\\xNN`
    (`file_name_text.shown`): a terminal cannot show it, and a strict UTF-8 stdout (the
    usual locale) would fail on it."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(shown(text))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "encoding", None) or "utf-8"


class TrailingSpaceStripper(io.TextIOBase):
    """A text stream that drops the spaces rich pads table cells with at the end of each line.

    Plain (script) output is read by people and diffed by programs: `line == line.rstrip()`.
    Text after the last newline is held until the line ends, so spaces in mid-line survive.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._pending = ""

    def write(self, text: str) -> int:
        lines = (self._pending + text).split("\n")
        self._pending = lines.pop()
        if lines:
            self.stream.write("".join(line.rstrip(" ") + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        # What follows may continue the line: keep its trailing spaces back until it ends.
        body = self._pending.rstrip(" ")
        if body:
            self.stream.write(body)
            self._pending = self._pending[len(body) :]
        self.stream.flush()

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "encoding", None) or "utf-8"


def plain_width(default: int = 120) -> int:
    """Width of plain output: $COLUMNS when it is a number, else `default` (a pipe has none)."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return default
    return columns if columns > 0 else default


class _DataConsole(Console):
    """A console whose text never carries a control character of the data it shows: rich's
    own styles are separate control-free segments, so only the data's are escaped."""

    def render(self, renderable: Any, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control is None:
                text = controls_shown(segment.text)
                yield segment if text == segment.text else Segment(text, segment.style)
            else:
                yield segment


def make_console(
    color: bool, stderr: bool = False, width: int | None = None, file: TextIO | None = None
) -> Console:
    stream = ShownText(file or (sys.stderr if stderr else sys.stdout))
    if color:
        return _DataConsole(
            file=cast(TextIO, stream), highlight=False, width=width, force_terminal=True
        )
    return _DataConsole(
        # rich only writes and flushes `file`; its IO[str] annotation is narrower than that.
        file=cast(TextIO, TrailingSpaceStripper(cast(TextIO, stream))),
        highlight=False,
        color_system=None,
        no_color=True,
        width=width or plain_width(),
        force_terminal=False,
        emoji=False,
    )


class Renderer:
    def __init__(self, out: Console, err: Console) -> None:
        import precision_shell.render.views  # noqa: F401  (registers the result views)

        self.out = out
        self.err = err

    def echo(self, line: str) -> None:
        # soft_wrap: a long command stays one line, so a script log reads like the session.
        self.out.print(f"{PROMPT}{line}", markup=False, highlight=False, soft_wrap=True)

    def result(self, result: Any) -> None:
        if result is None:
            return
        for cls in type(result).__mro__:
            fn = _RENDERERS.get(cls)
            if fn is not None:
                fn(self.out, result)
                return
        self.out.print(str(result), markup=False, highlight=False, soft_wrap=True)

    def note(self, message: str) -> None:
        """A one-line hint (not a failure) on stdout."""
        self.out.print(Text(message, style="yellow"), highlight=False, soft_wrap=True)

    def error(self, message: str, line_number: int | None = None) -> None:
        where = f"line {line_number}: " if line_number is not None else ""
        # A Text, not markup: messages hold user text (paths, op names) with brackets/backslashes.
        line = Text.assemble(("error:", "bold red"), f" {where}{message}")
        self.err.print(line, highlight=False, soft_wrap=True)

    def outcome(self, outcome: Outcome, line_number: int | None = None) -> None:
        """Print a result and/or its error; a failing view becomes the outcome's error. The
        workspace's new warnings come first, on stderr (a script's stdout stays its results:
        `replay --json` one JSON object)."""
        if outcome.warnings:
            from precision_shell.render.summary import render_index_warnings

            render_index_warnings(self.err, outcome.warnings)
        if outcome.result is not None:
            try:
                self.result(outcome.result)
            except KeyboardInterrupt:
                outcome.mark_stopped()
            except Exception as exc:  # a view bug must not kill the shell either
                outcome.internal_log = write_traceback_log(outcome.line)
                outcome.error = f"internal error while printing: {type(exc).__name__}: {exc}"
        if outcome.error is not None:
            message = outcome.error
            if outcome.internal_log:
                message += f" (traceback in {outcome.internal_log})"
            self.error(message, line_number)


@renders(HelpText)
def _help_text(console: Console, result: HelpText) -> None:
    console.print(result.text.rstrip(), markup=False)
