"""`ac` and `ac -c` through the dispatcher on the tiny demo, and what they print."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console

import precision_shell.render.views  # noqa: F401  (registers the views)
from precision_shell.commands.autocheck import AutoCheck
from precision_shell.compare.results.schema import read_result_csv
from precision_shell.formats.fusion_result import read_fusion_result
from precision_shell.render.output import Renderer
from tests.commands.shell_fixture import CONV2, open_shell, run_ok
from tests.commands.test_second_dump_dir import _add


def render(result) -> str:
    console = Console(record=True, width=240, color_system=None, highlight=False)
    Renderer(console, console).result(result)
    return console.export_text()


def panel_lines(result) -> list[str]:
    """The printed lines, each without the panel's borders and padding."""
    return [line.strip(" │") for line in render(result).splitlines()]


@pytest.fixture
def demo(tiny_demo):
    root, manifest = tiny_demo
    return root, manifest, open_shell(root)


def test_ac_says_what_it_checked_without_comparing(demo):
    root, manifest, shell = demo
    check = run_ok(shell, "ac")
    assert isinstance(check, AutoCheck)
    passes = read_fusion_result(manifest.fusion_file.replace(manifest.root, str(root), 1))
    listed = [(u.kind, u.name, u.match_times, u.effect_times) for u in check.fusion if u.kind]
    assert listed == [(p.kind, p.name, p.match_times, p.effect_times) for p in passes]
    conv_pass = next(u for u in check.fusion if u.name == "ConvBatchnormFusionPass")
    assert (conv_pass.kind, conv_pass.match_times, conv_pass.effect_times) == ("graph_fusion", 3, 3)
    # the device ops each pass produced, from their pass_name attribute
    fused = [
        op.name
        for op in manifest.device_ops
        if len(op.original_op_names) > 1 and op.type == "Conv2D"
    ]
    assert list(conv_pass.device_ops) == fused
    (finding,) = check.overflows
    assert finding.op == manifest.overflow_op == "l2_loss/Sum"
    assert finding.file.startswith("Opdebug.Node_OpDebug.")
    assert finding.texts == ("floating-point overflow", "overflow converting FP32/INT32 to FP16")
    assert finding.count == 1 and [t.label for t in finding.tensors] == ["input 0", "output 0"]
    assert finding.tensors[1].stats.inf_count == finding.tensors[1].stats.count  # all inf
    assert check.overflow_errors == []
    assert finding.places == []  # one card, one step: nothing to tell apart
    # the demo's only Cast is float32 -> float16: a note, not a loss of values
    assert [(c.src, c.dst, c.note) for c in check.casts] == [("DT_FLOAT", "DT_FLOAT16", True)]
    assert check.run_pair == ("debug_0", "debug_1") and check.run_diffs == []
    assert check.compare is None and check.summary is None and check.diagnosis is None
    assert check.error_message is None
    assert not (root / "precision_data" / "temp" / "vector_compare").exists()
    text = render(check)
    assert "ConvBatchnormFusionPass" in text
    assert "Overflow #1: l2_loss/Sum [ReduceSumD]" in text
    lines = panel_lines(check)
    assert f"Opdebug file: {finding.file}" in lines
    assert "tensors of its overflow dump" in lines
    assert "overflow converting FP32/INT32 to FP16" in text
    assert "Dangerous casts" in text and "note: float narrowing" in text
    assert "compare not run" in text


