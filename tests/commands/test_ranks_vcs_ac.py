"""`vcs`, `ac` and `ac -c` over several ranks and steps: the rank x step table, `--rank/--step`
picking a compare's CSV, the first (step, op, rank) with a root cause recorded in summary.json,
whether the fault is on one card or all (and each other card's own root cause), and where
NaN/inf first appears (no benchmark)."""

from __future__ import annotations

import html
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from precision_shell.commands.ac_diagnosis import ONE_SELECTED
from precision_shell.compare.metrics.cells import COSINE
from precision_shell.compare.results.latest import GREEN, RED
from precision_shell.demo.builder import build_demo
from precision_shell.demo.spec import (
    CORRUPT_INPUT,
    LOCAL_ERROR,
    NAN_BIRTH,
    WRONG_CONSTANT,
    DemoSpec,
    Fault,
)
from precision_shell.formats.npu_dump import read_dump_header, read_tensor
from precision_shell.formats.npu_dump_writer import TensorSpec, write_dump
from tests.commands.shell_fixture import (
    CONV1,
    CONV2,
    benchmark_path,
    open_shell,
    rendered,
    run_fail,
    run_ok,
)
from tests.commands.test_compare_views import render
from tests.commands.test_second_dump_dir import _add, _link_copy, _step_dir
from tests.commands.test_vc_across_ranks import _negate_outputs
from tests.report.page_parser import parse_page

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
    assert (panel.cause.op, panel.lines.where) == (CONV1, "rank 2 step 0")
    assert panel.lines.cards == (
        "rank 2 only: the other 2 cards match the benchmark here: "
        "suspect that card or its input data"
    )
    saved = json.loads(check.compare.summary_path.read_text(encoding="utf-8"))["diagnosis"]
    assert [(c["op"], c["rank"]) for c in saved["root_causes"]][:1] == [(CONV1, "2")]
    (other,) = saved["other_cards"]
    assert (other["rank"], other["step"], other["op"]) == ("1", "0", DENSE)
    assert other["reason"] == "NaN/inf born here: finite data inputs, non-finite output"
    dense_index = other["index"]
    assert panel.lines.card_notes == [
        f"rank 1: matches the benchmark here; its own root cause is {DENSE} (index "
        f"{dense_index}): NaN/inf born here: finite data inputs, non-finite output; its kernel "
        "is proven wrong by the replay (ac -c --rank 1 --step 0)"  # replayed as --rank 1 does
    ]
    alone = run_ok(open_shell(root), "ac -c --rank 1 --step 0").root_cause
    assert alone.cause.op == DENSE
    text = render(check)
    assert f"rank 1: matches the benchmark here; its own root cause is {DENSE}" in text


