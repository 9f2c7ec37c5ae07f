"""Where the error of a foreign pair is born.

- MegEngine (the dump holds the graph): a failing var none of whose inputs fail is a root,
  MegEngine's own `accuracy_shake_var_tree` rule. An input is judged by its own row, or,
  when the input var was not dumped as an output, by its `-inp` dumps on both sides. An op is
  a cause when one of its outputs is a root. A root some of whose inputs could not be judged
  (not dumped, or printed only in part by a text dump) is unproven: its reason says so, and
  it ranks after every proven root. Then causes rank by how many failing vars lie downstream
  of them (the most consequential first), then by execution order.
- SigmaStar (no graph): the first failing layer in layer order; the failing layers after it
  follow, as suspects that may only inherit its error.

Every cause is an estimate (`"evidence": "estimate"`): nothing was recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from precision_shell.compare.results.schema import ResultRow
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.json_numbers import json_number

FAIL = "fail"
PASS = "pass"
UNKNOWN = "not compared"


@dataclass(frozen=True)
class Node:
    """One compared left tensor as the root-cause walk sees it."""

    key: str
    op: str
    op_type: str
    slot: int
    order: int
    inputs: tuple[str, ...]
    row: ResultRow
    # input index -> (status, metrics) from the `-inp` dumps, for inputs that are not nodes
    input_dumps: dict[int, tuple[str, dict[str, float]]] = field(default_factory=dict)


@dataclass(frozen=True)
class ForeignCause:
    op: str
    type: str
    index: int | None  # the row index of its first failing output
    reason: str
    rank: int
    evidence: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "type": self.type,
            "index": self.index,
            "reason": self.reason,
            "evidence": "estimate",
            "own_error": None,
            "inherited_error": None,
            "measures": self.evidence,
        }


def status(rule: ThresholdRule, row: ResultRow | None) -> str:
    if row is None or not row.compared:
        return UNKNOWN
    return FAIL if rule.fails(row) else PASS


def _metrics(row: ResultRow) -> dict[str, float | str | None]:
    return {name: json_number(row.measured(name)) for name in row.texts}


def graph_causes(nodes: list[Node], rule: ThresholdRule) -> list[ForeignCause]:
    by_key = {n.key: n for n in nodes}
    states = {n.key: status(rule, n.row) for n in nodes}
    consumers: dict[str, list[str]] = {}
    for n in nodes:
        for i in n.inputs:
            consumers.setdefault(i, []).append(n.key)

    def downstream_failing(key: str) -> int:
        seen: set[str] = set()
        stack = list(consumers.get(key, ()))
        while stack:
            k = stack.pop()
            if k in seen:
                continue
            seen.add(k)
            stack.extend(consumers.get(k, ()))
        return sum(1 for k in seen if states.get(k) == FAIL)

    roots: dict[str, list[tuple[Node, list[dict[str, Any]]]]] = {}
    for n in sorted(nodes, key=lambda n: n.order):
        if states[n.key] != FAIL:
            continue
        inputs: list[dict[str, Any]] = []
        failing_input = False
        for index, key in enumerate(n.inputs):
            src = by_key.get(key)
            if src is not None:
                st = states[key]
                entry: dict[str, Any] = {"var": key, "op": src.op, "status": st}
                entry["metrics"] = _metrics(src.row)
            elif index in n.input_dumps:
                st, values = n.input_dumps[index]
                entry = {"var": key, "op": None, "status": st, "from": "-inp dump"}
                entry["metrics"] = {k: json_number(v) for k, v in values.items()}
            else:
                st = UNKNOWN
                entry = {"var": key, "op": None, "status": st}
            failing_input = failing_input or st == FAIL
            inputs.append(entry)
        if not failing_input:
            roots.setdefault(n.op, []).append((n, inputs))

    def unjudged(entries: list[tuple[Node, list[dict[str, Any]]]]) -> list[str]:
        return [i["var"] for _, inputs in entries for i in inputs if i["status"] == UNKNOWN]

    ranked = sorted(
        roots.items(),
        key=lambda item: (
            bool(unjudged(item[1])),
            -max(downstream_failing(n.key) for n, _ in item[1]),
            min(n.order for n, _ in item[1]),
        ),
    )
    causes = []
    for rank, (op, entries) in enumerate(ranked, start=1):
        first, inputs = entries[0]
        crossings = [str(c) for n, _ in entries for c in rule.crossings(n.row)]
        unknown = list(dict.fromkeys(unjudged(entries)))
        if unknown:
            reason = (
                f"fails while no judged input fails; {len(unknown)} input(s) not judged "
                f"({', '.join(unknown[:3])}{', ...' if len(unknown) > 3 else ''}): it may "
                "inherit their error"
            )
        elif inputs:
            reason = "fails while none of its inputs fail"
        else:
            reason = "fails while none of its inputs fail (it has no inputs: a source of the graph)"
        causes.append(
            ForeignCause(
                op=op,
                type=first.op_type,
                index=first.row.index,
                reason=reason,
                rank=rank,
                evidence={
                    "outputs": [
                        {"var": n.key, "slot": n.slot, "metrics": _metrics(n.row)}
                        for n, _ in entries
                    ],
                    "crossed": crossings,
                    "inputs": inputs,
                    "failing_downstream": max(downstream_failing(n.key) for n, _ in entries),
                },
            )
        )
    return causes


def order_causes(nodes: list[Node], rule: ThresholdRule) -> list[ForeignCause]:
    """No graph: failing layers in layer order, the first one the cause."""
    failing = [n for n in sorted(nodes, key=lambda n: n.order) if status(rule, n.row) == FAIL]
    causes = []
    passed_before = 0
    if failing:
        passed_before = sum(
            1 for n in nodes if n.order < failing[0].order and status(rule, n.row) == PASS
        )
    for rank, n in enumerate(failing, start=1):
        reason = (
            f"the first failing layer in layer order ({passed_before} layers before it pass)"
            if rank == 1
            else f"fails after {failing[0].op} (no graph: it may only inherit that error)"
        )
        causes.append(
            ForeignCause(
                op=n.op,
                type=n.op_type,
                index=n.row.index,
                reason=reason,
                rank=rank,
                evidence={
                    "outputs": [{"tensor": n.key, "slot": n.slot, "metrics": _metrics(n.row)}],
                    "crossed": [str(c) for c in rule.crossings(n.row)],
                    "layer_order": n.order,
                },
            )
        )
    return causes
