"""Diagnosis of one compare: root causes (best first), the advisor's findings, and the
baseline older tools report. Recorded in the run's summary by the result store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from precision_shell.compare.diagnosis.advisor import Finding, OverflowHit, advise
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
from precision_shell.workspace.graph_index import GraphIndex


@dataclass
class Diagnosis:
    causes: list[RootCause]
    findings: list[Finding]
    baseline: str | None  # "first op in execution order whose output cosine < threshold"
    evidence: dict[str, OpEvidence]

    def findings_for(self, op: str) -> list[Finding]:
        return [f for f in self.findings if f.op == op]

    def record(self) -> DiagnosisRecord:
        """What the summary keeps of this diagnosis."""
        causes = [
            {
                "op": c.op,
                "type": c.type,
                "index": c.index,
                "reason": c.reason,
                "evidence": c.evidence(),
            }
            for c in self.causes
        ]
        return DiagnosisRecord(causes, [f.to_json() for f in self.findings], self.baseline)


def diagnose(
    graph: GraphIndex,
    rows: Sequence[ResultRow],
    rule: ThresholdRule,
    overflows: Sequence[OverflowHit] = (),
) -> Diagnosis:
    evidence = collect_evidence(graph, rows, rule)
    causes = localise(graph, evidence)
    findings = advise(graph, rows, evidence, causes, rule, overflows)
    baseline = first_below_baseline(evidence, rule.cosine if rule.cosine is not None else 0.98)
    return Diagnosis(causes, findings, baseline, evidence)
