"""Tensor commands: `pt` (summary + text dump), `cp` (element-wise compare), `dc` (decode to .npy)."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from precision_shell.commands.dump_slice_args import foreign_dumps, rank_step_arguments
from precision_shell.commands.foreign_rule_args import (
    foreign_rule,
    foreign_rule_arguments,
    no_foreign_rule,
)
from precision_shell.compare.metrics.elementwise import ElementwiseComparison, compare_elements
from precision_shell.compare.metrics.tolerances import TOLERANCE_TEXT, default_tolerances
from precision_shell.errors import PrecisionError
from precision_shell.explore.statistics_files import (
    StatisticsFile,
    find_statistics_file,
    read_statistics_file,
)
from precision_shell.explore.tensor_decode import decode_tensors
from precision_shell.explore.tensor_target import TensorHandle, resolve_tensors
from precision_shell.foreign.explore import (
    ForeignDecoded,
    ForeignSummaries,
    ForeignTensorCompare,
    compare_tensor,
    decode,
    summarize,
)
from precision_shell.formats.benchmark import real_part
from precision_shell.formats.layouts import (
    LayoutError,
    format_code,
    format_name,
    is_plain_format,
)
from precision_shell.shell.context import ShellContext
from precision_shell.shell.registry import UsageError, argument, command
from precision_shell.workspace.dump_index import DumpFileRef, index_dump_tree
from precision_shell.workspace.output_files import make_user_dir, replace_output
from precision_shell.workspace.subgraph_files import safe_file_stem
from precision_shell.workspace.tensor_stats import TensorStats, compute_stats
from precision_shell.workspace.tensor_text import write_tensor_text
from precision_shell.workspace.workspace import Workspace


@dataclass(frozen=True)
class TensorSummary:
    """One tensor of `pt`: in its benchmark layout when it converts (pads cut off)."""

    label: str
    path: str
    layout: str  # the layout of the values summarised
    stats: TensorStats
    preview: list[float]
    text_file: str
    stored: str = ""  # "NC1HWC0 [2, 1, 4, 4, 16]" when converted from that device layout
    note: str | None = None  # why a device layout was kept as stored
    where: str = ""  # "rank 2 step 0": the dump dir read, when the run has several


@dataclass(frozen=True)
class TensorSummaries:
    """`pt`: one summary per tensor named."""

    items: list[TensorSummary]


@dataclass(frozen=True)
class TensorComparison:
    """`cp`: element-wise compare of two tensors with both sides' statistics."""

    left: str
    right: str
    report: ElementwiseComparison
    left_stats: TensorStats
    right_stats: TensorStats
    saved: str | None
    left_where: str = ""  # "rank 2 step 0": the dump dir each side was read from, if several
    right_where: str = ""


@dataclass(frozen=True)
class DecodedFiles:
    """`dc`: the `.npy` files written."""

    files: list[tuple[str, str, tuple[int, ...], str]]  # (source label, npy path, shape, format)
    out_dir: str
    notes: list[str]  # tensors kept in their device layout, and why
    index_warnings: list[str] = field(default_factory=list)  # of a dump dir given by path


def _workspace(ctx: ShellContext) -> Workspace | None:
    """The workspace when it opens; file paths work without one."""
    return ctx.try_open()


def _output_dir(ctx: ShellContext, *parts: str) -> Path:
    ws = ctx.workspace
    return ws.output_dir(*parts)


