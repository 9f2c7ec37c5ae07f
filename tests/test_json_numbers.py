"""`json_numbers`: the one spelling of a computed NaN/inf in our JSON outputs, and its reader."""

from __future__ import annotations

import math

import numpy as np
import pytest

from precision_shell.file_name_text import json_text
from precision_shell.json_numbers import json_number, number_from_json
from tests.strict_json import strict_json


def test_non_finite_numbers_are_words_and_null_is_not_computed():
    assert [json_number(v) for v in (math.nan, math.inf, -math.inf, None)] == [
        "nan",
        "inf",
        "-inf",
        None,
    ]
    assert json_number(np.float32(0.5)) == 0.5 and type(json_number(np.float32(0.5))) is float
    assert json_number(np.float64(-np.inf)) == "-inf"


@pytest.mark.parametrize("value", [0.25, -3.0, math.inf, -math.inf])
def test_what_json_number_writes_reads_back(value):
    assert number_from_json(strict_json(json_text([json_number(value)]))[0]) == value


def test_the_reader_keeps_nan_and_refuses_what_is_no_number():
    assert math.isnan(number_from_json("nan"))
    assert [number_from_json(v) for v in (None, True, "NaN", "high", 7)] == [
        None,
        None,
        None,
        None,
        7.0,
    ]


def test_the_writer_refuses_a_bare_nan():
    with pytest.raises(ValueError):
        json_text({"cosine": math.nan})
