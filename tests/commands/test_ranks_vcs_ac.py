"""`vcs`, `ac` and `ac -c` over several ranks and steps: the rank x step table, `--rank/--step`
picking a compare's CSV, the first (step, op, rank) with a root cause recorded in summary.json,
whether the fault is on one card or all (and each other card's own root cause), and where
NaN/inf first appears (no benchmark)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from precision_shell.demo.builder import build_demo
from precision_shell.demo.spec import NAN_BIRTH, WRONG_CONSTANT, DemoSpec, Fault
from precision_shell.formats.npu_dump import read_dump_header, read_tensor
from precision_shell.formats.npu_dump_writer import TensorSpec, write_dump
from tests.commands.shell_fixture import CONV1, CONV2, open_shell, run_fail, run_ok
from tests.commands.test_compare_views import render
from tests.commands.test_second_dump_dir import _add, _link_copy, _step_dir

ONE_FAULT = DemoSpec(size="tiny", faults=(Fault(WRONG_CONSTANT, "bn2/FusedBatchNormV3", 0.5),))
HEALTHY = DemoSpec(size="tiny", faults=(), second_run=False)
DENSE = "dense/MatMul"
# NaN born at conv1 on one card, at the dense layer (later) on another
NAN_CONV1 = DemoSpec(size="tiny", faults=(Fault(NAN_BIRTH, "conv1/Conv2D", 3),), second_run=False)
NAN_DENSE = DemoSpec(size="tiny", faults=(Fault(NAN_BIRTH, DENSE, 3),), second_run=False)
# the wrong constant of ONE_FAULT, and a NaN born later at the dense layer
FAULT_AND_NAN = DemoSpec(
    size="tiny",
    faults=(Fault(WRONG_CONSTANT, "bn2/FusedBatchNormV3", 0.5), Fault(NAN_BIRTH, DENSE, 3)),
    second_run=False,
)


@pytest.fixture(scope="module")
def one_fault_pristine(tmp_path_factory):
    """debug_0 has a wrong constant in conv2; debug_1 runs without it."""
    root = tmp_path_factory.mktemp("one_fault")
    build_demo(root, ONE_FAULT)
    return root


@pytest.fixture(scope="module")
def healthy_pristine(tmp_path_factory):
    root = tmp_path_factory.mktemp("healthy")
    build_demo(root, HEALTHY)
    return root


def _copy(src: Path, tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(src, root, symlinks=True)
    return root


def _healthy_rank0_faulty_rank1(root: Path) -> None:
    """debug_0's faulty dump becomes rank 1; rank 0 is debug_1's (healthy) dump."""
    faulty = _step_dir(root)  # <ts>/0/<graph>/<model>/<step>
    rank_dir = faulty.parents[2]
    rank_dir.rename(rank_dir.parent / "1")
    healthy = next(p for p in (root / "precision_data/npu/debug_1/dump").rglob("*") if p.is_file())
    _link_copy(healthy.parent, rank_dir / faulty.relative_to(rank_dir))
    shutil.rmtree(root / "precision_data/npu/debug_1")


def _as_rank(root: Path, built: Path, rank: str) -> None:
    """`built`'s debug_0 step dir (another demo of the same seed) as rank `rank` of root's."""
    step = _step_dir(root)
    device = step.parents[2]
    _link_copy(_step_dir(built), device.parent / rank / step.relative_to(device))


def _card_workspace(tmp_path_factory, name: str, specs: list[DemoSpec]) -> Path:
    """Rank r is the dump of specs[r] (rank 0 is the workspace built with specs[0])."""
    roots = []
    for n, spec in enumerate(specs):
        root = tmp_path_factory.mktemp(f"{name}{n}")
        build_demo(root, spec)
        roots.append(root)
    for rank, built in enumerate(roots[1:], start=1):
        _as_rank(roots[0], built, str(rank))
    return roots[0]


def test_ac_c_names_the_earliest_fault_across_cards_and_each_other_cards_own(tmp_path_factory):
    """Rank 1's NaN is born at the dense layer, rank 2's earlier at conv1: the root cause is
    rank 2's conv1 (as the NaN/inf origin says), and rank 1 is named with its own fault, not
    counted as failing at conv1 nor rank 2 as failing at the dense layer."""
    root = _card_workspace(tmp_path_factory, "nan", [HEALTHY, NAN_DENSE, NAN_CONV1])
    check = run_ok(open_shell(root), "ac -c")
    assert (check.nonfinite[0].first.rank, check.nonfinite[0].first.op) == ("2", CONV1)
    panel = check.root_cause
    assert (panel.cause.op, panel.where) == (CONV1, "rank 2 step 0")
    assert panel.cards == (
        "rank 2 only: the other 2 cards match the benchmark here: "
        "suspect that card or its input data"
    )
    saved = json.loads(check.compare.summary_path.read_text(encoding="utf-8"))["diagnosis"]
    assert [(c["op"], c["rank"]) for c in saved["root_causes"]][:1] == [(CONV1, "2")]
    (other,) = saved["other_cards"]
    assert (other["rank"], other["step"], other["op"]) == ("1", "0", DENSE)
    assert other["reason"] == "NaN/inf born here: finite inputs, non-finite output"
    dense_index = other["index"]
    assert panel.card_notes == [
        f"rank 1: matches the benchmark here; its own root cause is {DENSE} (index "
        f"{dense_index}): NaN/inf born here: finite inputs, non-finite output "
        "(ac -c --rank 1 --step 0)"
    ]
    text = render(check)
    assert f"rank 1: matches the benchmark here; its own root cause is {DENSE}" in text


def test_ac_c_does_not_call_a_fault_every_cards_when_one_card_has_its_own(tmp_path_factory):
    """Both cards fail at conv2 (the same wrong constant); rank 1 also has a NaN born later
    at the dense layer: "every card" comes with that card's own fault."""
    root = _card_workspace(tmp_path_factory, "both", [ONE_FAULT, FAULT_AND_NAN])
    shutil.rmtree(root / "precision_data/npu/debug_1")
    check = run_ok(open_shell(root), "ac -c")
    panel = check.root_cause
    assert (panel.cause.op, panel.where) == (CONV2, "rank 0 step 0")
    assert panel.cards == (
        "on every card: all 2 cards fail here at step 0, but they disagree (below): "
        "suspect the op, and each card named below"
    )
    (note,) = panel.card_notes
    assert note.startswith(
        f"rank 1: fails here too, and has a root cause of its own at {DENSE} (index "
    )
    assert note.endswith(
        "NaN/inf born here: finite inputs, non-finite output (ac -c --rank 1 --step 0)"
    )


