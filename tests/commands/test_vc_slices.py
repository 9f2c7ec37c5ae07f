"""`vc` and `ac -c` over several ranks and steps say what holds for all of them: the rank x
step table, the failing outputs of every card (not only the first card's), summary.json
`totals` for a CI check, the dump dirs the compare left out (`not_selected`), and an advisor
that claims "the network matches" only for the dumps it compared and never while another card
fails."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from precision_shell.compare.diagnosis.advisor import GLOBAL_CONSISTENCY, SliceCheck, advise
from precision_shell.compare.results.schema import read_result_csv
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.demo.builder import build_demo
from precision_shell.demo.spec import WRONG_CONSTANT, DemoSpec, Fault
from tests.commands.shell_fixture import CONV2, open_shell, rendered, run_ok
from tests.commands.test_compare_views import render
from tests.commands.test_second_dump_dir import _add, _link_copy, _step_dir

ONE_FAULT = DemoSpec(size="tiny", faults=(Fault(WRONG_CONSTANT, "bn2/FusedBatchNormV3", 0.5),))


@pytest.fixture(scope="module")
def faulty_rank1_pristine(tmp_path_factory):
    """Rank 0 healthy (debug_1's dump), rank 1 with a wrong constant in conv2 (debug_0's),
    and a second step of rank 0 (a copy of its first)."""
    root = tmp_path_factory.mktemp("faulty_rank1")
    build_demo(root, ONE_FAULT)
    faulty = _step_dir(root)  # <ts>/0/<graph>/<model>/<step>
    rank_dir = faulty.parents[2]
    rank_dir.rename(rank_dir.parent / "1")
    healthy = next(p for p in (root / "precision_data/npu/debug_1/dump").rglob("*") if p.is_file())
    healthy_step = rank_dir / faulty.relative_to(rank_dir)
    _link_copy(healthy.parent, healthy_step)
    _link_copy(healthy_step, healthy_step.parent / str(int(healthy_step.name) + 1))
    shutil.rmtree(root / "precision_data/npu/debug_1")
    return root


@pytest.fixture
def faulty_rank1(faulty_rank1_pristine, tmp_path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(faulty_rank1_pristine, root, symlinks=True)
    return root


def test_vc_says_a_later_card_fails_when_the_first_card_passes(faulty_rank1):
    result = run_ok(open_shell(faulty_rank1), "vc")
    assert not result.primary.tally.failing  # rank 0 step 0: healthy
    (rank1,) = [run for where, run in result.slices]
    failing = len(rank1.tally.failing)
    assert failing > 0
    text = render(result)
    assert "no output fails the thresholds in rank 0 step 0" in text
    assert "no output fails the thresholds (" not in text  # never said of the whole run
    rows = [ln.split() for ln in text.splitlines() if ln[:2] in ("0 ", "1 ")]
    assert rows == [["0", "│", "0"], ["1", "│", f"{failing}", f"({CONV2})"]]
    verdict = next(ln for ln in text.splitlines() if "outputs fail the thresholds in" in ln)
    assert verdict.startswith(f"{failing} outputs fail the thresholds in 1 of 2 ranks and steps")
    assert f"first: rank 1 step 0 at {CONV2} (vcs --rank 1 --step 0 lists them)" in text
    saved = json.loads(result.summary_path.read_text(encoding="utf-8"))
    assert saved["failing_outputs"] == 0  # the primary compare's, as before
    assert saved["totals"] == {
        "results": 2,
        "failing_outputs": failing,
        "results_failing": 1,
        "partial": False,
        "not_selected": 1,
        "nothing_to_compare": 0,
        "not_begun": 0,
    }


def test_vc_names_the_steps_it_left_out(faulty_rank1):
    shell = open_shell(faulty_rank1)
    result = run_ok(shell, "vc")
    saved = json.loads(result.summary_path.read_text(encoding="utf-8"))
    assert saved["not_selected"] == [{"rank": "0", "step": "1"}]
    assert (
        "not compared: 1 more dump dirs of this run (rank 0 step 1); --rank all --step all "
        "compares every one" in render(result)
    )
    every = run_ok(shell, "vc --step all")
    saved = json.loads(every.summary_path.read_text(encoding="utf-8"))
    assert "not_selected" not in saved and saved["totals"]["results"] == 3
    assert "not compared:" not in render(every)
    assert "in any of the" not in render(every)


def test_one_dump_dir_keeps_its_plain_verdict(tiny_demo_shared):
    root, _ = tiny_demo_shared
    result = run_ok(open_shell(root), "vc")
    text = render(result)
    assert "failing outputs per rank" not in text and "not compared:" not in text
    saved = json.loads(result.summary_path.read_text(encoding="utf-8"))
    failing = len(result.primary.tally.failing)
    assert saved["totals"] == {
        "results": 1,
        "failing_outputs": failing,
        "results_failing": int(failing > 0),
        "partial": False,
        "not_selected": 0,
        "nothing_to_compare": 0,
        "not_begun": 0,
    }


def test_a_card_with_an_unreadable_dump_is_not_shown_as_clean(faulty_rank1):
    dump = faulty_rank1 / "precision_data/npu/debug_0/dump"
    rank0 = [p for p in dump.rglob("*") if p.is_file() and p.parents[3].name == "0"]
    first_step = min(int(p.parent.name) for p in rank0)  # the one vc compares by default
    victim = min(
        p for p in rank0 if p.name.startswith("Conv2D.") and int(p.parent.name) == first_step
    )
    victim.unlink()  # a hard link shared with step 1: replaced, not truncated in place
    victim.write_bytes(b"junk")
    result = run_ok(open_shell(faulty_rank1), "vc")
    saved = json.loads(result.summary_path.read_text(encoding="utf-8"))
    entry = next(e for e in saved["results"] if e["rank"] == "0")
    assert entry["failed"] == 0 and entry["not_compared"] == result.primary.tally.failed > 0
    rows = [ln.split() for ln in render(result).splitlines() if ln[:2] == "0 "]
    assert rows == [["0", "│", "0", f"({entry['not_compared']}", "not", "compared)"]]


@pytest.fixture(scope="module")
def healthy_two_steps(tmp_path_factory):
    root = tmp_path_factory.mktemp("healthy_two_steps")
    build_demo(root, DemoSpec(size="tiny", faults=(), second_run=False))
    step = _step_dir(root)
    _link_copy(step, step.parent / str(int(step.name) + 1))
    return root


def test_ac_c_says_the_network_matches_only_for_the_dumps_it_compared(healthy_two_steps):
    check = run_ok(open_shell(healthy_two_steps), "ac -c")
    (finding,) = [f for f in check.diagnosis.findings if f.detection == GLOBAL_CONSISTENCY]
    assert (
        "the network itself matches the benchmark. Look at what lies outside the dumped graph: "
        "data pipeline, post-processing, loss and optimizer settings, or later training steps. "
        "This holds for the dumps compared only; not compared: rank 0 step 1 (ac -c --rank "
        "all --step all compares every one)."
    ) in finding.advice
    assert finding.evidence["not_compared"] == [{"rank": "0", "step": "1"}]
    # the default replay ran on its candidates: what it left is not cleared (QA Q28 #4)
    left = finding.evidence["replay_left_out"]
    assert left > 0 and finding.advice.endswith(
        f" The replay ran on its candidates only: {left} other dumped ops were not replayed, "
        "and a fault too small to cross the thresholds among them would not show (ac -c "
        "--replay all replays them)."
    )
    full = run_ok(open_shell(healthy_two_steps), "ac -c --replay all")
    (finding,) = [f for f in full.diagnosis.findings if f.detection == GLOBAL_CONSISTENCY]
    assert (
        "replay_left_out" not in finding.evidence and "ran on its candidates" not in finding.advice
    )
    every = run_ok(open_shell(healthy_two_steps), "ac -c --step all")
    (finding,) = [f for f in every.diagnosis.findings if f.detection == GLOBAL_CONSISTENCY]
    assert "on any compared card or step (rank 0 steps 0, 1)" in finding.advice
    assert "for the dumps compared only" not in finding.advice


def test_no_network_wide_match_is_claimed_when_another_card_fails():
    rule = ThresholdRule.default()
    scope = SliceCheck(("0", "0"), (("1", "0"), ("2", "0")), (), (("2", "0"),), ())
    (finding,) = advise(None, [], {}, [], rule, (), scope)  # type: ignore[arg-type]
    assert finding.detection == GLOBAL_CONSISTENCY
    assert finding.advice == (
        f"No output of rank 0 step 0 crosses the thresholds ({rule.describe()}) and no op there "
        "loses signal on its own, but rank 2 step 0 fails them (vcs --rank 2 --step 0 lists the "
        "outputs): the cards or steps disagree. Look at what differs there: input data, the "
        "card, or what changed between the steps."
    )
    assert "matches the benchmark" not in finding.advice
    assert finding.evidence["failing_on"] == [{"rank": "2", "step": "0"}]


def test_the_device_compare_names_the_rank_and_step_it_compares(tiny_demo):
    root, _ = tiny_demo
    _add(root, "device")  # debug_0 gets a rank 1; debug_1 keeps one dump dir
    result = run_ok(open_shell(root), "vc")
    second = result.secondary
    assert second is not None
    assert (second.left, second.right) == ("debug_0 rank 0 step 0", "debug_1")
    assert second.csv_path.name == f"{result.primary.csv_path.stem}_debug_0_vs_debug_1.csv"
    device_part = render(result).split("vc: device vs device")[1]
    assert device_part.splitlines()[1].split() == ["left", "debug_0", "rank", "0", "step", "0"]


def _empty_step(root: Path, rank: str, step: str) -> None:
    """An empty `<rank>/<graph>/<model>/<step>` dir: what an interrupted dump leaves."""
    first = _step_dir(root)  # <ts>/<rank>/<graph>/<model>/<step>
    rank_dir = first.parents[2]
    (rank_dir.parent / rank / first.parent.relative_to(rank_dir) / step).mkdir(parents=True)


def test_a_selected_dump_dir_with_nothing_to_compare_is_not_called_left_out(faulty_rank1):
    _empty_step(faulty_rank1, "1", "1")
    shell = open_shell(faulty_rank1)
    result = run_ok(shell, "vc --rank all --step all")
    saved = json.loads(result.summary_path.read_text(encoding="utf-8"))
    assert "not_selected" not in saved
    assert saved["nothing_to_compare"] == [{"rank": "1", "step": "1", "reason": "no dump file"}]
    assert saved["totals"]["not_selected"] == 0
    assert saved["totals"]["nothing_to_compare"] == 1
    assert saved["totals"]["results"] == 3
    text = render(result)
    assert "not compared:" not in text and "--rank all --step all compares" not in text
    assert "nothing to compare in 1 selected dump dir (rank 1 step 1: no dump file)" in text
    failing = len(next(run for where, run in result.slices if where.rank == "1").tally.failing)
    rows = [ln.split() for ln in text.splitlines() if ln[:2] in ("0 ", "1 ")]
    assert rows == [
        ["0", "│", "0", "│", "0"],
        ["1", "│", f"{failing}", f"({CONV2})", "│", "nothing", "to", "compare"],
    ]
    # vcs reads it back from summary.json: the same cell, not "not compared"
    summary_rows = [ln.split() for ln in render(run_ok(shell, "vcs")).splitlines()]
    assert ["1", "│", f"{failing}", f"({CONV2})", "│", "nothing", "to", "compare"] in summary_rows
    # the default selection does leave it out (with rank 0 step 1): that is said as before
    default = json.loads(run_ok(shell, "vc").summary_path.read_text(encoding="utf-8"))
    assert default["not_selected"] == [{"rank": "0", "step": "1"}, {"rank": "1", "step": "1"}]
    assert "nothing_to_compare" not in default


def test_ac_c_over_every_dump_dir_does_not_call_an_empty_one_left_out(faulty_rank1):
    _empty_step(faulty_rank1, "1", "1")
    check = run_ok(open_shell(faulty_rank1), "ac -c --rank all --step all")
    assert check.compare.summary.not_selected == []
    assert check.compare.summary.nothing_to_compare == [
        {"rank": "1", "step": "1", "reason": "no dump file"}
    ]
    text = render(check)
    assert "more dump dirs of this run" not in text
    assert "nothing to compare in 1 selected dump dir (rank 1 step 1: no dump file)" in text


def test_the_rank_table_names_the_dumped_steps_it_has_no_column_for(faulty_rank1):
    shell = open_shell(faulty_rank1)  # rank 0 dumped steps 0 and 1, vc compares step 0
    text = render(run_ok(shell, "vc"))
    assert "step 1 not in the table: dumped, but outside this vc's --rank/--step" in text
    assert "not in the table" not in render(run_ok(shell, "vc --step all"))


def test_the_advisor_names_the_dumps_left_out_in_one_sentence():
    rule = ThresholdRule.default()
    left_out = (("0", "1"), ("0", "2"), ("1", "1"), ("1", "2"))
    scope = SliceCheck(("0", "0"), (("1", "0"),), (), (), left_out)
    (finding,) = advise(None, [], {}, [], rule, (), scope)  # type: ignore[arg-type]
    assert finding.advice.endswith(
        "later training steps. This holds for the dumps compared only; not compared: ranks 0, "
        "1 steps 1, 2 (ac -c --rank all --step all compares every one)."
    )


def test_the_report_tells_nothing_to_compare_and_omitted_steps_apart(faulty_rank1):
    _empty_step(faulty_rank1, "1", "1")
    shell = open_shell(faulty_rank1)
    run_ok(shell, "vc --rank all --step all")
    page = run_ok(shell, "report").path.read_text(encoding="utf-8")
    assert '<td>rank 1</td><td class="bad">' in page
    assert page.count('<td class="muted">nothing to compare</td>') == 1
    assert "not in the table" not in page
    run_ok(shell, "vc")
    page = run_ok(shell, "report").path.read_text(encoding="utf-8")
    assert "Step 1 not in the table: dumped, but outside this vc&#x27;s --rank/--step.</p>" in page


def test_no_match_is_claimed_for_tensors_whose_benchmark_is_missing(healthy_two_steps, tmp_path):
    """QA: tf/dump/step1/ held only some ops' tensors; step 1's others were not compared
    (a planted fault among them unseen) and the advisor said "the network itself matches
    the benchmark"."""
    root = tmp_path / "ws"
    shutil.copytree(healthy_two_steps, root, symlinks=True)
    bench = root / "precision_data" / "tf" / "dump"
    (bench / "step1").mkdir()
    for f in bench.glob("*.npy"):
        if not f.name.startswith("relu2_Relu."):  # conv2's output: missing for step 1
            shutil.copy(f, bench / "step1" / f.name)
    check = run_ok(open_shell(root), "ac -c --step all")
    (finding,) = [f for f in check.diagnosis.findings if f.detection == GLOBAL_CONSISTENCY]
    missing = finding.evidence["uncompared"]
    assert [(m["rank"], m["step"]) for m in missing] == [("0", "1")] and missing[0]["tensors"] > 0
    n = missing[0]["tensors"]
    assert (
        f"and no op loses signal on its own, but {n} tensors of rank 0 step 1 could not be "
        "compared (vcs --rank 0 --step 1 lists why): the network matches the benchmark only as "
        "far as it was compared, and a fault among those tensors would not show. Give them a "
        "benchmark (a rank or step benchmark dir missing files?) and compare again."
    ) in finding.advice
    assert "the network itself matches" not in finding.advice
    panel = " ".join(rendered(check, 2000).split())
    assert (
        f"no op degrades the signal on its own among the tensors compared; {n} could not be "
        "compared (see the advisor): a fault among them would not show"
    ) in panel
    # the page says it too (QA Q29 #5: "none: no op degrades the signal on its own")
    page = run_ok(open_shell(root), "report --rank 0 --step 1").path.read_text(encoding="utf-8")
    assert f"among the tensors compared; {n} could not be compared (vcs lists why)" in page
    saved = json.loads(check.compare.summary_path.read_text(encoding="utf-8"))
    (step1,) = [e for e in saved["results"] if e["step"] == "1"]
    reasons = {row.reason for row in read_result_csv(step1["csv"]).rows if not row.compared}
    assert "benchmark relu2_Relu.0.*.npy not found in tf/dump/step1/" in reasons


