"""Writing the HTML report of one compare: the page, and the root cause's subgraph beside it.

The report and the subgraph files go to `temp/report/<ts>/`; an explicit output name puts the
page elsewhere but never over an existing file.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from precision_shell.compare.pipeline.execute import result_dir
from precision_shell.compare.results.columns_cache import CACHE_DIR
from precision_shell.compare.results.latest import LatestCompare
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.errors import PrecisionError
from precision_shell.report.data import ReportData, gather_report
from precision_shell.report.page import SubgraphPicture, inline_svg, report_html
from precision_shell.workspace.output_files import create_output_file
from precision_shell.workspace.subgraph import neighbourhood
from precision_shell.workspace.subgraph_files import write_subgraph
from precision_shell.workspace.workspace import Workspace

REPORT_NAME = "report.html"
DEFAULT_DEPTH = 2


@dataclass
class ReportWritten:
    """Where the report went and what it holds."""

    path: Path
    csv_path: Path
    rows: int
    points: int
    failing_outputs: int
    root_cause: str | None
    diagnosed: bool
    partial: str | None
    subgraph: str | None  # "svg" | "gv" | None (no root cause, or not in the graph)
    slice_label: str | None = None  # "rank 1 step 0" when the run compared several
    ranks_compared: int = 0  # (rank, step) compares in the page's rank x step table
    notes: list[str] = field(default_factory=list)


class _ReportDir:
    """`temp/report/<ts>/`, created on first use (a report written with -o and no root
    cause leaves nothing behind)."""

    def __init__(self, ws: Workspace) -> None:
        self._ws = ws
        self._path: Path | None = None

    def path(self) -> Path:
        if self._path is None:
            self._path = result_dir(self._ws.output_dir("report"))[0]
        return self._path


def _picture(
    ws: Workspace, data: ReportData, out_dir: _ReportDir, depth: int
) -> SubgraphPicture | None:
    """The root cause's neighbourhood, colored like `ni -s` colors it."""
    op = data.root_cause
    if op is None:
        return None
    try:
        run = ws.run()
    except PrecisionError as exc:
        return SubgraphPicture(op, depth, None, None, f"no subgraph: {exc}")
    graph = run.dump_graph()
    if graph is None or graph.get(op) is None:
        note = f"{op} is not in the device graph of {run.name}: no subgraph"
        return SubgraphPicture(op, depth, None, None, note)
    sub = neighbourhood(graph, op, depth)
    colors = LatestCompare.of(data.csv_path, data.rows_for_ops(sub.nodes), data.summary)
    sub.node_colors = {name: colors.color(name, data.rule) for name in sub.nodes}
    sub.node_marks[op] = "root cause"
    files = write_subgraph(sub, out_dir.path(), run.name)
    if files.svg is not None:
        svg = inline_svg(Path(files.svg).read_text(encoding="utf-8"))
        if svg is not None:
            return SubgraphPicture(op, depth, svg, None)
    gv = Path(files.gv).read_text(encoding="utf-8")
    note = f"{files.note or 'dot gave no SVG'}; the graphviz source follows"
    return SubgraphPicture(op, depth, None, gv, note)


def _graph_neighbours(ws: Workspace) -> Callable[[str], Iterable[str]] | None:
    """An op's neighbours (one hop, both directions) in the device graph, when there is one."""
    try:
        graph = ws.run().dump_graph()
    except PrecisionError:
        return None
    if graph is None:
        return None

    def neighbours(op: str) -> Iterable[str]:
        return neighbourhood(graph, op, 1).nodes

    return neighbours


def _checked_output(output: Path) -> Path:
    if output.is_dir():
        output = output / REPORT_NAME
    if output.exists():
        raise PrecisionError(f"{output}: already exists; give another -o name")
    if not output.parent.is_dir():
        raise PrecisionError(f"{output.parent}: no such directory")
    return output


def write_report(
    ws: Workspace,
    fallback: ThresholdRule,
    csv_path: Path,
    output: Path | None = None,
    depth: int = DEFAULT_DEPTH,
) -> ReportWritten:
    """Gather, render and write the report of one result CSV (and its summary.json); a CSV
    without a summary is judged by `fallback` (the settings' rule)."""
    data = gather_report(
        csv_path, fallback, lambda: ws.output_dir(CACHE_DIR), neighbours=_graph_neighbours(ws)
    )
    target = _checked_output(output) if output is not None else None
    out_dir = _ReportDir(ws)
    picture = _picture(ws, data, out_dir, depth)
    if target is None:
        target = out_dir.path() / REPORT_NAME
    generated = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    page = report_html(data, picture, generated)
    with create_output_file(target, keep_on_interrupt=False) as fh:
        fh.write(page)
    notes = list(data.warnings[:20]) + data.notes
    if len(data.warnings) > 20:
        notes.append(f"... {len(data.warnings) - 20} more CSV warnings (on the page)")
    if picture is not None and picture.note:
        notes.append(picture.note)
    embedded = None
    if picture is not None:
        embedded = "svg" if picture.svg else ("gv" if picture.gv else None)
    return ReportWritten(
        path=target,
        csv_path=csv_path,
        rows=len(data.rows),
        points=data.point_count,
        failing_outputs=data.failing_points,
        root_cause=data.root_cause,
        diagnosed=data.diagnosed,
        partial=data.partial,
        subgraph=embedded,
        notes=notes,
        slice_label=data.slice_label,
        ranks_compared=len(data.ranks.results) if data.ranks is not None else 0,
    )
