"""`vc --across ranks`: every rank of a run against its lowest rank at one step. Ranks are
hard-linked copies of the tiny demo's rank 0 (so they agree), except where a test writes a
changed dump file for one op on one rank; `rank_divergence` must name that rank and op."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from precision_shell.compare.rank_divergence import rank_list_text
from precision_shell.compare.results.schema import read_result_csv
from precision_shell.compare.results.summary import read_summary
from precision_shell.formats.npu_dump import read_dump_header, read_tensor
from precision_shell.formats.npu_dump_writer import TensorSpec, write_dump
from precision_shell.render.output import Renderer
from tests.commands.shell_fixture import (
    CONV1,
    CONV2,
    DENSE,
    dump_path,
    open_shell,
    run_fail,
    run_ok,
)


def _link_copy(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True)
    for f in src.iterdir():
        if f.is_file():
            os.link(f, dst / f.name)


def _add_ranks(root: Path, manifest, ranks: list[str]) -> tuple[Path, Path]:
    """Hard-linked copies of rank 0's step dir as more ranks; returns (rank 0 dir, step dir)."""
    step_dir = dump_path(root, manifest, CONV2).parent
    device = step_dir.parents[2]  # .../<ts>/<device_id>/<graph>/<model_id>/<step>
    for rank in ranks:
        _link_copy(step_dir, device.parent / rank / step_dir.relative_to(device))
    return device, step_dir


def _spec(header, meta, array: np.ndarray) -> TensorSpec:
    return TensorSpec(
        array,
        dtype=meta.dtype,
        format=meta.format,
        original_shape=meta.original_shape or None,
        original_op=meta.original_op if meta.kind == "output" else None,
        original_format=meta.original_format if meta.kind == "output" else None,
    )


