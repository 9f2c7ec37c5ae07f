"""Statistics compares over several ranks and steps (`dump_data: stats`): the targeted tensor
dump put beside the statistics dumps (README's statistics workflow, step 3), vcs's rank x step
table, and what a tensor compare of a slice holding statistics files too says of them.

A tiny statistics demo with a planted fault, and its tensor-dump twin (same spec, same values)
to take tensor files from; ranks and steps are added by copying a step dir, as a user would."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from precision_shell.demo.builder import build_demo
from precision_shell.demo.spec import DemoSpec, Fault
from tests.commands.shell_fixture import CONV2, open_shell, rendered, run_fail, run_ok

SESSION = "20261122063000"  # the demo's dump session dir
LATER = "20261123063000"  # a second dump session: the targeted tensor dump
FAULT = Fault("local_error", "conv2/Conv2D", 0.3)


def _spec(dump_data: str) -> DemoSpec:
    return DemoSpec(size="tiny", dump_data=dump_data, seed=3, second_run=False, faults=(FAULT,))


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The statistics workspace and its tensor-dump twin."""
    stats = tmp_path_factory.mktemp("stats")
    tensor = tmp_path_factory.mktemp("tensor")
    build_demo(stats, _spec("stats"))
    build_demo(tensor, _spec("tensor"))
    return stats, tensor


def _step_dir(root: Path) -> Path:
    """The demo's only step dir: `dump/<session>/<rank>/<graph>/<model>/<step>/`."""
    dump = root / "precision_data/npu/debug_0/dump"
    return next(p for p in dump.rglob("*") if p.is_file() and p.suffix != ".txt").parent


def _at(step: Path, session: str, rank: str, number: str) -> Path:
    """The step dir of (rank, step) in `session`, beside `step` (another dump's)."""
    model = step.parent
    graph = model.parent
    return graph.parents[2] / session / rank / graph.name / model.name / number


def _copy(src: Path, dst: Path, only: str | None = None) -> None:
    """`src`'s files (those whose name holds `only`) hard-linked into a new dir `dst`."""
    dst.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.is_file() and (only is None or only in f.name):
            os.link(f, dst / f.name)


def _workspace(twins: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path, Path]:
    """A private copy of the statistics workspace: (root, its step dir, the tensor twin's)."""
    root = tmp_path / "ws"
    shutil.copytree(twins[0], root, symlinks=True)
    return root, _step_dir(root), _step_dir(twins[1])


