"""Judging one tensor's device statistics against its benchmark's: the statistics rule.

The rule (also in `help vc` and docs/FORMATS.md section 7):

- Like with like first. Device statistics are taken on the tensor as stored; in a padded
  layout (NC1HWC0 with C=24 stored as 32, FRACTAL_NZ...) the pads are zeros counted in `Count`.
  With `n` the real element count (the graph's original shape, else the benchmark's count) and
  `pad` = stored - n: the device mean is rescaled to the real elements (its sum over n), a
  device max of 0 is the padding's when the benchmark's max is below 0 (likewise min above 0),
  and is then not compared. The L2 norm and the NaN/inf counts are not changed by zero pads.
- NaN or inf the benchmark does not have (a count above the benchmark's; a dump without the
  counts: a max, min, mean or norm that is NaN/inf where the benchmark's is finite): verdict
  `nonfinite`.
- Each value statistic is allowed what the device dtype can represent: with `u` the unit
  roundoff (float16 2^-11, bfloat16 2^-8, float32 2^-24; integer tensors exact) and
  `K` = `TOLERANCE_UNITS` (8) for rounding and benign drift from earlier ops:
  L2 norm: K*u*|norm|; mean: K*u*rms (rms = norm/sqrt(n) bounds the mean |x|, so a mean near 0
  is not judged relative to itself); max and min: `EXTREME_UNITS` (64)*u*max(|max|,|min|),
  since one element carries the whole drift of the elements it depends on.
- `deviation` is the largest |device - benchmark| / allowed over the statistics compared; above
  1 the tensor is beyond rounding. The L2 norm is the main signal: statistics cannot see a
  permutation (a wrong layout keeps every statistic), and a zero-mean noise moves the norm by
  its square, so a small local error under heavy drift stays invisible (dump tensors for that).
- Made here or inherited: an output beyond rounding `deviates` only when its deviation is at
  least `LOCAL_JUMP` (8) times its inputs' (their worst, floored at 1/4: inputs within rounding);
  else it is `drift`, the accumulated float16 error it received. An input row beyond rounding
  is `drift` too: it is judged where it is made, at its producer. (`made_here`)
- Born at a source: an input beyond rounding that no op computes (a constant, the network's
  input data; needs the graph) is `constant input deviates` / `input data deviates`, and so
  are the outputs of the op reading it that neither deviate nor are nonfinite on their own:
  that op fails. (`sources.blame_sources`) Likewise a source that holds NaN/inf the benchmark
  does not have (`constant input nonfinite` / `input data nonfinite`), and so are the outputs
  of the op reading it that are nonfinite only through it; a constant the benchmark does not
  dump is judged so when it holds NaN/inf and the output of the op reading it is `nonfinite`.
- A statistics benchmark side (`judge_rows`: another dump's statistics): u is the coarser of
  the two dtypes; rows of the same Format and Shape are compared as recorded (the same pads),
  others each taken to their real elements by the like-with-like rule above.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from precision_shell.formats.layouts import is_plain_format
from precision_shell.formats.stats_dump import VALUE_KEYS, StatsRow

TOLERANCE_UNITS = 8.0
EXTREME_UNITS = 64.0
LOCAL_JUMP = 8.0
INPUT_FLOOR = 0.25  # inputs within rounding count as this much deviation

# unit roundoff (half an ULP at 1) of the dtypes a device tensor comes in
_UNIT_ROUNDOFF = {
    "FLOAT16": 2.0**-11,
    "BF16": 2.0**-8,
    "FLOAT": 2.0**-24,
    "DOUBLE": 2.0**-53,
    "HIFLOAT8": 2.0**-4,
    "FP8_E5M2": 2.0**-3,
    "FP8_E4M3FN": 2.0**-4,
}
_INTEGER_TYPES = frozenset(
    {"INT8", "UINT8", "INT16", "UINT16", "INT32", "INT64", "UINT32", "UINT64", "BOOL"}
)

PASS = "pass"
DEVIATES = "deviates"
DRIFT = "drift"  # beyond rounding, but no more than the op's inputs already carry
NONFINITE = "nonfinite"
NOT_COMPARED = "not compared"
# an input no op computes deviates, and the op reading it fails with it (`sources`)
CONSTANT_INPUT = "constant input deviates"
INPUT_DATA = "input data deviates"
# an input no op computes holds NaN/inf the benchmark has not: born there, not at its reader
CONSTANT_NONFINITE = "constant input nonfinite"
INPUT_DATA_NONFINITE = "input data nonfinite"
# the verdicts of a row that fails (counted in `failing_outputs`)
FAILING = frozenset(
    {DEVIATES, NONFINITE, CONSTANT_INPUT, INPUT_DATA, CONSTANT_NONFINITE, INPUT_DATA_NONFINITE}
)


def unit_roundoff(dtype: str) -> float:
    """u of a dump dtype name; integers 0 (exact); an unknown float type float16's (the
    loosest common one: never cry wolf on a type we cannot tell)."""
    if dtype in _INTEGER_TYPES:
        return 0.0
    return _UNIT_ROUNDOFF.get(dtype, _UNIT_ROUNDOFF["FLOAT16"])


@dataclass(frozen=True)
class StatisticDiff:
    """One statistic on both sides (device value like-with-like: pads accounted for)."""

    key: str
    device: float | None
    benchmark: float | None
    allowed: float | None = None  # absolute difference the dtype allows; None: not compared
    note: str = ""

    @property
    def abs_diff(self) -> float | None:
        if self.device is None or self.benchmark is None:
            return None
        if math.isfinite(self.device) and math.isfinite(self.benchmark):
            return abs(self.device - self.benchmark)
        return 0.0 if self.device == self.benchmark else math.inf

    @property
    def rel_diff(self) -> float | None:
        diff = self.abs_diff
        if diff is None or self.benchmark is None:
            return None
        if diff == 0:
            return 0.0
        return diff / abs(self.benchmark) if self.benchmark else math.inf

    @property
    def ratio(self) -> float | None:
        """|difference| / allowed: above 1 is a deviation."""
        diff = self.abs_diff
        if diff is None or self.allowed is None:
            return None
        if diff == 0:
            return 0.0
        return diff / self.allowed if self.allowed > 0 else math.inf


@dataclass(frozen=True)
class TensorJudgement:
    verdict: str
    deviation: float | None  # max ratio over the statistics compared
    diffs: dict[str, StatisticDiff]
    counts: dict[str, tuple[float | None, float | None]]  # nan/inf counts: (device, benchmark)
    real_count: int | None
    pad_count: int
    notes: list[str] = field(default_factory=list)

    @property
    def deviates(self) -> bool:
        return self.verdict in (DEVIATES, NONFINITE)

    @property
    def main(self) -> StatisticDiff | None:
        """The statistic that decided: the worst compared one."""
        compared = [d for d in self.diffs.values() if d.ratio is not None]
        return max(compared, key=lambda d: d.ratio or 0.0) if compared else None


def _count(values: dict[str, float], key: str) -> float | None:
    value = values.get(key)
    return value if value is not None and math.isfinite(value) else None


def judge(
    device: StatsRow,
    benchmark: dict[str, float],
    origin_count: int | None = None,
    input_unit: float = 0.0,
    benchmark_pad: int = 0,
) -> TensorJudgement:
    """The verdict on one tensor: `device` as recorded, `benchmark` from `values.statistics_of`
    (or another statistics row's values, see `judge_rows`); `origin_count` the real element
    count when the graph knows the original shape. `input_unit`: the coarsest unit roundoff of
    the op's inputs; an output carries no more precision than that (a float16 -> float32 Cast
    keeps float16's error), so it is judged by the coarser of the two. `benchmark_pad`: pad
    elements a statistics benchmark side was taken over besides its `count` real ones (its
    mean is rescaled and a max/min that is its padding's 0 is not compared, as the device's)."""
    notes: list[str] = []
    stored = device.element_count
    bench_count = _count(benchmark, "count")
    real = origin_count if origin_count is not None else bench_count
    pad = 0
    if stored is not None and real is not None and stored > real:
        if is_plain_format(device.format):
            notes.append(f"{stored} elements stored, the benchmark has {int(real)}")
        else:
            pad = int(stored - real)
    counts = {
        key: (_count(device.values, key), _count(benchmark, key))
        for key in ("nan_count", "neg_inf_count", "pos_inf_count")
    }
    born = [k for k, (d, b) in counts.items() if d is not None and d > (b or 0.0)]
    if all(d is None for d, _ in counts.values()):
        # no counts dumped: a value statistic NaN/inf only on the device is what they would say
        born = [k for k in VALUE_KEYS if _nonfinite_only_on_device(device.values, benchmark, k)]
    if (
        real is not None
        and bench_count is not None
        and stored is not None
        and stored - pad != bench_count
    ):
        notes.append(
            f"{int(stored - pad)} elements on the device, {int(bench_count)} in the "
            "benchmark: not the same tensor"
        )
        return TensorJudgement(NOT_COMPARED, None, {}, counts, int(real), pad, notes)
    diffs = _value_diffs(device, benchmark, stored, pad, notes, input_unit, benchmark_pad)
    ratios = [d.ratio for d in diffs.values() if d.ratio is not None]
    deviation = max(ratios) if ratios else None
    if born:
        if born[0] in VALUE_KEYS:
            names = ", ".join(f"{k} {device.values[k]}" for k in born)
            notes.insert(0, f"{names} on the device, finite in the benchmark (no NaN/inf counts)")
        else:
            names = ", ".join(k.removesuffix("_count").replace("_", " ") for k in born)
            notes.insert(0, f"{names} on the device that the benchmark does not have")
        verdict = NONFINITE
    elif deviation is None:
        verdict = NOT_COMPARED
        notes.append("no statistic both sides have")
    else:
        verdict = DEVIATES if deviation > 1.0 else PASS
    return TensorJudgement(
        verdict, deviation, diffs, counts, int(real) if real is not None else None, pad, notes
    )


def _nonfinite_only_on_device(
    device: dict[str, float], benchmark: dict[str, float], key: str
) -> bool:
    d, b = device.get(key), benchmark.get(key)
    return d is not None and not math.isfinite(d) and b is not None and math.isfinite(b)


def _on_real_elements(values: dict[str, float], stored: int | None, pad: int) -> dict[str, float]:
    """A side's statistics with its mean over its real elements: a padded layout's zeros,
    `pad` of the `stored` elements, diluted it (the sum is unchanged)."""
    values = dict(values)
    if pad and stored is not None and "mean" in values:
        nonfinite = sum(values.get(k, 0.0) for k in ("nan_count", "neg_inf_count", "pos_inf_count"))
        finite_stored = stored - nonfinite
        finite_real = stored - pad - nonfinite
        if finite_real > 0:
            values["mean"] = values["mean"] * finite_stored / finite_real
    return values


def _padding_zero(key: str, device: float, benchmark: float, pad: int, benchmark_pad: int) -> str:
    """The note when one side's max (min) is a 0 its padding put there: the other side's real
    values are all below (above) 0. "" otherwise."""
    if key not in ("max", "min"):
        return ""
    where = "below" if key == "max" else "above"
    for side, own, other, padded in (
        ("device", device, benchmark, pad),
        ("benchmark", benchmark, device, benchmark_pad),
    ):
        if padded and own == 0.0 and (other < 0.0 if key == "max" else other > 0.0):
            return f"{side} {key} 0 is the padding's (real values all {where} 0)"
    return ""


def _value_diffs(
    device: StatsRow,
    benchmark: dict[str, float],
    stored: int | None,
    pad: int,
    notes: list[str],
    input_unit: float = 0.0,
    benchmark_pad: int = 0,
) -> dict[str, StatisticDiff]:
    u = max(unit_roundoff(device.dtype), input_unit)
    values = _on_real_elements(device.values, stored, pad)
    if benchmark_pad:
        real = benchmark.get("count")
        stored_b = int(real) + benchmark_pad if real is not None else None
        benchmark = _on_real_elements(benchmark, stored_b, benchmark_pad)
    norm = benchmark.get("l2norm")
    n = benchmark.get("count", 0.0) - sum(
        benchmark.get(k, 0.0) for k in ("nan_count", "neg_inf_count", "pos_inf_count")
    )
    rms = norm / math.sqrt(n) if norm is not None and n > 0 else None
    peak = max(
        (
            abs(benchmark[k])
            for k in ("max", "min")
            if k in benchmark and math.isfinite(benchmark[k])
        ),
        default=None,
    )
    # the smallest allowance worth stating: a value that is 0 on both sides passes exactly
    floor = 1e-30
    scale = {
        "l2norm": (TOLERANCE_UNITS, abs(norm) if norm is not None else None),
        "mean": (TOLERANCE_UNITS, rms),
        "max": (EXTREME_UNITS, peak),
        "min": (EXTREME_UNITS, peak),
    }
    diffs: dict[str, StatisticDiff] = {}
    for key in VALUE_KEYS:
        d, b = values.get(key), benchmark.get(key)
        if d is None or b is None:
            continue
        units, size = scale[key]
        padding = _padding_zero(key, d, b, pad, benchmark_pad)
        if padding:
            diffs[key] = StatisticDiff(key, d, b, None, "the padding's 0")
            notes.append(padding)
            continue
        allowed = max(units * u * size, floor) if size is not None else None
        diffs[key] = StatisticDiff(key, d, b, allowed)
    return diffs


def judge_rows(
    device: StatsRow,
    benchmark: StatsRow,
    origin_count: int | None = None,
    input_unit: float = 0.0,
) -> TensorJudgement:
    """The verdict on one tensor whose benchmark side is a statistics row too (another run's
    statistics dump, or a tensor dump's statistics computed in float64). Each statistic may
    differ by what the coarser of the two dtypes allows. Rows taken on the same Format and
    Shape carry the same padding: compared as recorded. Otherwise each side is taken to its
    real elements (`origin_count`, else the count of the side in a plain layout) by `judge`'s
    rule: a padded side's mean rescaled, a max/min that is its padding's 0 not compared."""
    unit = max(input_unit, unit_roundoff(benchmark.dtype))
    values = dict(benchmark.values)
    stored = benchmark.element_count
    if stored is not None:
        values["count"] = float(stored)
    if device.format == benchmark.format and device.shape == benchmark.shape:
        return judge(device, values, None, unit)
    real = origin_count
    if real is None:
        plain = [r for r in (device, benchmark) if is_plain_format(r.format)]
        real = plain[-1].element_count if plain else None
    if real is None:
        counts = {
            key: (_count(device.values, key), _count(values, key))
            for key in ("nan_count", "neg_inf_count", "pos_inf_count")
        }
        note = (
            f"both sides padded ({device.format} and {benchmark.format}) and the real "
            "element count is unknown (no graph)"
        )
        return TensorJudgement(NOT_COMPARED, None, {}, counts, None, 0, [note])
    benchmark_pad = 0
    if stored is not None and stored > real and not is_plain_format(benchmark.format):
        benchmark_pad = stored - real
        values["count"] = float(real)
    judgement = judge(device, values, real, unit, benchmark_pad)
    if benchmark_pad:
        judgement.notes.append(
            f"the benchmark's {benchmark.format} holds {benchmark_pad} pad elements"
        )
    return judgement


def made_here(output_deviation: float, input_deviation: float | None) -> bool:
    """An output beyond rounding whose deviation its inputs do not explain (see the rule)."""
    return output_deviation >= LOCAL_JUMP * max(input_deviation or 0.0, INPUT_FLOOR)
