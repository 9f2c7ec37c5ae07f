"""Writing the HTML report of one compare: the page, and the root cause's subgraph beside it.

The report and the subgraph files go to `temp/report/<ts>/`; an explicit output name puts the
page elsewhere but never over an existing file.

A MegEngine or SigmaStar compare needs no Ascend workspace (`ws` may be None): it has no
graph, so no subgraph, and its report dir is, in order: the `temp/report/<ts>/` of the
precision_data the result sits in (where vc put it by default), the workspace's
`temp/report/<ts>/` when one is open, else `report/<ts>/` beside the result dir (vc -o DIR
outside any workspace).
"""

from __future__ import annotations

import datetime as _dt
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from precision_shell.compare.pipeline.execute import result_dir
from precision_shell.compare.results.columns_cache import CACHE_DIR
from precision_shell.compare.results.latest import LatestCompare
from precision_shell.compare.results.run_state import ResultPick
from precision_shell.compare.results.slice_results import compared_run, dumped_slices
from precision_shell.compare.results.summary import summary_beside
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.errors import PrecisionError
from precision_shell.file_name_text import shown
from precision_shell.report.cause_section import SubgraphPicture, undiagnosed_text
from precision_shell.report.data import ReportData, foreign_family, gather_report
from precision_shell.report.html_parts import inline_svg
from precision_shell.report.page import report_html
from precision_shell.workspace.layout import WORKSPACE_DIR_NAME
from precision_shell.workspace.output_files import create_output_file, ensure_dir
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
    partial_cause: str
    subgraph: str | None  # "svg" | "gv" | None (no root cause, or not in the graph)
    slice_label: str | None = None  # "rank 1 step 0" when the run compared several
    ranks_compared: int = 0  # (rank, step) compares in the page's rank x step table
    ranks_not_begun: int = 0  # (rank, step)s selected that a run cut short never began
    judged: bool = True  # False: no metric the compare computed has a limit
    # why there is no root cause when the diagnosis is of another compare, or proves none at
    # the op where the deviation shows first (as the page says)
    elsewhere: str | None = None
    notes: list[str] = field(default_factory=list)


class _ReportDir:
    """`<base>/<ts>/`, created on first use (a report written with -o and no root cause
    leaves nothing behind); `base()` is `temp/report/` (see `_foreign_base` otherwise)."""

    def __init__(self, base: Callable[[], Path]) -> None:
        self._base = base
        self._path: Path | None = None

    def path(self) -> Path:
        if self._path is None:
            self._path = result_dir(self._base())[0]
        return self._path

    def discard(self) -> None:
        """The report was not written (a full disk, Ctrl-C): the dir made for it goes, with
        the subgraph files written into it (it is new: nothing else is in it)."""
        if self._path is not None:
            shutil.rmtree(self._path, ignore_errors=True)
            self._path = None


def _temp_of_result(csv_path: Path) -> Path | None:
    """`<...>/precision_data/temp` when the CSV sits in `temp/vector_compare/<ts>/` of it."""
    run_dir = csv_path.resolve().parent
    temp = run_dir.parent.parent
    in_vector_compare = run_dir.parent.name == "vector_compare" and temp.name == "temp"
    return temp if in_vector_compare and temp.parent.name == WORKSPACE_DIR_NAME else None


def _foreign_dir(ws: Workspace | None, csv_path: Path, name: str) -> Path:
    """`temp/<name>/` of the precision_data the result is in, else of the open workspace,
    else `<name>/` beside the result dir."""
    temp = _temp_of_result(csv_path)
    if temp is not None:
        return ensure_dir(temp, name)
    if ws is not None:
        return ws.output_dir(name)
    run_dir = csv_path.resolve().parent
    return ensure_dir(run_dir.parent, name)


def _foreign_cache(ws: Workspace | None, csv_path: Path) -> Callable[[], Path] | None:
    """Where a foreign result's columns cache goes: as `_foreign_dir`, none outside any
    precision_data (no stray cache dir beside a user's -o dir)."""
    if _temp_of_result(csv_path) is None and ws is None:
        return None
    return lambda: _foreign_dir(ws, csv_path, CACHE_DIR)


def _picture(
    ws: Workspace | None, data: ReportData, out_dir: _ReportDir, depth: int
) -> SubgraphPicture | None:
    """The root cause's neighbourhood, colored like `ni -s` colors it (where the deviation
    shows first when the replay proves no fault there: the section still shows that op)."""
    op = data.shows_first
    if op is None:
        return None
    if data.foreign or ws is None:
        what = f"a {data.foreign} compare pairs two dumps" if data.foreign else "no workspace"
        note = f"no graph in this workspace: {what}, without the model's graph (no subgraph)"
        return SubgraphPicture(op, depth, None, None, note)
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


def is_foreign_result(csv_path: Path) -> bool:
    """A MegEngine or SigmaStar compare (judged by its recorded rule, no workspace needed)."""
    try:
        return foreign_family(summary_beside(csv_path)) is not None
    except PrecisionError:
        return False


def write_report(
    ws: Workspace | None,
    fallback: ThresholdRule,
    csv_path: Path,
    output: Path | None = None,
    depth: int = DEFAULT_DEPTH,
    pick: ResultPick | None = None,
    stale: str | None = None,
    stale_others: str | None = None,
) -> ReportWritten:
    """Gather, render and write the report of one result CSV (and its summary.json); a CSV
    without a summary is judged by `fallback` (the settings' rule). `ws` None (no workspace
    opens): only for a foreign compare (`is_foreign_result`). `pick`: the state of the CSV's
    run when the caller has it. `stale`: the line saying the compare predates a change to a
    file it compared (`input_changes`), shown on the page; `stale_others`: the line under
    the rank x step table on the other cards' files (`stale_slices_line`)."""
    foreign = is_foreign_result(csv_path)
    if foreign or ws is None:
        cache = _foreign_cache(ws, csv_path)
        data = gather_report(csv_path, fallback, cache, pick=pick)
        out_dir = _ReportDir(lambda: _foreign_dir(ws, csv_path, "report"))
    else:
        workspace = ws
        data = gather_report(
            csv_path,
            fallback,
            lambda: workspace.output_dir(CACHE_DIR),
            neighbours=_graph_neighbours(workspace),
            dumped=dumped_slices(compared_run(workspace, summary_beside(csv_path))),
            pick=pick,
        )
        out_dir = _ReportDir(lambda: workspace.output_dir("report"))
    data.stale, data.stale_others = stale, stale_others
    target = _checked_output(output) if output is not None else None
    try:
        picture = _picture(ws, data, out_dir, depth)
        if target is None:
            target = out_dir.path() / REPORT_NAME
        generated = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
        page = shown(report_html(data, picture, generated))  # a browser shows no non-UTF-8 byte
        with create_output_file(target, keep_on_interrupt=False) as fh:
            fh.write(page)
    except BaseException:
        out_dir.discard()
        raise
    notes = data.untabled_lines + list(data.warnings[:20]) + data.notes
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
        judged=data.judged,
        root_cause=data.root_cause,
        diagnosed=data.diagnosed,
        partial=data.partial,
        partial_cause=data.partial_cause,
        subgraph=embedded,
        notes=notes,
        slice_label=data.slice_label,
        ranks_compared=len(data.ranks.results) if data.ranks is not None else 0,
        ranks_not_begun=len(data.ranks.not_begun) if data.ranks is not None else 0,
        elsewhere=(
            undiagnosed_text(data) if data.elsewhere is not None or data.none_proven else None
        ),
    )
