"""The statistics CANN records per tensor, computed from a tensor in float64.

Used for the benchmark side of a statistics compare (its `.npy` tensors) and by the writers
that make statistics dumps. NaN and inf are counted, not folded into max/min/mean/l2norm,
which are taken over the finite values (none: absent).
"""

from __future__ import annotations

import math

import numpy as np

from precision_shell.errors import PrecisionError

_CHUNK = 1 << 22  # elements per chunk: bounded memory for large memory-mapped tensors


def statistics_of(array: np.ndarray, source: str = "") -> dict[str, float]:
    """Count, max, min, mean, l2norm and the NaN/-inf/+inf counts of `array`, in float64.

    Keys as `formats.stats_dump.STATISTIC_HEADERS`. Raises PrecisionError naming `source` for
    a dtype that holds no numbers."""
    if array.dtype.kind not in "biuf" and array.dtype.name != "bfloat16":
        where = f"{source}: " if source else ""
        raise PrecisionError(f"{where}dtype {array.dtype} is not numeric; no statistics")
    flat = array.reshape(-1)
    count = int(flat.size)
    nan = neg_inf = pos_inf = finite = 0
    total = squares = 0.0
    vmax, vmin = -math.inf, math.inf
    for start in range(0, count, _CHUNK):
        chunk = np.asarray(flat[start : start + _CHUNK]).astype(np.float64)
        ok = np.isfinite(chunk)
        if not ok.all():
            nan += int(np.isnan(chunk).sum())
            neg_inf += int(np.isneginf(chunk).sum())
            pos_inf += int(np.isposinf(chunk).sum())
            chunk = chunk[ok]
        if chunk.size:
            finite += int(chunk.size)
            total += float(chunk.sum())
            squares += float(np.dot(chunk, chunk))
            vmax = max(vmax, float(chunk.max()))
            vmin = min(vmin, float(chunk.min()))
    out = {
        "count": float(count),
        "nan_count": float(nan),
        "neg_inf_count": float(neg_inf),
        "pos_inf_count": float(pos_inf),
    }
    if finite:
        out.update(max=vmax, min=vmin, mean=total / finite, l2norm=math.sqrt(squares))
    return out
