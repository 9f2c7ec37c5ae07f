"""Which metrics a compare computed, for the rule its readers judge it by: a limit on a metric
not computed checks nothing, and a rule that kept it would say it checked what it never did."""

from __future__ import annotations

from typing import Protocol

from precision_shell.compare.results.summary import RunSummary


class _Table(Protocol):
    @property
    def metric_columns(self) -> list[str]: ...

    def computed_metrics(self) -> list[str]: ...


def computed_metrics(summary: RunSummary | None, table: _Table) -> list[str] | None:
    """summary.json's `metrics` (`vc --alg`); else, for a compare whose summary does not say
    (a run killed before its summary, a summary from before `metrics`, another tool's CSV),
    the columns its CSV holds a value of, when some hold none and some do (QA: a killed
    `vc --alg mae` was judged "no output fails ... CosineSimilarity < 0.98 or
    RelativeEuclideanDistance > 0.05"); None: every one."""
    if summary is not None and summary.metrics is not None:
        return summary.metrics
    if summary is not None and summary.own_tool_rule:
        return None  # MegEngine's partial-var column is empty but for vars printed in part
    held = table.computed_metrics()
    return held if held and len(held) < len(table.metric_columns) else None