@command("pt")
@rank_step_arguments
@argument(
    "target", nargs="?", complete="tensor", help="dump or .npy file (path or name), or op name"
)
@argument(
    "-n",
    "--name",
    dest="name_flag",
    metavar="NAME",
    complete="tensor",
    help="same as the positional",
)
@argument("--run", metavar="RUN", help="MegEngine / SigmaStar dumps: this run only")
def pt_command(
    ctx: ShellContext, args: argparse.Namespace
) -> TensorSummaries | StatisticsFile | ForeignSummaries:
    """pt [-n] NAME_OR_FILE [--rank R] [--step S] [--run RUN]

    Tensor summary (shape, dtype, max/min/mean/std, NaN/inf) and preview; values saved as text under temp/.
    On MegEngine / SigmaStar dumps: a var or tensor in each run holding it (or --run RUN).
    """
    target = args.name_flag or args.target
    if not target:
        raise UsageError("pt: give a dump file, a .npy file or an op name")
    foreign = foreign_dumps(ctx, "pt", args)
    if foreign is not None:
        return summarize(foreign, target, args.run, int(ctx.settings.get("display.preview")))
    if args.run is not None:
        raise UsageError("pt: --run is for MegEngine / SigmaStar dumps")
    statistics = find_statistics_file(_workspace(ctx), target, args.rank, args.step)
    if statistics is not None:
        return read_statistics_file(statistics)
    handles = resolve_tensors(_workspace(ctx), target, rank=args.rank, step=args.step)
    preview_n = int(ctx.settings.get("display.preview"))
    out_dir = _output_dir(ctx, "pt")
    items = []
    for h in handles:
        values, note = h.load_for_summary()
        stats = compute_stats(values, h.path)
        layout, stored = _layouts(h, values, note)
        flat = np.asarray(values).reshape(-1)
        if flat.dtype.kind == "c":  # QA: stats of |z| beside a preview of the real parts
            flat = np.abs(flat)
        preview = [float(v) for v in flat[:preview_n].astype(np.float64)]
        # one file per tensor: a repeated pt replaces its own earlier file
        text_path = out_dir / f"{safe_file_stem(_titled(h))}.txt"
        header = {
            "source": str(h.path),
            "tensor": _titled(h),
            "shape": str(list(stats.shape)),
            "dtype": stats.dtype,
            "layout": layout,
            **(
                {"complex": "statistics and preview of |z|; each line: real, imaginary part"}
                if np.asarray(values).dtype.kind == "c"
                else {}
            ),
        }
        if stored:
            header["stored as"] = stored
        write_tensor_text(text_path, values, header)
        items.append(
            TensorSummary(
                h.label, h.path, layout, stats, preview, str(text_path), stored, note, h.where
            )
        )
    return TensorSummaries(items)


def _titled(h: TensorHandle) -> str:
    """The label with the dump dir read: the same file name is in every rank's dir."""
    return f"{h.label} ({h.where})" if h.where else h.label


def _layouts(h: TensorHandle, values: np.ndarray, note: str | None) -> tuple[str, str]:
    """(layout of `values`, the stored device layout and shape when they were converted)."""
    if h.meta is None:
        return "npy", ""
    device = h.meta.format_name
    if note is not None:
        return device, ""
    origin = h.origin_format()
    # QA: NHWC [2,3,3,3] turned to NCHW [2,3,3,3] kept the label NHWC (same shape)
    transposed = origin is not None and origin != device
    if not transposed and tuple(values.shape) == tuple(h.meta.shape) and is_plain_format(device):
        return device, ""
    return origin or device, f"{device} {list(h.meta.shape)}"