def _rewrite_outputs(path: Path, change: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Rewrite a (hard-linked) dump file with `change` applied to its outputs; returns
    output 0 as was."""
    header = read_dump_header(str(path))
    inputs = [
        _spec(header, m, np.array(read_tensor(header, "input", m.index))) for m in header.inputs
    ]
    originals = [np.array(read_tensor(header, "output", m.index)) for m in header.outputs]
    outputs = [_spec(header, m, change(a)) for m, a in zip(header.outputs, originals, strict=True)]
    path.unlink()  # a hard link: write a file of its own, not into rank 0's
    write_dump(path, header.op_name, inputs, outputs, dump_time=header.dump_time)
    return originals[0]


def _negate_outputs(path: Path) -> np.ndarray:
    return _rewrite_outputs(path, np.negative)


def _nudge_outputs(path: Path) -> np.ndarray:
    """Outputs off by ~0.2 %: well within the thresholds (cosine 1.0, rel euclid 0.002)."""
    return _rewrite_outputs(path, lambda a: (a.astype(np.float64) * 1.002).astype(a.dtype))


@pytest.fixture
def three_ranks(tiny_demo):
    """Ranks 0, 1, 2; rank 2's CONV2 dump has its outputs negated."""
    root, manifest = tiny_demo
    device, step_dir = _add_ranks(root, manifest, ["1", "2"])
    rank2_file = device.parent / "2" / dump_path(root, manifest, CONV2).relative_to(device)
    original = _negate_outputs(rank2_file)
    return root, step_dir.name, original


def test_rank_divergence_names_the_rank_and_the_op_where_it_leaves(three_ranks):
    root, step, original = three_ranks
    result = run_ok(open_shell(root), "vc --across ranks")
    summary = json.loads(result.summary_path.read_text(encoding="utf-8"))
    (diverged,) = summary["rank_divergence"]  # rank 1 agrees: not listed
    assert diverged["rank"] == "2" and diverged["step"] == step
    assert diverged["first_op"] == CONV2
    assert diverged["cosine"] == pytest.approx(-1.0, abs=1e-6)
    # |x - (-x)| = 2|x|, on the values as read (float32 at least)
    assert diverged["max_abs_error"] == pytest.approx(
        float(np.max(np.abs(2 * original.astype(np.float64)))), rel=1e-3
    )
    assert [(r["rank"], r["against"], r["step"]) for r in summary["results"]] == [
        ("1", "0", step),
        ("2", "0", step),
    ]
    names = [Path(r["csv"]).name for r in summary["results"]]
    assert names[0].endswith(f"_rank1_vs_rank0_step{step}.csv")
    assert names[1].endswith(f"_rank2_vs_rank0_step{step}.csv")
    rank1, rank2 = (read_result_csv(r["csv"]) for r in summary["results"])
    # the demo's fp16 overflow: the same inf on every rank fails the rule (NaN cosine), but
    # the bytes are the same, so rank 1 does not leave rank 0 there
    assert summary["results"][0]["first_failed_op"] == "l2_loss/Sum"
    cosines = [r.metrics["CosineSimilarity"] for r in rank1.rows if r.compared]
    finite = [c for c in cosines if np.isfinite(c)]
    assert len(finite) > 30 and all(c == pytest.approx(1.0) for c in finite)
    # the index of the divergence is the row's index in rank 2's CSV
    first = next(r for r in rank2.rows if r.op_name == CONV2 and r.kind == "output")
    assert diverged["index"] == first.index
    assert [d.rank for d in result.divergence] == ["2"] and result.agreeing == ["1"]
    assert read_summary(result.summary_path).rank_divergence == summary["rank_divergence"]


def test_view_shows_the_table_and_the_ranks_that_agree(three_ranks):
    root, step, _ = three_ranks
    result = run_ok(open_shell(root), "vc --across ranks")
    console = Console(record=True, width=200, color_system=None, highlight=False)
    Renderer(console, console).result(result)
    text = console.export_text()
    assert f"step {step}, ranks 1, 2 against rank 0" in text
    row = next(line for line in text.splitlines() if CONV2 in line)
    assert row.split()[0] == "2" and "-1" in row.split()
    assert "rank 1 matches rank 0 on every compared output" in text


def _render(result) -> str:
    console = Console(record=True, width=250, color_system=None, highlight=False)
    Renderer(console, console).result(result)
    return console.export_text()


def _rank2_nudged_then_negated(root: Path, manifest, negated: str) -> None:  # noqa: ANN001
    """Ranks 1 and 2 beside rank 0; rank 2 off by 0.2 % at CONV1 (within the thresholds)
    and negated at `negated` (crossing them)."""
    device, _ = _add_ranks(root, manifest, ["1", "2"])
    rank2 = device.parent / "2"
    _nudge_outputs(rank2 / dump_path(root, manifest, CONV1).relative_to(device))
    _negate_outputs(rank2 / dump_path(root, manifest, negated).relative_to(device))


def test_a_rank_leaves_at_its_first_difference_not_at_its_first_threshold_crossing(tiny_demo):
    """Rank 2 is off by 0.2 % at CONV1 (within the thresholds) and negated at CONV2: it
    leaves rank 0 at CONV1, and crosses the thresholds at CONV2."""
    root, manifest = tiny_demo
    _rank2_nudged_then_negated(root, manifest, CONV2)
    result = run_ok(open_shell(root), "vc --across ranks")
    (diverged,) = result.summary.rank_divergence
    rank2_rows = read_result_csv(result.summary.results[1]["csv"]).rows
    conv1 = next(r for r in rank2_rows if r.op_name == CONV1 and r.kind == "output")
    conv2 = next(r for r in rank2_rows if r.op_name == CONV2 and r.kind == "output")
    assert conv1.metrics["CosineSimilarity"] > 0.999  # within the thresholds
    assert (diverged["rank"], diverged["first_op"], diverged["index"]) == ("2", CONV1, conv1.index)
    assert diverged["max_abs_error"] == conv1.metrics["MaxAbsoluteError"] > 0
    failing = diverged["first_failing"]
    assert (failing["op"], failing["index"]) == (CONV2, conv2.index)
    assert failing["cosine"] == pytest.approx(-1.0, abs=1e-6)
    text = _render(result)
    row = next(line for line in text.splitlines() if line.startswith("2 "))
    assert row.split()[:3] == ["2", "│", str(conv1.index)] and CONV1 in row
    assert f"[{conv2.index}] {CONV2} (cosine -1)" in row
    assert "rank 1 matches rank 0 on every compared output" in text
    assert "is the one that differs" not in text


def _one_nan(array: np.ndarray) -> np.ndarray:
    changed = array.copy()
    changed.flat[0] = np.nan
    return changed


def test_a_nan_cosine_is_printed_as_nan_not_as_missing(tiny_demo):
    """Rank 1 holds a NaN in CONV2's output after a 0.2 % nudge at CONV1; rank 2 holds the NaN
    only: the CSVs print nan there, and so do the table, the failing op and summary.json."""
    root, manifest = tiny_demo
    device, _ = _add_ranks(root, manifest, ["1", "2"])
    conv2 = dump_path(root, manifest, CONV2).relative_to(device)
    _nudge_outputs(device.parent / "1" / dump_path(root, manifest, CONV1).relative_to(device))
    for rank in ("1", "2"):
        _rewrite_outputs(device.parent / rank / conv2, _one_nan)
    result = run_ok(open_shell(root), "vc --across ranks")
    rank2_rows = read_result_csv(result.summary.results[1]["csv"]).rows
    row = next(r for r in rank2_rows if r.op_name == CONV2 and r.kind == "output")
    assert (row.texts["CosineSimilarity"], row.texts["MaxAbsoluteError"]) == ("nan", "nan")
    rank1, rank2 = result.divergence
    assert (rank1.first.op, rank1.failing.op, rank2.first.op) == (CONV1, CONV2, CONV2)
    assert np.isnan(rank2.first.cosine) and np.isnan(rank2.first.max_abs_error)
    lines = _render(result).splitlines()
    cells = [c.strip() for c in next(x for x in lines if x.startswith("2 ")).split("│")]
    assert cells == ["2", str(row.index), CONV2, "nan", "nan", "the same op"]
    assert next(x for x in lines if x.startswith("1 ")).endswith(
        f"│ [{row.index}] {CONV2} (cosine nan)"
    )
    listed = json.loads(result.summary_path.read_text())["rank_divergence"]
    assert (listed[1]["cosine"], listed[1]["max_abs_error"]) == ("nan", "nan")
    assert listed[0]["first_failing"]["cosine"] == "nan" and listed[0]["cosine"] > 0.999


def test_the_reference_rank_that_differs_from_the_others_is_named(tiny_demo):
    """Only rank 0's CONV2 is negated: ranks 1 and 2 leave it the same way, so they agree with
    each other and rank 0 is the odd one."""
    root, manifest = tiny_demo
    _add_ranks(root, manifest, ["1", "2"])
    _negate_outputs(dump_path(root, manifest, CONV2))
    result = run_ok(open_shell(root), "vc --across ranks")
    assert [d.rank for d in result.divergence] == ["1", "2"]
    assert result.reference_is_odd and result.agreeing == []
    text = _render(result)
    assert (
        "ranks 1, 2 give the same numbers against rank 0 on every output: they agree with "
        "each other, and rank 0 is the one that differs"
    ) in text
    assert run_ok(open_shell(root), "vc --across ranks --rank 2").reference_is_odd is False


def test_agreeing_ranks_list_no_divergence(tiny_demo):
    root, manifest = tiny_demo
    _add_ranks(root, manifest, ["1", "2", "3"])
    result = run_ok(open_shell(root), "vc --across ranks --rank all")
    assert result.summary.rank_divergence == []
    assert result.agreeing == ["1", "2", "3"]
    assert json.loads(result.summary_path.read_text())["rank_divergence"] == []
    # a plain vc writes no rank_divergence
    plain = run_ok(open_shell(root), "vc")
    assert "rank_divergence" not in json.loads(plain.summary_path.read_text())
    assert plain.summary.rank_divergence is None


def test_one_rank_and_a_rank_without_the_step(tiny_demo):
    root, manifest = tiny_demo
    shell = open_shell(root)
    assert "needs two ranks" in run_fail(shell, "vc --across ranks").error
    device, step_dir = _add_ranks(root, manifest, ["1", "2"])
    new_step = str(int(step_dir.name) + 1)
    for rank in ("0", "1"):  # rank 2 has no second step
        rank_step = device.parent / rank / step_dir.relative_to(device)
        _link_copy(rank_step, rank_step.parent / new_step)
    shell = open_shell(root)
    result = run_ok(shell, f"vc --across ranks --step {new_step}")
    assert [pair.rank for pair, _ in result.compares] == ["1"]
    assert result.warnings == [f"debug_0 rank 2 has no step {new_step}; not compared"]
    assert [r["step"] for r in result.summary.results] == [new_step]
    only = run_ok(shell, "vc --across ranks --rank 2")
    assert [r["rank"] for r in only.summary.results] == ["2"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("vc --across ranks --step all", "give --step S"),
        ("vc --across ranks --step 7", "steps: "),
        ("vc --across ranks --rank 0", "reference rank"),
        ("vc --across ranks --rank 9", "ranks: 0, 1"),
        ("vc --across ranks -lt debug_0 -rt debug_1", "drop -lt/-rt"),
        ("vc --across cards", "--across"),
    ],
)
def test_across_ranks_errors_are_one_line(tiny_demo, line, message):
    root, manifest = tiny_demo
    _add_ranks(root, manifest, ["1"])
    assert message in run_fail(open_shell(root), line).error