def test_a_step_a_card_did_not_dump_is_said_not_dumped(tiny_demo):
    """Rank 0 dumped steps 0 and 1, rank 1 step 0 only (it crashed after it): `vc --step 1`
    compares rank 0 and says rank 1 has no step 1 (QA: rank 1 was dropped without a word)."""
    root, _ = tiny_demo
    step = _step_dir(root)
    _add(root, "device")  # rank 1 step 0
    _link_copy(step, step.parent / "1")  # rank 0 step 1
    shell = open_shell(root)
    check = run_ok(shell, "vc --step 1")
    summary = check.summary
    assert [(r["rank"], r["step"]) for r in summary.results] == [("0", "1")]
    assert summary.nothing_to_compare == [
        {"rank": "1", "step": "1", "reason": "rank 1 dumped no step 1", "dumped": False}
    ]
    text = render(check)
    assert "not dumped: rank 1 step 1 (selected by --step, not compared)" in text
    assert "nothing to compare in" not in text
    line = "not dumped: rank 1 step 1 (selected by --step, not compared)"
    # one card compared: no rank x step table, so vcs and report say it (QA Q24 #13)
    looked = run_ok(shell, "vcs")
    assert looked.slice_label == "rank 0 step 1" and looked.ranks is None
    assert line in looked.notes
    written = run_ok(shell, f"report -o {root / 'one.html'}")
    assert line in written.notes
    assert f"<dt>Selected, not compared</dt><dd>{line}</dd>" in (root / "one.html").read_text()
    # beside a second card compared, the rank x step table has a `not dumped` cell
    _link_copy(step.parents[2].parent / "1" / step.relative_to(step.parents[2]), _rank2_of(step))
    run_ok(open_shell(root), "vc --step 1")
    tabled = run_ok(open_shell(root), "vcs")
    table = tabled.ranks
    assert table is not None and table.ranks == ["0", "1", "2"]
    assert line not in tabled.notes  # the table's cell says it
    assert table.missing("1", "1") == "not dumped" and table.cell("2", "1") is not None


def _rank2_of(step: Path) -> Path:
    """`step`'s dir as rank 2 step 1: <ts>/2/<graph>/<model>/1."""
    device = step.parents[2]
    return device.parent / "2" / step.relative_to(device).parent / "1"
