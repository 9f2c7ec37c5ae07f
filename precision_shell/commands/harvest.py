"""Harvest commands: `tf_run` (live tfdbg session) and `tf_dump` (offline tfdbg run dirs)."""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from precision_shell.errors import PrecisionError
from precision_shell.formats.tfdbg_dir import list_run_dirs, run_failure, tensorflow_available
from precision_shell.harvest.live import LiveOptions, harvest_live
from precision_shell.harvest.offline import (
    OfflineOptions,
    harvest_run_fast,
    harvest_run_pexpect,
    run_user_script,
    select_runs,
)
from precision_shell.harvest.outcome import HarvestBatch, HarvestOutcome
from precision_shell.harvest.tfdbg_session import Timeouts
from precision_shell.shell.context import ShellContext
from precision_shell.shell.registry import UsageError, argument, command
from precision_shell.workspace.benchmark_dirs import scope_of
from precision_shell.workspace.layout import WORKSPACE_DIR_NAME, resolve_workspace_root

_DEFAULTS = Timeouts()


def workspace_root_for_harvest(ctx: ShellContext) -> Path:
    """`precision_data/` of the shell's workspace, created when the dir holds none yet."""
    opened = ctx.workspace_if_open()
    if opened is not None:
        return opened.root
    base = Path(ctx.workspace_path).expanduser()
    try:
        return resolve_workspace_root(base)
    except PrecisionError:
        if base.name == WORKSPACE_DIR_NAME and base.parent.is_dir():
            root = base
        elif base.is_dir():
            root = base / WORKSPACE_DIR_NAME
        else:
            raise
    try:
        root.mkdir(exist_ok=True)
    except OSError as error:
        raise PrecisionError(f"{root}: cannot create the workspace: {error.strerror}") from None
    return root.resolve()


def script_argv(words: list[str], name: str) -> list[str]:
    """The user's command as argv: `tf_run python x.py` or `tf_run "python x.py --lr 0.1"`."""
    if not words:
        raise UsageError(
            f'{name}: give the command that runs your script, e.g. {name} "python train.py"'
        )
    if len(words) == 1 and any(c.isspace() for c in words[0]):
        try:
            return shlex.split(words[0])
        except ValueError as error:
            raise UsageError(f"{name}: cannot split {words[0]!r}: {error}") from None
    return list(words)


# a wait longer than this is no timeout (and 1e308 overflows the select() deadline)
_MAX_TIMEOUT = 30 * 24 * 3600.0


def _timeouts(args: argparse.Namespace) -> Timeouts:
    for flag, value in (
        ("--startup-timeout", args.startup_timeout),
        ("--run-timeout", args.run_timeout),
        ("--timeout", args.timeout),
    ):
        if not 0 < value <= _MAX_TIMEOUT:  # NaN fails both
            raise UsageError(
                f"{flag} must be > 0 seconds and at most {_MAX_TIMEOUT:.0f} (30 days), "
                f"got {value:g}"
            )
    return Timeouts(args.startup_timeout, args.run_timeout, args.timeout)


def _log_path(root: Path, what: str) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d%H%M%S%f")
    return root / "temp" / "harvest" / f"{what}_{stamp}.log"


def _into_argument(fn: Callable) -> Callable:
    """`--into DIR`: a rank's or step's benchmark dir under tf/dump/."""
    return argument(
        "--into",
        metavar="DIR",
        help="write into tf/dump/DIR/, the benchmark of one rank or step: step<S>, rank<R> "
        "or rank<R>/step<S> (vc compares each dump dir with its own)",
    )(fn)


def _into_dir(root: Path, into: str | None, command_name: str) -> Path:
    """tf/dump/, or the rank or step dir `--into` names (checked)."""
    top = root / "tf" / "dump"
    if into is None:
        return top
    if scope_of(into) is None:
        raise UsageError(
            f"{command_name}: --into takes step<S>, rank<R>, rank<R>/step<S> or "
            f"step<S>/rank<R> (numbers), got {into!r}"
        )
    return no_links_below(top, top / into.strip("/"), command_name)


def _last_whole_run(tf_debug: Path, last: list[Path]) -> tuple[list[Path], list[str]]:
    """The default run: the last that finished (a TF1 input loop ends on OutOfRangeError, a
    run cut short: neither is a step to compare), with a note of the later ones passed
    over; the last run itself when none finished (it then fails as it is)."""
    runs = list_run_dirs(tf_debug)
    passed: list[str] = []
    for run in reversed(runs):
        why = run_failure(run)
        if why is None:
            if not passed:
                return [run], []
            return [run], [
                f"harvested {run.name}, the last run that finished; passed over "
                f"{', '.join(passed)} (--run N takes one)"
            ]
        passed.append(f"{run.name}: {why}")
    return last, []