def test_rank_list_text_joins_consecutive_ranks():
    assert rank_list_text(["1", "2", "3", "4", "5", "6", "7"]) == "1-7"
    assert rank_list_text(["1", "3", "4", "5", "7"]) == "1, 3-5, 7"
    assert rank_list_text(["1", "2"]) == "1, 2"


def _stop_after(monkeypatch, count: int) -> None:
    from precision_shell.compare.pipeline import execute as execute_many

    real = execute_many.run_tasks

    def stop(tasks, *args, **kwargs):
        for n, result in enumerate(real(tasks, *args, **kwargs)):
            if n == count:
                raise KeyboardInterrupt
            yield result

    monkeypatch.setattr(execute_many, "run_tasks", stop)


def test_ranks_run_as_one_engine_run_and_ctrl_c_keeps_what_was_compared(three_ranks, monkeypatch):
    root, _, _ = three_ranks
    whole = run_ok(open_shell(root), "vc --across ranks")
    per_pair = [run.tasks for _, run in whole.compares]
    assert per_pair == [14, 14]
    _stop_after(monkeypatch, 14 + 6)  # inside rank 2's compare, after CONV2 (Index 4)
    outcome = open_shell(root).execute("vc --across ranks")
    assert outcome.error == "vc: interrupted (rank 2 partial); the rows written so far are kept"
    results = outcome.result.summary.results
    assert [(r["rank"], r["partial"]) for r in results] == [("1", False), ("2", True)]
    assert read_result_csv(results[1]["csv"]).rows[-1].index == 5  # 6 files: Index 0-5
    assert [d.first.op for d in outcome.result.divergence] == [CONV2]
    _stop_after(monkeypatch, 5)  # inside rank 1's: rank 2 never started, its CSV is gone
    outcome = open_shell(root).execute("vc --across ranks")
    assert outcome.error == (
        "vc: interrupted (rank 1 partial; rank 2 not begun); the rows written so far are kept"
    )
    assert [r["rank"] for r in outcome.result.summary.results] == ["1"]
    # the pair never begun is named, not lost
    saved = json.loads((outcome.result.out_dir / "summary.json").read_text(encoding="utf-8"))
    assert saved["not_begun"] == [{"rank": "2", "step": "0", "against": "0", "files_total": 14}]
    assert saved["totals"]["not_begun"] == 1 and saved["totals"]["partial"] is True
    assert sorted(p.name for p in outcome.result.out_dir.glob("*.csv")) == [
        Path(outcome.result.summary.results[0]["csv"]).name
    ]


