"""Where the error of a foreign pair is born.

- MegEngine (the dump holds the graph): a failing var none of whose inputs fail is a root,
  MegEngine's own `accuracy_shake_var_tree` rule. A var is judged by its own row, or, when
  that was not compared (not dumped on a side), by a consumer's `-inp` dumps on both sides,
  whose title names its producer op and that op's inputs: so a producer whose own dump is
  missing is still a root, seen through its consumer's input dump ("at or before" it when its
  own inputs could not be judged either). An op is a cause when one of its outputs is a
  root. A root some of whose inputs could not be judged (not dumped, or printed only in part
  by a text dump) is unproven: its reason says so, and it ranks after every proven root. Then causes rank by how many failing vars lie downstream
  of them (the most consequential first), then by execution order.
  Failing vars always name a cause: when every one has a failing input (edges in a cycle),
  the earliest is named.
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
class InputDump:
    """An input of an op judged from its `-inp` dumps on both sides, because the input var's
    own dump could not judge it: the pair's row and, from the dump's title, the var's producer
    op and that op's inputs."""

    row: ResultRow
    op: str
    op_type: str
    slot: int
    inputs: tuple[str, ...]
    own: str  # why its own dump did not judge it: "not dumped on the left", ...
    index: int | None = None  # the var's own row (not compared), if it has one


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
    # input index -> the input judged from the `-inp` dumps, for inputs not judged by a row
    input_dumps: dict[int, InputDump] = field(default_factory=dict)


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


@dataclass(frozen=True)
class _Var:
    """A var as the walk judges it: a compared left tensor by its row, or an input seen only
    in a consumer's `-inp` dumps (`seen_in` names that dump, `own` why its own did not do)."""

    key: str
    op: str
    op_type: str
    slot: int
    order: float
    inputs: tuple[str, ...]
    row: ResultRow
    index: int | None
    seen_in: str = ""
    own: str = ""


def _var_label(key: str) -> str:
    return f"var{key}" if key.isdigit() else key


def _graph(nodes: list[Node], rule: ThresholdRule) -> dict[str, _Var]:
    """Each var key -> what judges it: its own row when compared, else a consumer's `-inp`
    dumps (the first that fails, else the first), else its own row (not compared)."""
    own = {
        n.key: _Var(n.key, n.op, n.op_type, n.slot, n.order, n.inputs, n.row, n.row.index)
        for n in nodes
    }
    seen: dict[str, _Var] = {}
    for n in sorted(nodes, key=lambda n: n.order):
        for index, dump in sorted(n.input_dumps.items()):
            key = n.inputs[index]
            if key in own and status(rule, own[key].row) != UNKNOWN:
                continue
            var = _Var(
                key,
                dump.op,
                dump.op_type,
                dump.slot,
                n.order - 0.5,  # its producer ran before this consumer
                dump.inputs,
                dump.row,
                dump.index,
                f"{n.op}'s input dump (-inp{index})",
                dump.own,
            )
            kept = seen.get(key)
            fails_first = status(rule, dump.row) == FAIL and (
                kept is not None and status(rule, kept.row) != FAIL
            )
            if kept is None or fails_first:
                seen[key] = var
    return {**own, **seen}


def _listed(keys: list[str]) -> str:
    return (
        f"{len(keys)} input(s) not judged ({', '.join(keys[:3])}{', ...' if len(keys) > 3 else ''})"
    )


def _reason(op: str, entries: list[tuple[_Var, list[dict[str, Any]]]], unknown: list[str]) -> str:
    inputs = entries[0][1]
    seen = next((v for v, _ in entries if v.seen_in), None)
    if seen is not None:
        shown = f"its output {_var_label(seen.key)} ({seen.own}) fails in {seen.seen_in}"
        if unknown:
            return f"the fault lies at or before {op}: {shown}; {_listed(unknown)}"
        if not inputs:
            return f"{shown} while it has no inputs (a source of the graph)"
        return f"{shown} while none of its inputs fail"
    if unknown:
        return f"fails while no judged input fails; {_listed(unknown)}: it may inherit their error"
    if inputs:
        return "fails while none of its inputs fail"
    return "fails while none of its inputs fail (it has no inputs: a source of the graph)"


