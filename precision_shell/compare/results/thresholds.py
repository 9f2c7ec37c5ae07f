"""The one threshold rule: when a compared tensor fails, for every command that judges one.

A rule is a set of limits on metric columns (cosine fails below its limit, error metrics
above theirs); a tensor fails when any limit is crossed, or when a limited metric holds
NaN/inf propagated from the data. A metric that was not computed (`NaN`) crosses nothing, but for
a benchmark that is all zero where the device's tensor is not: msaccucmp then cannot compute
the cosine and prints a relative Euclidean distance of 0 by convention, while the relative
error is unbounded; such a tensor crosses the cosine limit (else the distance's).
`vc`, `vcs`, `ac`, the root cause, the advisor, the report and `ni` all ask this rule.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any

from precision_shell.compare.metrics.cells import COSINE, MAX_REL, REL_EUCLID, zero_cosine_reason
from precision_shell.compare.results.schema import HIGHER_IS_BETTER, ResultRow
from precision_shell.errors import PrecisionError

# settings key under [thresholds] -> the CSV column it limits
SETTING_COLUMNS: dict[str, str] = {
    "cosine": COSINE,
    "max_relative_error": MAX_REL,
    "relative_euclidean_distance": REL_EUCLID,
}
DEFAULT_LIMITS: dict[str, float] = {COSINE: 0.98, MAX_REL: math.inf, REL_EUCLID: 0.05}


ZERO_BENCHMARK_MARK = zero_cosine_reason("benchmark")
# what a tensor whose benchmark is all zero (and its own values not) shows as crossing
ZERO_BENCHMARK_TEXT = "NaN (the benchmark is all zero, the device's tensor is not)"


# A device tensor larger than its benchmark is cut to the benchmark's shape (msaccucmp's
# rule); NaN/inf in the part cut off are the device tensor's all the same: the row fails.
SLICED_NONFINITE_MARK = "NaN/inf in the part cut off"
SLICED_NONFINITE_TEXT = "nan (NaN/inf in the device elements cut to the benchmark's shape)"


def sliced_nonfinite(row: ResultRow) -> bool:
    """The device tensor holds NaN/inf in the part cut off to fit the benchmark's shape
    (compare/pipeline/worker.py `sliced_note`): non-finite, whatever its cells print."""
    return SLICED_NONFINITE_MARK in row.reason


# MegEngine's compare_binary_iodump fails two vars whose shapes differ (`shape mismatch`),
# whatever their values: the row is compared flat and fails all the same
SHAPE_MISMATCH_MARK = "shape mismatch (MegEngine's compare fails it; values compared flat)"
SHAPE_MISMATCH_TEXT = "shape mismatch"
# ... and two vars whose element counts differ: the row compares the leading values both
# hold, and fails all the same (QA Q26 #4: "not compared", the root's consumer was blamed)
COUNT_MISMATCH_MARK = "shape mismatch (MegEngine's compare fails it; element counts differ)"
# SigmaStar's compareAccuracy fails two buffers of different sizes (`Error! ... buffer size`)
SIZE_MISMATCH_MARK = "size mismatch (SigmaStar's compareAccuracy fails it; element counts differ)"
SIZE_MISMATCH_TEXT = "size mismatch"

# the marks of a reason that fails its row whatever the cells print (`reason_fails`), and
# what the row shows as crossing the limit
FAILING_REASONS = {
    ZERO_BENCHMARK_MARK: ZERO_BENCHMARK_TEXT,
    SLICED_NONFINITE_MARK: SLICED_NONFINITE_TEXT,
    SHAPE_MISMATCH_MARK: SHAPE_MISMATCH_TEXT,
    COUNT_MISMATCH_MARK: SHAPE_MISMATCH_TEXT,
    SIZE_MISMATCH_MARK: SIZE_MISMATCH_TEXT,
}
FAILING_REASON_MARKS = tuple(FAILING_REASONS)


def reason_fails(reason: str) -> bool:
    """A CompareFailReason that fails its row whatever its cells print: an all-zero
    benchmark (`zero_benchmark`), NaN/inf cut off the device tensor (`sliced_nonfinite`), a
    MegEngine var whose shape or element count differs (`SHAPE_MISMATCH_MARK`,
    `COUNT_MISMATCH_MARK`), a SigmaStar tensor whose count does (`SIZE_MISMATCH_MARK`)."""
    return any(mark in reason for mark in FAILING_REASON_MARKS)


def zero_benchmark(row: ResultRow) -> bool:
    """The benchmark of this tensor is all zero and the device's is not (msaccucmp's cosine
    reason says so): its relative error is unbounded, whatever the cells print."""
    return zero_benchmark_reason(row.reason)


def zero_benchmark_reason(reason: str) -> bool:
    """Whether a row's CompareFailReason says its benchmark is all zero (`zero_benchmark`)."""
    return ZERO_BENCHMARK_MARK in reason


@dataclass(frozen=True)
class Crossing:
    """One limit a tensor crossed, with the value that crossed it."""

    metric: str
    limit: float
    text: str  # the cell as printed (`nan`/`inf` for values from the data)

    def __str__(self) -> str:
        cmp = "<" if self.metric in HIGHER_IS_BETTER else ">"
        return f"{self.metric} {self.text} {cmp} {self.limit:g}"


# what a compare whose computed metrics have no limit (`vc --alg mae`) says instead of a count
NOT_JUDGED = "not judged (no metric computed has a limit)"