def test_a_rank_cut_short_is_not_said_to_stay_within_the_thresholds(tiny_demo, monkeypatch):
    """Rank 2 leaves rank 0 at CONV1 by 0.2 % (within the thresholds) and is negated at DENSE;
    Ctrl-C after 6 of its 14 files: the table says how far it was read, not "never"."""
    root, manifest = tiny_demo
    _rank2_nudged_then_negated(root, manifest, DENSE)
    whole = run_ok(open_shell(root), "vc --across ranks")
    (diverged,) = whole.divergence
    assert diverged.failing is not None and diverged.failing.op == DENSE
    _stop_after(monkeypatch, 14 + 6)
    outcome = open_shell(root).execute("vc --across ranks")
    assert outcome.error == "vc: interrupted (rank 2 partial); the rows written so far are kept"
    (cut,) = outcome.result.divergence
    assert (cut.first.op, cut.failing, cut.partial) == (CONV1, None, (6, 14))
    row = next(line for line in _render(outcome.result).splitlines() if line.startswith("2 "))
    assert row.split("│")[-1].strip() == "not within the first 6 of 14 files (partial)"


def test_vcs_ni_and_report_show_the_first_failing_pair_not_the_last(tmp_path):
    """No overflow (every pair would fail there): rank 2 alone leaves rank 0; rank 3's CSV,
    written last, is not the op table shown by default, nor ni's rows, nor the report's."""
    from precision_shell.demo.builder import build_demo
    from precision_shell.demo.spec import DemoSpec

    root = tmp_path / "ws"
    manifest = build_demo(root, DemoSpec(size="tiny", faults=(), second_run=False))
    device, _ = _add_ranks(root, manifest, ["1", "2", "3"])
    _negate_outputs(device.parent / "2" / dump_path(root, manifest, CONV2).relative_to(device))
    shell = open_shell(root)
    run_ok(shell, "vc --across ranks")
    text = _render(run_ok(shell, "vcs"))
    assert "first: rank 2 vs rank 0 step 0 at " + CONV2 in text
    assert "* the op table below: rank 2 vs rank 0 step 0 " in text
    summary = run_ok(shell, "vcs")
    assert summary.path.name.endswith("_rank2_vs_rank0_step0.csv")
    assert summary.failing_total > 0
    info = run_ok(shell, f"ni {CONV2}")
    assert Path(info.nodes[0].compare_file).name == summary.path.name
    run_ok(shell, f"report -o {tmp_path / 'r.html'}")
    assert summary.path.name in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_across_ranks_on_statistics_dumps_says_it_compares_tensors(tmp_path):
    """QA: `vc --across ranks` on statistics dumps compared 0 rows and said "ranks 1, 2 match
    rank 0 on every compared output" while rank 2 had a 30% wrong constant."""
    from precision_shell.demo.builder import build_demo
    from tests.commands.test_second_dump_dir import _add as _add_dir
    from tests.commands.test_statistics_workspace import _spec

    root = tmp_path / "stats"
    build_demo(root, _spec("stats", ()))
    _add_dir(root, "device")  # rank 1: a copy of rank 0's statistics dumps
    failed = run_fail(open_shell(root), "vc --across ranks")
    assert failed.error == (
        "vc: --across ranks compares tensor dumps; debug_0 rank 0 step 0 holds statistics "
        "dumps (dump_data: stats): vc --rank all compares each rank's statistics with the "
        "benchmark"
    )


