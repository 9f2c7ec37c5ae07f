"""The metric names, the values gathered per name, and the CSV text exactly as msaccucmp prints it.

msaccucmp (`cmp_utils/utils.py::format_value`) prints `'{:.6f}'.format(value)`, so propagated
NaN/inf read `nan`/`inf`/`-inf`; a metric it could not compute is the string `NaN`; both norms ~0
makes CosineSimilarity the literal `1.0`; StandardDeviation is `"(%.3f;%.3f),(%.3f;%.3f)"` of
(mean, std) per side after setting any |value| < 0.001 to 0.0 (so `0.000`, never `-0.000`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from precision_shell.compare.metrics.compute import MetricRow

NOT_COMPUTED = "NaN"
_STD_FLOOR = 0.001  # msaccucmp's ConstManager.MINIMUM_VALUE

COSINE = "CosineSimilarity"
MAX_ABS = "MaxAbsoluteError"
ACC_REL = "AccumulatedRelativeError"
REL_EUCLID = "RelativeEuclideanDistance"
KL = "KullbackLeiblerDivergence"
STD = "StandardDeviation"
MEAN_ABS = "MeanAbsoluteError"
RMSE = "RootMeanSquareError"
MAX_REL = "MaxRelativeError"
MEAN_REL = "MeanRelativeError"

METRIC_COLUMNS: tuple[str, ...] = (
    COSINE,
    MAX_ABS,
    ACC_REL,
    REL_EUCLID,
    KL,
    STD,
    MEAN_ABS,
    RMSE,
    MAX_REL,
    MEAN_REL,
)
# Short names accepted wherever a metric is named (`vc --alg`, `vcs --metric`).
METRIC_ALIASES: dict[str, str] = {
    "cos": COSINE,
    "mae": MAX_ABS,
    "are": ACC_REL,
    "red": REL_EUCLID,
    "kl": KL,
    "std": STD,
    "meanae": MEAN_ABS,
    "rmse": RMSE,
    "mre": MAX_REL,
    "meanre": MEAN_REL,
}

# the short names, as help texts list them
ALIAS_TEXT = ", ".join(f"{alias} = {column}" for alias, column in METRIC_ALIASES.items())


def metric_column(name: str) -> str | None:
    """A CSV metric column from its name (any case) or short alias; None when unknown."""
    lowered = name.strip().lower()
    for column in METRIC_COLUMNS:
        if column.lower() == lowered:
            return column
    return METRIC_ALIASES.get(lowered)


SQNR = "SQNR"
REL_RATIO = "RelativeErrorRatio"
# Not CSV columns: for summary.json and `vcs`. Selectable through `algorithms` like the ten.
EXTRA_METRICS: tuple[str, ...] = (SQNR, REL_RATIO)

# Column -> MetricRow field.
METRIC_FIELDS: dict[str, str] = {
    COSINE: "cosine",
    MAX_ABS: "max_abs_error",
    ACC_REL: "accumulated_relative_error",
    REL_EUCLID: "relative_euclidean_distance",
    KL: "kl_divergence",
    STD: "standard_deviation",
    MEAN_ABS: "mean_abs_error",
    RMSE: "rmse",
    MAX_REL: "max_relative_error",
    MEAN_REL: "mean_relative_error",
}


class MetricValues:
    """Values, names not computed (`NaN`) and reasons, gathered while the metrics run."""

    def __init__(self, wanted: frozenset[str]) -> None:
        self.wanted = wanted
        self.values: dict[str, object] = {}
        self.not_computed: set[str] = set(METRIC_COLUMNS + EXTRA_METRICS) - wanted
        self._reasons: dict[str, list[str]] = {}
        self.cosine_from_zero_norms = False

    def set(self, name: str, value: object, reason: str | None = None) -> None:
        self.values[name] = value
        if reason:
            self._reasons.setdefault(name, []).append(reason)

    def skip(self, name: str, reason: str | None = None) -> None:
        self.not_computed.add(name)
        if reason:
            self._reasons.setdefault(name, []).append(reason)

    def reasons(self) -> tuple[str, ...]:
        """In msaccucmp's column order, as its CompareFailReason joins them."""
        return tuple(r for name in METRIC_COLUMNS for r in self._reasons.get(name, ()))


def zero_cosine_reason(side: str) -> str:
    """msaccucmp's reason for a cosine it cannot compute: one `side` ("device" or
    "benchmark") is all zero and the other is not."""
    return f"Cannot compare by Cosine Similarity. All the data is zero in the {side} tensor."


def format_value(value: float) -> str:
    """One metric as msaccucmp prints it: 6 decimals, lower-case nan/inf."""
    return f"{value:.6f}"


def format_standard_deviation(pair: tuple[tuple[float, float], tuple[float, float]]) -> str:
    """`(mean_x;std_x),(mean_y;std_y)` with 3 decimals; |value| < 0.001 prints 0.000."""
    (mean_x, std_x), (mean_y, std_y) = pair
    shown = [0.0 if abs(v) < _STD_FLOOR else v for v in (mean_x, std_x, mean_y, std_y)]
    return "({:.3f};{:.3f}),({:.3f};{:.3f})".format(*shown)


def csv_values(row: MetricRow) -> list[str]:
    """The ten CSV cells of `row`, in METRIC_COLUMNS order."""
    cells = []
    for column in METRIC_COLUMNS:
        value = getattr(row, METRIC_FIELDS[column])
        if column in row.not_computed or value is None:
            cells.append(NOT_COMPUTED)
        elif column == COSINE and row.cosine_from_zero_norms:
            cells.append("1.0")
        elif column == STD:
            cells.append(format_standard_deviation(value))
        else:
            cells.append(format_value(value))
    return cells
