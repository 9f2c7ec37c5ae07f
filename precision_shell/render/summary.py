"""Rendering of the workspace summary (banner and `scripts/demo` output)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from precision_shell.render.columns import number_column, text_column
from precision_shell.workspace.workspace import WorkspaceSummary


def render_summary(console: Console, summary: WorkspaceSummary, warnings: list[str]) -> None:
    # Paths and warnings are user text: Text, never markup ("[x]" in a dir name prints as typed).
    # Its own line, not the table's title, which would fold the path to the table's width.
    console.print(Text(f"Workspace {summary.root}"), soft_wrap=True)
    table = Table(show_edge=False)
    text_column(table, "device run")
    for col in ("graphs", "ops", "dump files"):
        number_column(table, col)
    for name, graphs, ops, files in summary.runs:
        table.add_row(Text(name), str(graphs), str(ops), str(files))
    console.print(table)
    console.print(
        f"benchmark tensors: {summary.benchmark_tensors}   overflow files: {summary.overflow_files}"
        f"   fusion passes: {summary.fusion_passes}   warnings: {summary.warnings}",
        markup=False,
    )
    for line in warnings[:20]:
        console.print(Text.assemble(("warning:", "yellow"), f" {line}"), highlight=False)
    if len(warnings) > 20:
        console.print(Text(f"... and {len(warnings) - 20} more warnings", style="yellow"))
