"""Several (rank, step) dump dirs in one run: every command works, each reads the slice it is
given (`--rank`, `--step`; the lowest rank's first step by default), and `vc` compares one
slice per rank (or every step with `--step all`), each into its own CSV, listed in the
summary's `results`. The second dir is hard-linked from the first, as a user would try it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from precision_shell.compare.results.schema import read_result_csv
from tests.commands.shell_fixture import CONV2, open_shell, run_fail, run_ok


def _step_dir(root: Path) -> Path:
    dump = root / "precision_data" / "npu" / "debug_0" / "dump"
    files = [p for p in dump.rglob("*") if p.is_file()]
    return files[0].parent


def _link_copy(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True)
    for f in src.iterdir():
        if f.is_file():
            os.link(f, dst / f.name)


def _add(root: Path, shape: str) -> tuple[str, str]:
    """A second step or device dir; returns the new (rank, step)."""
    step = _step_dir(root)
    if shape == "step":  # .../<graph>/<model_id>/0 and .../1
        new = str(int(step.name) + 1)
        _link_copy(step, step.parent / new)
        return step.parents[2].name, new
    device = step.parents[2]  # <ts>/0/... and <ts>/1/...
    _link_copy(step, device.parent / "1" / step.relative_to(device))
    return "1", step.name


@pytest.mark.parametrize("shape", ["step", "device"])
def test_every_command_reads_the_rank_and_step_it_is_given(tiny_demo, shape):
    root, _ = tiny_demo
    step = _step_dir(root)
    first = (step.parents[2].name, step.name)
    rank, new_step = _add(root, shape)
    shell = open_shell(root)
    assert run_ok(shell, "ls") is not None
    info = run_ok(shell, f"ni {CONV2}").nodes[0]
    assert info.dump_slice == f"rank {first[0]} step {first[1]}"
    assert [label for label, _ in info.dump_files_by_slice] == [
        f"rank {first[0]} step {first[1]}",
        f"rank {rank} step {new_step}",
    ]
    other = run_ok(shell, f"ni {CONV2} --rank {rank} --step {new_step}").nodes[0]
    assert other.dump_slice == f"rank {rank} step {new_step}"
    picked = run_ok(shell, f"pt {CONV2} --rank {rank} --step {new_step}").items[0]
    assert f"/{rank}/" in picked.path or f"/{new_step}/" in picked.path
    assert "ranks: " in run_fail(shell, f"pt {CONV2} --rank 9").error


def test_vc_compares_each_rank_into_its_own_csv(tiny_demo):
    root, _ = tiny_demo
    _add(root, "device")
    shell = open_shell(root)
    result = run_ok(shell, "vc")
    summary = json.loads(result.summary_path.read_text(encoding="utf-8"))
    results = summary["results"]
    assert [r["rank"] for r in results] == ["0", "1"]
    assert results[0]["step"] == results[1]["step"]  # each rank's first step
    first, second = summary["results"]
    assert first["csv"] == str(result.primary.csv_path)
    assert Path(second["csv"]).name.endswith(f"_rank1_step{second['step']}.csv")
    # the same dump hard-linked: cell for cell the same compare
    a, b = read_result_csv(first["csv"]), read_result_csv(second["csv"])
    assert [r.cells(False) for r in a.rows] == [r.cells(False) for r in b.rows]
    assert first["failed"] == second["failed"] == len(result.primary.tally.failing)
    assert first["first_failed_op"] == CONV2
    only = run_ok(shell, "vc --rank 1")
    assert [r["rank"] for r in only.summary.results] == ["1"]
    assert "ranks: 0, 1" in run_fail(shell, "vc --rank 9").error


def test_vc_step_all_compares_every_step(tiny_demo):
    root, _ = tiny_demo
    rank, new_step = _add(root, "step")
    shell = open_shell(root)
    default = run_ok(shell, "vc")
    assert len(default.summary.results) == 1  # each rank's first step
    every = run_ok(shell, "vc --step all")
    assert [r["step"] for r in every.summary.results][-1] == new_step
    assert len(every.summary.results) == 2


def test_an_op_dumped_several_times_in_a_step_says_which_file_is_compared(tiny_demo):
    root, _ = tiny_demo
    step = _step_dir(root)
    original = next(p for p in step.iterdir() if ".conv2_Conv2Drelu2_Relu." in p.name)
    # the same op run again in a loop: a later timestamp, same task
    *head, ts = original.name.rsplit(".", 1)
    later = step / f"{head[0]}.{int(ts) + 1000}"
    os.link(original, later)
    shell = open_shell(root)
    result = run_ok(shell, "vc")
    summary = json.loads(result.summary_path.read_text(encoding="utf-8"))
    assert summary["repeated_dumps"] == [{"op": CONV2, "files": 2, "compared": later.name}]
    info = run_ok(shell, f"ni {CONV2}").nodes[0]
    assert info.dump_files == [original.name, later.name]  # oldest first


def test_one_rank_csv_equals_a_compare_of_that_step_dir_alone(tiny_demo, tmp_path):
    root, _ = tiny_demo
    rank, step = _add(root, "device")
    shell = open_shell(root)
    ranked = run_ok(shell, f"vc --rank {rank}")
    step_dir = next(
        p.parent
        for p in (root / "precision_data" / "npu" / "debug_0" / "dump").rglob("*")
        if p.is_file() and p.parent.name == step and p.parents[3].name == rank
    )
    alone = run_ok(
        shell, f"vc -lt {step_dir} -rt {root / 'precision_data' / 'tf' / 'dump'} -o {tmp_path}"
    )
    a = read_result_csv(ranked.primary.csv_path)
    b = read_result_csv(alone.primary.csv_path)
    assert a.header == b.header
    assert [r.cells(False) for r in a.rows] == [r.cells(False) for r in b.rows]


def test_every_dump_session_dir_is_indexed(tiny_demo):
    """A second `<ts>` session beside the first (a later step dumped in another session):
    its step is one more slice of the run."""
    root, _ = tiny_demo
    step = _step_dir(root)
    session = step.parents[3]
    later = session.parent / str(int(session.name) + 1)
    _link_copy(step, later / step.relative_to(session).parent / "7")
    shell = open_shell(root)
    run = shell.context.workspace.run()
    assert run.steps() == [step.name, "7"]
    every = run_ok(shell, "vc --step all")
    assert [r["step"] for r in every.summary.results] == [step.name, "7"]


def test_a_later_session_of_the_same_step_is_the_one_compared(tiny_demo):
    root, _ = tiny_demo
    step = _step_dir(root)
    session = step.parents[3]
    later = session.parent / str(int(session.name) + 1)
    again = later / step.relative_to(session)
    again.mkdir(parents=True)
    original = next(p for p in step.iterdir() if ".conv2_Conv2Drelu2_Relu." in p.name)
    *head, ts = original.name.rsplit(".", 1)
    rerun = again / f"{head[0]}.{int(ts) + 5000}"
    os.link(original, rerun)
    shell = open_shell(root)
    summary = run_ok(shell, "vc").summary
    (repeated,) = summary.primary.repeated_dumps
    assert repeated == {"op": CONV2, "files": 2, "compared": rerun.name}


def test_cp_and_dc_read_the_rank_they_are_given(tiny_demo, tmp_path):
    import numpy as np

    from tests.commands.test_vc_across_ranks import _negate_outputs

    root, _ = tiny_demo
    rank, _ = _add(root, "device")
    base = root / "precision_data" / "npu" / "debug_0" / "dump"
    target = next(
        p
        for p in base.rglob("*")
        if p.is_file() and p.parents[3].name == rank and ".conv2_Conv2Drelu2_Relu." in p.name
    )
    original = _negate_outputs(target)  # rank 1's conv2 output is now the negative of rank 0's
    shell = open_shell(root)
    out0 = run_ok(shell, f"dc {CONV2} -o {tmp_path / 'r0'}")
    out1 = run_ok(shell, f"dc {CONV2} --rank {rank} -o {tmp_path / 'r1'}")
    outputs0 = [np.load(path) for label, path, _, _ in out0.files if "output" in path]
    outputs1 = [np.load(path) for label, path, _, _ in out1.files if "output" in path]
    assert np.array_equal(outputs0[0].reshape(-1), original.reshape(-1))
    assert np.array_equal(outputs1[0].reshape(-1), -original.reshape(-1))
    # cp of the op against the benchmark: rank 0 matches it well, rank 1 is its negative
    bench = "relu2/Relu"
    assert run_ok(shell, f"cp {CONV2} {bench}").report.cosine > 0.8
    assert run_ok(shell, f"cp {CONV2} {bench} --rank {rank}").report.cosine < -0.8


def test_pt_cp_dc_read_a_dump_file_name_in_the_rank_given_and_say_which(tiny_demo, tmp_path):
    """Every card dumps its ops under the same file names: a bare name is read in the
    (rank, step) given, the lowest rank's first step by default, and the output says which."""
    import numpy as np

    from tests.commands.shell_fixture import benchmark_path, rendered
    from tests.commands.test_vc_across_ranks import _negate_outputs

    root, _ = tiny_demo
    rank0_file = next(p for p in _step_dir(root).iterdir() if ".conv2_Conv2Drelu2_Relu." in p.name)
    rank, step = _add(root, "device")
    device = rank0_file.parents[3]  # <ts>/0/<graph>/<model>/<step>/<file>
    rank1_file = device.parent / rank / rank0_file.relative_to(device)
    name = rank0_file.name
    original = _negate_outputs(rank1_file)  # rank 1's conv2 output is rank 0's negated
    shell = open_shell(root)

    (mine,) = run_ok(shell, f"pt {name}:output:0 --rank {rank} --step {step}").items
    (default,) = run_ok(shell, f"pt {name}:output:0").items
    assert (mine.path, default.path) == (str(rank1_file), str(rank0_file))
    assert default.stats.min == 0 and mine.stats.min == -default.stats.max == -original.max()
    assert (mine.where, default.where) == (f"rank {rank} step {step}", f"rank 0 step {step}")
    first_line = rendered(run_ok(shell, f"pt {name}:output:0 --rank {rank}")).splitlines()[0]
    assert first_line == f"{name} output 0  (rank {rank} step {step})"

    bench = benchmark_path(root, "relu2/Relu").name
    theirs = run_ok(shell, f"cp {name}:output:0 {bench}")
    ours = run_ok(shell, f"cp {name}:output:0 {bench} --rank {rank} --step {step}")
    assert ours.report.cosine == pytest.approx(-theirs.report.cosine, abs=1e-6)
    assert theirs.report.cosine > 0.8
    assert (ours.left_where, ours.right_where) == (f"rank {rank} step {step}", "")
    lines = rendered(ours).splitlines()
    assert lines[0] == f"left:  {name} output 0  (rank {rank} step {step})"
    assert lines[2] == f"right: {bench}"

    decoded = run_ok(shell, f"dc {name} --rank {rank} -o {tmp_path / 'dc'}")
    ((label, output),) = [(lb, path) for lb, path, _, _ in decoded.files if ".output.0." in path]
    assert label == f"{name} output 0 (rank {rank} step {step})"
    assert Path(output).name.startswith(f"{name}.rank{rank}_step{step}.output.0.")
    assert np.array_equal(np.load(output).reshape(-1), -original.reshape(-1))

    # the path of rank 1's file names its op too (not only rank 0's file of that name)
    assert run_ok(shell, f"ni {rank1_file}").nodes[0].record.name == CONV2

    # a name only rank 1 has (dumped once more there): not read from rank 0 unasked
    *head, ts = name.rsplit(".", 1)
    only = rank1_file.parent / f"{head[0]}.{int(ts) + 1000}"
    os.link(rank1_file, only)
    shell = open_shell(root)
    error = run_fail(shell, f"pt {only.name}").error
    assert error == (
        f"{only.name}: not in debug_0 rank 0 step {step} (the default: the lowest rank's first "
        f"step); it is in rank {rank} step {step}: use --rank {rank} --step {step}"
    )
    assert run_fail(shell, f"cp {only.name}:output:0 {bench} --rank 0").error == (
        f"{only.name}: not in debug_0 rank 0 step {step}; it is in rank {rank} step {step}: "
        f"use --rank {rank} --step {step}"
    )
    assert run_ok(shell, f"pt {only.name} --rank {rank}").items[0].path == str(only)


