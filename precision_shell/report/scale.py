"""Axis domains and linear scales shared by the SVG plot and the terminal plot.

A domain is widened to "nice" tick steps (1, 2 or 5 times a power of ten) so the ticks read
as round numbers, and always holds the threshold so its line is on the plot.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

_TICKS = 5  # roughly how many tick intervals an axis gets
_EPS = 1e-9  # float slack when snapping to a tick


def nice_step(span: float, ticks: int = _TICKS) -> float:
    """The smallest of 1, 2, 5 x 10^k that cuts `span` into at most about `ticks` steps."""
    raw = max(span, 1e-12) / ticks
    magnitude = 10.0 ** math.floor(math.log10(raw))
    for mult in (1.0, 2.0, 5.0, 10.0):
        if mult * magnitude >= raw * (1 - _EPS):
            return mult * magnitude
    return 10.0 * magnitude


@dataclass(frozen=True)
class Domain:
    lo: float
    hi: float
    step: float

    def ticks(self) -> list[float]:
        count = round((self.hi - self.lo) / self.step)
        return [round(self.lo + k * self.step, 12) for k in range(count + 1)]


def cosine_domain(values: Iterable[float], threshold: float) -> Domain:
    """From a nice value below the lowest finite cosine (and the threshold) up to 1.0.

    A lowest value sitting on the bottom edge gets one more step, so it is not drawn on the
    axis line."""
    finite = [v for v in values if math.isfinite(v)]
    low = max(min([*finite, threshold]), -1.0)
    step = nice_step(max(1.0 - low, 1e-6))
    lo = math.floor(low / step + _EPS) * step
    if low - lo < step / 4:
        lo -= step
    lo = max(round(lo, 12), -1.0)
    return Domain(lo, 1.0, step)


def decibel_domain(values: Iterable[float], reference: float | None) -> Domain:
    """Nice bounds around the finite SQNR values (and 0 dB and the reference line)."""
    finite = [v for v in values if math.isfinite(v)]
    if reference is not None and math.isfinite(reference):
        finite.append(reference)
    if not finite:
        return Domain(0.0, 60.0, 20.0)
    low, high = min([*finite, 0.0]), max(finite)
    step = nice_step(max(high - low, 1.0))
    lo = round(math.floor(low / step + _EPS) * step, 12)
    hi = round(math.ceil(high / step - _EPS) * step, 12)
    if hi <= lo:
        hi = lo + step
    return Domain(lo, hi, step)


@dataclass(frozen=True)
class LinearScale:
    """Maps [d0, d1] onto [r0, r1] (r1 < r0 for a y axis that grows upwards)."""

    d0: float
    d1: float
    r0: float
    r1: float

    def __call__(self, value: float) -> float:
        if self.d1 == self.d0:
            return (self.r0 + self.r1) / 2
        return self.r0 + (value - self.d0) / (self.d1 - self.d0) * (self.r1 - self.r0)
