"""The advisor: reads a compare (and the overflow files) and says what kind of problem it is.

Each finding has a detection type, the op (index and name) it is about, advice text and the
numbers it rests on. The detections follow MindStudio's accuracy advisor (seed documents
000/002), made concrete with the root-cause walk: float16 overflow (by value and by Opdebug
file), input inconsistency, global consistency, single-point deviation, accumulated drift.
A float16 output at the limit or non-finite is no overflow when the replay of that output
proves the kernel wrong with every exact value within the dtype (a NaN/inf the kernel makes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from precision_shell.compare.diagnosis.replay_evidence import (
    measured_fault,
    proves_fault,
    proves_wrong,
)
from precision_shell.compare.diagnosis.root_cause import (
    OUTLIER_DROP,
    OpEvidence,
    RootCause,
    loss_text,
)
from precision_shell.compare.rank_divergence import rank_list_text
from precision_shell.compare.results.schema import ResultRow
from precision_shell.compare.results.tally import benchmark_missing
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.json_numbers import json_number
from precision_shell.listing_text import some_of
from precision_shell.workspace.graph_index import GraphIndex

FP16_OVERFLOW = "float16 overflow"
INPUT_INCONSISTENCY = "input inconsistency"
GLOBAL_CONSISTENCY = "global consistency"
SINGLE_POINT = "single-point deviation"
ACCUMULATED_DRIFT = "accumulated drift"


@dataclass(frozen=True)
class Finding:
    detection: str
    op: str | None
    index: int | None
    advice: str
    evidence: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "detection": self.detection,
            "op": self.op,
            "index": self.index,
            "advice": self.advice,
            "evidence": self.evidence,
        }


@dataclass(frozen=True)
class OverflowHit:
    """An op an Opdebug file says overflowed (first first)."""

    op: str | None
    texts: tuple[str, ...]


@dataclass(frozen=True)
class SliceCheck:
    """The other compared (rank, step) dumps, for what a finding says of the whole run: one
    dump's compare cannot say "no single op loses 10 dB" of the cards it did not read."""

    here: tuple[str, str]  # the (rank, step) diagnosed
    clean: tuple[tuple[str, str], ...]  # the others where no op loses OUTLIER_DROP on its own
    # the others where one does: ((rank, step), that op)
    lossy: tuple[tuple[tuple[str, str], RootCause], ...]
    failing: tuple[tuple[str, str], ...] = ()  # the others with outputs failing the thresholds
    left_out: tuple[tuple[str, str], ...] = ()  # dumped but not compared (vc's --rank/--step)
    # the others with tensors that could not be compared with their benchmark op's file (not
    # found, unreadable...: `tally.benchmark_missing`), and how many
    uncompared: tuple[tuple[tuple[str, str], int], ...] = ()


def _slices_text(slices: Sequence[tuple[str, str]]) -> str:
    """`ranks 0, 2, 3 step 0; rank 1 steps 10, 20`: the (rank, step) dumps, by step; steps
    dumped by the same ranks share one part."""
    by_step: dict[str, list[str]] = {}
    for rank, step in slices:
        by_step.setdefault(step, []).append(rank)
    by_ranks: dict[tuple[str, ...], list[str]] = {}
    for step, ranks in by_step.items():
        by_ranks.setdefault(tuple(ranks), []).append(step)
    return "; ".join(
        f"{'rank' if len(ranks) == 1 else 'ranks'} {rank_list_text(list(ranks))} "
        f"{'step' if len(steps) == 1 else 'steps'} {', '.join(steps)}"
        for ranks, steps in by_ranks.items()
    )


