"""Which of two SigmaStar runs is the benchmark (the right side; SigmaStarRMSE divides by it).

SigmaStar's DumpDebug flow checks a model in two steps: the framework's own run (written by
`caffe_dump_data.py`, `onnx_dump_data.py`, `tflite_dump_data.py`: files named after the
framework, or per-tensor dirs `dumpData/NHWC/`) against the float simulator (Float.sim,
`isFloat: 1`), then the float simulator against the fixed one (Fixed.sim, `isFloat: 0`). The
more original run is the reference each time: a framework run, then a float run, then a
quantized one. Two runs of one rank (or a run whose rank cannot be read) keep their order.
"""

from __future__ import annotations

import re

# the reference writers name their files after the framework
_FRAMEWORK_NAME = re.compile(r"tflite|onnx|caffe", re.IGNORECASE)
_FLOAT_NAME = re.compile(r"float", re.IGNORECASE)

FRAMEWORK, FLOAT, QUANTIZED = 2, 1, 0
_RANK_TEXT = {
    FRAMEWORK: "the framework's run (caffe / onnx / tflite)",
    FLOAT: "the float run (isFloat: 1)",
    QUANTIZED: "the quantized run (isFloat: 0)",
}


def reference_rank(name: str, is_float: bool | None, per_tensor: bool) -> int | None:
    """How original a run is (FRAMEWORK > FLOAT > QUANTIZED), from its file or dir name,
    its `isFloat:` line (None: absent or unreadable) and whether it is a per-tensor dir;
    None when nothing tells. `isFloat: 0` is always the quantized run, whatever its name
    (QA Q26 #1: `onnx_fixed.bin` was taken for the framework's run): the reference writers
    only write float dumps."""
    if is_float is False:
        return QUANTIZED
    if per_tensor or _FRAMEWORK_NAME.search(name):
        return FRAMEWORK
    if is_float is not None:
        return FLOAT if is_float else QUANTIZED
    return FLOAT if _FLOAT_NAME.search(name) else None


def benchmark_is_left(left: int | None, right: int | None) -> bool:
    """The left run is the more original of the two: it is the benchmark, to be swapped."""
    return left is not None and right is not None and left > right


def benchmark_rule(rank: int) -> str:
    """`the float run (isFloat: 1) is the benchmark`: how a pair's sides were told apart."""
    return f"{rank_text(rank)} is the benchmark"


def rank_text(rank: int | None) -> str:
    """`the float run (isFloat: 1)`: what a rank is, as the pair's lines say it."""
    return _RANK_TEXT[rank] if rank is not None else "a run of unknown kind"
