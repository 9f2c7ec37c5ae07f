"""`--max-err`, `--cos-min`, `--rmse-max`: a MegEngine or SigmaStar compare's own rule, moved.

Each flag is one limit of one family's rule (foreign/verdict.py): `--max-err E` MegEngine's
`compare_binary_iodump.py -e` limit on MegEngineRelativeError (default 1e-3); `--cos-min C`
and `--rmse-max R` SigmaStar's CosineSimilarity < 0.99 / SigmaStarRMSE > 0.1. A flag of the
other family, or any of them on a compare that is not of two foreign dumps, is a one-line
UsageError naming the flag.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from precision_shell.compare.metrics.cells import COSINE
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.errors import PrecisionError
from precision_shell.foreign.dumps import MEGENGINE, SIGMASTAR, detect_foreign
from precision_shell.foreign.metrics import MEGENGINE_REL, SIGMASTAR_RMSE
from precision_shell.foreign.run import check_pair
from precision_shell.foreign.verdict import (
    MEGENGINE_MAX_ERROR,
    SIGMASTAR_COSINE,
    SIGMASTAR_RMSE_LIMIT,
    family_rule,
)
from precision_shell.shell.registry import UsageError, argument

_NAMES = {MEGENGINE: "MegEngine", SIGMASTAR: "SigmaStar"}
# argparse dest -> (flag, the family whose rule it moves, the column it limits)
RULE_FLAGS: dict[str, tuple[str, str, str]] = {
    "max_err": ("--max-err", MEGENGINE, MEGENGINE_REL),
    "cos_min": ("--cos-min", SIGMASTAR, COSINE),
    "rmse_max": ("--rmse-max", SIGMASTAR, SIGMASTAR_RMSE),
}


def foreign_rule_arguments(fn: Callable) -> Callable:
    """Declare the three flags on the command below (stack under `@command`)."""
    fn = argument(
        "--rmse-max",
        type=float,
        metavar="R",
        help="SigmaStar dumps: fail SigmaStarRMSE above R (DumpDebug's rule; default "
        f"{SIGMASTAR_RMSE_LIMIT:g})",
    )(fn)
    fn = argument(
        "--cos-min",
        type=float,
        metavar="C",
        help=f"SigmaStar dumps: fail CosineSimilarity below C (default {SIGMASTAR_COSINE:g})",
    )(fn)
    return argument(
        "--max-err",
        type=float,
        metavar="E",
        help="MegEngine dumps: fail MegEngineRelativeError above E (compare_binary_iodump -e; "
        f"default {MEGENGINE_MAX_ERROR:g})",
    )(fn)


def _given(args: argparse.Namespace) -> dict[str, float]:
    return {dest: v for dest in RULE_FLAGS if (v := getattr(args, dest, None)) is not None}


def foreign_rule(
    command: str, args: argparse.Namespace, left: str | None, right: str | None
) -> ThresholdRule | None:
    """The rule the flags give the compare of `left` and `right` (None: none given, the
    family's default); a UsageError for a flag of the other family or a limit out of range."""
    given = _given(args)
    if not given:
        return None
    check_pair(command, left, right)  # both foreign, one family: a one-line error otherwise
    found = detect_foreign(left or "")
    assert found is not None
    family = found[0]
    limits = {}
    for dest, value in given.items():
        flag, wanted, column = RULE_FLAGS[dest]
        if wanted != family:
            others = " / ".join(f for f, fam, _ in RULE_FLAGS.values() if fam == family)
            raise UsageError(
                f"{command}: {flag} limits {column}, a {_NAMES[wanted]} rule; these are "
                f"{_NAMES[family]} dumps (their rule's flags: {others})"
            )
        try:
            family_rule(family, {column: value})
        except PrecisionError as exc:
            raise UsageError(f"{command}: {flag}: {exc}") from None
        limits[column] = value
    return family_rule(family, limits)


def no_foreign_rule(command: str, args: argparse.Namespace) -> None:
    """A UsageError when a flag was given to a compare that is not of two foreign dumps."""
    given = _given(args)
    if given:
        flag, family, column = RULE_FLAGS[next(iter(given))]
        raise UsageError(
            f"{command}: {flag} is for a compare of two {_NAMES[family]} dumps (-lt/-rt): it "
            f"limits {column}; this compare is judged by the [thresholds] settings"
        )
