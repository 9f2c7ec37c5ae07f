"""Running counts of one compare as its rows arrive: what was compared, what was not and why,
which outputs fail the threshold rule, and the worst ones, for the summary and `vc`'s view."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from precision_shell.compare.metrics.cells import COSINE, MAX_ABS, REL_EUCLID
from precision_shell.compare.results.schema import CONSTANT_INPUT, CUT_TO_BENCHMARK, ResultRow
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.json_numbers import json_number

# (a phrase of the reason, the kind it is counted under): the kind reads alone in `vc`'s
# "failed 2 x KIND" and in summary.json's by_reason
_REASON_KINDS = (
    (CONSTANT_INPUT, CONSTANT_INPUT),
    ("not found", "not found"),
    ("no benchmark", "no benchmark"),
    ("smaller than", "device shape smaller than the benchmark's"),
    ("element counts differ", "element counts differ"),
    ("past the end", "truncated file"),
    ("not an NPU dump", "not an NPU dump"),
    ("cannot convert", "cannot convert"),
    ("op not dumped", "op not dumped"),
    ("non-zero imaginary part", "complex values"),
    ("a structured dtype", "structured benchmark dtype"),
)
_KIND_CHARS = 80  # an unknown reason longer than this is cut at a word, marked "..."


def reason_kind(reason: str) -> str:
    """Group fail reasons by their kind (file names and numbers stripped) for the summary."""
    if not reason:
        return "no benchmark"
    for phrase, kind in _REASON_KINDS:
        if phrase in reason:
            return kind
    text = reason.split(": ")[-1] if ": " in reason else reason
    if len(text) <= _KIND_CHARS:
        return text
    cut = text[: _KIND_CHARS - 3]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "..."


def benchmark_missing(row: ResultRow) -> bool:
    """A tensor that has a benchmark op but could not be compared with it (its file not found
    or unreadable, shapes that do not fit...): not a constant input, and not a tensor no
    benchmark op stands for (a device-only op's)."""
    return not row.compared and not row.constant_input and reason_kind(row.reason) != "no benchmark"


def _sqnr_db(row: ResultRow) -> float | None:
    """The row's SQNR (kept beside the CSV, in `extras`); None when not computed. NaN there
    means either (an empty tensor skips it); it is the data's NaN only when the relative
    Euclidean distance, from the same two sums, is non-finite too."""
    value = row.extras.get("sqnr_db")
    if value is None or (math.isnan(value) and not row.nonfinite(REL_EUCLID)):
        return None
    return value


def row_json(row: ResultRow) -> dict[str, Any]:
    """One row as the summary lists it: each measure a number, "nan"/"inf"/"-inf" when the
    data gave that (`json_number`), null when not computed."""
    return {
        "index": row.index,
        "op": row.op_name,
        "type": row.op_type,
        "tensor": row.tensor_index,
        "ground_truth": row.ground_truth,
        "cosine": json_number(row.measured(COSINE)),
        "max_abs_error": json_number(row.measured(MAX_ABS)),
        "relative_euclidean_distance": json_number(row.measured(REL_EUCLID)),
        "sqnr_db": json_number(_sqnr_db(row)),
        "reason": row.reason,
    }


@dataclass
class CompareTally:
    """Counts of a compare; `failing` are compared outputs the rule fails, in order."""

    rule: ThresholdRule
    rows: int = 0
    compared: int = 0
    constant_inputs: int = 0  # not compared: folded constants have no benchmark by design
    failed_reasons: Counter = field(default_factory=Counter)  # not compared, by reason kind
    failing: list[ResultRow] = field(default_factory=list)
    outputs: list[ResultRow] = field(default_factory=list)
    # compared on the benchmark's smaller shape, the rest of the device tensor cut off
    cut: int = 0

    def add(self, rows: Iterable[ResultRow]) -> None:
        for row in rows:
            self.rows += 1
            if not row.compared:
                if row.constant_input:
                    self.constant_inputs += 1
                else:
                    self.failed_reasons[reason_kind(row.reason)] += 1
                continue
            self.compared += 1
            if CUT_TO_BENCHMARK in row.reason:
                self.cut += 1
            if row.kind != "output":
                continue
            self.outputs.append(row)
            if self.rule.fails(row):
                self.failing.append(row)

    @property
    def failed(self) -> int:
        """Rows not compared for a reason other than being a constant input."""
        return sum(self.failed_reasons.values())

    def worst(self, n: int = 10) -> list[ResultRow]:
        """Failing outputs first, then by cosine, lowest first (NaN/inf from the data counts as
        the worst; an output whose cosine was not computed ranks by the rule alone)."""
        failing = {id(r) for r in self.failing}

        def key(row: ResultRow) -> tuple[bool, float]:
            cos = -math.inf if row.nonfinite(COSINE) else row.metrics.get(COSINE, math.nan)
            return (id(row) not in failing, math.inf if math.isnan(cos) else cos)

        return sorted(self.outputs, key=key)[:n]