def test_ac_c_runs_vc_then_vcs(demo):
    root, manifest, shell = demo
    check = run_ok(shell, "ac -c")
    assert check.compare is not None and check.summary is not None
    csv_path = check.compare.primary.csv_path
    assert csv_path.is_file() and check.summary.path == csv_path
    # ac turns overflow detection on
    assert "OverFlow" in read_result_csv(csv_path).header
    # judged by the default rule (cosine, and relative Euclidean distance > 0.05)
    assert [v.op for v in check.summary.ops][:2] == [CONV2, "conv3/Conv2Dres/addrelu3/Relu"]
    everything = run_ok(shell, f"vcs -f {csv_path} -l 0")
    assert {"l2_loss/Sum", manifest.long_name_op} <= {v.op for v in everything.ops}
    assert check.summary.failing_total == len(everything.ops)
    # the same answer vcs gives on that file
    vcs = run_ok(shell, f"vcs -f {csv_path} -l {len(check.summary.ops)}")
    assert [v.op for v in vcs.ops] == [v.op for v in check.summary.ops]
    text = render(check)
    assert "vc: device vs benchmark" in text
    assert f"[4] [Conv2D] {CONV2}" in text
    assert "first outputs failing the thresholds" in text
    # diagnosis: the wrong constant first (it runs first: index 4), the overflow second
    d = check.diagnosis
    assert [c.op for c in d.causes] == [CONV2, "l2_loss/Sum"]
    assert d.causes[1].reason.startswith("NaN/inf born here")
    assert d.baseline == CONV2  # what the older tools report: the first op below 0.98
    assert check.root_cause.cause.op == CONV2
    assert check.root_cause.next_commands[0] == f"ni {CONV2} -s 2"
    assert check.root_cause.next_commands[1].startswith("cp Conv2D.conv2_Conv2Drelu2_Relu.")
    assert "Root cause" in text
    assert "other candidates: l2_loss/Sum (its replay proves an overflow born there)" in text
    summary = json.loads(check.compare.summary_path.read_text())["diagnosis"]
    assert [c["op"] for c in summary["root_causes"]] == [CONV2, "l2_loss/Sum"]
    second, first = summary["root_causes"]  # first: the overflow, second: the wrong constant
    assert set(first) == {
        "op",
        "type",
        "index",
        "reason",
        "evidence",
        "own_error",
        "inherited_error",
        "isolated_error",
        "replay",
        "measures",
    }
    assert second["measures"]["output_cosine"] < 0.98
    # both candidates replayed: exact kernels (the overflow's own error is 0 ULP: the exact
    # sum exceeds float16; the wrong constant's conv computes exactly what it was given)
    assert (first["evidence"], second["evidence"]) == ("replay", "replay")
    assert first["own_error"]["max_ulp"] == 0.0 and first["replay"]["overflow"] > 0
    assert "the overflow happens here" in first["replay"]["verdict"]
    assert second["own_error"]["max_ulp"] <= 1.0
    assert second["inherited_error"]["cosine"] == pytest.approx(
        second["measures"]["output_cosine"], abs=1e-3
    )
    assert (
        "constant inputs (weights, bias, scale) or its attributes" in (second["replay"]["verdict"])
    )
    # fed the benchmark's own inputs, the wrong constant's conv is still off (the folded
    # filter differs); the overflow's sum matches the benchmark from its inputs
    assert (first["replay"]["constants_differ"], second["replay"]["constants_differ"]) == (
        False,
        True,
    )
    assert "from the benchmark's own inputs its output is still" in second["replay"]["verdict"]
    assert second["isolated_error"]["relative_euclidean_distance"] > 0.01
    assert first["isolated_error"]["relative_euclidean_distance"] < 1e-3
    assert summary["replay"]["constants_differ"] == [CONV2]
    assert summary["replay"]["mode"] == "candidates" and summary["replay"]["kernel_wrong"] == []
    assert "own error" in text
    assert "replay (candidates, then the ops before the first fault they proved): " in text
    assert any(
        a["detection"] == "float16 overflow" and a["op"] == "l2_loss/Sum" for a in summary["advice"]
    )


def test_ac_l_limits_overflows_and_failing_ops(demo):
    _, _, shell = demo
    check = run_ok(shell, "ac -c -l 1")
    assert len(check.overflows) == 1
    assert [v.op for v in check.summary.ops] == [CONV2]
    assert check.summary.failing_total == len(check.compare.primary.tally.failing)


def test_ac_with_a_corrupt_linked_op_dump_still_names_the_op(demo):
    root, manifest, shell = demo
    overflow_dir = root / "precision_data" / "overflow"
    linked = [
        p for p in overflow_dir.rglob("*") if p.is_file() and not p.name.startswith("Opdebug")
    ]
    assert linked
    for path in linked:
        path.write_bytes(b"\x00" * 4)
    check = run_ok(shell, "ac")
    (finding,) = check.overflows
    assert finding.op == "l2_loss_Sum"  # the name in the file name, sanitized
    assert len(check.overflow_errors) == 1 and str(linked[0]) in check.overflow_errors[0]