def test_vcs_shows_the_rank_step_table_and_picks_a_slice(tiny_demo):
    root, _ = tiny_demo
    _add(root, "device")
    shell = open_shell(root)
    compare = run_ok(shell, "vc")
    summary = run_ok(shell, "vcs")
    assert summary.ranks is not None
    assert [(r.rank, r.step, r.failed, r.first_failed_op) for r in summary.ranks.results] == [
        ("0", "0", len(compare.primary.tally.failing), CONV2),
        ("1", "0", len(compare.primary.tally.failing), CONV2),
    ]
    assert summary.path == compare.primary.csv_path
    assert summary.ranks.shown == ("0", "0")
    other = run_ok(shell, "vcs --rank 1")
    assert other.path.name.endswith("_rank1_step0.csv")
    assert (other.slice_label, other.ranks.shown) == ("rank 1 step 0", ("1", "0"))
    assert other.failing_total == summary.failing_total
    assert run_ok(shell, "vcs --rank 1 --step 0").path == other.path
    lines = render(other).splitlines()
    assert lines[0].startswith("failing outputs per rank and step")
    rows = [ln.split() for ln in lines if ln[:1] in ("0", "1")]
    assert rows[:2] == [["0", "│", "10", f"({CONV2})"], ["1", "│", "*10", f"({CONV2})"]]
    lines = [ln for ln in lines if ln.startswith("* ")]
    assert lines[0].startswith("* the op table below: rank 1 step 0")
    error = run_fail(shell, "vcs --rank 5").error
    assert (
        error == "vcs: rank 5 was not compared in this result; it has rank 0 step 0, rank 1 step 0"
    )


