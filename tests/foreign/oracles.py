"""The metric formulas written out independently of precision_shell.foreign.metrics."""

from __future__ import annotations

import numpy as np


def expected(left: np.ndarray, right: np.ndarray) -> dict[str, float]:
    a = left.astype(np.float64).ravel()
    b = right.astype(np.float64).ravel()
    d = a - b
    return {
        "CosineSimilarity": float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))),
        "MaxAbsoluteError": float(np.abs(d).max()),
        "MegEngineRelativeError": float(
            (np.abs(d) / np.maximum(np.maximum(np.abs(a), np.abs(b)), 1)).max()
        ),
        "MeanSquaredError": float((d**2).mean()),
        "SigmaStarRMSE": float(np.abs(d).sum() / np.abs(b).sum()),
    }