@command("cp")
@rank_step_arguments
@argument("left", nargs="?", complete="tensor", help="left tensor (device), file or op name")
@argument("right", nargs="?", complete="tensor", help="right tensor (benchmark), file or op name")
@argument(
    "-n", "--names", nargs=2, metavar=("LEFT", "RIGHT"), complete="tensor", help="the two tensors"
)
@argument(
    "-p",
    "--print",
    dest="top",
    type=int,
    default=20,
    metavar="N",
    help="rows in each table (default 20)",
)
@argument(
    "-al",
    "--atol",
    type=float,
    default=None,
    help="absolute tolerance (default: by dtype, the looser side's: " + TOLERANCE_TEXT + ")",
)
@argument(
    "-rl",
    "--rtol",
    type=float,
    default=None,
    help="relative tolerance (default: by dtype, as for -al)",
)
@argument(
    "-s", "--save", action="store_true", help="save left, right and diff as text under temp/cp/"
)
@argument(
    "--flatten-to-min",
    action="store_true",
    help="compare the first min(count) elements when counts differ",
)
@foreign_rule_arguments
def cp_command(
    ctx: ShellContext, args: argparse.Namespace
) -> TensorComparison | ForeignTensorCompare:
    """cp [-n] LEFT RIGHT [-p N] [-al ATOL] [-rl RTOL] [-s] [--flatten-to-min] [--rank R] [--step S]

    Element-wise compare: worst and first elements, allclose, cosine, error ratio, both sides' stats.
    On a pair of MegEngine / SigmaStar dumps: cp NAME, the var or tensor in both runs (paired
    as vc pairs them), with vc's metrics and verdict (--max-err / --cos-min / --rmse-max move
    the rule's limits, as for vc).
    """
    foreign = foreign_dumps(ctx, "cp", args)
    if foreign is not None:
        if args.names or not args.left or args.right:
            raise UsageError("cp: on a pair of dumps give one var or tensor: cp NAME")
        rule = None
        if foreign.right is not None:  # else compare_tensor says cp needs a pair
            pair = (str(foreign.left.path), str(foreign.right.path))
            rule = foreign_rule("cp", args, *pair)
        return compare_tensor(foreign, args.left, rule)
    no_foreign_rule("cp", args)
    left_name, right_name = args.names if args.names else (args.left, args.right)
    if not left_name or not right_name:
        raise UsageError("cp: give two tensors, e.g. cp DUMP_FILE benchmark.npy")
    for flag, value in (("-al", args.atol), ("-rl", args.rtol)):
        if value is not None and not math.isfinite(value):
            raise UsageError(f"cp: {flag} must be a finite number, got {value:g}")
    if args.top < 0 or (args.atol or 0) < 0 or (args.rtol or 0) < 0:
        raise UsageError("cp: -p, -al and -rl must not be negative")
    ws = _workspace(ctx)
    where = {"rank": args.rank, "step": args.step}
    left = _single(resolve_tensors(ws, left_name, default_output=True, **where), left_name)
    right = _single(resolve_tensors(ws, right_name, default_output=True, **where), right_name)
    lv = real_part(left.path, left.load_converted(), "cp compares real tensors")
    rv = real_part(right.path, right.load_converted(), "cp compares real tensors")
    left_stats, right_stats = compute_stats(lv, left.path), compute_stats(rv, right.path)
    default_rtol, default_atol = default_tolerances(lv.dtype, rv.dtype)
    atol = default_atol if args.atol is None else args.atol
    rtol = default_rtol if args.rtol is None else args.rtol
    report = compare_elements(lv, rv, atol, rtol, args.top, args.flatten_to_min)
    saved = None
    if args.save:
        saved = str(_save_pair(ctx, left, right, lv, rv))
    return TensorComparison(
        left.label, right.label, report, left_stats, right_stats, saved, left.where, right.where
    )


def _single(handles: list[TensorHandle], name: str) -> TensorHandle:
    if len(handles) != 1:
        choices = ", ".join(
            h.label.rsplit(" ", 2)[-2] + ":" + h.label.rsplit(" ", 1)[-1] for h in handles
        )
        raise UsageError(
            f"{name}: holds {len(handles)} tensors; pick one with :input:K or :output:K ({choices})"
        )
    return handles[0]


def _save_pair(
    ctx: ShellContext, left: TensorHandle, right: TensorHandle, lv: np.ndarray, rv: np.ndarray
) -> Path:
    out = (
        _output_dir(ctx, "cp")
        / f"{safe_file_stem(_titled(left))}__vs__{safe_file_stem(_titled(right))}.txt"
    )
    n = min(lv.size, rv.size)
    x = np.asarray(lv, dtype=np.float64).reshape(-1)[:n]
    y = np.asarray(rv, dtype=np.float64).reshape(-1)[:n]
    header = f"left: {_titled(left)}  right: {_titled(right)}\nleft right diff"
    table = np.stack([x, y, x - y], axis=1)
    return replace_output(
        out, lambda fh: np.savetxt(fh, table, fmt="%.17g", header=header), text=True
    )