def test_vcs_on_one_dump_dir_has_no_rank_table(tiny_demo_shared):
    root, _ = tiny_demo_shared
    shell = open_shell(root)
    run_ok(shell, "vc")
    assert run_ok(shell, "vcs").ranks is None
    error = run_fail(shell, "vcs --rank 1").error
    assert error == "vcs: rank 1 was not compared in this result; it has rank 0 step 0"
    assert run_ok(shell, "vcs --rank 0 --step 0").path == run_ok(shell, "vcs").path


def test_ac_c_names_the_first_rank_with_a_root_cause_and_says_it_is_that_card_only(
    one_fault_pristine, tmp_path
):
    root = _copy(one_fault_pristine, tmp_path)
    _healthy_rank0_faulty_rank1(root)
    shell = open_shell(root)
    check = run_ok(shell, "ac -c")
    panel = check.root_cause
    assert panel is not None
    assert panel.cause.op == CONV2
    assert panel.where == "rank 1 step 0"
    assert panel.cards == (
        "rank 1 only: the other 1 cards match the benchmark here: "
        "suspect that card or its input data"
    )
    assert panel.next_commands[0] == f"ni {CONV2} -s 2 --rank 1 --step 0"
    text = render(check)
    assert (
        "where         rank 1 step 0 (the first step with a root cause, then the earliest op "
        "across its cards)"
    ) in text
    assert "cards         rank 1 only: the other 1 cards match the benchmark here" in text
    assert "no NaN/inf in any device output" in text
    saved = json.loads(check.compare.summary_path.read_text(encoding="utf-8"))
    first = saved["diagnosis"]["root_causes"][0]
    assert (first["op"], first["rank"], first["step"]) == (CONV2, "1", "0")
    # the replay read that card's dump: the wrong constant is there (rank 0's conv2 matches
    # the benchmark), so the replay from its inputs is far from the benchmark: inherited
    report = check.diagnosis.replays.reports[CONV2]
    assert report.dump_slice == "rank 1 step 0"
    assert first["evidence"] == "replay" and first["own_error"]["max_ulp"] <= 1.0
    assert first["inherited_error"]["relative_euclidean_distance"] > 0.1
    # the op table is the slice the root cause is in
    assert check.summary.path.name.endswith("_rank1_step0.csv")
    # vcs on the primary (rank 0) says where the root cause was found instead
    plain = run_ok(shell, "vcs")
    assert (plain.root_cause, plain.root_cause_slice) == (None, "rank 1 step 0")
    assert run_ok(shell, "vcs --rank 1").root_cause == CONV2


def test_ac_c_on_identical_cards_says_every_card(tiny_demo):
    root, _ = tiny_demo
    _add(root, "device")
    shell = open_shell(root)
    check = run_ok(shell, "ac -c")
    assert check.root_cause is not None
    assert check.root_cause.where == "rank 0 step 0"
    assert check.root_cause.cards == (
        "on every card: all 2 cards fail here at step 0: suspect the op, not one card"
    )
    saved = json.loads(check.compare.summary_path.read_text(encoding="utf-8"))
    assert {k: saved["diagnosis"]["root_causes"][0][k] for k in ("rank", "step")} == {
        "rank": "0",
        "step": "0",
    }
    only = run_ok(shell, "ac -c --rank 1")
    assert only.root_cause.where is None  # one slice compared: nothing to compare it with
    assert [r["rank"] for r in only.compare.summary.results] == ["1"]
    assert only.compare.summary.diagnosis.root_causes[0]["rank"] == "1"
    assert "ranks: 0, 1" in run_fail(shell, "ac --rank 9").error