def _wrapped_live(log: Path) -> bool:
    """The script's output ends as tfdbg's live CLI does without a terminal to read."""
    try:
        with open(log, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - 8192))
            tail = fh.read().decode("utf-8", "replace")
    except OSError:
        return False
    return "EOFError" in tail and ("local_cli_wrapper" in tail or "readline_ui" in tail)


def no_links_below(top: Path, target: Path, command_name: str) -> Path:
    """`target`, refused when a dir between `top` (tf/dump/, which may well be a link to a
    big disk) and it is a symbolic link (QA: `--into step1` with step1 -> tf/dump wrote a run
    over the workspace's benchmark, and a link out of the workspace was written through)."""
    path = top
    for part in target.relative_to(top).parts:
        path = path / part
        if path.is_symlink():
            raise PrecisionError(
                f"{command_name}: {path} is a symbolic link; a harvest is never written "
                "through one (where it points may be tf/dump itself, or another workspace's): "
                "remove it, or give --into another dir"
            )
    return target


def _timeout_arguments(fn: Callable) -> Callable:
    """The three timeout flags, shared by both commands."""
    fn = argument(
        "--timeout",
        type=float,
        default=_DEFAULTS.command,
        metavar="S",
        help=f"seconds to wait for each other tfdbg command (default {_DEFAULTS.command:g})",
    )(fn)
    fn = argument(
        "--run-timeout",
        type=float,
        default=_DEFAULTS.run,
        metavar="S",
        help=f"seconds to wait for the debugged run(s) or CMD (default {_DEFAULTS.run:g})",
    )(fn)
    fn = argument(
        "--startup-timeout",
        type=float,
        default=_DEFAULTS.startup,
        metavar="S",
        help=f"seconds to wait for the first tfdbg prompt (default {_DEFAULTS.startup:g})",
    )(fn)
    return fn


@command("tf_run")
@argument(
    "-r",
    "--runs",
    type=int,
    default=1,
    metavar="N",
    help="Session.run() steps to run; the N-th is dumped and harvested (default 1)",
)
@argument(
    "--overwrite",
    action="store_true",
    help="replace files of the same name in tf/dump/ (default: write under a fresh name)",
)
@_into_argument
@_timeout_arguments
@argument(
    "cmd",
    nargs=argparse.REMAINDER,
    metavar="CMD",
    help="the command running your script (flags of tf_run go before it)",
)
def tf_run_command(ctx: ShellContext, args: argparse.Namespace) -> HarvestOutcome:
    """tf_run [-r N] [--overwrite] [--into DIR] [--startup-timeout S] [--run-timeout S] [--timeout S] CMD

    Run a script wrapped in tfdbg's LocalCLIDebugWrapperSession and harvest its tensors into tf/dump/.
    """
    argv = script_argv(args.cmd, "tf_run")
    if args.runs < 1:
        raise UsageError(f"tf_run: -r must be >= 1, got {args.runs}")
    root = workspace_root_for_harvest(ctx)
    out_dir = _into_dir(root, args.into, "tf_run")
    options = LiveOptions(steps=args.runs, overwrite=args.overwrite, timeouts=_timeouts(args))
    ctx.forget_workspace()  # new benchmark files: the next command re-reads the index
    return harvest_live(
        argv,
        root,
        out_dir,
        options,
        progress=ctx.progress("tf_run", "tensors"),
        transcript=_log_path(root, "tf_run"),
    )


