"""How `vc` counts the rows it could not compare: by a kind that reads alone."""

from __future__ import annotations

import pytest

from precision_shell.compare.results.tally import reason_kind


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        (
            "device shape [0,8,8,8] is smaller than benchmark shape [2,8,8,8]",
            "device shape smaller than the benchmark's",
        ),
        (
            "/x/Relu.relu.1.1.17: output 0 payload (40 bytes at offset 33) runs 7 bytes past the "
            "end of the file (33 bytes); the file is truncated",
            "truncated file",
        ),
        ("element counts differ: device [4] vs benchmark [5]", "element counts differ"),
        ("benchmark relu_Relu.0.*.npy not found", "not found"),
        ("", "no benchmark"),
        (
            "/b/x.0.1.npy: complex64 values with a non-zero imaginary part; compares are of "
            "real tensors (save the real part or the magnitude as the benchmark)",
            "complex values",
        ),
        (
            "benchmark: /b/x.0.1.npy: a structured dtype with fields re, im ([('re', '<f4'), "
            "('im', '<f4')]), not a tensor of numbers; save one field (e.g. array['name']) as "
            "the benchmark",
            "structured benchmark dtype",
        ),
        # an unknown reason too long to read alone is cut at a word, and says so
        (
            "/d/x.1: output 0: cannot compare: TypeError: Cannot cast array data from "
            "dtype('<U3') to dtype('float32') according to the rule 'unsafe'",
            "Cannot cast array data from dtype('<U3') to dtype('float32') according to...",
        ),
    ],
)
def test_reason_kinds(reason: str, kind: str) -> None:
    assert reason_kind(reason) == kind