def _consistency(
    rule: ThresholdRule, compared_ops: int, scope: SliceCheck | None, uncompared: int = 0
) -> Finding:
    """Nothing fails in the compare diagnosed: the network matches, as far as the other
    (rank, step) compares, the dumps left out and the tensors that could not be compared
    (`uncompared` in the one diagnosed) let it be said."""
    evidence: dict[str, Any] = {"compared_ops": compared_ops}
    missing = list(scope.uncompared) if scope is not None else []
    if uncompared:
        missing.insert(0, (scope.here if scope is not None else ("", ""), uncompared))
    if scope is not None and scope.failing:
        evidence["failing_on"] = [{"rank": r, "step": s} for r, s in scope.failing]
        r, s = scope.failing[0]
        text = (
            f"No output of rank {scope.here[0]} step {scope.here[1]} crosses the thresholds "
            f"({rule.describe()}) and no op there loses signal on its own, but "
            f"{_slices_text(scope.failing)} {'fails' if len(scope.failing) == 1 else 'fail'}"
            f" them (vcs --rank {r} --step {s} lists the "
            "outputs): the cards or steps disagree. Look at what differs there: input data, "
            "the card, or what changed between the steps."
        )
        return Finding(GLOBAL_CONSISTENCY, None, None, text, evidence)
    where = ""
    if scope is not None and scope.clean:
        where = f" on any compared card or step ({_slices_text([scope.here, *scope.clean])})"
    if missing:
        evidence["uncompared"] = [
            {"rank": r or None, "step": s or None, "tensors": n} for (r, s), n in missing
        ]
        (r, s), _ = missing[0]
        lists = f"vcs --rank {r} --step {s}" if r else "vcs"
        text = (
            f"No compared output crosses the thresholds ({rule.describe()}){where} and no op "
            f"loses signal on its own, but {_uncompared_text(missing)} could not be compared "
            f"({lists} lists why): the network matches the benchmark only as far as it was compared, "
            "and a fault among those tensors would not show. Give them a benchmark (a rank "
            "or step benchmark dir missing files?) and compare again."
        )
        return Finding(GLOBAL_CONSISTENCY, None, None, text, evidence)
    text = (
        f"No compared output crosses the thresholds ({rule.describe()}){where} and no op loses "
        "signal on its own: the network itself matches the benchmark. Look at what lies "
        "outside the dumped graph: data pipeline, post-processing, loss and optimizer "
        "settings, or later training steps."
    )
    if scope is not None and scope.left_out:
        evidence["not_compared"] = [{"rank": r, "step": s} for r, s in scope.left_out]
        # QA: "compared only: ranks 0-3 step 1; ranks 1-3 step 0 were not compared" read as
        # if the first part had been compared
        text += (
            f" This holds for the dumps compared only; not compared: "
            f"{_slices_text(scope.left_out)} (ac -c --rank all --step all compares every one)."
        )
    return Finding(GLOBAL_CONSISTENCY, None, None, text, evidence)


def _uncompared_text(missing: Sequence[tuple[tuple[str, str], int]]) -> str:
    """`110 tensors of rank 0 step 1 and 110 of rank 1 step 1` (`20 tensors` for a compare of
    no rank and step)."""
    parts = []
    for k, ((rank, step), n) in enumerate(missing[:4]):
        noun = ("tensor" if n == 1 else "tensors") if k == 0 else ""
        of = f" of rank {rank} step {step}" if rank else ""
        parts.append(" ".join(p for p in (str(n), noun) if p) + of)
    if len(missing) > 4:
        parts.append(f"{sum(n for _, n in missing[4:])} on {len(missing) - 4} more")
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def with_replay_unfinished(
    finding: Finding, where: Sequence[str], why: str, stopped: bool
) -> Finding:
    """`finding` (accumulated drift) saying that the replay, which finds the faults drift
    hides, did not finish on `where` (the slices: their labels; empty: the one compared)
    because of `why` (Ctrl-C or SIGTERM: `stopped`; else the budget): the drift reading rests
    on the estimate there."""
    if finding.detection != ACCUMULATED_DRIFT:
        return finding
    on = f" on {some_of(where)}" if where else ""
    # more time helps a budget that ran out, not a replay the user stopped
    again = (
        "ac -c again lets it finish" if stopped else "ac -c --replay-budget S gives it more time"
    )
    advice = (
        f"{finding.advice} The replay, which finds faults drift hides, did not finish{on} "
        f"({why}): a fault there is not ruled out ({again})."
    )
    evidence = finding.evidence | {"replay_unfinished": list(where) or True}
    return replace(finding, advice=advice, evidence=evidence)


def with_replay_partial(finding: Finding, left_out: int) -> Finding:
    """`finding` ("the network itself matches the benchmark") saying that the default replay,
    done, replayed its candidates only: `left_out` other dumped ops were never replayed, and a
    fault too small to cross the thresholds there would not show (QA Q28 #4: a 1% wrong filter
    `--replay all` names, under "the network itself matches")."""
    if finding.detection != GLOBAL_CONSISTENCY or left_out <= 0:
        return finding
    advice = (
        f"{finding.advice} The replay ran on its candidates only: {left_out} other dumped ops "
        "were not replayed, and a fault too small to cross the thresholds among them would not "
        "show (ac -c --replay all replays them)."
    )
    return replace(
        finding, advice=advice, evidence=finding.evidence | {"replay_left_out": left_out}
    )


def loses_on_its_own(cause: RootCause) -> bool:
    """The op alone loses OUTLIER_DROP dB or more (NaN/inf born there: an infinite loss)."""
    return not math.isfinite(cause.drop_db) or cause.drop_db >= OUTLIER_DROP


def is_fault(cause: RootCause) -> bool:
    """A fault at the op, not drift: measured there (`measured_fault`: a replay's proof, a
    NaN/inf birth no replay cleared) or a loss of OUTLIER_DROP dB by itself."""
    return measured_fault(cause) or loses_on_its_own(cause)


