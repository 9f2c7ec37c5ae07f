"""Rendering of the workspace summary (banner and `scripts/demo` output), and of the warnings
of indexing dump dirs: the workspace's, and those given by path (vc/ac -lt/-rt, dc DIR)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from precision_shell.render.columns import number_column, text_column
from precision_shell.workspace.workspace import WorkspaceSummary

_STEPS_SHOWN = 6


def _ranges(names: list[str]) -> str:
    """`0-7` for a run of consecutive numbers, else a comma list (`0, 2, 5-6`)."""
    parts: list[str] = []
    start = prev = None
    for name in [*names, None]:
        n = int(name) if name is not None and name.isdigit() else None
        if n is not None and prev is not None and n == prev + 1:
            prev = n
            continue
        if start is not None:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
            start = prev = None
        if n is not None:
            start = prev = n
        elif name is not None:
            parts.append(name)
    return ", ".join(parts)


def _steps(steps: list[str]) -> str:
    """`3 steps (0, 5, 10)`; a long list keeps its ends."""
    shown = steps
    if len(steps) > _STEPS_SHOWN:
        shown = [*steps[: _STEPS_SHOWN - 2], "...", steps[-1]]
    word = "step" if len(steps) == 1 else "steps"
    return f"{len(steps)} {word} ({', '.join(shown)})"


def _ranks(ranks: list[str]) -> str:
    word = "rank" if len(ranks) == 1 else "ranks"
    return f"{len(ranks)} {word} ({_ranges(ranks)})"


def rank_step_line(run: str, steps_by_rank: dict[str, list[str]]) -> str:
    """`debug_0: 8 ranks (0-7) x 3 steps (0, 5, 10)`; when ranks have different steps, one
    group per set of steps: `debug_0: 2 ranks (0-1), steps differ: rank 0 x 2 steps (0, 5);
    rank 1 x 1 step (0)`."""
    ranks = list(steps_by_rank)
    groups: dict[tuple[str, ...], list[str]] = {}
    for rank, steps in steps_by_rank.items():
        groups.setdefault(tuple(steps), []).append(rank)
    if len(groups) == 1:
        return f"{run}: {_ranks(ranks)} x {_steps(list(next(iter(groups))))}"
    each = "; ".join(
        f"{'rank' if len(rs) == 1 else 'ranks'} {_ranges(rs)} x {_steps(list(steps))}"
        for steps, rs in groups.items()
    )
    return f"{run}: {_ranks(ranks)}, steps differ: {each}"


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
    for name, steps_by_rank in summary.rank_steps.items():
        console.print(Text(rank_step_line(name, steps_by_rank)), soft_wrap=True)
    console.print(
        f"benchmark tensors: {summary.benchmark_tensors}   overflow files: {summary.overflow_files}"
        f"   fusion passes: {summary.fusion_passes}   warnings: {summary.warnings}",
        markup=False,
    )
    render_index_warnings(console, warnings)


def render_index_warnings(console: Console, warnings: list[str]) -> None:
    """One `warning: ...` line each (the first 20, then how many more): a file that cannot be
    read, a name that does not parse, a dir that cannot be listed; what was indexed works."""
    for line in warnings[:20]:
        console.print(Text.assemble(("warning:", "yellow"), f" {line}"), highlight=False)
    if len(warnings) > 20:
        console.print(Text(f"... and {len(warnings) - 20} more warnings", style="yellow"))
