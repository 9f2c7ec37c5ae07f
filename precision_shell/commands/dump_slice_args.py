"""`--rank R --step S`: which (rank, step) dump dir of a run a command reads; refused on
MegEngine / SigmaStar dumps, which have no such dirs (`no_rank_step`, the one check)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from precision_shell.shell.registry import UsageError, argument
from precision_shell.workspace.path_slice import conflicting_flag, dump_slice_at

if TYPE_CHECKING:
    from precision_shell.foreign.workspace import ForeignWorkspace
    from precision_shell.shell.context import ShellContext


def rank_step_arguments(fn: Callable) -> Callable:
    """Declare `--rank` and `--step` on the command below (stack under `@command`)."""
    fn = argument(
        "--step", metavar="S", help="dump step dir to read (default: the rank's first step)"
    )(fn)
    return argument(
        "--rank", metavar="R", help="rank, the <device_id> dump dir (default: the lowest)"
    )(fn)


def no_rank_step(command: str, args: argparse.Namespace) -> None:
    """A UsageError when `--rank` or `--step` was given to a command on MegEngine / SigmaStar
    dumps (opened as the workspace, or a `-lt/-rt` pair): ignoring them would read a dump
    the user did not ask for without a word."""
    given = [flag for flag in ("--rank", "--step") if getattr(args, flag[2:], None) is not None]
    if given:
        raise UsageError(
            f"{command}: {', '.join(given)}: not for MegEngine / SigmaStar dumps (--rank and "
            "--step select an Ascend workspace's <device_id> and step dump dirs; these dumps "
            "have none)"
        )


def foreign_dumps(
    ctx: ShellContext, command: str, args: argparse.Namespace
) -> ForeignWorkspace | None:
    """The MegEngine / SigmaStar dumps the shell was opened on, `--rank/--step` refused first;
    None on an Ascend workspace."""
    if ctx.foreign_path is not None:
        no_rank_step(command, args)
    return ctx.foreign


def slice_of_path(ctx: ShellContext, command: str, name: str, args: argparse.Namespace) -> None:
    """A dump file given by path names its own (rank, step): set `args.rank`/`args.step` to
    that dump dir's (QA: `ni PATH`/`replay PATH` of rank 2 step 5's file read rank 0 step
    0's file of that name). A `--rank/--step` that names another is a UsageError; a name
    that is no file of a run's dump dir is left alone."""
    if os.sep not in name or not os.path.isfile(name):
        return
    where = dump_slice_at(ctx.workspace, name)
    if where is None:
        return
    conflict = conflicting_flag(name, where, args.rank, args.step)
    if conflict is not None:
        raise UsageError(f"{command}: {conflict}")
    args.rank, args.step = where.rank, where.step
