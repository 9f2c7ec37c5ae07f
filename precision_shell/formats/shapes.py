"""Checks on the shapes files declare, made before numpy sees them.

numpy refuses more than 64 dims (32 before numpy 2) and any shape whose non-zero dims times
the item size pass the largest `intp`, even for a zero-size array, with a bare ValueError. A
dump or `.npy` header can declare either, so readers ask `shape_problem` first and report
the answer as a format error naming the file.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

# numpy 1.x's limit, which numpy 2 keeps working with; no device tensor has half as many.
MAX_DIMS = 32
_MAX_ARRAY_BYTES = int(np.iinfo(np.intp).max)


def shape_text(shape: Sequence[int]) -> str:
    """`[2, 3]` for messages; a shape past MAX_DIMS is summarised by its dim count."""
    if len(shape) > MAX_DIMS:
        return f"[{len(shape)} dims]"
    return "[" + ", ".join(str(dim) for dim in shape) + "]"


def shape_problem(shape: Sequence[int], itemsize: int = 1) -> str | None:
    """Why numpy cannot make an array of `shape` with items of `itemsize` bytes, or None."""
    if len(shape) > MAX_DIMS:
        return f"shape has {len(shape)} dims; at most {MAX_DIMS} are supported"
    if any(dim < 0 for dim in shape):
        return f"shape {shape_text(shape)} has a negative dim"
    # numpy multiplies the non-zero dims even when another dim is 0.
    extent = math.prod(dim for dim in shape if dim) * max(itemsize, 1)
    if extent > _MAX_ARRAY_BYTES:
        return f"shape {shape_text(shape)} is larger than any array can be"
    return None