def graph_causes(nodes: list[Node], rule: ThresholdRule) -> list[ForeignCause]:
    graph = _graph(nodes, rule)
    states = {key: status(rule, var.row) for key, var in graph.items()}
    consumers: dict[str, list[str]] = {}
    for var in graph.values():
        for i in var.inputs:
            consumers.setdefault(i, []).append(var.key)

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

    def judged(key: str) -> dict[str, Any]:
        src = graph.get(key)
        if src is None:
            return {"var": key, "op": None, "status": UNKNOWN}
        entry: dict[str, Any] = {"var": key, "op": src.op, "status": states[key]}
        if src.seen_in:
            entry["from"] = "-inp dump"
        entry["metrics"] = _metrics(src.row)
        return entry

    failing = sorted((v for v in graph.values() if states[v.key] == FAIL), key=lambda v: v.order)
    roots: dict[str, list[tuple[_Var, list[dict[str, Any]]]]] = {}
    for var in failing:
        inputs = [judged(k) for k in var.inputs]
        if not any(i["status"] == FAIL for i in inputs):
            roots.setdefault(var.op, []).append((var, inputs))
    if failing and not roots:
        # every failing var has a failing input: only edges forming a cycle do that; the
        # earliest failing var is still named, never no cause next to failing outputs
        first = failing[0]
        reason = (
            "the earliest failing var: every failing var has a failing input (the dump's edges "
            "form a cycle)"
        )
        entries = [(first, [judged(k) for k in first.inputs])]
        return [_cause(first.op, entries, reason, 1, rule, downstream_failing(first.key))]

    def unjudged(entries: list[tuple[_Var, list[dict[str, Any]]]]) -> list[str]:
        found = [i["var"] for _, inputs in entries for i in inputs if i["status"] == UNKNOWN]
        return list(dict.fromkeys(found))

    ranked = sorted(
        roots.items(),
        key=lambda item: (
            bool(unjudged(item[1])),
            -max(downstream_failing(v.key) for v, _ in item[1]),
            min(v.order for v, _ in item[1]),
        ),
    )
    return [
        _cause(
            op,
            entries,
            _reason(op, entries, unjudged(entries)),
            rank,
            rule,
            max(downstream_failing(v.key) for v, _ in entries),
        )
        for rank, (op, entries) in enumerate(ranked, start=1)
    ]


def _cause(
    op: str,
    entries: list[tuple[_Var, list[dict[str, Any]]]],
    reason: str,
    rank: int,
    rule: ThresholdRule,
    downstream: int,
) -> ForeignCause:
    first, inputs = entries[0]
    outputs = []
    for var, _ in entries:
        output: dict[str, Any] = {"var": var.key, "slot": var.slot, "metrics": _metrics(var.row)}
        if var.seen_in:
            output.update({"from": var.seen_in, "own": var.own})
        outputs.append(output)
    evidence = {
        "outputs": outputs,
        "crossed": [str(c) for var, _ in entries for c in rule.crossings(var.row)],
        "inputs": inputs,
        "failing_downstream": downstream,
    }
    return ForeignCause(op, first.op_type, first.index, reason, rank, evidence)


def order_causes(nodes: list[Node], rule: ThresholdRule) -> list[ForeignCause]:
    """No graph: failing layers in layer order, the first one the cause."""
    ordered = sorted(nodes, key=lambda n: n.order)
    failing = [n for n in ordered if status(rule, n.row) == FAIL]
    causes = []
    first_reason = ""
    if failing:
        before = [n for n in ordered if n.order < failing[0].order]
        passed = sum(1 for n in before if status(rule, n.row) == PASS)
        unknown = [n.op for n in before if status(rule, n.row) == UNKNOWN]
        first_reason = f"the first failing layer in layer order ({passed} layers before it pass"
        if unknown:  # QA Q26 #8: a layer refused (its scale printed as 0) may be the first
            shown = ", ".join(unknown[:3]) + (", ..." if len(unknown) > 3 else "")
            first_reason += (
                f"; {len(unknown)} not compared ({shown}): a fault there would come first"
            )
        first_reason += ")"
    for rank, n in enumerate(failing, start=1):
        reason = (
            first_reason
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