def test_ac_c_does_not_call_a_fault_every_cards_when_one_card_has_its_own(tmp_path_factory):
    """Both cards fail at conv2 (the same wrong constant); rank 1 also has a NaN born later
    at the dense layer: "every card" comes with that card's own fault."""
    root = _card_workspace(tmp_path_factory, "both", [ONE_FAULT, FAULT_AND_NAN])
    shutil.rmtree(root / "precision_data/npu/debug_1")
    check = run_ok(open_shell(root), "ac -c")
    panel = check.root_cause
    assert (panel.cause.op, panel.lines.where) == (CONV2, "rank 0 step 0")
    assert panel.lines.cards == (
        "on every card: all 2 cards fail here at step 0, but they disagree (below): "
        "suspect the op, and each card named below"
    )
    (note,) = panel.lines.card_notes
    # rank 1's own root cause is conv2 too (its first fault); its NaN at the dense layer,
    # after it, is its own, and said so
    assert note.startswith(
        f"rank 1: fails here too, then has a fault of its own at {DENSE} (index "
    )
    assert note.endswith(
        "NaN/inf born here: finite data inputs, non-finite output (ac -c --rank 1 --step 0 "
        "names it after this op)"
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
    assert panel.lines.where == "rank 1 step 0"
    assert panel.lines.cards == (
        "rank 1 only: the other card matches the benchmark here: "
        "suspect that card or its input data"
    )
    assert panel.next_commands[0] == f"ni {CONV2} -s 2 --rank 1 --step 0"
    text = render(check)
    assert (
        "where         rank 1 step 0 (of the root causes the compare shows: the first step, then "
        "the earliest op across its cards)"
    ) in text
    assert "cards         rank 1 only: the other card matches the benchmark here" in text
    assert "no NaN/inf in any device output" in text
    saved = json.loads(check.compare.summary_path.read_text(encoding="utf-8"))
    first = saved["diagnosis"]["root_causes"][0]
    assert (first["op"], first["rank"], first["step"]) == (CONV2, "1", "0")
    # the replay read that card's dump: the wrong constant is there (rank 0's conv2 matches
    # the benchmark), so the replay from its inputs is far from the benchmark: inherited
    report = check.diagnosis.replays.reports[CONV2]
    assert report.dump_slice == "rank 1 step 0"
    replayed = json.loads(run_ok(shell, f"replay {CONV2} --rank 1 --json").text)
    assert (replayed["rank"], replayed["step"]) == ("1", "0")
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
    assert check.root_cause.lines.where == "rank 0 step 0"
    assert check.root_cause.lines.cards == (
        "on every card: all 2 cards fail here at step 0: suspect the op, not one card"
    )
    saved = json.loads(check.compare.summary_path.read_text(encoding="utf-8"))
    assert {k: saved["diagnosis"]["root_causes"][0][k] for k in ("rank", "step")} == {
        "rank": "0",
        "step": "0",
    }
    only = run_ok(shell, "ac -c --rank 1")
    # one slice compared, of a run with others: named, and so are the hints (QA: they read
    # rank 0 step 0 when followed)
    assert only.root_cause.lines.where == "rank 1 step 0"
    assert only.root_cause.lines.where_why == ONE_SELECTED
    assert only.root_cause.lines.cards is None  # nothing to compare it with
    assert all("--rank 1 --step 0" in hint for hint in only.root_cause.next_commands)
    assert [r["rank"] for r in only.compare.summary.results] == ["1"]
    assert only.compare.summary.diagnosis.root_causes[0]["rank"] == "1"
    assert "ranks: 0, 1" in run_fail(shell, "ac --rank 9").error


def test_ac_c_hints_and_ni_read_the_rank_and_step_of_the_root_cause(healthy_pristine, tmp_path):
    """Every card dumps the same file names: `ac -c`'s hints carry the root cause's rank and
    step, and `ni --rank/--step` shows that (rank, step)'s compare rows and colours."""
    root = _copy(healthy_pristine, tmp_path)
    rank0_file = next(p for p in _step_dir(root).iterdir() if ".conv2_Conv2Drelu2_Relu." in p.name)
    rank, step = _add(root, "device")
    device = rank0_file.parents[3]  # <ts>/0/<graph>/<model>/<step>/<file>
    _negate_outputs(device.parent / rank / rank0_file.relative_to(device))
    shell = open_shell(root)
    check = run_ok(shell, "ac -c")
    panel = check.root_cause
    assert (panel.cause.op, panel.lines.where) == (CONV2, f"rank {rank} step {step}")
    (row,) = [r for r in panel.rows if r.kind == "output"]
    assert row.metrics[COSINE] < -0.9
    bench = benchmark_path(root, "relu2/Relu").name
    where = f"--rank {rank} --step {step}"
    assert panel.next_commands == [
        f"ni {CONV2} -s 2 {where}",
        f"cp {rank0_file.name}:output:0 {bench} {where}",
    ]
    hinted = run_ok(shell, panel.next_commands[1])
    assert hinted.report.cosine == pytest.approx(row.metrics[COSINE], abs=1e-6)

    def node_line(gv: str) -> str:
        return next(
            ln for ln in Path(gv).read_text().splitlines() if ln.startswith(f'  "{CONV2}" [')
        )

    info = run_ok(shell, panel.next_commands[0]).nodes[0]
    assert Path(info.compare_file).name.endswith(f"_rank{rank}_step{step}.csv")
    assert [r.metrics[COSINE] for r in info.compare_rows if r.kind == "output"] == [
        row.metrics[COSINE]
    ]
    assert (info.compare_slice, info.is_root_cause) == (f"rank {rank} step {step}", True)
    line = node_line(info.subgraph.gv)
    assert f'fillcolor="{RED}"' in line and 'xlabel="root cause"' in line
    gv_name = "conv2_Conv2Drelu2_Relu_d2.gv"
    assert Path(info.subgraph.gv).name == f"debug_0_rank{rank}_step{step}_{gv_name}"
    assert f'  label="debug_0 rank {rank} step {step}";' in Path(info.subgraph.gv).read_text()
    # no --rank/--step: the primary (rank 0), named, and the root cause is said to be elsewhere
    plain = run_ok(shell, f"ni {CONV2} -s 2").nodes[0]
    assert Path(plain.compare_file) == check.compare.primary.csv_path
    assert [r.metrics[COSINE] for r in plain.compare_rows if r.kind == "output"][0] > 0.99
    assert (plain.compare_slice, plain.is_root_cause, plain.root_cause_elsewhere) == (
        f"rank 0 step {step}",
        False,
        f"rank {rank} step {step}",
    )
    line = node_line(plain.subgraph.gv)
    assert f'fillcolor="{GREEN}"' in line and "root cause" not in line
    assert Path(plain.subgraph.gv).name == f"debug_0_rank0_step{step}_{gv_name}"
    assert f'fillcolor="{RED}"' in node_line(info.subgraph.gv)  # not written over
    # the line wraps where the path's length says (it holds pytest's tmp dir): compare the
    # characters without the whitespace
    text = "".join(rendered(run_ok(shell, f"ni {CONV2}")).replace("│", " ").split())
    assert (
        "".join(
            f"{Path(plain.compare_file).name} (rank 0 step {step}) (root cause of this compare in "
            f"rank {rank} step {step})".split()
        )
        in text
    )
    # a (rank, step) the latest compare did not compare: said in one line, no other rows
    only0 = run_ok(shell, "vc --rank 0")
    missing = run_ok(shell, f"ni {CONV2} --rank {rank}").nodes[0]
    assert missing.compare_rows == [] and missing.compare_file is None
    assert missing.compare_missing == (
        f"the latest compare ({only0.primary.csv_path.parent}) did not compare rank {rank} step "
        f"{step}; it compared rank 0 step {step} (vc --rank {rank} --step {step} compares it)"
    )


def _poison(dump: Path, element: int) -> None:
    """Rewrite a dump file (a hard link: unlinked first) with one NaN in output 0."""
    _plant(dump, {element: np.nan})


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
    assert origin.unread_steps == ["1"]  # and said so: it holds a NaN born earlier
    shown = render(run_ok(shell, "ac"))
    assert f"first NaN/inf: rank 1 step 0 op {CONV2} (output 0)  1 NaN; Conv2D." in shown
    assert (
        "step 1 not read: the search stops at step 0, the first holding NaN/inf (ac --step 1 "
        "reads that step)"
    ) in " ".join(shown.split())
    (later_origin,) = run_ok(shell, "ac --step 1").nonfinite
    later = later_origin.first
    assert (later.rank, later.step, later.op) == ("0", "1", CONV1)
    assert later_origin.unread_steps == []
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
    assert '<td>rank 0</td><td class="good">0 failing outputs</td>' in page
    saved = json.loads(check.compare.summary_path.read_text(encoding="utf-8"))
    failing = next(e["failed"] for e in saved["results"] if e["rank"] == "1")
    assert (
        f'<td>rank 1</td><td class="bad">{failing} failing outputs; first failing op {CONV2}'
        " (this page)</td>" in page
    )
    assert "<dt>Rank and step</dt><dd>rank 1 step 0</dd>" in page
    # the root-cause section says what the terminal's panel said beside the op
    lines = check.root_cause.lines
    assert lines.where == "rank 1 step 0" and lines.cards is not None
    assert saved["diagnosis"]["lines"] == {
        "where": f"rank 1 step 0 ({lines.where_why})",
        "cards": lines.cards,
        **({"card_notes": lines.card_notes} if lines.card_notes else {}),
    }
    assert f"<dt>Where</dt><dd>rank 1 step 0 ({html.escape(lines.where_why)})</dd>" in page
    assert f'<dt>Cards</dt><dd><span class="warn">{html.escape(lines.cards)}</span>' in page
    assert (
        run_ok(shell, "report --rank 1").path.read_text(encoding="utf-8").count("<dt>Cards</dt>")
        == 1
    )
    primary = run_ok(shell, "report")
    assert (primary.slice_label, primary.ranks_compared) == ("rank 0 step 0", 2)
    assert primary.root_cause is None
    text = primary.path.read_text(encoding="utf-8")
    assert (
        f"none in this compare; the run&#x27;s root cause: {CONV2} in rank 1 step 0"
        " (report --rank 1 --step 0 reports that one)" in text
    )
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


def _rank_step_dir(root: Path, rank: str) -> Path:
    """debug_0's dump dir of one rank (its first step): <ts>/<rank>/<graph>/<model>/<step>."""
    dump = root / "precision_data/npu/debug_0/dump"
    return next(
        p.parent
        for p in sorted(dump.rglob("*"))
        if p.is_file() and p.relative_to(dump).parts[1] == rank
    )


def _section_text(page, id_: str) -> str:
    return next(e.text for e in page.elements if e.attrs.get("id") == id_)


def test_the_report_of_each_rank_says_only_what_holds_for_that_rank(one_fault_pristine, tmp_path):
    """rank 0 healthy, rank 1 a wrong constant in conv2, rank 2 NaN born in conv1: `ac -c`
    diagnoses every card and names the earliest root cause (rank 2's conv1); rank 1's own
    (conv2) is kept in `other_cards`. Each page says what holds for its own rank."""
    root = _copy(one_fault_pristine, tmp_path)
    _healthy_rank0_faulty_rank1(root)
    healthy = _rank_step_dir(root, "0")
    rank_dir = healthy.parents[2]
    nan_dir = rank_dir.parent / "2" / healthy.relative_to(rank_dir)
    _link_copy(healthy, nan_dir)
    _poison(next(nan_dir.glob("Conv2D.conv1_*")), 0)
    shell = open_shell(root)
    check = run_ok(shell, "ac -c")
    assert check.root_cause is not None and check.root_cause.lines.where == "rank 2 step 0"
    saved = json.loads(check.compare.summary_path.read_text(encoding="utf-8"))
    diagnosis = saved["diagnosis"]
    assert (diagnosis["rank"], diagnosis["step"]) == ("2", "0")
    assert diagnosis["baseline_first_below"] == CONV1
    (own,) = diagnosis["other_cards"]
    assert (own["rank"], own["step"], own["op"]) == ("1", "0", CONV2)

    nan_report = run_ok(shell, "report --rank 2")
    page = parse_page(nan_report.path.read_text(encoding="utf-8"))
    assert next(e.text for e in page.elements if e.tag == "h1") == "Accuracy report: rank 2 step 0"
    assert page.facts["Rank and step"] == "rank 2 step 0"
    assert page.facts["Root cause"] == CONV1
    assert page.facts["First failing op"] == CONV1
    assert page.facts["First op below threshold"] == CONV1  # the diagnosis is of this rank

    faulty_report = run_ok(shell, "report --rank 1")
    page = parse_page(faulty_report.path.read_text(encoding="utf-8"))
    assert page.facts["First failing op"] == CONV2  # this rank's, not the diagnosed rank's
    assert "First op below threshold" not in page.facts  # rank 2's baseline: not shown here
    its_own = (
        f"this card's own: {CONV2} (index {own['index']}); the run's root cause, the earliest "
        f"across its cards: {CONV1} in rank 2 step 0 (report --rank 2 --step 0 reports that one)"
    )
    assert page.facts["Root cause"] == its_own
    assert _section_text(page, "root-cause") == f"Root cause{its_own}"
    advisor = _section_text(page, "advisor")
    assert "rank 2 step 0" in advisor and "the compare the advisor read, not this one" in advisor
    assert f"root cause: {its_own}" in " ".join(render(faulty_report).split())
    assert faulty_report.root_cause is None

    healthy_report = run_ok(shell, "report")
    page = parse_page(healthy_report.path.read_text(encoding="utf-8"))
    assert page.facts["Outputs failing the thresholds"] == "0 of 14 plotted"
    assert "First failing op" not in page.facts and "First op below threshold" not in page.facts
    assert page.facts["Root cause"] == (
        f"none in this compare; the run's root cause: {CONV1} in rank 2 step 0"
        " (report --rank 2 --step 0 reports that one)"
    )


def test_vcs_counts_the_rank_table_again_under_its_own_thresholds(
    one_fault_pristine, tmp_path, monkeypatch
):
    root = _copy(one_fault_pristine, tmp_path)
    _healthy_rank0_faulty_rank1(root)
    shell = open_shell(root)
    run_ok(shell, "vc")
    plain = run_ok(shell, "vcs --rank 1")
    assert not plain.ranks.recounted
    recorded = plain.ranks.cell("1", "0")
    assert recorded.failed > 0 and recorded.first_failed_op == CONV2
    assert render(plain).splitlines()[0] == "failing outputs per rank and step (first failing op)"

    loose = run_ok(shell, "vcs --rank 1 -c 0.5 --metric red:1.0")
    assert loose.failing_total == 0
    assert loose.ranks.recounted
    assert [(r.rank, r.failed, r.first_failed_op) for r in loose.ranks.results] == [
        ("0", 0, None),
        ("1", 0, None),
    ]
    lines = render(loose).splitlines()
    assert (
        lines[0] == "failing outputs per rank and step (first failing op), at the thresholds below"
    )
    assert [ln.split() for ln in lines if ln[:1] == "1"][0] == ["1", "│", "*0"]
    # conv2's cosine (0.892658) still fails 0.9: counted again, conv2 first
    cosine_only = run_ok(shell, "vcs --rank 1 -c 0.9 --metric red:1.0")
    assert cosine_only.ranks.cell("1", "0").first_failed_op == CONV2
    assert cosine_only.ranks.cell("0", "0").failed == 0

    # too many rows to read again: the table stays the compare's, and says so
    monkeypatch.setattr("precision_shell.compare.results.slice_results.RECOUNT_MAX_ROWS", 0)
    kept = run_ok(shell, "vcs --rank 1 -c 0.5 --metric red:1.0")
    assert not kept.ranks.recounted and kept.ranks.cell("1", "0") == recorded
    assert render(kept).splitlines()[0] == (
        "failing outputs per rank and step (first failing op), at the compare's thresholds"
        " (CosineSimilarity < 0.98 or RelativeEuclideanDistance > 0.05 fails), not the ones"
        " below: too many rows to count again"
    )


def test_the_rank_table_tells_not_dumped_from_dumped_but_not_compared(healthy_pristine, tmp_path):
    """rank 0 dumped steps 0 and 1, rank 1 step 0, rank 2 step 1: `vc` compares each rank's
    first step, so rank 0 step 1 is dumped but not compared; rank 1 step 1 was never dumped."""
    root = _copy(healthy_pristine, tmp_path)
    step0 = _step_dir(root)
    rank_dir = step0.parents[2]
    later = str(int(step0.name) + 1)
    _link_copy(step0, step0.parent / later)
    _link_copy(step0, rank_dir.parent / "1" / step0.relative_to(rank_dir))
    _link_copy(step0, rank_dir.parent / "2" / step0.parent.relative_to(rank_dir) / later)
    shell = open_shell(root)
    run_ok(shell, "vc")
    summary = run_ok(shell, "vcs")
    first = step0.name
    assert [(r.rank, r.step) for r in summary.ranks.results] == [
        ("0", first),
        ("1", first),
        ("2", later),
    ]
    lines = render(summary).splitlines()
    cells = {ln.split("│")[0].strip(): [c.strip() for c in ln.split("│")[1:]] for ln in lines[3:6]}
    assert cells == {
        "0": ["*0", "not compared"],
        "1": ["0", "not dumped"],
        "2": ["not dumped", "0"],
    }
    assert "not compared: dumped, but outside this vc's --rank/--step" in lines
    page = run_ok(shell, "report").path.read_text(encoding="utf-8")
    assert (
        '<td>rank 0</td><td class="good">0 failing outputs (this page)</td>'
        '<td class="muted">not compared</td>' in page
    )
    assert (
        '<td>rank 1</td><td class="good">0 failing outputs</td><td class="muted">not dumped' in page
    )
    assert "Not compared: dumped, but outside this vc&#x27;s --rank/--step." in page


def _plant(dump: Path, cells: dict[tuple[int, ...] | int, float]) -> None:
    """Rewrite a dump file (a hard link: unlinked first) with `cells` of output 0 set
    (indices in its stored layout; an int: the flat index)."""
    header = read_dump_header(str(dump))
    meta = header.outputs[0]
    values = np.array(read_tensor(header, "output", 0))
    for where, value in cells.items():
        if isinstance(where, int):
            values.reshape(-1)[where] = value
        else:
            values[where] = value
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


def _csv_cell(csv_path: Path, tensor: str, column: str) -> str:
    import csv

    with open(csv_path, newline="") as fh:
        rows = list(csv.reader(fh))
    at = rows[0].index(column)
    (cell,) = [r[at] for r in rows[1:] if f"{tensor}:output:0" in r]
    return cell


def test_nan_and_inf_in_nc1hwc0_pad_lanes_are_no_nan_birth_nor_overflow(healthy_pristine, tmp_path):
    """conv1's output is NHWC C=8 stored as NC1HWC0 C0=16: lanes 8..15 are pads, holding
    whatever the kernel left there. A NaN/inf there is no value of the tensor: no NaN birth,
    no float16 overflow, no count; one line says they are there."""
    from precision_shell.compare.diagnosis.advisor import FP16_OVERFLOW

    root = _copy(healthy_pristine, tmp_path)
    step = _step_dir(root)
    conv1 = next(step.glob("Conv2D.conv1_*"))
    _plant(conv1, {(0, 0, 0, 0, 8): np.inf, (0, 0, 0, 0, 9): np.nan, (1, 0, 2, 3, 15): -np.inf})
    shell = open_shell(root)
    check = run_ok(shell, "ac -c")
    (origin,) = check.nonfinite
    assert origin.first is None
    pad = origin.pad_only
    assert (pad.op, pad.output, pad.nan, pad.inf, pad.pad_layout) == (CONV1, 0, 1, 2, "NC1HWC0")
    text = " ".join(render(check).replace("│", " ").split())
    assert "no NaN/inf in any device output" in text
    assert (
        f"NaN/inf in pad lanes only (no value of the tensor, not counted): rank 0 step 0 op "
        f"{CONV1} (output 0) 1 NaN, 2 inf in its NC1HWC0 padding"
    ) in text
    assert _csv_cell(check.compare.primary.csv_path, CONV1, "OverFlow") == "NO"
    assert [f.op for f in check.diagnosis.findings if f.detection == FP16_OVERFLOW] == []
    # one inf in a real lane of conv2 beside one in its pads: the tensor holds 1, not 2
    conv2 = next(step.glob("Conv2D.conv2_*"))
    _plant(conv2, {(1, 0, 3, 3, 7): np.inf, (1, 0, 3, 3, 8): np.inf})
    check = run_ok(open_shell(root), "ac -c")
    hit = check.nonfinite[0].first
    assert (hit.op, hit.nan, hit.inf, hit.pad_layout) == (CONV2, 0, 1, "")
    assert check.nonfinite[0].pad_only.op == CONV1  # read before the origin: still said
    assert _csv_cell(check.compare.primary.csv_path, CONV2, "OverFlow") == "YES"
    assert _csv_cell(check.compare.primary.csv_path, CONV1, "OverFlow") == "NO"


def test_a_rank_or_step_dumped_after_the_compare_is_said_so(healthy_pristine, tmp_path):
    """vc compares ranks 0 and 1 at step 0 and leaves out rank 0 step 1; then rank 2 and
    rank 0's step 2 are dumped: not 'outside this vc's --rank/--step', but after it ran."""
    root = _copy(healthy_pristine, tmp_path)
    step0 = _step_dir(root)
    rank_dir = step0.parents[2]
    first, later, latest = step0.name, str(int(step0.name) + 1), str(int(step0.name) + 2)
    _link_copy(step0, step0.parent / later)
    _link_copy(step0, rank_dir.parent / "1" / step0.relative_to(rank_dir))
    shell = open_shell(root)
    run_ok(shell, "vc")
    _link_copy(step0, rank_dir.parent / "2" / step0.relative_to(rank_dir))
    _link_copy(step0, step0.parent / latest)
    summary = run_ok(shell, "vcs")
    lines = render(summary).splitlines()
    cells = {ln.split("│")[0].strip(): [c.strip() for c in ln.split("│")[1:]] for ln in lines[3:6]}
    assert cells == {"0": ["*0"], "1": ["0"], "2": ["dumped after this compare"]}
    assert f"step {later} not in the table: dumped, but outside this vc's --rank/--step" in lines
    assert f"step {latest} not in the table: dumped after this compare" in lines
    info = run_ok(shell, f"ni {CONV2} --rank 2 --step {first}").nodes[0]
    assert info.compare_missing.endswith(
        f"predates rank 2 step {first}: it was dumped after that compare ran "
        f"(vc --rank 2 --step {first} compares it)"
    )
    page = run_ok(shell, "report").path.read_text(encoding="utf-8")
    assert '<td>rank 2</td><td class="muted">dumped after this compare</td>' in page
    assert f"Step {latest} not in the table: dumped after this compare." in page


def test_one_rank_compared_of_several_is_labelled_and_ni_reads_its_dump(
    one_fault_pristine, tmp_path
):
    """After `vc --rank 1 --step 0` (the run has rank 0 too): `ni OP` shows rank 1's dump
    beside rank 1's rows, and `vcs`/`report` say whose rows they show (QA: rank 0's
    statistics sat over rank 1's rows, and nothing named rank 1)."""
    root = _copy(one_fault_pristine, tmp_path)
    _healthy_rank0_faulty_rank1(root)
    shell = open_shell(root)
    run_ok(shell, "vc --rank 1 --step 0")
    (info,) = run_ok(shell, f"ni {CONV2}").nodes
    assert info.dump_slice == "rank 1 step 0" and info.compare_slice == "rank 1 step 0"
    (faulty,) = run_ok(shell, f"ni {CONV2} --rank 1 --step 0").nodes
    assert [r.stats for r in info.dump_tensors] == [r.stats for r in faulty.dump_tensors]
    assert info.compare_rows == faulty.compare_rows and info.compare_rows
    (healthy,) = run_ok(shell, f"ni {CONV2} --rank 0 --step 0").nodes
    assert [r.stats for r in healthy.dump_tensors] != [r.stats for r in info.dump_tensors]
    assert not healthy.compare_rows and "did not compare rank 0 step 0" in healthy.compare_missing
    summary = run_ok(shell, "vcs")
    assert summary.slice_label == "rank 1 step 0" and summary.ranks is None
    assert f"{summary.path} (rank 1 step 0): " in render(summary)
    page = run_ok(shell, "report")
    text = page.path.read_text(encoding="utf-8")
    assert "<h1>Accuracy report: rank 1 step 0</h1>" in text
    assert "the compare of rank 1 step 0 only" in rendered(page)


def test_a_card_redumped_after_the_compare_is_said_stale_under_the_table(
    one_fault_pristine, tmp_path
):
    """`vc --rank all --step all`, then one card's dump file is replaced: plain `vcs` and
    `report` (which show the other card's rows) say that card's cell may be stale (QA: its
    old count was shown as current)."""
    root = _copy(one_fault_pristine, tmp_path)
    _healthy_rank0_faulty_rank1(root)
    shell = open_shell(root)
    run_ok(shell, "vc --rank all --step all")
    before = run_ok(shell, "vcs")
    assert before.ranks is not None and not any("stale" in n for n in before.notes)
    other = "1" if before.slice_label == "rank 0 step 0" else "0"
    step_dir = _step_dir(root).parents[3] / other
    dump = next(p for p in step_dir.rglob("*") if p.is_file())
    fresh = dump.with_name(dump.name + ".new")
    fresh.write_bytes(dump.read_bytes())
    os.replace(fresh, dump)  # a re-dump: a new file of that name
    after = run_ok(shell, "vcs")
    line = (
        f"rank {other} step 0: its files changed since the compare "
        f"{after.path.parent} ran: its cell in the table may be stale (vc --rank {other} "
        f"--step 0 compares it again)"
    )
    assert line in after.notes
    assert line in run_ok(shell, "report").notes
    # the card shown itself: its own stale line, not this one
    shown = run_ok(shell, f"vcs --rank {other} --step 0")
    assert line not in shown.notes and any("predate" in n for n in shown.notes)
    # the page carries it under its table (QA Q24 #5)
    page = run_ok(shell, "report").path.read_text()
    assert html.escape(line) in page


def test_a_card_whose_dump_dir_is_removed_is_said_stale(one_fault_pristine, tmp_path):
    """QA Q24 #2: the dump dir of a card removed (before a re-dump) left its old cell shown
    as current, with no line."""
    root = _copy(one_fault_pristine, tmp_path)
    _healthy_rank0_faulty_rank1(root)
    shell = open_shell(root)
    run_ok(shell, "vc --rank all --step all")
    shown = run_ok(shell, "vcs").slice_label
    other = "1" if shown == "rank 0 step 0" else "0"
    shutil.rmtree(_step_dir(root).parents[3] / other)
    notes = run_ok(shell, "vcs").notes
    assert any(
        n.startswith(f"rank {other} step 0: its files changed since the compare") for n in notes
    )


def test_cards_beyond_the_dirs_checked_are_said_not_checked(
    one_fault_pristine, tmp_path, monkeypatch
):
    """QA Q24 #1: beyond OTHER_DIRS_MAX dirs, nothing was said unless a checked card had
    changed: silence read as "nothing changed"."""
    from precision_shell.compare.results import input_changes

    root = _copy(one_fault_pristine, tmp_path)
    _healthy_rank0_faulty_rank1(root)
    shell = open_shell(root)
    run_ok(shell, "vc --rank all --step all")
    assert not any("not checked" in n for n in run_ok(shell, "vcs").notes)
    monkeypatch.setattr(input_changes, "OTHER_DIRS_MAX", 0)
    notes = run_ok(shell, "vcs").notes
    assert any(
        n.startswith("1 other rank and step not checked for changes since the compare")
        and n.endswith("(vcs --rank R --step S checks one)")
        for n in notes
    )


def test_a_benchmark_dir_serving_several_cards_is_checked_once_and_names_them_all(
    one_fault_pristine, tmp_path, monkeypatch
):
    """QA Q24 #4: tf/dump/rank1/ serves rank 1's steps 0 and 1; a file in it rewritten after
    the compare makes both cells stale (not only the first), and the dir is read once."""
    from precision_shell.compare.results import input_changes

    root = _copy(one_fault_pristine, tmp_path)
    _healthy_rank0_faulty_rank1(root)
    rank1 = _step_dir(root).parents[3] / "1"
    step0 = next(p for p in rank1.rglob("*") if p.is_file()).parent
    _link_copy(step0, step0.parent / "1")
    bench = root / "precision_data" / "tf" / "dump"
    own = bench / "rank1"
    own.mkdir()
    for f in bench.glob("*.npy"):
        shutil.copy(f, own / f.name)
    shell = open_shell(root)
    run_ok(shell, "vc --rank all --step all")
    assert run_ok(shell, "vcs").slice_label == "rank 0 step 0"
    victim = next(own.glob("*.npy"))
    np.save(victim, np.load(victim) + 1)  # the benchmark harvested again, other values
    checked: list[str] = []
    real = input_changes.input_changes

    def counting(summary, dirs, *rest):  # noqa: ANN001, ANN002, ANN202
        checked.extend(dirs)
        return real(summary, dirs, *rest)

    monkeypatch.setattr(input_changes, "input_changes", counting)
    notes = run_ok(shell, "vcs").notes
    assert any(
        n.startswith("rank 1 step 0, rank 1 step 1: their files changed since the compare")
        and n.endswith("(vc --rank all --step all compares them again)")
        for n in notes
    ), notes
    assert checked.count(str(own)) == 1
    assert len(checked) == len(set(checked))  # every dir read once
    # the card shown shares the dir: its own line, and the other card it serves is named
    # (QA Q26 #10: only the card shown was said stale)
    notes = run_ok(shell, "vcs --rank 1 --step 0").notes
    assert any(n.startswith("the compare ") and "predates a change" in n for n in notes), notes
    assert any(
        n.startswith("rank 1 step 1: its files changed since the compare")
        and n.endswith("(vc --rank 1 --step 1 compares it again)")
        for n in notes
    ), notes


def test_another_card_s_proven_fault_says_what_ran_before_it_unreplayed(tmp_path_factory):
    """QA Q26 #3: rank 1's own fault (a wrong constant at the dense layer, which its replay
    proves) comes after an op whose dump is truncated (conv2, a real local error): the card
    shown alone says "not proven: conv2 ... may be the first fault"; named beside rank 0, it
    said nothing of conv2."""
    root = _card_workspace(
        tmp_path_factory,
        "unproven",
        [
            DemoSpec(
                size="tiny", faults=(Fault(WRONG_CONSTANT, "conv1/Conv2D", 0.5),), second_run=False
            ),
            DemoSpec(
                size="tiny",
                faults=(
                    Fault("local_error", "conv2/Conv2D", 0.3),
                    Fault(WRONG_CONSTANT, DENSE, 0.5),
                ),
                second_run=False,
            ),
        ],
    )
    rank1 = _step_dir(root).parents[3] / "1"
    (conv2,) = [p for p in rank1.rglob("Conv2D.conv2_*") if p.is_file()]
    data = conv2.read_bytes()
    conv2.unlink()  # a hard link of the built demo's file: write a new one
    conv2.write_bytes(data[:-100])
    check = run_ok(open_shell(root), "ac -c")
    assert check.root_cause is not None and check.root_cause.cause.op != DENSE  # rank 0's
    lines = check.root_cause.lines
    (row,) = [n for n in lines.not_proven if n.startswith("rank 1 step 0: ")]
    assert row.startswith(f"rank 1 step 0: {DENSE}: conv2/Conv2D")
    assert "could not be replayed (" in row and row.endswith("it may be the first fault")
    saved = json.loads(check.compare.summary_path.read_text(encoding="utf-8"))
    assert row in saved["diagnosis"]["lines"]["not_proven"]


def test_a_card_the_slice_pass_replayed_in_full_is_not_replayed_again(tmp_path_factory):
    """QA Q26 #6: rank 1 step 0 (replayed in full first, as its own `ac -c --rank 1 --step 0`
    does) was replayed again when named beside rank 2's input, with what budget was left, and
    lost the proof of its wrong constant: the cards line then said "ranks 2, 1 fail here"."""
    own_op = {0: "bn2/FusedBatchNormV3", 1: "conv1/Conv2D", 2: "dense/MatMul"}
    specs = [
        DemoSpec(
            size="tiny",
            faults=(
                Fault(CORRUPT_INPUT, "input", 0.01 * (1 + 3 * rank), variant="mean"),
                Fault(WRONG_CONSTANT, own_op[rank], 0.5),
            ),
            second_run=False,
        )
        for rank in range(3)
    ]
    root = _card_workspace(tmp_path_factory, "twice", specs)
    check = run_ok(open_shell(root), "ac -c")
    panel = check.root_cause
    assert (panel.cause.op, panel.lines.where.split(" (")[0]) == ("input", "rank 2 step 0")
    assert [p.where for p in check.named_replays] == ["rank 0 step 0"]
    assert (panel.lines.cards or "").startswith(
        "rank 2 only: the other 2 cards match the benchmark"
    )
    (rank1,) = [n for n in panel.lines.card_notes if n.startswith("rank 1: ")]
    assert "the replay proves its constants differ from the benchmark's" in rank1


DRIFT_STACK = {"size": "tiny", "blocks": 60, "branch_gain": 6, "fp32_head": True, "seed": 0}


def test_a_small_fault_every_card_shares_under_drift_is_every_cards(tmp_path_factory):
    """QA Q28 #1: the same 2% kernel error on every card, under float16 drift, fails no
    threshold; the replay proved it on rank 0 only, and ranks 1 and 2 (never replayed at the
    op) "match the benchmark here ... drift, no fault of their own": "rank 0 only". Each card
    the proof may hold for is replayed as its own `ac -c --rank R` would, and rank 1's page
    says it shares the cause."""
    fault = Fault(LOCAL_ERROR, "block25/conv3/Conv2D", 0.02)
    specs = [DemoSpec(**DRIFT_STACK, faults=(fault,), second_run=False) for _ in range(3)]
    root = _card_workspace(tmp_path_factory, "shared", specs)
    shell = open_shell(root)
    check = run_ok(shell, "ac -c")
    panel = check.root_cause
    assert panel.cause.op.startswith("block25/conv3/Conv2D")
    assert (panel.lines.cards or "").startswith("on every card: all 3 cards ")
    assert not any("no fault of their own" in n for n in panel.lines.card_notes)
    saved = json.loads(check.compare.summary_path.read_text(encoding="utf-8"))
    assert saved["diagnosis"]["sharing_cards"] == [["1", "0"], ["2", "0"]]
    page = run_ok(shell, "report --rank 1 --step 0").path.read_text(encoding="utf-8")
    assert "the run&#x27;s root cause, which this card shares (it goes wrong there too): " in page


def test_another_cards_fault_under_the_outlier_drop_is_not_called_drift(tmp_path_factory):
    """QA Q28 #2: rank 0's 10% wrong filter loses 9.9 dB (under OUTLIER_DROP) at an op the
    card shown drifts at too; it was never replayed there, and was called "drift, no fault
    of its own", its page "none in this compare"."""
    specs = [
        DemoSpec(
            **DRIFT_STACK,
            faults=(Fault(WRONG_CONSTANT, "block40/conv2/Conv2D", 0.1),),
            second_run=False,
        ),
        DemoSpec(**DRIFT_STACK, faults=(), second_run=False),
        DemoSpec(
            **DRIFT_STACK,
            faults=(Fault(LOCAL_ERROR, "block10/conv2/Conv2D", 0.01),),
            second_run=False,
        ),
    ]
    root = _card_workspace(tmp_path_factory, "under", specs)
    check = run_ok(open_shell(root), "ac -c")
    panel = check.root_cause
    assert panel.cause.op.startswith("block10/conv2/Conv2D") and panel.lines.where.startswith(
        "rank 2 step 0"
    )
    (rank0,) = [n for n in panel.lines.card_notes if n.startswith("rank 0")]
    assert "its own root cause is block40/conv2/Conv2D" in rank0
    assert "the replay proves its constants differ" in rank0
    saved = json.loads(check.compare.summary_path.read_text(encoding="utf-8"))
    assert [(c["rank"], c["op"][:20]) for c in saved["diagnosis"]["other_cards"]] == [
        ("0", "block40/conv2/Conv2D")
    ]
