"""Diagnosis of one compare: root causes (best first), the advisor's findings, and the
baseline older tools report. Recorded in the run's summary by the result store."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from precision_shell.compare.diagnosis.advisor import Finding, OverflowHit, SliceCheck, advise
from precision_shell.compare.diagnosis.replay_evidence import (
    ReplayPass,
    finds_no_fault,
    replay_reading,
    rerank,
)
from precision_shell.compare.diagnosis.root_cause import (
    OpEvidence,
    RootCause,
    collect_evidence,
    first_below_baseline,
    localise,
)
from precision_shell.compare.results.schema import ResultRow
from precision_shell.compare.results.summary import DiagnosisRecord
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.replay.session import error_json
from precision_shell.workspace.graph_index import GraphIndex


@dataclass
class Diagnosis:
    causes: list[RootCause]
    findings: list[Finding]
    baseline: str | None  # "first op in execution order whose output cosine < threshold"
    evidence: dict[str, OpEvidence]
    replays: ReplayPass | None = None  # the replay pass that re-ranked the causes, if one ran
    scope: SliceCheck | None = None  # the other (rank, step) dumps the findings speak for
    # the other cards whose own root cause is elsewhere: (rank, step, their best cause)
    other_cards: list[tuple[str, str, RootCause]] = field(default_factory=list)
    # the other cards of the step that go wrong at the root cause as the card shown does
    sharing_cards: list[tuple[str, str]] = field(default_factory=list)

    def findings_for(self, op: str) -> list[Finding]:
        return [f for f in self.findings if f.op == op]

    def record(self) -> DiagnosisRecord:
        """What the summary keeps of this diagnosis."""
        return DiagnosisRecord(
            [cause_json(c) for c in self.causes],
            [f.to_json() for f in self.findings],
            self.baseline,
            self.replays.to_json() if self.replays is not None else None,
            other_cards=[
                {"rank": rank, "step": step, **cause_json(cause)}
                for rank, step, cause in self.other_cards
            ]
            or None,
            sharing_cards=[[rank, step] for rank, step in self.sharing_cards] or None,
        )


def cause_json(cause: RootCause) -> dict[str, Any]:
    """A root cause in summary.json. `evidence` says where its own error comes from:
    "replay" (own_error measured: device vs the float64 replay from the device's own inputs,
    inherited_error: that replay vs the benchmark, isolated_error: the replay from the
    benchmark's data inputs and the device's constants vs the benchmark) or "estimate" (own_error: the signal
    quality in dB the op loses between its worst input and its worst output). `measures` holds
    the compare's numbers for the op either way."""
    out = cause.replay
    payload: dict[str, Any] = {
        "op": cause.op,
        "type": cause.type,
        "index": cause.index,
        "reason": cause.reason,
    }
    measures = cause.evidence()
    if out is not None:
        payload["evidence"] = "replay"
        payload["own_error"] = error_json(out.own, "own")
        payload["inherited_error"] = error_json(out.inherited, "inherited")
        payload["isolated_error"] = error_json(out.isolated, "isolated")
        payload["replay"] = {
            "slot": out.slot,
            "dtype": out.dtype,
            "constants_differ": out.constants_differ,
            "verdict": replay_reading(cause),
            "overflow": out.overflow,
            "finds_no_fault": finds_no_fault(cause),
        }
    else:
        # a network input that differs is read off the compare directly, no estimate
        payload["evidence"] = "input" if cause.input_differs else "estimate"
        payload["own_error"] = {"drop_db": measures["drop_db"]}
        payload["inherited_error"] = None
        if cause.replay_skipped is not None:
            payload["replay_skipped"] = cause.replay_skipped
    payload["measures"] = measures
    if cause.measured_by:  # no rows of its own: the rows that measured it
        payload["measured_by"] = list(cause.measured_by)
    return payload


# Runs the replays for a diagnosis: (graph, evidence, heuristic causes) -> the pass
Replayer = Callable[[GraphIndex, dict[str, OpEvidence], list[RootCause]], ReplayPass]


def diagnose(
    graph: GraphIndex,
    rows: Sequence[ResultRow],
    rule: ThresholdRule,
    overflows: Sequence[OverflowHit] = (),
) -> Diagnosis:
    """Root causes (the estimate), findings and the baseline of one compare; `with_replays`
    re-ranks them by replays."""
    evidence = collect_evidence(graph, rows, rule)
    causes = localise(graph, evidence)
    findings = advise(graph, rows, evidence, causes, rule, overflows)
    baseline = first_below_baseline(evidence, rule.cosine if rule.cosine is not None else 0.98)
    return Diagnosis(causes, findings, baseline, evidence)


def with_scope(
    diagnosis: Diagnosis,
    graph: GraphIndex,
    rows: Sequence[ResultRow],
    rule: ThresholdRule,
    overflows: Sequence[OverflowHit],
    scope: SliceCheck,
) -> Diagnosis:
    """`diagnosis` (of `rows`, one of several (rank, step) dumps compared) with the advisor's
    findings read again for what the other dumps, `scope`, show."""
    findings = advise(graph, rows, diagnosis.evidence, diagnosis.causes, rule, overflows, scope)
    return replace(diagnosis, findings=findings, scope=scope)


def with_replays(
    diagnosis: Diagnosis,
    graph: GraphIndex,
    rows: Sequence[ResultRow],
    rule: ThresholdRule,
    overflows: Sequence[OverflowHit],
    replayer: Replayer,
) -> Diagnosis:
    """`diagnosis` (of `rows`) with its causes re-ranked by the replays `replayer` runs
    (replay_evidence) and the advisor's findings read again from them; the evidence and
    the baseline are reused, not collected again."""
    evidence = diagnosis.evidence
    replays = replayer(graph, evidence, diagnosis.causes)
    causes = rerank(diagnosis.causes, replays, graph, evidence)
    findings = advise(graph, rows, evidence, causes, rule, overflows, diagnosis.scope)
    return replace(diagnosis, causes=causes, findings=findings, replays=replays)
