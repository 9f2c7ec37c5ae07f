"""Rendering of `replay`: a panel per op, own vs inherited vs total per output, and JSON."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from precision_shell.commands.replay import JsonText
from precision_shell.render.numbers import fmt_num
from precision_shell.render.output import renders
from precision_shell.replay.measure import OwnError
from precision_shell.replay.session import (
    SIDES,
    OutputReplay,
    ReplayReport,
    dtype_word,
    finite_only_text,
    is_wrong,
)

_ROWS = (
    ("own (device vs replay)", "own"),
    ("inherited (replay vs benchmark)", "inherited"),
    ("total (device vs benchmark)", "total"),
    ("isolated (benchmark inputs vs benchmark)", "isolated"),
)


@renders(JsonText)
def render_json_text(console: Console, result: JsonText) -> None:
    # No markup, wrapping or highlighting: the output must parse as the JSON it is.
    console.print(result.text, markup=False, soft_wrap=True, highlight=False)


def _error_cells(error: OwnError | None) -> list[str]:
    if error is None:
        return ["-"] * 4
    # *: over the elements finite on both sides only (a line under the table says so)
    mark = "*" if error.left_out else ""
    return [
        fmt_num(error.cosine, 9) + mark,
        fmt_num(error.max_abs_error),
        fmt_num(error.relative_euclidean_distance) + mark,
        fmt_num(error.max_ulp, 3),
    ]


def _left_out_line(measure: str, error: OwnError) -> Text:
    """`* total: cosine and rel. Euclidean over the 255 of 256 elements finite on both sides;
    left out: 1 NaN/inf on the device only`."""
    first, second = SIDES[measure]
    kinds = (
        (error.nonfinite_first, f"NaN/inf on the {first} only"),
        (error.nonfinite_second, f"NaN/inf on the {second} only"),
        (error.nonfinite_differ, "NaN/inf on both sides, different"),
        (error.nonfinite_same, "the same NaN/inf on both sides"),
    )
    parts = ", ".join(f"{n} {what}" for n, what in kinds if n)
    line = f"* {measure}: {finite_only_text(error.elements, error.left_out)}; left out: {parts}"
    if measure == "total":
        line += " (vc's CSV takes every element: nan/inf there)"
    return Text(line, style="yellow" if error.nonfinite_mismatch else "dim")


def _output_table(out: OutputReplay) -> Table:
    shape = "x".join(str(d) for d in out.shape) or "scalar"
    title = f"output {out.slot}  {out.dtype} {out.layout} [{shape}]"
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("")
    for column in ("cosine", "max abs error", "rel. Euclidean", "max ULP"):
        table.add_column(column, justify="right")
    for label, field in _ROWS:
        table.add_row(label, *_error_cells(getattr(out, field)))
    return table


def _attr_lines(attrs: dict[str, Any], indent: str = "  ") -> list[Text]:
    """One line per attribute; a fused op's members each get a line and their attributes."""
    lines: list[Text] = []
    for key, value in attrs.items():
        if isinstance(value, dict):
            lines.append(Text(f"{indent}{key}"))
            lines += _attr_lines(value, indent + "  ") or [Text(f"{indent}  (no attributes)")]
        else:
            lines.append(Text(f"{indent}{key}: {value}"))
    return lines


def _output_parts(out: OutputReplay) -> list[Any]:
    style = "bold red" if is_wrong(out.own, out.dtype) or out.constants_differ else "green"
    parts: list[Any] = [_output_table(out)]
    for _, measure in _ROWS:
        error = getattr(out, measure)
        if error is not None and error.left_out:
            parts.append(_left_out_line(measure, error))
    parts.append(Text(out.verdict, style=style))
    if out.overflow:
        parts.append(
            Text(
                f"{out.overflow} element(s) overflow {dtype_word(out.dtype)}: the exact value "
                "does not fit, and the device's inf is its correct rounding",
                style="yellow",
            )
        )
    if out.benchmark is None:
        parts.append(Text("no benchmark tensor for this output: own error only", style="dim"))
    elif out.note:
        parts.append(Text(out.note, style="yellow"))
    else:
        parts.append(Text(f"benchmark: {out.benchmark}", style="dim"))
    if out.isolated_note:
        parts.append(Text(out.isolated_note, style="dim"))
    return parts


@renders(ReplayReport)
def render_replay_report(console: Console, report: ReplayReport) -> None:
    where = f"{report.run}" + (f" {report.dump_slice}" if report.dump_slice else "")
    parts: list[Any] = [Text(f"dump file: {report.dump_file} ({where})", style="dim")]
    if report.original_types:
        parts.append(Text(f"fused: {' -> '.join(report.original_types)}"))
    parts.append(Text("attributes used:"))
    parts += _attr_lines(report.attrs) or [Text("  (none)")]
    for out in report.outputs:
        parts.append(Text(""))
        parts += _output_parts(out)
    title = Text(f"replay {report.op} ({report.type})")
    console.print(Panel(Group(*parts), title=title, title_align="left"))
