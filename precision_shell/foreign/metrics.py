"""The metrics of a foreign pair, in float64, and how their cells are printed.

Columns (our CSV; `read_result_csv` reads every non-lead column as a metric):
- `CosineSimilarity`: a·b / (|a| |b|); 1.0 when both are all zeros, 0.0 when one is.
- `MaxAbsoluteError`: max |a - b|.
- `MegEngineRelativeError`: max(|a - b| / max(|a|, |b|, 1)), MegEngine's
  `compare_binary_iodump.py` error (its `-e` limit, default 1e-3).
- `MeanSquaredError`: mean((a - b)^2).
- `SigmaStarRMSE`: sum|a - b| / sum|b| with b the right (float) side, what SigmaStar's
  DumpDebug tools call "RMSE" (it is a relative L1 error); 0.0 when both sums are 0, inf
  when only sum|b| is.

Cells are printed with `repr` (shortest round-trip), so a value read back is the value
computed; NaN/inf from the data print `nan`/`inf`, a metric not computed `NaN`.
"""

from __future__ import annotations

import math

import numpy as np

from precision_shell.compare.metrics.cells import COSINE, MAX_ABS, NOT_COMPUTED

MEGENGINE_REL = "MegEngineRelativeError"
MSE = "MeanSquaredError"
SIGMASTAR_RMSE = "SigmaStarRMSE"
FOREIGN_METRICS: tuple[str, ...] = (COSINE, MAX_ABS, MEGENGINE_REL, MSE, SIGMASTAR_RMSE)


def compute(left: np.ndarray, right: np.ndarray) -> dict[str, float]:
    """Every metric of one pair; both arrays flat float64 of one length (`right`: benchmark)."""
    a = np.asarray(left, dtype=np.float64).reshape(-1)
    b = np.asarray(right, dtype=np.float64).reshape(-1)
    if a.size == 0:
        return {name: math.nan for name in FOREIGN_METRICS}
    with np.errstate(all="ignore"):
        diff = np.abs(a - b)
        na, nb = float(np.sqrt(np.dot(a, a))), float(np.sqrt(np.dot(b, b)))
        if na == 0.0 and nb == 0.0:
            cosine = 1.0
        elif na == 0.0 or nb == 0.0:
            cosine = 0.0
        else:
            cosine = float(np.dot(a, b) / (na * nb))
        denom = np.maximum(np.maximum(np.abs(a), np.abs(b)), 1.0)
        num, den = float(np.sum(diff)), float(np.sum(np.abs(b)))
        rmse = num / den if den != 0.0 else (0.0 if num == 0.0 else math.inf)
        return {
            COSINE: cosine,
            MAX_ABS: float(np.max(diff)),
            MEGENGINE_REL: float(np.max(diff / denom)),
            MSE: float(np.mean(diff * diff)),
            SIGMASTAR_RMSE: rmse,
        }


def cell(value: float | None) -> str:
    if value is None:
        return NOT_COMPUTED
    if math.isnan(value):
        return "nan"
    return repr(float(value))
