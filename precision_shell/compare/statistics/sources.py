"""Deviations born at the compared graph's sources: a constant or the network's input data.

An input beyond rounding is judged where it is made, at its producer (`judge.made_here`).
A constant (weights, a bias, a scale GE folded) and the network's input data have none: no op
of the graph computes them, so a deviation they carry is born where they are read. The op
reading one fails with the verdict that names the source (`CONSTANT_INPUT`, `INPUT_DATA`),
and so do those input rows: healthy runs give a constant the same values (a float16 copy of
a float32 one is within 1/8 of the allowance) and feed the same data, so such a deviation is
never the accumulated rounding that `drift` stands for.

NaN/inf work the same way: a source holding NaN/inf the benchmark does not have
(`CONSTANT_NONFINITE`, `INPUT_DATA_NONFINITE`) is where they were born, not the op reading it,
whose outputs say so when they are nonfinite only through it. A constant the benchmark does not
dump (a folded weight: not compared) is judged so when the device's holds NaN/inf and the
output of the op reading it is nonfinite: the benchmark computed that output from finite
values. A source with NaN/inf on both sides is no difference between the runs
(`nonfinite_on_both_sides` names it for the diagnosis).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from precision_shell.compare.pipeline.matcher import CONSTANT_TYPES, PASS_THROUGH_TYPES
from precision_shell.compare.statistics.judge import (
    CONSTANT_INPUT,
    CONSTANT_NONFINITE,
    DRIFT,
    FAILING,
    INPUT_DATA,
    INPUT_DATA_NONFINITE,
    NONFINITE,
    NOT_COMPARED,
    PASS,
)
from precision_shell.compare.statistics.table import StatisticsRow
from precision_shell.workspace.graph_index import GraphIndex

# what the compare said of the source rows' consumers that a source's verdict replaces
_INHERITED = frozenset({PASS, DRIFT})
# a source's verdict when what it carries is NaN/inf, and what it replaces at its reader
NONFINITE_SOURCE = {CONSTANT_INPUT: CONSTANT_NONFINITE, INPUT_DATA: INPUT_DATA_NONFINITE}
_NONFINITE_VERDICTS = frozenset(NONFINITE_SOURCE.values())
_INHERITED_NONFINITE = _INHERITED | {NONFINITE}


@dataclass(frozen=True)
class Source:
    """Where an input no op computes comes from: the graph's op holding it and its verdict
    when it deviates (`CONSTANT_INPUT` / `INPUT_DATA`)."""

    name: str
    verdict: str


def source_of(graph: GraphIndex, op: str, slot: int, dumped: set[str]) -> Source | None:
    """The source of input `slot` of `op` when it is a constant or the network's input data:
    an op without data inputs, reached through no op but undumped GE-inserted Cast/TransData.
    None when an op computes it (dumped or not: a deviation made by an op this dump does not
    hold is not born at a source)."""
    record = graph.get(op)
    if record is None or slot >= len(record.data_inputs):
        return None
    name = record.data_inputs[slot][0]
    seen = {op}
    while name not in seen and name not in dumped:
        seen.add(name)
        source = graph.get(name)
        if source is None:
            return None
        if not source.data_inputs:
            return Source(name, CONSTANT_INPUT if source.type in CONSTANT_TYPES else INPUT_DATA)
        if source.type not in PASS_THROUGH_TYPES:
            return None
        name = source.data_inputs[0][0]
    return None


def source_verdict(graph: GraphIndex, op: str, slot: int, dumped: set[str]) -> str | None:
    """`CONSTANT_INPUT` / `INPUT_DATA` when input `slot` of `op` is a source's (`source_of`)."""
    source = source_of(graph, op, slot, dumped)
    return source.verdict if source is not None else None


def dumped_ops(rows: list[StatisticsRow]) -> set[str]:
    """The ops whose outputs the compare judged: what they make is judged there."""
    return {r.op_name for r in rows if r.kind == "output" and r.compared}


def blame_sources(rows: list[StatisticsRow], graph: GraphIndex | None) -> list[StatisticsRow]:
    """`rows` (one compare, `_made_here_or_drift` applied) with each input beyond rounding or
    holding NaN/inf that a source feeds given its source's verdict, and the outputs of the op
    reading it too (unless they deviate on their own, or, for a deviation, are nonfinite).
    NaN/inf outrank a deviation. Without the graph, as they were."""
    if graph is None:
        return rows
    dumped = dumped_ops(rows)
    nonfinite_out = {r.op_name for r in rows if r.kind == "output" and r.verdict == NONFINITE}
    born: dict[str, str] = {}  # op -> the verdict of its worst source input
    marked: dict[int, StatisticsRow] = {}  # position of a source input row -> that row blamed
    worst: dict[str, tuple[bool, float]] = {}  # op -> (NaN/inf, deviation) of that input
    for n, row in enumerate(rows):
        if row.kind != "input":
            continue
        nonfinite = row.verdict == NONFINITE or (
            row.verdict == NOT_COMPARED
            and row.op_name in nonfinite_out
            and bool(row.device_nonfinite)
        )
        deviation = row.deviation or 0.0
        if not nonfinite and (row.verdict == NOT_COMPARED or deviation <= 1.0):
            continue
        verdict = source_verdict(graph, row.op_name, row.slot, dumped)
        if verdict is None:
            continue
        if nonfinite:
            blamed = replace(row, verdict=NONFINITE_SOURCE[verdict], reason=_nonfinite_reason(row))
        else:
            blamed = replace(row, verdict=verdict)
        marked[n] = blamed
        rank = (nonfinite, deviation)
        if row.op_name not in worst or rank > worst[row.op_name]:
            worst[row.op_name], born[row.op_name] = rank, blamed.verdict
    if not marked:
        return rows
    out = []
    for n, row in enumerate(rows):
        if n in marked:
            row = marked[n]
        elif row.kind == "output" and row.op_name in born:
            verdict = born[row.op_name]
            replaced = _INHERITED_NONFINITE if verdict in _NONFINITE_VERDICTS else _INHERITED
            if row.verdict in replaced:
                row = replace(row, verdict=verdict)
        out.append(row)
    return out


def _nonfinite_reason(row: StatisticsRow) -> str:
    """Why a source row holding NaN/inf fails: what the device holds, and against what."""
    held = row.device_nonfinite
    if row.verdict == NOT_COMPARED:
        return (
            f"{held} on the device; no benchmark of it, but the benchmark's output of the op "
            "reading it is finite"
        )
    return row.reason or f"{held} on the device that the benchmark does not have"


def nonfinite_on_both_sides(
    rows: list[StatisticsRow], graph: GraphIndex | None
) -> list[tuple[Source, StatisticsRow]]:
    """Source input rows (a constant, the network's input data) that hold NaN/inf on the
    device and no fewer in the benchmark: no difference between the runs, so no failing row,
    but every output computed from them carries it. Each source tensor once (its first
    reader's row, with the source); without the graph none."""
    if graph is None:
        return []
    dumped = dumped_ops(rows)
    found: dict[str, tuple[Source, StatisticsRow]] = {}
    for row in rows:
        if row.kind != "input" or not row.compared or row.verdict in FAILING:
            continue
        if not row.device_nonfinite:
            continue
        source = source_of(graph, row.op_name, row.slot, dumped)
        if source is not None:
            found.setdefault(source.name, (source, row))
    return list(found.values())
