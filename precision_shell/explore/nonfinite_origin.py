"""Where NaN/inf first appears in the device dumps, across ranks and steps (no benchmark).

Per run, steps in order; in each step every rank's slice is read op by op in execution
order (graph positions; ops the graph lacks after, by dump time) and stops at its first
output holding NaN/inf. The earliest step with a hit answers; its op earliest in execution
(then the lowest rank) is the origin, and the other ranks that hit in that step are listed.
The later steps are not read, and said so (`--step` reads one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from precision_shell.errors import PrecisionError
from precision_shell.explore.tensor_target import TensorHandle, dump_file_tensors
from precision_shell.formats.layouts import format_name
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
    # NaN/inf found only in the pad lanes of this padded device layout (NC1HWC0 with C=8 in
    # C0=16...): no value of the tensor, so no NaN birth; empty for a hit in the tensor itself
    pad_layout: str = ""


@dataclass
class NonfiniteOrigin:
    """`ac`: the first NaN/inf of one run's device outputs, or none."""

    run: str
    first: NonfiniteHit | None = None
    also: list[NonfiniteHit] = field(default_factory=list)  # other ranks, same step
    # the earliest output read whose NaN/inf are all in its pad lanes (before `first`, or in
    # a run without NaN/inf), said in one line: a device keeps whatever a kernel left there
    pad_only: NonfiniteHit | None = None
    slices_read: int = 0
    files_read: int = 0
    # the steps after `first`'s, not read: the search stops at the first step holding NaN/inf
    unread_steps: list[str] = field(default_factory=list)
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


# (output index, NaN count, inf count, the padded layout when they are all in its pad lanes)
_Found = tuple[int, int, int, str]


def _first_hit(
    ws: Workspace, run: RunIndex, where: DumpSlice, origin: NonfiniteOrigin
) -> tuple[NonfiniteHit | None, NonfiniteHit | None]:
    """The slice's first output holding NaN/inf, and the first whose NaN/inf are all in its
    pad lanes before it."""
    pad_only = None
    for position, op, sanitized in _ops_in_order(where, run.graph_of_dump(where.graph_names)):
        refs = where.dumps.for_op(sanitized) or where.dumps.stats_for_op(sanitized)
        for ref in refs:
            read = _nonfinite_statistics if ref.stats_csv else _nonfinite_output
            for k, nan, inf, pad_layout in read(ws, ref, origin):
                hit = NonfiniteHit(
                    where.rank, where.step, op, k, ref.file_name, position, nan, inf, pad_layout
                )
                if not pad_layout:
                    return hit, pad_only
                pad_only = pad_only or hit
    return None, pad_only


def _nonfinite_statistics(ws: Workspace, ref: DumpFileRef, origin: NonfiniteOrigin) -> list[_Found]:
    """The same from a statistics dump (`dump_data: stats`): its outputs' NaN/inf counts (the
    device counts them as stored, pads included: they cannot be told apart here)."""
    origin.files_read += 1
    try:
        dump = read_stats_dump(ref.path)
    except PrecisionError as exc:
        origin.errors.append(str(exc))
        return []
    for row in dump.outputs:
        nan = int(row.values.get("nan_count") or 0)
        inf = int((row.values.get("neg_inf_count") or 0) + (row.values.get("pos_inf_count") or 0))
        if nan or inf:
            return [(row.index, nan, inf, "")]
    return []


def _nonfinite_output(ws: Workspace, ref: DumpFileRef, origin: NonfiniteOrigin) -> list[_Found]:
    """The file's outputs holding NaN/inf up to the first that holds them in the tensor's own
    elements: before it, those holding them only in their pad lanes (`_Found`'s layout set).
    Counts are of the tensor's own elements, pads cut (of the pads for a pad-only output)."""
    origin.files_read += 1
    found: list[_Found] = []
    try:
        header = ws.header(ref)
        handles: list[TensorHandle] | None = None
        for k, meta in enumerate(header.outputs):
            values = ws.tensor(ref, "output", k)
            if values.dtype.kind not in "fc" and "float" not in str(values.dtype):
                continue  # integers and bools hold no NaN
            if np.isfinite(values).all():
                continue  # the common case: no conversion needed to know it
            handles = handles or dump_file_tensors(ws, ref.path)
            own = handles[len(header.inputs) + k].own_elements(values)
            nan, inf = _nonfinite_counts(values if own is None else own)
            if nan or inf:
                return [*found, (k, nan, inf, "")]
            nan, inf = _nonfinite_counts(values)
            found.append((k, nan, inf, format_name(meta.format)))
    except PrecisionError as exc:
        origin.errors.append(str(exc))
    except Exception as exc:  # one odd file must not stop the scan of the others
        origin.errors.append(failure_text(ref.path, exc))
    return found


def _nonfinite_counts(values: np.ndarray) -> tuple[int, int]:
    finite = np.isfinite(values)
    nan = int(np.isnan(values).sum())
    return nan, int(finite.size - finite.sum()) - nan


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
    steps = sorted(by_step, key=number_order)
    for n, step_name in enumerate(steps):
        hits, pad_hits = [], []
        for where in sorted(by_step[step_name], key=lambda s: number_order(s.rank)):
            origin.slices_read += 1
            hit, pad_only = _first_hit(ws, run, where, origin)
            hits += [hit] if hit is not None else []
            pad_hits += [pad_only] if pad_only is not None else []
        hits.sort(key=_execution_order)
        if hits:  # a rank's pad lanes read after the origin explain nothing
            pad_hits = [h for h in pad_hits if _execution_order(h) < _execution_order(hits[0])]
        if pad_hits and origin.pad_only is None:
            origin.pad_only = min(pad_hits, key=_execution_order)
        if hits:
            origin.first, origin.also = hits[0], hits[1:]
            origin.unread_steps = steps[n + 1 :]
            break
    return origin


def _execution_order(hit: NonfiniteHit) -> tuple[float, tuple[int, int, str]]:
    return hit.position, number_order(hit.rank)
