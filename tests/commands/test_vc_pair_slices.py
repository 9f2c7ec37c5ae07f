"""`vc -lt RUN -rt DIR --rank/--step`: the run's selected (rank, step) dump dirs, each against
the benchmark dir DIR (QA Q6 finding 6: `--rank all --step all` was dropped without a word
and the run's default dump dir compared; `--rank 1 --step 1` was an error saying RUN was no
run of the workspace). A -lt dir given by path has no rank or step to select: an error.

The tiny demo's debug_0 (its wrong constant at conv2, its float16 overflow) is rank 0 step 0;
debug_1's healthy dump is linked in as rank 1 of the next step."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.commands.shell_fixture import open_shell, run_fail, run_ok
from tests.commands.test_second_dump_dir import _link_copy, _step_dir


@pytest.fixture(scope="module")
def two_slices(tiny_demo_pristine, tmp_path_factory):
    pristine, _ = tiny_demo_pristine
    root = tmp_path_factory.mktemp("pair_slices") / "ws"
    shutil.copytree(pristine, root, symlinks=True)
    step = _step_dir(root)  # <ts>/0/<graph>/<model>/<step>
    device = step.parents[2]
    healthy = next(p for p in (root / "precision_data/npu/debug_1/dump").rglob("*") if p.is_file())
    later = step.parent / str(int(step.name) + 1)
    _link_copy(healthy.parent, device.parent / "1" / later.relative_to(device))
    return root, later.name


def test_a_run_and_a_benchmark_dir_compare_the_slices_selected(two_slices, tmp_path):
    root, later = two_slices
    shell = open_shell(root)
    bench = root / "precision_data" / "tf" / "dump"
    default = run_ok(shell, f"vc -lt debug_0 -rt {bench}")
    one = run_ok(shell, f"vc -lt debug_0 -rt {bench} --rank 1 --step {later}")
    assert one.primary.left == f"debug_0 rank 1 step {later}" and one.slices == []
    assert [(r["rank"], r["step"], r["right"]) for r in one.summary.results] == [
        ("1", later, str(bench))
    ]
    # the healthy card fails fewer outputs than the default (rank 0 step 0) does
    assert len(one.primary.tally.failing) < len(default.primary.tally.failing)
    every = run_ok(shell, f"vc -lt debug_0 -rt {bench} --rank all --step all -o {tmp_path / 'o'}")
    saved = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert [(r["rank"], r["step"], r["failed"]) for r in saved["results"]] == [
        ("0", "0", len(default.primary.tally.failing)),
        ("1", later, len(one.primary.tally.failing)),
    ]
    assert saved.get("not_selected", []) == [] and every.slices[0][1].csv_path.name.endswith(
        f"_rank1_step{later}.csv"
    )


def test_rank_or_step_with_a_dir_given_by_path_is_an_error(two_slices):
    root, later = two_slices
    shell = open_shell(root)
    bench = root / "precision_data" / "tf" / "dump"
    left = root / "precision_data" / "npu" / "debug_0"
    assert run_fail(shell, f"vc -lt {left} -rt {bench} --rank all").error == (
        f"vc: --rank/--step select dump dirs of a device run: -lt {left} is a dir given by "
        "path (give a run of the workspace: debug_0, debug_1; or drop --rank/--step)"
    )
    assert run_fail(shell, f"vc -lt debug_0 -rt debug_1 --step {later}").error == (
        "vc: --rank/--step with -lt debug_0 select its dump dirs to compare with a benchmark "
        ".npy dir; -rt debug_1 is a device dump (drop --rank/--step)"
    )
