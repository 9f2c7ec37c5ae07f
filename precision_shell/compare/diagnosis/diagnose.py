"""Diagnosis of one compare: root causes (best first), the advisor's findings, and the
baseline older tools report; written into the compare's `summary.json`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from precision_shell.compare.diagnosis.advisor import Finding, OverflowHit, advise
from precision_shell.compare.diagnosis.root_cause import (
    DEFAULT_THRESHOLDS,
    OpEvidence,
    RootCause,
    Thresholds,
    collect_evidence,
    first_below_baseline,
    localise,
)
from precision_shell.compare.results.csv_reader import CsvRow
from precision_shell.workspace.graph_index import GraphIndex


@dataclass
class Diagnosis:
    causes: list[RootCause]
    findings: list[Finding]
    baseline: str | None  # "first op in execution order whose output cosine < threshold"
    evidence: dict[str, OpEvidence]

    def findings_for(self, op: str) -> list[Finding]:
        return [f for f in self.findings if f.op == op]

    def root_causes_json(self) -> list[dict]:
        return [
            {
                "op": c.op,
                "type": c.type,
                "index": c.index,
                "reason": c.reason,
                "evidence": c.evidence(),
            }
            for c in self.causes
        ]


def diagnose(
    graph: GraphIndex,
    rows: Sequence[CsvRow],
    overflows: Sequence[OverflowHit] = (),
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> Diagnosis:
    evidence = collect_evidence(graph, rows)
    causes = localise(graph, evidence, thresholds)
    findings = advise(graph, rows, evidence, causes, overflows, thresholds)
    return Diagnosis(causes, findings, first_below_baseline(evidence, thresholds), evidence)


def write_into_summary(summary_path: Path, diagnosis: Diagnosis) -> None:
    """Fill `root_causes` and `advice` of an existing summary.json (other keys untouched)."""
    payload = json.loads(summary_path.read_text(encoding="utf-8"))
    payload["root_causes"] = diagnosis.root_causes_json()
    payload["advice"] = [f.to_json() for f in diagnosis.findings]
    payload["baseline_first_below"] = diagnosis.baseline
    summary_path.write_text(
        json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
