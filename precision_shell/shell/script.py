"""Script mode: the same dispatcher over lines from a file, stdin or `-e`, with no prompt."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from precision_shell.render.output import Renderer
from precision_shell.shell.dispatcher import Dispatcher


@dataclass
class ScriptReport:
    commands: int = 0
    failures: int = 0

    @property
    def exit_status(self) -> int:
        return 1 if self.failures else 0


def split_commands(text: str) -> list[str]:
    """Split `-e "cmd; cmd"` on semicolons outside quotes."""
    parts, current, quote = [], [], ""
    escaped = False
    for ch in text:
        if escaped:
            current.append(ch)
            escaped = False
        elif ch == "\\" and quote != "'":
            current.append(ch)
            escaped = True
        elif quote:
            current.append(ch)
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            current.append(ch)
            quote = ch
        elif ch == ";":
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def run_lines(
    lines: Iterable[str], dispatcher: Dispatcher, renderer: Renderer, stop_on_error: bool = False
) -> ScriptReport:
    """Echo each command as `PrecisionTool > cmd`, run it, report failures with line numbers."""
    report = ScriptReport()
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        renderer.echo(line)
        outcome = dispatcher.execute(line)
        if outcome.exit_requested:
            break
        report.commands += 1
        renderer.outcome(outcome, line_number=number)
        if not outcome.ok:
            report.failures += 1
            # Ctrl-C in a script means "stop the script", not "skip this one command".
            if stop_on_error or outcome.interrupted:
                break
    return report