def _drift_advice(scope: SliceCheck | None) -> tuple[str, dict]:
    """The accumulated-drift advice, as far as the dumps checked bear it out."""
    remedy = (
        "Try float32 for the accumulating ops (normalisation, reductions, long matmul chains) "
        "or a higher-precision mode"
    )
    if scope is None:
        return (
            f"No single op loses more than {OUTLIER_DROP:g} dB; the error grows slowly over many "
            f"ops (float16 rounding accumulating through a deep network). {remedy}, rather than "
            "hunting one faulty op.",
            {},
        )
    checked = [scope.here, *scope.clean]
    evidence: dict = {"checked_on": [{"rank": r, "step": s} for r, s in checked]}
    if not scope.lossy:
        return (
            f"No single op loses more than {OUTLIER_DROP:g} dB on any compared card or step "
            f"({_slices_text(checked)}); the error grows slowly over many ops (float16 rounding "
            f"accumulating through a deep network). {remedy}, rather than hunting one faulty op.",
            evidence,
        )
    evidence["not_on"] = [
        {"rank": r, "step": s, "op": c.op, "index": c.index, "drop_db": _num(c.drop_db)}
        for (r, s), c in scope.lossy
    ]
    faults = "; ".join(
        f"on rank {r} step {s}, {c.op} (index {c.index if c.index is not None else '-'}) "
        + (
            "gives birth to NaN/inf"
            if not math.isfinite(c.drop_db)
            else f"alone loses {loss_text(c.drop_db, c.input_quality)}"
        )
        + f" (ac -c --rank {r} --step {s})"
        for (r, s), c in scope.lossy
    )
    return (
        f"On {_slices_text(checked)} no single op loses more than {OUTLIER_DROP:g} dB: there the "
        f"error grows slowly over many ops (float16 rounding accumulating through a deep "
        f"network); {remedy[0].lower()}{remedy[1:]}. Not on every card: {faults}: look for "
        "a fault there.",
        evidence,
    )


def _downstream(graph: GraphIndex, name: str) -> set[str]:
    seen: set[str] = set()
    stack = [name]
    while stack:
        for consumer in graph.consumers(stack.pop()):
            if consumer.op not in seen:
                seen.add(consumer.op)
                stack.append(consumer.op)
    return seen


def _kernel_made(causes: Sequence[RootCause]) -> set[tuple[str, int]]:
    """(op, output slot) whose replay proves the kernel wrong while no exact value exceeds
    the dtype: a saturated or non-finite output there is the kernel's, not the range's."""
    return {
        (c.op, c.replay.slot)
        for c in causes
        if c.replay is not None and proves_wrong(c.replay) and not c.replay.overflow
    }


def _fp16_findings(
    rows: Sequence[ResultRow],
    overflows: Sequence[OverflowHit],
    evidence: dict[str, OpEvidence],
    causes: Sequence[RootCause],
) -> list[Finding]:
    found: list[Finding] = []
    seen: set[str] = set()
    kernel_made = _kernel_made(causes)
    kernel_ops = {op for op, _ in kernel_made}
    for hit in overflows:
        if hit.op and hit.op not in seen:
            seen.add(hit.op)
            ev = evidence.get(hit.op)
            by_kernel = hit.op in kernel_ops
            found.append(
                Finding(
                    FP16_OVERFLOW,
                    hit.op,
                    ev.index if ev else None,
                    _OPDEBUG_BY_KERNEL if by_kernel else _OPDEBUG_RANGE,
                    {"source": "Opdebug", "status": list(hit.texts), "kernel_made": by_kernel},
                )
            )
    replayed = _replayed(causes)
    for row in rows:
        ev = evidence.get(row.op_name)
        inherited = ev is not None and any(q.nonfinite for q in ev.inputs.values())
        if (
            row.overflow == "YES"
            and row.kind == "output"
            and row.op_name not in seen
            and not inherited
            and (row.op_name, row.slot) not in kernel_made
        ):
            seen.add(row.op_name)
            measured = (row.op_name, row.slot) in replayed
            found.append(
                Finding(
                    FP16_OVERFLOW,
                    row.op_name,
                    row.index,
                    _fp16_value_advice(measured),
                    {"source": "value", "tensor": row.tensor_index, "replayed": measured},
                )
            )
    return found


_OPDEBUG_RANGE = (
    "The device reported an overflow in this op (Opdebug). Values beyond the float16 range "
    "(65504) become inf: keep this op in float32 (e.g. add it to the mixed-precision blocklist) "
    "or enable loss scaling, then compare again."
)
# QA Q24 #10: the range advice stood beside a replay proving the kernel wrong
_OPDEBUG_BY_KERNEL = (
    "The device reported an overflow in this op (Opdebug), but its replay from the device's own "
    "inputs stays within the float16 range: the kernel made the inf/NaN itself. Running it in "
    "float32 or loss scaling may hide this, not fix it: report the kernel."
)