def test_a_targeted_tensor_dump_beside_statistics_dumps_is_compared(twins, tmp_path) -> None:
    """README's statistics workflow, step 3: the tensor files the dump config asked for, as a
    new dump session of step 1 beside the statistics dump of step 0. `vc --step 1` compares
    them (it said no dump file belonged to the graph: the default slice, step 0, holds only
    statistics files, and its tensor plan was required to be non-empty)."""
    root, step, tensor_step = _workspace(twins, tmp_path)
    _copy(tensor_step, _at(step, LATER, "0", "1"), only="conv2_Conv2Drelu2")
    result = run_ok(open_shell(root), "vc --step 1")
    saved = json.loads(result.summary_path.read_text(encoding="utf-8"))
    ((entry),) = saved["results"]
    assert (entry["rank"], entry["step"]) == ("0", "1")
    assert (entry["files_done"], entry["files_total"], entry["failed"]) == (1, 1, 1)
    assert entry["first_failed_op"] == CONV2
    assert "rank 0 step 0" in rendered(result)  # left out, said so


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The statistics demo without the fault (same seed: the same values elsewhere)."""
    root = tmp_path_factory.mktemp("clean")
    build_demo(root, DemoSpec(size="tiny", dump_data="stats", seed=3, second_run=False, faults=()))
    return root


def _four_slices(clean: Path, faulty: Path, tmp_path: Path, bad: set[tuple[str, str]]) -> Path:
    """Ranks 0 and 1, steps 0 and 1, all statistics dumps against tf/dump/: the (rank, step)s
    in `bad` from the faulty build, the others from the clean one."""
    root = tmp_path / "ws"
    shutil.copytree(clean, root, symlinks=True)
    step = _step_dir(root)
    for rank, number in (("0", "0"), ("0", "1"), ("1", "0"), ("1", "1")):
        target = _at(step, SESSION, rank, number)
        if target.exists():
            shutil.rmtree(target)
        _copy(_step_dir(faulty if (rank, number) in bad else clean), target)
    return root


def test_vc_and_vcs_of_statistics_slices_show_the_rank_step_table(twins, clean, tmp_path) -> None:
    """As for tensor compares: vc's closing line names the first (rank, step) that fails, vcs
    shows the rank x step table, and says when a file it compared changed since."""
    root = _four_slices(clean, twins[0], tmp_path, {("1", "1")})
    shell = open_shell(root)
    result = run_ok(shell, "vc --rank all --step all")
    text = " ".join(rendered(result, width=400).split())
    assert (
        "1 output deviates in 1 of 4 ranks and steps (statistics rule: help vc); first: rank 1 "
        f"step 1 at {CONV2} (vcs --rank 1 --step 1 lists them)"
    ) in text
    view = run_ok(shell, "vcs")
    assert view.ranks is not None
    cells = {(r.rank, r.step): (r.failed, r.first_failed_op) for r in view.ranks.results}
    assert cells == {
        ("0", "0"): (0, None),
        ("0", "1"): (0, None),
        ("1", "0"): (0, None),
        ("1", "1"): (1, CONV2),
    }
    assert [r.not_compared for r in view.ranks.results] == [0, 0, 0, 0]  # constants apart
    shown = rendered(view, width=400)
    assert "* the rows below: rank 0 step 0 (vcs --rank R --step S shows another)" in shown
    assert view.notes == []
    # the faulty file of rank 1 step 1 replaced by the clean one, after the compare
    name = next(p.name for p in _step_dir(clean).iterdir() if "conv2_Conv2Drelu2" in p.name)
    changed = _at(_step_dir(root), SESSION, "1", "1") / name
    changed.unlink()
    shutil.copy(_step_dir(clean) / name, changed)
    later = changed.stat().st_mtime_ns + 10**9
    os.utime(changed, ns=(later, later))
    stale = run_ok(shell, "vcs --rank 1 --step 1")
    assert stale.notes[0].startswith(f"the compare {result.out_dir} predates a change to a file")
    assert name in stale.notes[0]


def test_ac_c_of_statistics_says_which_dump_dirs_it_left_out(twins, clean, tmp_path) -> None:
    root = _four_slices(clean, twins[0], tmp_path, {("1", "1")})
    check = run_ok(open_shell(root), "ac -c")
    assert check.statistics.suspects == []  # step 0 only, by default
    text = " ".join(rendered(check, width=400).split())
    assert (
        "not compared: 2 more dump dirs of this run (rank 0 step 1, rank 1 step 1); "
        "--rank all --step all compares every one"
    ) in text


def test_ac_c_names_another_step_s_suspect_and_dumps_at_both_steps(twins, clean, tmp_path) -> None:
    """The same op goes wrong on rank 0 step 0 and on rank 1 step 1: the second is another
    pass of the network, its suspect named and its step in the dump config."""
    root = _four_slices(clean, twins[0], tmp_path, {("0", "0"), ("1", "1")})
    check = run_ok(open_shell(root), "ac -c --rank all --step all")
    assert [s.op for s in check.statistics.suspects] == [CONV2]
    assert [(w.label, [s.op for s in found]) for w, found in check.statistics.others] == [
        ("rank 1 step 1", [CONV2])
    ]
    saved = json.loads(check.statistics_compare.summary_path.read_text(encoding="utf-8"))
    (other,) = saved["diagnosis"]["other_cards"]
    assert (other["rank"], other["step"], other["op"]) == ("1", "1", CONV2)
    acl = json.loads(check.statistics.dump_config.acl_json.read_text())["dump"]
    assert acl["dump_step"] == "0|1"


def test_a_step_some_rank_lacks_compares_the_ranks_that_dumped_it(twins, tmp_path) -> None:
    """`vc --step 1` where rank 1 dumped step 1 only and rank 0 step 0 only: rank 1 step 1 is
    compared; naming rank 0 with --rank is still an error."""
    root, step, tensor_step = _workspace(twins, tmp_path)
    _copy(tensor_step, _at(step, LATER, "1", "1"))
    shell = open_shell(root)
    result = run_ok(shell, "vc --step 1")
    saved = json.loads(result.summary_path.read_text(encoding="utf-8"))
    assert [(e["rank"], e["step"]) for e in saved["results"]] == [("1", "1")]
    assert saved["results"][0]["first_failed_op"] == CONV2
    assert saved["not_selected"] == [{"rank": "0", "step": "0"}]
    assert (
        run_fail(shell, "vc --rank 0 --step 1").error == "debug_0: rank 0 has no step 1; steps: 0"
    )


def test_statistics_files_a_tensor_compare_leaves_out_are_said(twins, tmp_path) -> None:
    """A dump dir whose conv3 has only its statistics file beside the other ops' tensors."""
    root = tmp_path / "ws"
    shutil.copytree(twins[1], root, symlinks=True)
    step = _step_dir(root)
    tensor = next(p for p in step.iterdir() if "conv3_Conv2Dres" in p.name)
    tensor.unlink()
    stats = next(p for p in _step_dir(twins[0]).iterdir() if "conv3_Conv2Dres" in p.name)
    shutil.copy(stats, step / stats.name)
    outcome = open_shell(root).execute("vc")
    assert outcome.ok
    assert (
        "debug_0 rank 0 step 0: 1 statistics dump files (.csv) not compared: a tensor compare "
        "reads tensor dump files; 1 ops have only a statistics dump there and were not compared "
        "at all (vc -lt DIR -rt BENCHMARK_DIR compares a dir of statistics dumps)"
    ) in outcome.warnings


