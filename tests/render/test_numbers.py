"""Number formatting shared by the views."""

from __future__ import annotations

import math

import numpy as np
import pytest

from precision_shell.render.numbers import fmt_fixed, fmt_num


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "-"),
        (math.nan, "nan"),
        (math.inf, "inf"),
        (-math.inf, "-inf"),
        (np.float32("nan"), "nan"),
        (np.float16("-inf"), "-inf"),
        (3, "3"),
        (3.0, "3"),
        (65504.0, "65504"),
        (np.float32(2.0), "2"),
        (np.int64(-5), "-5"),
        (0.1234567, "0.123457"),
        (-0.00012345678, "-0.000123457"),
        (1234567.8, "1.23457e+06"),
        (1e15, "1e+15"),
        (1e-7, "1e-07"),
        (np.float16(0.1), "0.0999756"),
    ],
)
def test_fmt_num(value, text):
    assert fmt_num(value) == text


def test_fmt_num_digits():
    assert fmt_num(math.pi, digits=3) == "3.14"


def test_fmt_fixed_is_msaccucmp_style():
    assert fmt_fixed(0.98765432) == "0.987654"
    assert fmt_fixed(1.0) == "1.000000"
    assert fmt_fixed(0.25, decimals=2) == "0.25"
    assert (fmt_fixed(math.nan), fmt_fixed(math.inf), fmt_fixed(-math.inf)) == (
        "nan",
        "inf",
        "-inf",
    )
