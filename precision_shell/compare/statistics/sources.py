"""Deviations born at the compared graph's sources: a constant or the network's input data.

An input beyond rounding is judged where it is made, at its producer (`judge.made_here`).
A constant (weights, a bias, a scale GE folded) and the network's input data have none: no op
of the graph computes them, so a deviation they carry is born where they are read. The op
reading one fails with the verdict that names the source (`CONSTANT_INPUT`, `INPUT_DATA`),
and so do those input rows: healthy runs give a constant the same values (a float16 copy of
a float32 one is within 1/8 of the allowance) and feed the same data, so such a deviation is
never the accumulated rounding that `drift` stands for.
"""

from __future__ import annotations

from dataclasses import replace

from precision_shell.compare.pipeline.matcher import CONSTANT_TYPES, PASS_THROUGH_TYPES
from precision_shell.compare.statistics.judge import (
    CONSTANT_INPUT,
    DRIFT,
    INPUT_DATA,
    NONFINITE,
    NOT_COMPARED,
    PASS,
)
from precision_shell.compare.statistics.table import StatisticsRow
from precision_shell.workspace.graph_index import GraphIndex

# what the compare said of the source rows' consumers that a source's verdict replaces
_INHERITED = frozenset({PASS, DRIFT})


def source_verdict(graph: GraphIndex, op: str, slot: int, dumped: set[str]) -> str | None:
    """`CONSTANT_INPUT` / `INPUT_DATA` when input `slot` of `op` is a constant's or the
    network's input data: an op without data inputs, reached through no op but undumped
    GE-inserted Cast/TransData. None when an op computes it (dumped or not: a deviation made
    by an op this dump does not hold is not born at a source)."""
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
            return CONSTANT_INPUT if source.type in CONSTANT_TYPES else INPUT_DATA
        if source.type not in PASS_THROUGH_TYPES:
            return None
        name = source.data_inputs[0][0]
    return None


def blame_sources(rows: list[StatisticsRow], graph: GraphIndex | None) -> list[StatisticsRow]:
    """`rows` (one compare, `_made_here_or_drift` applied) with each input beyond rounding
    that a source feeds given its source's verdict, and the outputs of the op reading it too
    (unless they deviate or are nonfinite on their own). Without the graph, as they were."""
    if graph is None:
        return rows
    dumped = {r.op_name for r in rows if r.kind == "output" and r.compared}
    born: dict[str, str] = {}  # op -> the verdict of its worst deviating source input
    marked: dict[int, str] = {}  # position of a source input row -> its verdict
    worst: dict[str, float] = {}
    for n, row in enumerate(rows):
        if row.kind != "input" or row.verdict in (NOT_COMPARED, NONFINITE):
            continue
        deviation = row.deviation or 0.0
        if deviation <= 1.0:
            continue
        verdict = source_verdict(graph, row.op_name, row.slot, dumped)
        if verdict is None:
            continue
        marked[n] = verdict
        if deviation > worst.get(row.op_name, 0.0):
            worst[row.op_name], born[row.op_name] = deviation, verdict
    if not marked:
        return rows
    out = []
    for n, row in enumerate(rows):
        if n in marked:
            row = replace(row, verdict=marked[n])
        elif row.kind == "output" and row.op_name in born and row.verdict in _INHERITED:
            row = replace(row, verdict=born[row.op_name])
        out.append(row)
    return out