@command("dc")
@rank_step_arguments
@argument(
    "target",
    complete="tensor",
    help="device dump file (path or name), dump dir (every dump file in it) or op name",
)
@argument("-f", "--format", dest="fmt", help="convert to this layout (NCHW, NHWC, ND, NCDHW, ...)")
@argument(
    "-o",
    "--output",
    dest="out_dir",
    type=Path,
    complete="path",
    help="output dir (default temp/decode/)",
)
@argument("--run", metavar="RUN", help="MegEngine / SigmaStar dumps: this run only")
def dc_command(ctx: ShellContext, args: argparse.Namespace) -> DecodedFiles | ForeignDecoded:
    """dc NAME_OR_FILE_OR_DIR [-f FORMAT] [-o OUTDIR] [--rank R] [--step S] [--run RUN]

    Decode device dump files to .npy, optionally converted to a layout.

    Names carry the run, rank and step when several are decoded; never writes over a file
    in -o OUTDIR.
    On MegEngine / SigmaStar dumps: the var's or tensor's values of each run holding it (or
    --run RUN) as .npy (never over a file, never inside a dump dir).
    """
    foreign = foreign_dumps(ctx, "dc", args)
    if foreign is not None:
        if args.fmt:
            raise UsageError("dc: -f is for Ascend dump files")
        return decode(foreign, args.target, args.run, args.out_dir)
    if args.run is not None:
        raise UsageError("dc: --run is for MegEngine / SigmaStar dumps")
    fmt = None
    if args.fmt:
        try:
            fmt = format_name(format_code(args.fmt))
        except LayoutError as exc:
            raise UsageError(f"dc: -f: {exc}") from None
    if Path(args.target).is_dir():
        handles, warnings = _dir_targets(_workspace(ctx), Path(args.target))
    else:
        handles, warnings = _dump_targets(ctx, args.target, args.rank, args.step), []
    out_dir = make_user_dir(args.out_dir) if args.out_dir else _output_dir(ctx, "decode")
    written, notes = decode_tensors(handles, out_dir, fmt, user_dir=args.out_dir is not None)
    files = [(d.label, d.path, d.shape, d.layout) for d in written]
    return DecodedFiles(files, str(out_dir), notes, warnings)


def _dir_targets(ws: Workspace | None, directory: Path) -> tuple[list[TensorHandle], list[str]]:
    """Every tensor of every dump file under `directory` (its sub-dirs too), and what indexing
    them warned of."""
    index = index_dump_tree(directory)
    refs = [r for r in index.files if not r.stats_csv and r.op_type != "Opdebug"]
    if not refs:
        raise PrecisionError(f"{directory}: no dump files found (searched its sub-dirs too)")
    return _every_tensor(ws, refs), list(index.warnings)


def _every_tensor(ws: Workspace | None, refs: list[DumpFileRef]) -> list[TensorHandle]:
    """Every input and output tensor of these dump files, file after file."""
    return [h for ref in refs for h in resolve_tensors(ws, ref.path)]


def _dump_targets(
    ctx: ShellContext, target: str, rank: str | None = None, step: str | None = None
) -> list[TensorHandle]:
    ws = _workspace(ctx)
    if ws is not None and not Path(target).exists():
        for run in ws.runs:
            if run.find(target) is not None:
                refs = ws.dump_files(run, target, rank, step)
                if not refs and ws.dump_files(run, target, rank, step, statistics=True):
                    raise PrecisionError(
                        f"op {target!r} ({run.name}) has only a statistics dump (no tensor "
                        f"values to decode); pt {target} shows its statistics"
                    )
                if not refs:
                    raise PrecisionError(f"op {target!r} ({run.name}) has no dump file")
                return _every_tensor(ws, refs)
    handles = resolve_tensors(ws, target, rank=rank, step=step)
    if any(not h.is_dump for h in handles):
        raise UsageError(f"dc: {target} is a .npy file already; dc decodes device dump files")
    return handles