def _overflow_step_dir(root: Path) -> Path:
    """The demo's Opdebug file and its op's dump: `<ts>/0/<graph>/<model>/0/`."""
    return next((root / "precision_data" / "overflow").rglob("Opdebug*")).parent


def _copy_overflow(step_dir: Path, rank: str, step: str) -> None:
    rank_dir = step_dir.parents[2]
    new = rank_dir.parent / rank / step_dir.relative_to(rank_dir).parent / step
    shutil.copytree(step_dir, new)


def test_ac_names_the_ranks_and_steps_of_one_overflow_on_several_cards(demo):
    root, _, _ = demo
    step_dir = _overflow_step_dir(root)
    assert (step_dir.parents[2].name, step_dir.name) == ("0", "0")
    _copy_overflow(step_dir, "1", "0")
    _copy_overflow(step_dir, "2", "10")
    check = run_ok(open_shell(root), "ac")
    (finding,) = check.overflows
    assert finding.places == [("0", "0"), ("1", "0"), ("2", "10")] and finding.count == 3
    lines = panel_lines(check)
    assert f"Opdebug file: {finding.file}  on ranks 0, 1 step 0; rank 2 step 10" in lines
    assert not any("identical" in line for line in lines)
    assert "tensors of its overflow dump, rank 0 step 0" in lines


def test_ac_names_the_rank_and_step_of_an_overflow_when_the_run_has_several(demo):
    """One Opdebug dir, on card 2 at step 10, while the device run dumps two cards."""
    root, _, _ = demo
    step_dir = _overflow_step_dir(root)
    _copy_overflow(step_dir, "2", "10")
    shutil.rmtree(step_dir.parents[2])
    _add(root, "device")
    check = run_ok(open_shell(root), "ac")
    (finding,) = check.overflows
    assert finding.places == [("2", "10")]
    assert f"Opdebug file: {finding.file}  on rank 2 step 10" in panel_lines(check)


def test_ac_counts_repeats_of_an_overflow_in_one_rank_and_step(demo):
    """A loop overflowing twice on card 0 and once on card 1: both cards named, and the count."""
    root, _, _ = demo
    step_dir = _overflow_step_dir(root)
    _copy_overflow(step_dir, "1", "0")
    for f in list(step_dir.iterdir()):
        kind, op, task, stream, ts = f.name.split(".")
        shutil.copy(f, f.with_name(f"{kind}.{op}.12.{stream}.{int(ts) + 20000}"))
    check = run_ok(open_shell(root), "ac")
    (finding,) = check.overflows
    assert finding.places == [("0", "0"), ("1", "0")] and finding.count == 3
    assert f"Opdebug file: {finding.file}  on ranks 0, 1 step 0  (x3 identical)" in panel_lines(
        check
    )


def test_ctrl_c_in_the_diagnosis_keeps_the_compare_and_says_so(demo, monkeypatch):
    """QA: Ctrl-C during `ac -c`'s diagnosis printed only "interrupted": nothing of the
    compare it had finished and kept, nor how to get the diagnosis."""
    import precision_shell.commands.autocheck as autocheck

    root = demo[0]

    def interrupted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise KeyboardInterrupt

    monkeypatch.setattr(autocheck, "diagnose_compare", interrupted)
    outcome = open_shell(root).execute("ac -c")
    assert outcome.interrupted and outcome.result is not None
    check = outcome.result
    assert check.compare is not None and check.compare.summary.cut_text() is None
    assert check.diagnosis is None and check.diagnosis_skipped == "interrupted (Ctrl-C)"
    assert outcome.error == (
        "ac: diagnosis interrupted (Ctrl-C); the compare above is whole and kept (vcs, report "
        "read it): ac -c again compares and diagnoses"
    )
    assert "diagnosis" not in json.loads(check.compare.summary_path.read_text())
    # the terminal shows the compare and says why no diagnosis follows
    text = render(check)
    assert "vc: device vs benchmark" in text and "interrupted (Ctrl-C)" in text
