"""Per-tensor statistics (max, min, mean, std, NaN and inf counts), computed once and cached.

Statistics are taken over finite values, in float64 accumulators, chunk by chunk so a large
memory-mapped tensor is never converted to float all at once.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from precision_shell.errors import PrecisionError

_CHUNK = 1 << 22  # elements per chunk: bounded memory for large tensors


@dataclass(frozen=True, slots=True)
class TensorStats:
    """Summary of one tensor; NaN/inf are counted, not folded into max/min/mean."""

    shape: tuple[int, ...]
    dtype: str
    count: int
    max: float
    min: float
    mean: float
    std: float
    nan_count: int
    inf_count: int

    @property
    def finite_count(self) -> int:
        return self.count - self.nan_count - self.inf_count


_NUMERIC_KINDS = frozenset("biufc")


def compute_stats(array: np.ndarray, source: str = "") -> TensorStats:
    """Statistics of `array`; max/min/mean/std over finite values.

    Without a finite value, max and min are those of the infinities (an overflowed tensor
    reads max inf, min inf), mean is numpy's mean of them (inf, or nan when both signs occur)
    and std is nan; an all-NaN tensor gives nan. Raises PrecisionError naming `source` for a
    dtype that holds no numbers (strings, records, objects).
    """
    if array.dtype.kind not in _NUMERIC_KINDS and not _is_ml_number(array.dtype):
        where = f"{source}: " if source else ""
        raise PrecisionError(f"{where}dtype {array.dtype} is not numeric; no statistics")
    flat = array.reshape(-1)
    count = int(flat.size)
    nan_count = inf_count = finite = pos_inf = neg_inf = 0
    vmax, vmin = -math.inf, math.inf
    mean = m2 = 0.0  # running mean and sum of squared deviations (Chan et al. chunk merge)
    for start in range(0, count, _CHUNK):
        chunk = np.asarray(flat[start : start + _CHUNK])
        if chunk.dtype.kind == "c":
            chunk = np.abs(chunk)
        values = chunk.astype(np.float64)
        finite_mask = np.isfinite(values)
        if not finite_mask.all():
            n_nan = int(np.isnan(values).sum())
            nan_count += n_nan
            n_pos = int(np.count_nonzero(values == math.inf))
            pos_inf += n_pos
            neg_inf += int(values.size - finite_mask.sum()) - n_nan - n_pos
            inf_count += int(values.size - finite_mask.sum()) - n_nan
            values = values[finite_mask]
        if values.size:
            n = int(values.size)
            vmax = max(vmax, float(values.max()))
            vmin = min(vmin, float(values.min()))
            chunk_mean = float(values.mean())
            chunk_m2 = float(np.square(values - chunk_mean).sum())
            delta = chunk_mean - mean
            merged = finite + n
            mean += delta * n / merged
            m2 += chunk_m2 + delta * delta * finite * n / merged
            finite = merged
    if finite:
        std = math.sqrt(m2 / finite)
    elif inf_count:
        vmax = math.inf if pos_inf else -math.inf
        vmin = -math.inf if neg_inf else math.inf
        mean = math.nan if pos_inf and neg_inf else vmax
        std = math.nan
    else:
        vmax = vmin = mean = std = math.nan
    return TensorStats(
        tuple(int(d) for d in array.shape),
        str(array.dtype),
        count,
        vmax,
        vmin,
        mean,
        std,
        nan_count,
        inf_count,
    )


def _is_ml_number(dtype: np.dtype) -> bool:
    """bfloat16, fp8 and int4 (ml_dtypes) are numbers, though numpy gives them kind "V" as it
    does raw bytes and records; those are plain `np.void`."""
    return dtype.kind == "V" and dtype.fields is None and not issubclass(dtype.type, np.void)


class StatsCache:
    """Statistics keyed by (file, kind, index, file fingerprint); thread-safe."""

    def __init__(self) -> None:
        self._stats: dict[tuple, TensorStats] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple, load: Callable[[], np.ndarray]) -> TensorStats:
        with self._lock:
            hit = self._stats.get(key)
        if hit is not None:
            return hit
        stats = compute_stats(load(), source=str(key[0]) if key else "")
        with self._lock:
            self._stats[key] = stats
        return stats

    def __len__(self) -> int:
        return len(self._stats)
