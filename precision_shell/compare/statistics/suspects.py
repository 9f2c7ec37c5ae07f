"""Ranking the suspects of a statistics compare on the graph.

An op is a suspect when it makes a deviation its inputs do not carry:
1. NaN/inf birth: an output has NaN or inf the benchmark has not, while no input does (the
   first such op in execution order first); or NaN/inf born at a source: an op reads a
   constant or the network's input data holding NaN/inf the benchmark's has not (its rows'
   verdict, `sources.blame_sources`): "nonfinite constant" / "nonfinite input data", the
   source named;
2. local deviation: an output `deviates` (beyond rounding and `LOCAL_JUMP` times its inputs'
   deviation: `judge.made_here`); the larger that jump, the earlier;
3. born at a source: an op reads a constant or the network's input data that deviates (its
   rows' verdict, `sources.blame_sources`): "constant input" / "input data";
4. undumped input: an op reads a tensor that deviates, made upstream by ops the dump does not
   hold (a partial dump): dumping those tells more.
The inputs are the device's own input rows of the op's statistics file; when the dump has no
input rows (`dump_mode: output`), its producers' output rows stand for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from precision_shell.compare.statistics import judge
from precision_shell.compare.statistics.judge import DEVIATES, INPUT_FLOOR, NONFINITE
from precision_shell.compare.statistics.sources import dumped_ops, source_of
from precision_shell.compare.statistics.table import StatisticsRow
from precision_shell.json_numbers import json_number
from precision_shell.workspace.graph_index import GraphIndex

NAN_BIRTH = "nonfinite birth"
LOCAL = "local deviation"
INPUT_DATA = "input data"
CONSTANT = "constant input"
UNDUMPED = "undumped input"
NONFINITE_INPUT_DATA = "nonfinite input data"
NONFINITE_CONSTANT = "nonfinite constant"
# a source input row's verdict -> the suspect kind it makes
_SOURCE_KINDS = {
    judge.INPUT_DATA: INPUT_DATA,
    judge.CONSTANT_INPUT: CONSTANT,
    judge.INPUT_DATA_NONFINITE: NONFINITE_INPUT_DATA,
    judge.CONSTANT_NONFINITE: NONFINITE_CONSTANT,
}
_NONFINITE_SOURCE_KINDS = frozenset({NONFINITE_INPUT_DATA, NONFINITE_CONSTANT})


@dataclass(frozen=True)
class Suspect:
    op: str
    type: str
    index: int
    kind: str  # NAN_BIRTH | LOCAL | CONSTANT | INPUT_DATA | NONFINITE_* | UNDUMPED
    output: StatisticsRow  # the output that decided (a source kind: the source input row)
    input_deviation: float | None  # worst input (None: no input compared)
    source: str | None = None  # a source kind: the graph's op holding it, when known

    @property
    def reason(self) -> str:
        out = self.output
        if self.kind == NAN_BIRTH:
            return f"{out.reason or 'NaN/inf on the device'}; its inputs have none"
        if self.kind in _NONFINITE_SOURCE_KINDS:
            held = out.reason or "NaN/inf on the device"
            named = f" ({self.source})" if self.source else ""
            if self.kind == NONFINITE_INPUT_DATA:
                source = f"the network's input data{named}, which no op computes: it was fed"
            else:
                source = f"a constant{named}, which no op computes: it was given"
            return f"reads {out.tensor_index}: {held}; that is {source} to the device so"
        if self.kind in (INPUT_DATA, CONSTANT, UNDUMPED):
            named = "" if out.ground_truth in ("*", out.op_name) else f" ({out.ground_truth})"
            reads = (
                f"reads {out.tensor_index}{named}, {out.deviation or 0:.3g}x the allowed deviation"
            )
            if self.kind == INPUT_DATA:
                return (
                    f"{reads}: the network's input data, which no op computes; the two sides "
                    "were fed different data"
                )
            if self.kind == CONSTANT:
                return (
                    f"{reads}: a constant (weights, bias, scale), which no op computes; the two "
                    "sides were given different values"
                )
            return f"{reads}, made upstream by ops this dump does not hold: dump those"
        stat = out.main_statistic or "statistic"
        device, bench, allowed = out.statistic(stat)
        numbers = ""
        if device is not None and bench is not None:
            rel = abs(device - bench) / abs(bench) if bench else float("inf")
            numbers = f" ({stat} {device:.6g} vs {bench:.6g}, {rel:.2%} off)"
        inputs = (
            # statistics cannot see a permutation or a sign flip: say what was compared
            "its inputs' statistics match the benchmark's"
            if self.input_deviation is None or self.input_deviation <= 1
            else f"its inputs are {self.input_deviation:.2g}x the allowed deviation"
        )
        return f"output {out.slot} is {out.deviation or 0:.3g}x the allowed deviation{numbers}; {inputs}"

    def to_json(self) -> dict[str, Any]:
        out = self.output
        stat = out.main_statistic or None
        device, bench, allowed = out.statistic(stat) if stat else (None, None, None)
        return {
            "op": self.op,
            "type": self.type,
            "index": self.index,
            "reason": self.reason,
            "kind": self.kind,
            "source": self.source,
            # what the claim rests on, as for tensor root causes ("replay" / "estimate")
            "evidence": "statistics",
            "measures": {
                "tensor": out.tensor_index,
                "verdict": out.verdict,
                "statistic": stat,
                "device": json_number(device),
                "benchmark": json_number(bench),
                "allowed_abs_diff": json_number(allowed),
                "deviation": json_number(out.deviation),
                "input_deviation": json_number(self.input_deviation),
                "nan_inf": {k: list(v) for k, v in (out.counts or {}).items()},
            },
        }


def _worst(rows: list[StatisticsRow]) -> float | None:
    devs = [r.deviation for r in rows if r.compared and r.deviation is not None]
    return max(devs) if devs else None


def rank_suspects(rows: list[StatisticsRow], graph: GraphIndex | None = None) -> list[Suspect]:
    """Suspects best first (see the module doc)."""
    by_op: dict[str, list[StatisticsRow]] = {}
    for row in rows:
        by_op.setdefault(row.op_name, []).append(row)
    outputs_of = {op: [r for r in rs if r.kind == "output"] for op, rs in by_op.items()}
    found: list[tuple[tuple, Suspect]] = []
    dumped = dumped_ops(rows)
    for op, op_rows in by_op.items():
        outputs = [r for r in outputs_of[op] if r.compared]
        if not outputs:
            continue
        inputs = [r for r in op_rows if r.kind == "input" and r.compared]
        if not inputs and graph is not None and (rec := graph.get(op)) is not None:
            inputs = [
                r
                for source, k in rec.data_inputs
                for r in outputs_of.get(source, [])
                if r.slot == k and r.compared
            ]
        first = outputs[0]
        in_nonfinite = any(r.verdict == NONFINITE for r in inputs)
        born = [r for r in outputs if r.verdict == NONFINITE]
        in_dev = _worst(inputs)
        fed = _source_fed(op_rows, graph, dumped)
        if fed is not None and fed[0] in _NONFINITE_SOURCE_KINDS:
            # NaN/inf the source holds are a fault of their own, whatever else comes in
            kind, row, source = fed
            suspect = Suspect(op, first.op_type, first.index, kind, row, in_dev, source)
            found.append(((0, first.index), suspect))
            continue
        if born and not in_nonfinite:
            suspect = Suspect(op, first.op_type, first.index, NAN_BIRTH, born[0], in_dev)
            found.append(((0, first.index), suspect))
            continue
        if in_nonfinite:
            continue  # NaN/inf came in: inherited
        deviating = [r for r in outputs if r.verdict == DEVIATES]
        if deviating:
            worst = max(deviating, key=lambda r: r.deviation or 0.0)
            jump = (worst.deviation or 0.0) / max(in_dev or 0.0, INPUT_FLOOR)
            suspect = Suspect(op, first.op_type, first.index, LOCAL, worst, in_dev)
            found.append(((1, -jump, first.index), suspect))
            continue
        if fed is not None:
            kind, row, source = fed
            suspect = Suspect(op, first.op_type, first.index, kind, row, in_dev, source)
            found.append(((2, first.index), suspect))
            continue
        undumped = _fed_from_outside(op_rows, outputs_of, graph)
        if undumped is not None:
            suspect = Suspect(op, first.op_type, first.index, UNDUMPED, undumped, in_dev)
            found.append(((3, first.index), suspect))
    found.sort(key=lambda pair: pair[0])
    return [suspect for _, suspect in found]


def _source_fed(
    op_rows: list[StatisticsRow], graph: GraphIndex | None, dumped: set[str]
) -> tuple[str, StatisticsRow, str | None] | None:
    """The suspect kind, input row and source (the graph's op holding it) of the worst source
    input of an op (`blame_sources`' verdicts): NaN/inf first, then the largest deviation."""
    sources = [r for r in op_rows if r.kind == "input" and r.verdict in _SOURCE_KINDS]
    if not sources:
        return None
    fed = max(
        sources,
        key=lambda r: (_SOURCE_KINDS[r.verdict] in _NONFINITE_SOURCE_KINDS, r.deviation or 0.0),
    )
    held = source_of(graph, fed.op_name, fed.slot, dumped) if graph is not None else None
    return _SOURCE_KINDS[fed.verdict], fed, held.name if held is not None else None


def _fed_from_outside(
    op_rows: list[StatisticsRow],
    outputs_of: dict[str, list[StatisticsRow]],
    graph: GraphIndex | None,
) -> StatisticsRow | None:
    """An input row beyond rounding made by ops none of which, nor anything upstream of them,
    has a compared output in the dump (a source's is `blame_sources`' already)."""
    if graph is None:
        return None
    rec = graph.get(op_rows[0].op_name)
    if rec is None:
        return None
    compared = {op for op, rows in outputs_of.items() if any(r.compared for r in rows)}
    for row in op_rows:
        if row.kind != "input" or not row.compared or (row.deviation or 0.0) <= 1.0:
            continue
        if row.slot >= len(rec.data_inputs):
            continue
        source = rec.data_inputs[row.slot][0]
        if source not in compared and not graph.nearest_producers(source, compared):
            return row  # neither it nor anything feeding it was made by a dumped op
    return None
