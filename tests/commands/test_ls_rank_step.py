"""`ls --rank R --step S`: only the ops with a dump file in that (rank, step) dir are listed
or counted; an unknown rank or step is the one-line error naming the ones there are."""

from __future__ import annotations

import io
import os
from pathlib import Path

from precision_shell.formats.dump_names import sanitize_dump_name
from precision_shell.render.graph_views import render_op_listing, render_type_counts
from precision_shell.render.output import make_console
from tests.commands.shell_fixture import CONV1, CONV2, CONV3, open_shell, run_fail, run_ok


def _step_dir(root: Path) -> Path:
    dump = root / "precision_data" / "npu" / "debug_0" / "dump"
    return next(p for p in dump.rglob("*") if p.is_file()).parent


def _copy_without(step: Path, dst: Path, op_name: str) -> None:
    """A hard-linked copy of a step dir, minus every dump file of one op."""
    dst.mkdir(parents=True)
    dropped = sanitize_dump_name(op_name)
    for f in step.iterdir():
        if f.name.split(".")[1:2] != [dropped]:
            os.link(f, dst / f.name)


def _workspace(root: Path) -> Path:
    """debug_0: rank 0 step 0 (everything), rank 0 step 7 without CONV1, rank 1 without CONV2."""
    step = _step_dir(root)
    _copy_without(step, step.parent / "7", CONV1)
    _copy_without(step, step.parents[3] / "1" / step.relative_to(step.parents[2]), CONV2)
    return step


def _total(counts: dict[str, int]) -> int:
    return sum(counts.values())


def test_ls_counts_only_the_ops_dumped_in_the_rank_and_step(tiny_demo):
    root, manifest = tiny_demo
    _workspace(root)
    shell = open_shell(root)
    dumped = {op.name for op in manifest.device_ops if op.dump_file}
    everything = run_ok(shell, "ls")
    assert _total(everything.runs["debug_0"]) == len(manifest.device_ops) > len(dumped)
    assert everything.dump_slice == {}
    first = run_ok(shell, "ls --rank 0 --step 0")
    assert _total(first.runs["debug_0"]) == len(dumped)
    assert first.dump_slice == {"rank": "0", "step": "0"}
    rank1 = run_ok(shell, "ls --rank 1")
    assert list(rank1.runs) == ["debug_0"]  # debug_1 has no rank 1
    assert _total(rank1.runs["debug_0"]) == len(dumped) - 1
    conv_types = {op.type for op in manifest.device_ops if op.name == CONV2}
    (conv_type,) = conv_types
    assert rank1.runs["debug_0"][conv_type] == first.runs["debug_0"][conv_type] - 1
    assert _total(run_ok(shell, "ls --step 7").runs["debug_0"]) == len(dumped) - 1


def test_ls_with_filters_lists_only_the_ops_dumped_there(tiny_demo):
    root, _ = tiny_demo
    _workspace(root)
    shell = open_shell(root)

    def names(line: str) -> list[str]:
        return [rec.name for run, rec in run_ok(shell, line).rows if run == "debug_0"]

    convs = names("ls -t Conv")
    assert {CONV1, CONV2, CONV3} <= set(convs)
    assert names("ls -t Conv --rank 1") == [n for n in convs if n != CONV2]
    assert names("ls -t Conv --step 7") == [n for n in convs if n != CONV1]
    assert names("ls -n conv2/Conv2Drelu2") == [CONV2]
    assert names("ls -n conv2/Conv2Drelu2 --rank 1") == []
    listing = run_ok(shell, "ls -t Conv --rank 1 --step 0")
    assert listing.filters == {"type": "Conv", "rank": "1", "step": "0"}
    buffer = io.StringIO()
    render_op_listing(make_console(False, width=200, file=buffer), listing)
    assert buffer.getvalue().splitlines()[-1] == (
        f"{len(convs) - 1} op(s) match type~'Conv', rank=1, step=0"
    )


def test_ls_counts_say_which_rank_and_step(tiny_demo):
    root, _ = tiny_demo
    _workspace(root)
    buffer = io.StringIO()
    counts = run_ok(open_shell(root), "ls --step 7")
    render_type_counts(make_console(False, width=200, file=buffer), counts)
    assert (
        buffer.getvalue().splitlines()[-1] == "ops with a dump file in rank 0 step 7"
    )  # the rank read, named


def test_ls_with_an_unknown_rank_or_step_names_the_ones_there_are(tiny_demo):
    root, _ = tiny_demo
    _workspace(root)
    shell = open_shell(root)
    assert run_fail(shell, "ls --rank 9").error == "debug_0: no rank 9; ranks: 0, 1"
    assert run_fail(shell, "ls -t Conv --rank 1 --step 7").error == (
        "debug_0: rank 1 has no step 7; steps: 0"
    )