def test_a_rank_with_no_output_compared_is_never_said_to_match(tiny_demo):
    """A compare of nothing (every file of rank 1 unreadable) is no match."""
    from tests.commands.test_second_dump_dir import _add as _add_dir
    from tests.commands.test_second_dump_dir import _step_dir

    root, _ = tiny_demo
    _add_dir(root, "device")
    rank1 = _step_dir(root).parents[3] / "1"
    for f in [p for p in rank1.rglob("*") if p.is_file()]:
        f.unlink()  # a hard link: replaced, the original kept
        f.write_bytes(b"junk")
    result = run_ok(open_shell(root), "vc --across ranks")
    assert result.agreeing == [] and result.compared_nothing == ["1"]
    text = _render(result)
    assert "match rank 0" not in text and "matches rank 0" not in text
    assert "rank 1 has no output compared with rank 0: nothing is known of them" in text


def test_a_rank_with_a_benchmark_of_its_own_is_said_to_differ_by_design(tiny_demo):
    """QA: with tf/dump/rank1/ (a card fed its own batch), `vc --across ranks` reported rank 1
    diverging from rank 0 with no word that this is expected."""
    import shutil

    from tests.commands.test_second_dump_dir import _add as _add_dir

    root, _ = tiny_demo
    _add_dir(root, "device")
    bench = root / "precision_data" / "tf" / "dump"
    (bench / "rank1").mkdir()
    for f in bench.glob("*.npy"):
        shutil.copy(f, bench / "rank1" / f.name)
    result = run_ok(open_shell(root), "vc --across ranks")
    assert result.warnings == [
        "rank 1 step 0 has a benchmark of its own (tf/dump/rank1/, rank 0's: tf/dump/): it was "
        "fed other data, so it differs from rank 0 whatever its kernels; vc --rank all --step 0 "
        "compares each rank with its own benchmark"
    ]
    assert result.warnings[0] in " ".join(_render(result).split())


def test_across_ranks_needs_the_max_abs_error_it_tells_divergence_by(three_ranks):
    """QA: `vc --alg red --across ranks` said "ranks 1, 2 match rank 0" of a rank that parts
    (divergence is told by MaxAbsoluteError, which --alg left uncomputed)."""
    shell = open_shell(three_ranks[0])
    refused = run_fail(shell, "vc --across ranks --alg red")
    assert refused.error == (
        "vc: --across ranks tells where a rank parts from the reference by MaxAbsoluteError: "
        "add mae to --alg"
    )
    assert run_ok(shell, "vc --across ranks --alg red,mae").divergence


def test_a_rank_that_matches_with_the_same_nan_inf_says_why_its_rows_fail(tiny_demo):
    """QA: a rank of the reference's very bytes, inf at l2_loss/Sum on both: "rank 1 matches
    rank 0 on every compared output", while vcs counted its rows failing. Both are true; the
    view now says so."""
    root, manifest = tiny_demo
    _add_ranks(root, manifest, ["1"])
    result = run_ok(open_shell(root), "vc --across ranks")
    assert result.agreeing == ["1"]
    ((pair, run),) = [(p, r) for p, r in result.compares if p.rank == "1"]
    assert run.tally.failing  # the same inf on both ranks fails the rule
    text = _render(result)
    n = len(run.tally.failing)
    assert (
        f"rank 1: {n} output{'s' if n != 1 else ''} {'fail' if n != 1 else 'fails'} the "
        "thresholds against rank 0 all the same: both hold the same NaN/inf (first: "
        f"{run.tally.failing[0].op_name})"
    ) in " ".join(text.split())
