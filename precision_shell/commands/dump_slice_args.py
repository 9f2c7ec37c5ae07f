"""`--rank R --step S`: which (rank, step) dump dir of a run a command reads."""

from __future__ import annotations

from collections.abc import Callable

from precision_shell.shell.registry import argument


def rank_step_arguments(fn: Callable) -> Callable:
    """Declare `--rank` and `--step` on the command below (stack under `@command`)."""
    fn = argument(
        "--step", metavar="S", help="dump step dir to read (default: the rank's first step)"
    )(fn)
    return argument(
        "--rank", metavar="R", help="rank, the <device_id> dump dir (default: the lowest)"
    )(fn)