def _cards_line(root: Path) -> str | None:
    check = run_ok(open_shell(root), "ac -c")
    assert [s.op for s in check.statistics.suspects][:1] == [CONV2]
    cards = check.statistics.cards
    if cards is not None:
        assert f"cards {cards}" in " ".join(rendered(check, width=400).split())
    return cards


@pytest.mark.parametrize(
    ("bad", "line"),
    [
        (
            {("0", "0")},
            "rank 0 only: rank 1 matches the benchmark here: suspect that card or its input data",
        ),
        (
            {("0", "0"), ("1", "0")},
            "on every card: all 2 cards deviate here at step 0: suspect the op, not one card",
        ),
    ],
)
def test_ac_c_of_statistics_says_whether_the_suspect_is_one_card_s(
    twins, clean, tmp_path, bad, line
) -> None:
    """As the tensor diagnosis's `cards` line: the top suspect's outputs read on the other
    cards of its step (ranks 0 and 1 of step 0; step 1 is another pass, not read)."""
    assert _cards_line(_four_slices(clean, twins[0], tmp_path, bad)) == line


def test_the_cards_line_of_statistics_names_matching_and_uncompared_cards(
    twins, clean, tmp_path
) -> None:
    """Rank 2 deviates too, rank 1 matches, rank 3 lacks the op's file: never said to match."""
    root = _four_slices(clean, twins[0], tmp_path, {("0", "0")})
    step = _step_dir(root)
    _copy(_step_dir(twins[0]), _at(step, SESSION, "2", "0"))
    _copy(_step_dir(clean), _at(step, SESSION, "3", "0"))
    for f in _at(step, SESSION, "3", "0").iterdir():
        if "conv2_Conv2Drelu2" in f.name:
            f.unlink()
    assert _cards_line(root) == (
        "ranks 0, 2 deviate here; rank 1 matches the benchmark: suspect those cards or their "
        f"input data; not compared on rank 3 ({CONV2} has no compared output there)"
    )
