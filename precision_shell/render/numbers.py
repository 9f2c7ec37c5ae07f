"""Number formatting shared by every view: compact, honest (nan/inf printed as such)."""

from __future__ import annotations

import math


def fmt_num(value: float | None, digits: int = 6) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, int) or float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.{digits}g}"


def fmt_fixed(value: float, decimals: int = 6) -> str:
    """msaccucmp style: fixed decimals, lower-case nan/inf."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{decimals}f}"