def _poison(dump: Path, element: int) -> None:
    """Rewrite a dump file (a hard link: unlinked first) with one NaN in output 0."""
    header = read_dump_header(str(dump))
    meta = header.outputs[0]
    values = np.array(read_tensor(header, "output", 0))
    values.reshape(-1)[element] = np.nan
    os.unlink(dump)
    spec = TensorSpec(
        values,
        dtype=meta.dtype,
        format=meta.format,
        original_shape=meta.original_shape,
        original_op=meta.original_op,
        original_format=meta.original_format,
    )
    write_dump(dump, header.op_name, outputs=[spec])


def test_ac_finds_the_rank_step_and_op_where_nan_first_appears(healthy_pristine, tmp_path):
    root = _copy(healthy_pristine, tmp_path)
    shell = open_shell(root)
    (clean,) = run_ok(shell, "ac").nonfinite
    assert clean.first is None and clean.slices_read == 1 and not clean.errors
    dumped = [p for p in _step_dir(root).iterdir() if p.name != "mapping.csv"]
    assert clean.files_read == len(dumped)
    _add(root, "device")  # rank 1
    _add(root, "step")  # rank 0 step 1
    step = _step_dir(root)
    rank1 = step.parents[3] / "1" / step.relative_to(step.parents[3] / "0")
    # rank 1 step 0: NaN in conv2 and, later in execution order, nothing else matters
    _poison(next(rank1.glob("Conv2D.conv2_*")), 5)
    # rank 0 step 1 (a later step) holds NaN earlier in the network: step order wins
    _poison(next(step.parent.joinpath(str(int(step.name) + 1)).glob("Conv2D.conv1_*")), 0)
    shell = open_shell(root)
    (origin,) = run_ok(shell, "ac").nonfinite
    hit = origin.first
    assert hit is not None
    assert (hit.rank, hit.step, hit.op, hit.output, hit.nan, hit.inf) == ("1", "0", CONV2, 0, 1, 0)
    assert origin.also == []
    assert origin.slices_read == 2  # step 0's two ranks; step 1 not needed
    assert f"first NaN/inf: rank 1 step 0 op {CONV2} (output 0)  1 NaN; Conv2D." in render(
        run_ok(shell, "ac")
    )
    later = run_ok(shell, "ac --step 1").nonfinite[0].first
    assert (later.rank, later.step, later.op) == ("0", "1", CONV1)
    assert run_ok(shell, "ac --rank 0 --step 0").nonfinite[0].first is None


def test_report_has_the_rank_step_table_and_reports_the_slice_asked_for(
    one_fault_pristine, tmp_path
):
    root = _copy(one_fault_pristine, tmp_path)
    _healthy_rank0_faulty_rank1(root)
    shell = open_shell(root)
    check = run_ok(shell, "ac -c --report")
    assert check.report_path is not None
    page = check.report_path.read_text(encoding="utf-8")
    assert '<section id="ranks"><h2>Ranks and steps</h2>' in page
    assert '<td>rank 0</td><td class="good">0 failing</td>' in page
    assert f'<td>rank 1</td><td class="bad">{check.summary.failing_total} failing' in page
    assert f"first {CONV2} (this page)" in page
    assert "<dt>Rank and step</dt><dd>rank 1 step 0</dd>" in page
    primary = run_ok(shell, "report")
    assert (primary.slice_label, primary.ranks_compared) == ("rank 0 step 0", 2)
    assert primary.root_cause is None
    text = primary.path.read_text(encoding="utf-8")
    assert "found in rank 1 step 0, not in this compare" in text
    faulty = run_ok(shell, "report --rank 1")
    assert faulty.csv_path.name.endswith("_rank1_step0.csv")
    assert (faulty.root_cause, faulty.slice_label) == (CONV2, "rank 1 step 0")
    error = run_fail(shell, "report --step 7").error
    assert (
        error
        == "report: step 7 was not compared in this result; it has rank 0 step 0, rank 1 step 0"
    )


def test_report_of_one_dump_dir_has_no_rank_section(tiny_demo_shared):
    root, _ = tiny_demo_shared
    shell = open_shell(root)
    run_ok(shell, "vc")
    written = run_ok(shell, "report")
    assert written.slice_label is None and written.ranks_compared == 0
    assert 'id="ranks"' not in written.path.read_text(encoding="utf-8")
