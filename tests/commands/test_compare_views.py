"""What `vc`/`vcs` print: the live progress bar, and markup-like names printed as they are."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

import precision_shell.render.compare_views  # noqa: F401  (registers the views)
from precision_shell.commands.compare_summary import CompareSummary
from precision_shell.compare.results.schema import read_result_csv
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.progress import ProgressLabels, Tick
from precision_shell.render.output import Renderer
from precision_shell.render.progress import live_progress_factory
from tests.commands.shell_fixture import open_shell, run_ok


def render(result) -> str:
    console = Console(record=True, width=240, color_system=None, highlight=False)
    Renderer(console, console).result(result)
    return console.export_text()


def test_progress_counts_files_and_tensors_and_shows_a_rate():
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=150, color_system=None)
    sink = live_progress_factory(console)(ProgressLabels("vc", "files", "tensors"))
    sink.start(3, 0)
    sink.advance(Tick(bytes=1_000_000, items=2))
    sink.advance(Tick(bytes=1_000_000, items=3))
    sink.stop()
    text = out.getvalue()
    assert "0/3 files, 0 tensors" in text
    assert "2/3 files, 5 tensors" in text and " MB/s" in text


def test_vcs_prints_names_that_look_like_markup_verbatim(tiny_demo_shared, tmp_path):
    root, _ = tiny_demo_shared
    path = tmp_path / "markup.csv"
    path.write_text(
        "Index,OpType,NPUDump,GroundTruth,TensorIndex,CosineSimilarity,CompareFailReason\n"
        "0,[bold]T,[/x]op,[red]gt,[/x]op:output:0,0.5,\n"
        "1,T,odd,gt,no-index-here,0.5,\n",
        encoding="utf-8",
    )
    shell = open_shell(root)
    result = run_ok(shell, f"vcs -f {path}")
    assert [v.op for v in result.ops] == ["[/x]op", "odd"]
    text = render(result)
    assert "[/x]op" in text and "[red]gt" in text and "no-index-here" in text
    assert "2 of 2 ops fail (CosineSimilarity < 0.98 fails)" in text
    assert read_result_csv(path).rows[1].kind == ""


def test_vc_summary_table_lists_reasons_and_the_first_ops_below(tiny_demo_shared):
    root, manifest = tiny_demo_shared
    result = run_ok(open_shell(root), "vc")
    text = render(result)
    assert f"{result.primary.tally.compared} of 37 rows (14/14" in text
    assert "not compared" in text and "8 x constant input (no benchmark)" in text
    failing = len(result.primary.tally.failing)
    assert f"outputs failing the thresholds  {failing}" in text
    assert manifest.faults[0].device_op in text.split("first outputs failing the thresholds")[1]
    assert "vc: device vs device" in text


def test_vcs_calls_rows_it_could_not_compare_so_not_failing():
    """`not_compared.failed` (rows without a compare) is not `results[].failed` (failing
    outputs): vcs does not call it "failed"."""
    result = CompareSummary(
        path=Path("r.csv"),
        rule=ThresholdRule.default(),
        columns=[],
        shown_metrics=[],
        ops=[],
        failing_total=0,
        compared_ops=2,
        rows=4,
        compared_rows=2,
        constant_inputs=1,
        not_compared=1,
    )
    assert (
        "2 of 4 tensors compared; not compared: 1 constant inputs; could not be compared: 1"
        in render(result).splitlines()
    )


def test_vcs_lists_the_tensors_it_could_not_compare_and_why(tiny_demo):
    """QA Q27 #3: `ac` says "vcs lists why" of tensors that could not be compared; vcs gave
    only their count. Both summaries (the columns cache's and the rows') list them."""
    from precision_shell.commands.compare_summary import summarize

    root = tiny_demo[0]
    for path in (root / "precision_data" / "tf" / "dump").glob("dense_BiasAdd.0.*.npy"):
        path.unlink()
    shell = open_shell(root)
    # vc counts them by reason (its failed rows group them) and says where each is listed
    vc_text = render(run_ok(shell, "vc"))
    assert "2 x not found" in vc_text and "vcs lists each tensor and its reason" in vc_text
    result = run_ok(shell, "vcs")
    got = [(r.op_name, r.tensor_index, r.reason) for r in result.uncompared]
    assert got == [
        ("dense/MatMul", "dense/MatMul:output:0", "benchmark dense_BiasAdd.0.*.npy not found"),
        ("softmax/Softmax", "softmax/Softmax:input:0", "benchmark dense_BiasAdd.0.*.npy not found"),
    ]
    assert result.not_compared == 2
    lines = render(result).splitlines()
    assert "could not be compared (2)" in [ln.strip() for ln in lines]
    assert any(
        "dense/MatMul:output:0" in ln and "dense_BiasAdd.0.*.npy not found" in ln for ln in lines
    )
    rows = summarize(read_result_csv(result.path), result.rule, None)
    assert [(r.op_name, r.reason) for r in rows.uncompared] == [(o, w) for o, _, w in got]
    # -l caps the list as it caps the ops, and says so
    capped = run_ok(shell, "vcs -l 1")
    assert [r.op_name for r in capped.uncompared] == ["dense/MatMul"]
    assert "could not be compared (2; the first 1 shown, -l 0 shows all)" in render(capped)
