"""Ranking the suspects of a statistics compare on the graph.

An op is a suspect when it makes a deviation its inputs do not carry:
1. NaN/inf birth: an output has NaN or inf the benchmark has not, while no input does (the
   first such op in execution order first);
2. local deviation: an output deviates (statistics rule, `judge`) while every input passes;
   the larger the deviation (in units of what the dtype allows) the earlier;
3. amplification: inputs deviate a little and the output `AMPLIFICATION` times more.
The inputs are the device's own input rows of the op's statistics file; when the dump has no
input rows (`dump_mode: output`), its producers' output rows stand for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from precision_shell.compare.statistics.judge import DEVIATES, NONFINITE
from precision_shell.compare.statistics.table import StatisticsRow
from precision_shell.workspace.graph_index import GraphIndex

AMPLIFICATION = 4.0

NAN_BIRTH = "nonfinite birth"
LOCAL = "local deviation"
AMPLIFIED = "amplified deviation"
_ORDER = {NAN_BIRTH: 0, LOCAL: 1, AMPLIFIED: 2}


@dataclass(frozen=True)
class Suspect:
    op: str
    type: str
    index: int
    kind: str  # NAN_BIRTH | LOCAL | AMPLIFIED
    output: StatisticsRow  # the output that decided
    input_deviation: float | None  # worst input (None: no input compared)

    @property
    def reason(self) -> str:
        out = self.output
        if self.kind == NAN_BIRTH:
            return f"{out.reason or 'NaN/inf on the device'}; its inputs have none"
        stat = out.main_statistic or "statistic"
        device, bench, allowed = out.statistic(stat)
        numbers = ""
        if device is not None and bench is not None:
            rel = abs(device - bench) / abs(bench) if bench else float("inf")
            numbers = f" ({stat} {device:.6g} vs {bench:.6g}, {rel:.2%} off)"
        inputs = (
            "its inputs match the benchmark"
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
            "evidence": {
                "source": "statistics",
                "tensor": out.tensor_index,
                "verdict": out.verdict,
                "statistic": stat,
                "device": device,
                "benchmark": bench,
                "allowed_abs_diff": allowed,
                "deviation": out.deviation,
                "input_deviation": self.input_deviation,
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
        if born and not in_nonfinite:
            suspect = Suspect(op, first.op_type, first.index, NAN_BIRTH, born[0], in_dev)
            found.append(((0, first.index), suspect))
            continue
        if in_nonfinite:
            continue  # NaN/inf came in: inherited
        deviating = [r for r in outputs if r.verdict == DEVIATES]
        if not deviating:
            continue
        worst = max(deviating, key=lambda r: r.deviation or 0.0)
        out_dev = worst.deviation or 0.0
        if in_dev is None or in_dev <= 1.0:
            found.append(
                (
                    (1, -out_dev, first.index),
                    Suspect(op, first.op_type, first.index, LOCAL, worst, in_dev),
                )
            )
        elif out_dev >= AMPLIFICATION * in_dev:
            found.append(
                (
                    (2, -out_dev / in_dev, first.index),
                    Suspect(op, first.op_type, first.index, AMPLIFIED, worst, in_dev),
                )
            )
    found.sort(key=lambda pair: pair[0])
    return [suspect for _, suspect in found]
