"""The metric formulas' edge cases and the default rules."""

from __future__ import annotations

import math

import numpy as np

from precision_shell.compare.results.schema import ResultRow
from precision_shell.foreign.metrics import FOREIGN_METRICS, cell, compute
from precision_shell.foreign.verdict import default_rule
from tests.foreign.oracles import expected


def test_compute_matches_the_oracle() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(50) * 3, rng.standard_normal(50) * 3
    got, want = compute(a, b), expected(a, b)
    assert all(math.isclose(got[k], want[k], rel_tol=1e-12) for k in want)


def test_zeros_and_nonfinite() -> None:
    zeros = np.zeros(4)
    both = compute(zeros, zeros)
    assert both["CosineSimilarity"] == 1.0 and both["SigmaStarRMSE"] == 0.0
    one = compute(np.ones(4), zeros)
    assert one["CosineSimilarity"] == 0.0 and one["SigmaStarRMSE"] == math.inf
    nan = compute(np.array([1.0, math.nan]), np.array([1.0, 2.0]))
    assert cell(nan["MaxAbsoluteError"]) == "nan"


def _row(values: dict[str, float]) -> ResultRow:
    texts = {k: cell(values.get(k)) for k in FOREIGN_METRICS}
    return ResultRow(1, "T", "a", "b", "op:output:0", "[1]", texts)


def test_default_rules() -> None:
    meg, sigma = default_rule("megengine"), default_rule("sigmastar")
    assert meg.fails(_row({"MegEngineRelativeError": 0.0011}))
    assert not meg.fails(_row({"MegEngineRelativeError": 0.001, "CosineSimilarity": 0.5}))
    assert sigma.fails(_row({"CosineSimilarity": 0.989, "SigmaStarRMSE": 0.0}))
    assert sigma.fails(_row({"CosineSimilarity": 1.0, "SigmaStarRMSE": 0.11}))
    assert not sigma.fails(_row({"CosineSimilarity": 0.99, "SigmaStarRMSE": 0.1}))