def _checked(metric: str, value: float) -> float:
    if math.isnan(value):
        raise PrecisionError(f"threshold of {metric} is not a number")
    if metric == COSINE and not -1.0 <= value <= 1.0:
        raise PrecisionError(f"cosine threshold {value:g} is out of range: give one in [-1, 1]")
    if metric != COSINE and value < 0:
        raise PrecisionError(f"{metric} threshold {value:g} is out of range: give one >= 0")
    return value


@dataclass(frozen=True)
class ThresholdRule:
    """Metric column -> limit. `math.inf` on an error metric means "no limit"."""

    limits: Mapping[str, float]

    @classmethod
    def from_settings(cls, settings: Any) -> ThresholdRule:
        """The `[thresholds]` section of the settings (every key a limit)."""
        limits = {}
        for key, column in SETTING_COLUMNS.items():
            value = float(settings.get(f"thresholds.{key}"))
            limits[column] = _checked(column, value)
        return cls(limits)

    @classmethod
    def default(cls) -> ThresholdRule:
        return cls(dict(DEFAULT_LIMITS))

    @classmethod
    def from_json(cls, payload: Any) -> ThresholdRule | None:
        """The rule a summary.json recorded (setting names as keys), or None if unreadable."""
        if not isinstance(payload, dict):
            return None
        limits: dict[str, float] = {}
        settings: dict[str, Any] = payload  # a JSON object: string keys
        for key, value in settings.items():
            column = SETTING_COLUMNS.get(key, key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                try:  # a NaN or out-of-range limit judges nothing (QA: a crafted summary)
                    limits[column] = _checked(column, float(value))
                except PrecisionError:
                    return None
            elif value is None:
                limits[column] = math.inf
            else:
                return None  # "nan", "inf": no limit vc writes
        # `{}`: a compare that computed no metric with a limit (vc --alg mae)
        return cls(limits) if limits or not settings else None

    def to_json(self) -> dict[str, float | None]:
        names = {column: key for key, column in SETTING_COLUMNS.items()}
        return {names.get(c, c): (None if math.isinf(v) else v) for c, v in self.limits.items()}

    def judges_like(self, other: ThresholdRule) -> bool:
        """Both rules fail the same tensors (the same active limits; "no limit" spelled either
        way)."""
        return sorted(self.active()) == sorted(other.active())

    def of_metrics(self, computed: Collection[str] | None) -> ThresholdRule:
        """The limits on the metrics a compare computed (`vc --alg`; None: all of them). A
        metric not computed crosses nothing, so a rule that kept its limit would say it checked
        what it never did (QA: `vc --alg cos,mae` said "no output fails ... or
        RelativeEuclideanDistance > 0.05 fails" over a column of NaN: a false all-clear)."""
        if computed is None:
            return self
        return replace(self, limits={m: v for m, v in self.limits.items() if m in computed})

    def with_limit(self, metric: str, value: float) -> ThresholdRule:
        return replace(self, limits={**self.limits, metric: _checked(metric, value)})

    @property
    def cosine(self) -> float | None:
        return self.limits.get(COSINE)

    def active(self, columns: Any = None) -> list[tuple[str, float]]:
        """The limits that can fail a tensor (of the columns a file has, when given)."""
        return [
            (m, v)
            for m, v in self.limits.items()
            if not (math.isinf(v) and m not in HIGHER_IS_BETTER)
            and (columns is None or m in columns)
        ]

    def crossings(self, row: ResultRow) -> list[Crossing]:
        """Every limit this row's tensor crosses (none for a row that was not compared)."""
        found = []
        for metric, limit in self.active():
            text = row.texts.get(metric, "")
            if row.nonfinite(metric):
                found.append(Crossing(metric, limit, text))
                continue
            value = row.metrics.get(metric, math.nan)
            if math.isnan(value):
                continue
            if (value < limit) if metric in HIGHER_IS_BETTER else (value > limit):
                found.append(Crossing(metric, limit, text))
        # a row not compared crosses nothing, whatever its reason says (QA Q29 #1: `vcs`
        # failed a row `vc`'s tally and the root cause counted as not compared)
        if not found and row.compared and reason_fails(row.reason):
            limit_of = self.failing_reason_limit()
            if limit_of is not None:
                text = next(t for mark, t in FAILING_REASONS.items() if mark in row.reason)
                found.append(Crossing(limit_of[0], limit_of[1], text))
        return found

    def failing_reason_limit(self) -> tuple[str, float] | None:
        """The limit a tensor whose reason fails it (`reason_fails`: its benchmark all zero,
        NaN/inf cut off) crosses: the cosine's, else the relative distance's, else the rule's
        first (QA: under `--metric mae:0.01` alone NaN cut off a tensor passed); None when the
        rule has no limit."""
        limited = dict(self.active())
        preferred = (m for m in (COSINE, REL_EUCLID, *limited) if m in limited)
        return next(((m, limited[m]) for m in preferred), None)

    def fails(self, row: ResultRow) -> bool:
        return bool(self.crossings(row))

    def describe(self, columns: Any = None) -> str:
        """`CosineSimilarity < 0.98 or ... fails`, of the columns a file has when given."""
        active = self.active(columns)
        parts = [f"{m} {'<' if m in HIGHER_IS_BETTER else '>'} {v:g}" for m, v in active]
        return " or ".join(parts) + " fails" if parts else "no limits"