def test_a_dump_file_given_by_path_is_read_in_its_own_rank_and_step(tiny_demo):
    """`ni PATH` and `replay PATH` of rank 1's file read rank 1's (QA Q21 #3: they read the
    default rank's file of that name); a --rank naming another card is refused."""
    root, _ = tiny_demo
    rank, step = _add(root, "device")
    shell = open_shell(root)
    path = next(
        p
        for p in _step_dir(root).parents[2].parent.joinpath(rank).rglob("*")
        if CONV2.split("/")[0] in p.name
    )
    (info,) = run_ok(shell, f"ni {path}").nodes
    assert info.dump_slice == f"rank {rank} step {step}"
    report = run_ok(shell, f"replay {path}")
    assert (report.rank, report.step) == (rank, step)
    error = run_fail(shell, f"replay {path} --rank 0").error
    assert error == f"replay: {path} is a dump file of rank {rank} step {step}, not --rank 0"
    # pt / cp / dc read a path as given: a --rank naming another card is refused, not dropped
    for command in (f"pt {path}", f"pt {path}:output:0", f"cp {path} {path}", f"dc {path}"):
        assert run_fail(shell, f"{command} --rank 0").error == (
            f"{path} is a dump file of rank {rank} step {step}, not --rank 0"
        ), command
    assert run_ok(shell, f"pt {path}:output:0 --rank {rank}").items[0].path == str(path)
