"""How our JSON outputs (summary.json, `replay --json`) hold a number, NaN and inf included.

One convention, everywhere: a number that was computed is a JSON number when finite, else the
string "nan", "inf" or "-inf" (JSON has no NaN or infinity; `float()` reads each string back,
and a strict JSON parser accepts them); `null` means only "not computed" or "not applicable".
The writers refuse a bare `NaN`/`Infinity` token (`allow_nan=False`), so a float that missed
this function fails loudly instead of writing what strict parsers reject.
"""

from __future__ import annotations

import math
from typing import overload


@overload
def json_number(value: float) -> float | str: ...
@overload
def json_number(value: float | None) -> float | str | None: ...
def json_number(value: float | None) -> float | str | None:
    """`value` for JSON output: None (not computed) stays null; NaN and inf become "nan",
    "inf" and "-inf"; a numpy scalar a plain float (`json` cannot write np.float32)."""
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else str(number)


_NONFINITE_WORDS = frozenset(("nan", "inf", "-inf"))


def number_from_json(value: object) -> float | None:
    """What `json_number` wrote, read back: a JSON number or one of its three words as a
    float; None for null and anything else (a bool, other text)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value in _NONFINITE_WORDS:
        return float(value)
    return None
