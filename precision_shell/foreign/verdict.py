"""The default verdicts of foreign pairs, as threshold rules on our metric columns.

- MegEngine: `MegEngineRelativeError > 1e-3` fails (`compare_binary_iodump.py -e 1e-3`).
- SigmaStar: `CosineSimilarity < 0.99` or `SigmaStarRMSE > 0.1` fails (DumpDebug's rule).
"""

from __future__ import annotations

from precision_shell.compare.metrics.cells import COSINE
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.foreign.dumps import MEGENGINE
from precision_shell.foreign.metrics import MEGENGINE_REL, SIGMASTAR_RMSE

MEGENGINE_MAX_ERROR = 1e-3
SIGMASTAR_COSINE = 0.99
SIGMASTAR_RMSE_LIMIT = 0.1


def megengine_rule(max_error: float = MEGENGINE_MAX_ERROR) -> ThresholdRule:
    return ThresholdRule({}).with_limit(MEGENGINE_REL, max_error)


def sigmastar_rule(
    cosine: float = SIGMASTAR_COSINE, rmse: float = SIGMASTAR_RMSE_LIMIT
) -> ThresholdRule:
    return ThresholdRule({}).with_limit(COSINE, cosine).with_limit(SIGMASTAR_RMSE, rmse)


def default_rule(family: str) -> ThresholdRule:
    return megengine_rule() if family == MEGENGINE else sigmastar_rule()