def _replayed(causes: Sequence[RootCause]) -> set[tuple[str, int]]:
    """(op, output slot) a replay measured: its exact values are known."""
    return {(c.op, c.replay.slot) for c in causes if c.replay is not None}


def _fp16_value_advice(replayed: bool) -> str:
    """A float16 output at the limit: an overflow when its exact values are beyond the range
    (the replay measured them and found no kernel fault); unreplayed, the kernel may have made
    the inf/NaN itself (an exact value in range), which only a replay tells apart (QA: an
    injected NaN birth was advised as an overflow under `--replay none`)."""
    head = "This float16 output reaches the float16 limit (max |x| >= 65504): values are saturated or inf."
    if replayed:
        return f"{head} Run this op in float32 or rescale its inputs."
    return (
        f"{head} Not replayed, so whether its exact values exceed the range (an overflow: run "
        "it in float32 or rescale its inputs) or its kernel made them (a kernel fault) is not "
        "known: `ac -c --replay all` tells them apart."
    )


def advise(
    graph: GraphIndex,
    rows: Sequence[ResultRow],
    evidence: dict[str, OpEvidence],
    causes: Sequence[RootCause],
    rule: ThresholdRule,
    overflows: Sequence[OverflowHit] = (),
    scope: SliceCheck | None = None,
) -> list[Finding]:
    """The findings, consistent with `causes`: never "the network matches" next to a cause.
    `scope`: the other (rank, step) dumps compared, which a claim about every op must cover."""
    findings = _fp16_findings(rows, overflows, evidence, causes)
    ordered = sorted(evidence.values(), key=lambda e: e.position)
    failing = [e for e in ordered if any(q.fails for q in e.outputs.values())]

    inputs = [e for e in ordered if e.is_source and any(q.fails for q in e.outputs.values())]
    for ev in inputs:
        worst = min(ev.outputs.values(), key=lambda q: q.sqnr)
        findings.append(
            Finding(
                INPUT_INCONSISTENCY,
                ev.name,
                ev.index,
                "The network's input already differs from the benchmark's, so nothing downstream "
                "can be trusted. Make both runs read the same data: same preprocessing, no random "
                "augmentation, same batch order and seed.",
                {"input_cosine": _num(worst.cosine), "input_sqnr_db": _num(worst.sqnr)},
            )
        )

    if not failing and not causes:
        uncompared = sum(1 for row in rows if benchmark_missing(row))
        findings.append(_consistency(rule, len(ordered), scope, uncompared))
        return findings

    for cause in causes:
        if cause.reason.startswith("network input") or not math.isfinite(cause.drop_db):
            continue
        if proves_fault(cause.replay):  # measured: no benign optimisation
            continue
        after = _downstream(graph, cause.op)
        later = [e for e in failing if e.name in after]
        checked = [e for e in ordered if e.name in after and e.outputs]
        if checked and not later:
            # its replay ran and proves nothing: no "unless a replay proves it wrong" (QA Q28 #6)
            why = (
                "its replay finds no fault in it (the kernel computes what it is given)"
                if cause.replay is not None
                else "possibly a benign internal optimisation (a different but valid algorithm "
                "or precision), unless a replay proves it wrong (ac -c --replay all)"
            )
            findings.append(
                Finding(
                    SINGLE_POINT,
                    cause.op,
                    cause.index,
                    f"This op deviates, but no op after it fails the thresholds: {why}. Check it "
                    "with cp; if the network's final accuracy is fine, it can be ignored.",
                    {
                        "output_cosine": _num(cause.output_cosine),
                        "downstream_checked": len(checked),
                    },
                )
            )

    # an op that loses much on its own, or one its replay proves faulty, is no drift
    big = [c for c in causes if is_fault(c)]
    if failing and not big and not inputs:
        first = failing[0]
        start = next((e for e in ordered if e.outputs), first)
        q0 = min(start.outputs.values(), key=lambda q: q.sqnr)
        q1 = min(failing[-1].outputs.values(), key=lambda q: q.sqnr)
        advice, scope_evidence = _drift_advice(scope)
        findings.append(
            Finding(
                ACCUMULATED_DRIFT,
                first.name,
                first.index,
                advice,
                {
                    "first_failing": first.name,
                    "sqnr_start_db": _num(q0.sqnr),
                    "sqnr_end_db": _num(q1.sqnr),
                    "failing_ops": len(failing),
                    **scope_evidence,
                },
            )
        )
    return findings


def _num(value: float) -> float | str:
    return json_number(round(value, 6))
