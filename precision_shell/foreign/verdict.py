"""The verdicts of foreign pairs, as threshold rules on our metric columns.

- MegEngine: `MegEngineRelativeError > 1e-3` fails (`compare_binary_iodump.py -e 1e-3`).
  The same limit applies to `MegEngineRelativeErrorAtLeast`, the lower bound a var that a
  `--io-dump` printed only in part gets when what was printed proves it (`foreign.run`); such
  a var is never passed: when nothing printed proves the limit crossed, it is not judged.
- SigmaStar: `CosineSimilarity < 0.99` or `SigmaStarRMSE > 0.1` fails (DumpDebug's rule).

`vc` / `ac -c` may move these limits (`--max-err`, `--cos-min`, `--rmse-max`: `family_rule`);
the rule a compare ran with is the one its summary.json records, which `vcs` and `report`
then judge by.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from precision_shell.compare.metrics.cells import COSINE
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.errors import PrecisionError
from precision_shell.foreign.dumps import MEGENGINE
from precision_shell.foreign.metrics import MEGENGINE_REL, MEGENGINE_REL_AT_LEAST, SIGMASTAR_RMSE

MEGENGINE_MAX_ERROR = 1e-3
SIGMASTAR_COSINE = 0.99
SIGMASTAR_RMSE_LIMIT = 0.1
# a column whose limit moves with another's: a bound on a metric is judged by the metric's limit
_TIED: dict[str, tuple[str, ...]] = {MEGENGINE_REL: (MEGENGINE_REL_AT_LEAST,)}


def _with_limit(rule: ThresholdRule, column: str, value: float) -> ThresholdRule:
    for name in (column, *_TIED.get(column, ())):
        rule = rule.with_limit(name, value)
    return rule


def megengine_rule(max_error: float = MEGENGINE_MAX_ERROR) -> ThresholdRule:
    return _with_limit(ThresholdRule({}), MEGENGINE_REL, max_error)


def sigmastar_rule(
    cosine: float = SIGMASTAR_COSINE, rmse: float = SIGMASTAR_RMSE_LIMIT
) -> ThresholdRule:
    return ThresholdRule({}).with_limit(COSINE, cosine).with_limit(SIGMASTAR_RMSE, rmse)


def default_rule(family: str) -> ThresholdRule:
    return megengine_rule() if family == MEGENGINE else sigmastar_rule()


def family_rule(family: str, limits: Mapping[str, float]) -> ThresholdRule:
    """The family's default rule with `limits` (column -> limit) in place of its own; a
    one-line PrecisionError for a column that rule does not limit, or a limit out of range
    (not finite, a cosine outside [-1, 1], a negative error)."""
    rule = default_rule(family)
    for column, value in limits.items():
        if column not in rule.limits:
            raise PrecisionError(f"the {family} rule does not limit {column}")
        if not math.isfinite(value):
            raise PrecisionError(f"the limit on {column} must be a finite number, not {value}")
        rule = _with_limit(rule, column, value)
    return rule
