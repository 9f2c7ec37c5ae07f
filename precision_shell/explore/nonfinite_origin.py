"""Where NaN/inf first appears in the device dumps, across ranks and steps (no benchmark).

Per run, steps in order; in each step every rank's slice is read op by op in execution
order (graph positions; ops the graph lacks after, by dump time) and stops at its first
output holding NaN/inf. The earliest step with a hit answers; its op earliest in execution
(then the lowest rank) is the origin, and the other ranks that hit in that step are listed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from precision_shell.errors import PrecisionError
from precision_shell.formats.stats_dump import read_stats_dump
from precision_shell.workspace.dump_index import DumpFileRef
from precision_shell.workspace.graph_index import GraphIndex
from precision_shell.workspace.pieces import failure_text
from precision_shell.workspace.workspace import DumpSlice, RunIndex, Workspace, number_order


@dataclass(frozen=True)
class NonfiniteHit:
    """The first output holding NaN/inf in one (rank, step) slice."""

    rank: str
    step: str
    op: str
    output: int
    file: str
    position: float  # execution order (inf: the op is not in the graph)
    nan: int
    inf: int


@dataclass
class NonfiniteOrigin:
    """`ac`: the first NaN/inf of one run's device outputs, or none."""

    run: str
    first: NonfiniteHit | None = None
    also: list[NonfiniteHit] = field(default_factory=list)  # other ranks, same step
    slices_read: int = 0
    files_read: int = 0
    errors: list[str] = field(default_factory=list)


def _ops_in_order(where: DumpSlice, graph: GraphIndex | None) -> list[tuple[float, str, str]]:
    """(position, op name, sanitized name) of every op dumped in the slice, execution order."""
    ordered: list[tuple[float, str, str]] = []
    rest: list[tuple[int, str]] = []
    for sanitized in where.dumps.op_names():
        rec = graph.by_dump_name(sanitized) if graph is not None else None
        if rec is not None:
            ordered.append((rec.position, rec.name, sanitized))
        else:
            refs = where.dumps.for_op(sanitized)
            rest.append((refs[0].timestamp if refs else 0, sanitized))
    ordered.sort()
    ordered += [(math.inf, name, name) for _, name in sorted(rest)]
    return ordered


def _first_hit(
    ws: Workspace, run: RunIndex, where: DumpSlice, origin: NonfiniteOrigin
) -> NonfiniteHit | None:
    for position, op, sanitized in _ops_in_order(where, run.graph_of_dump(where.graph_names)):
        refs = where.dumps.for_op(sanitized) or where.dumps.stats_for_op(sanitized)
        for ref in refs:
            read = _nonfinite_statistics if ref.stats_csv else _nonfinite_output
            hit = read(ws, ref, origin)
            if hit is not None:
                k, nan, inf = hit
                return NonfiniteHit(
                    where.rank, where.step, op, k, ref.file_name, position, nan, inf
                )
    return None


def _nonfinite_statistics(
    ws: Workspace, ref: DumpFileRef, origin: NonfiniteOrigin
) -> tuple[int, int, int] | None:
    """The same from a statistics dump (`dump_data: stats`): its outputs' NaN/inf counts."""
    origin.files_read += 1
    try:
        dump = read_stats_dump(ref.path)
    except PrecisionError as exc:
        origin.errors.append(str(exc))
        return None
    for row in dump.outputs:
        nan = int(row.values.get("nan_count") or 0)
        inf = int((row.values.get("neg_inf_count") or 0) + (row.values.get("pos_inf_count") or 0))
        if nan or inf:
            return row.index, nan, inf
    return None


def _nonfinite_output(
    ws: Workspace, ref: DumpFileRef, origin: NonfiniteOrigin
) -> tuple[int, int, int] | None:
    """(output index, NaN count, inf count) of the file's first output holding NaN/inf."""
    origin.files_read += 1
    try:
        header = ws.header(ref)
        for k in range(len(header.outputs)):
            values = ws.tensor(ref, "output", k)
            if values.dtype.kind not in "fc" and "float" not in str(values.dtype):
                continue  # integers and bools hold no NaN
            finite = np.isfinite(values)
            if not finite.all():
                nan = int(np.isnan(values).sum())
                return k, nan, int(finite.size - finite.sum()) - nan
    except PrecisionError as exc:
        origin.errors.append(str(exc))
    except Exception as exc:  # one odd file must not stop the scan of the others
        origin.errors.append(failure_text(ref.path, exc))
    return None


def nonfinite_origin(
    ws: Workspace, run: RunIndex, rank: str | None = None, step: str | None = None
) -> NonfiniteOrigin:
    """The first NaN/inf of `run`'s device outputs; `rank`/`step` narrow the slices read
    (None or "all": every one)."""
    origin = NonfiniteOrigin(run.name)
    slices = [
        s
        for s in run.slices
        if rank in (None, "all") or s.rank == str(rank)
        if step in (None, "all") or s.step == str(step)
    ]
    if rank not in (None, "all") and str(rank) not in run.ranks():
        raise PrecisionError(f"{run.name}: no rank {rank}; ranks: {', '.join(run.ranks())}")
    if step not in (None, "all") and str(step) not in run.steps():
        raise PrecisionError(f"{run.name}: no step {step}; steps: {', '.join(run.steps())}")
    by_step: dict[str, list[DumpSlice]] = {}
    for s in slices:
        by_step.setdefault(s.step, []).append(s)
    for step_name in sorted(by_step, key=number_order):
        hits = []
        for where in sorted(by_step[step_name], key=lambda s: number_order(s.rank)):
            origin.slices_read += 1
            hit = _first_hit(ws, run, where, origin)
            if hit is not None:
                hits.append(hit)
        if hits:
            hits.sort(key=lambda h: (h.position, number_order(h.rank)))
            origin.first, origin.also = hits[0], hits[1:]
            break
    return origin