@command("tf_dump")
@argument("--run", metavar="N", help="run dir to harvest: index (0 first, -1 last) or name")
@argument("--all", dest="all_runs", action="store_true", help="every run, each into tf/dump/<run>/")
@argument(
    "--overwrite",
    action="store_true",
    help="replace files of the same name in tf/dump/ (default: write under a fresh name)",
)
@argument(
    "--pexpect",
    action="store_true",
    help="use tfdbg's offline analyzer even when TensorFlow imports here",
)
@argument(
    "--python",
    metavar="PY",
    complete="path",
    help="interpreter (with TensorFlow) for the offline analyzer (default: this one)",
)
@_into_argument
@_timeout_arguments
@argument(
    "cmd",
    nargs=argparse.REMAINDER,
    metavar="CMD",
    help="run this first when tf/tf_debug/ holds no run yet (flags of tf_dump go before it)",
)
def tf_dump_command(ctx: ShellContext, args: argparse.Namespace) -> HarvestBatch:
    """tf_dump [--run N | --all] [--into DIR] [--overwrite] [--pexpect] [--python PY] [CMD]

    Harvest tf/tf_debug/run_* dirs (DumpingDebugWrapperSession) into tf/dump/; the last run by default.
    """
    if args.run is not None and args.all_runs:
        raise UsageError("tf_dump: give --run N or --all, not both")
    if args.into is not None and args.all_runs:
        raise UsageError("tf_dump: --all writes each run into its own dir; --into takes one run")
    timeouts = _timeouts(args)
    root = workspace_root_for_harvest(ctx)
    into = _into_dir(root, args.into, "tf_dump")
    tf_debug = root / "tf" / "tf_debug"
    notes: list[str] = []
    has_runs = tf_debug.is_dir() and bool(list_run_dirs(tf_debug))
    script_failed: str | None = None  # CMD ended with an error: its runs may be cut short
    if args.cmd:
        argv = script_argv(args.cmd, "tf_dump")
        if has_runs:
            notes.append(
                f"{tf_debug} already holds runs: harvested {'them' if args.all_runs else 'one'}"
                "; CMD was not run (harvest and clear tf/tf_debug/ to run it again)"
            )
        else:
            log = _log_path(root, "tf_dump_cmd")
            status, code = run_user_script(argv, root, timeouts.run, log)
            notes.append(f"ran {shlex.join(argv)}: {status} (output: {log})")
            if code != 0:
                script_failed = f"{shlex.join(argv)} ended with {status}; its output: {log}"
    if not tf_debug.is_dir():
        if script_failed is not None:  # QA: a failing script was told to wrap its session
            live = _wrapped_live(log)
            raise PrecisionError(
                f"tf_dump: {notes[-1]}: it failed before it dumped a run"
                + (
                    "; its session is wrapped for tf_run (sess_dump_live): run tf_run CMD"
                    if live
                    else ""
                )
            )
        if args.cmd:
            raise PrecisionError(
                f"tf_dump: {notes[-1]}, but it wrote no {tf_debug}/: wrap its session with "
                "precision_shell.tf_config.sess_dump(sess)"
            )
        raise PrecisionError(
            f"{tf_debug}: no such dir; wrap the session with "
            "precision_shell.tf_config.sess_dump(sess) and run the script (or give CMD)"
        )
    runs = select_runs(tf_debug, args.run, args.all_runs)
    if args.run is None and not args.all_runs:
        runs, skipped = _last_whole_run(tf_debug, runs)
        notes += skipped
    have_tf = tensorflow_available()
    if not have_tf and args.python is None:
        raise PrecisionError(
            "tf_dump: TensorFlow is not importable here; give --python PY, an interpreter "
            "that has it, to run tfdbg's offline analyzer"
        )
    fast = have_tf and not args.pexpect and args.python is None
    options = OfflineOptions(
        overwrite=args.overwrite,
        python=args.python or sys.executable,
        timeouts=timeouts,
    )
    reports = []
    for run_dir in runs:
        # --all: one folder per run, so dumps of different runs never mix.
        out_dir = into
        if args.all_runs:
            out_dir = no_links_below(into, out_dir / run_dir.name, "tf_dump")
        progress = ctx.progress(f"tf_dump {run_dir.name}", "tensors")
        if fast:
            reports.append(harvest_run_fast(run_dir, out_dir, args.overwrite, progress))
        else:
            transcript = _log_path(root, f"tf_dump_{run_dir.name}")
            reports.append(
                harvest_run_pexpect(run_dir, root, out_dir, options, progress, transcript)
            )
        failed = run_failure(run_dir)
        if failed is not None or script_failed is not None:
            reports[-1].run_error = failed or script_failed
        if reports[-1].aborted == "interrupted":
            break
    if args.all_runs and reports:
        notes.append(
            f"each run is in its own dir under {root / 'tf' / 'dump'}/; the workspace's "
            "benchmark is tf/dump/ itself: compare against one run with "
            f"vc -rt {root / 'tf' / 'dump' / runs[0].name}"
        )
    ctx.forget_workspace()  # new benchmark files: the next command re-reads the index
    return HarvestBatch(reports, notes)
