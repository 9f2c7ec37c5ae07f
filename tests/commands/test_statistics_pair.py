"""Statistics compares whose benchmark side is statistics too: `vc -lt A -rt B` with A a
statistics-only dump and B another run's statistics dump, a statistics dump of the benchmark
(written here from the demo's `.npy` in CANN's CSV form, plain layout), a `.npy` dir, or a
tensor dump (its statistics computed in float64); and the reverse of that last one.

The oracles are the recorded CSVs (`read_stats_dump`) and the `.npy` in float64, never the
compare's own numbers."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from precision_shell.cli import main
from precision_shell.compare.pipeline.plan import benchmark_plan
from precision_shell.compare.statistics.judge import judge_rows
from precision_shell.compare.statistics.table import (
    STATISTICS_HEADER,
    StatisticsRow,
    read_statistics_csv,
)
from precision_shell.compare.statistics.values import statistics_of
from precision_shell.demo.builder import build_demo
from precision_shell.demo.spec import DEFAULT_FAULTS, DemoSpec, Fault
from precision_shell.formats.benchmark import load_benchmark
from precision_shell.formats.dtypes import DumpDataType, code_for_numpy
from precision_shell.formats.dump_names import sanitize_dump_name
from precision_shell.formats.stats_dump import StatsRow, read_stats_dump, write_stats_dump
from tests.commands.shell_fixture import CONV1, CONV2, CONV3, open_shell, run_fail, run_ok

DUMPS = "precision_data/npu/{run}/dump"


def _spec(dump_data: str, faults: tuple[Fault, ...] = ()) -> DemoSpec:
    return DemoSpec(dump_data=dump_data, size="tiny", seed=7, faults=faults, second_run=True)


def _dump_dir(root: Path, run: str = "debug_0") -> Path:
    """The one `<time>/<device>` dir of a run's dump."""
    (leaf,) = {p.parent for p in (root / DUMPS.format(run=run)).rglob("*.*.*")}
    return leaf


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A statistics workspace without faults (debug_1 the same run again) and its tensor twin."""
    stats_root = tmp_path_factory.mktemp("stats")
    tensor_root = tmp_path_factory.mktemp("tensor")
    build_demo(stats_root, _spec("stats"))
    build_demo(tensor_root, _spec("tensor"))
    return stats_root, tensor_root


def _benchmark_statistics(root: Path, out: Path, plant: str | None = None) -> Path:
    """The benchmark side as a CPU run dumped in CANN's statistics form: for each statistics
    file of debug_0, a file of the same name whose rows are the statistics of the `.npy` that
    stands for each slot (float64, plain layout, TF's shape). `plant`: that op's outputs are
    taken 1.3 times the `.npy` (a fault of one op's statistics)."""
    ws = open_shell(root).context.workspace
    run = ws.run()
    graph = run.dump_graph()
    assert graph is not None
    plan = benchmark_plan(ws, run, graph, statistics=True)
    out.mkdir()
    for task in plan.tasks:
        device = read_stats_dump(task.device_file)
        rows = []
        for slot in (*device.inputs, *device.outputs):
            mapping = task.mapping(slot.kind, slot.index)
            if mapping.benchmark_path is None:
                continue  # a constant input: the benchmark run dumps no weights
            array = np.asarray(load_benchmark(mapping.benchmark_path))
            if task.op_name == plant and slot.kind == "output":
                array = array * np.float32(1.3)
            code = code_for_numpy(array.dtype)
            rows.append(
                StatsRow(
                    slot.kind,
                    slot.index,
                    DumpDataType(code).name,
                    "ND",
                    tuple(array.shape),
                    array.nbytes,
                    statistics_of(array),
                )
            )
        write_stats_dump(out / Path(task.device_file).name, rows)
    mapping_csv = Path(plan.tasks[0].device_file).parent / "mapping.csv"
    if mapping_csv.exists():  # the long op name's file is stored under a number
        shutil.copy(mapping_csv, out / "mapping.csv")
    return out


def _summary(result) -> dict:
    return json.loads(result.summary_path.read_text())


def _output(rows: list[StatisticsRow], op: str) -> StatisticsRow:
    return next(r for r in rows if r.op_name == op and r.kind == "output")


def _deviating_outputs(rows: list[StatisticsRow]) -> list[str]:
    return [r.op_name for r in rows if r.kind == "output" and r.deviates]


def _recorded(dump_dir: Path, op: str, kind: str = "output", index: int = 0) -> StatsRow:
    """The row a statistics dump file recorded for `op` (found by its name)."""
    stem = op.replace("/", "_")
    (path,) = [p for p in dump_dir.glob("*.csv") if f".{stem}." in p.name]
    row = read_stats_dump(path).row(kind, index)
    assert row is not None
    return row


def test_statistics_benchmark_side_padded_against_unpadded(healthy, tmp_path: Path) -> None:
    """Device NC1HWC0 (8 channels stored as 16) against a plain-layout statistics dump of the
    benchmark: like with like, the same verdicts and numbers as against the `.npy` itself."""
    stats_root, _ = healthy
    bench_dir = _benchmark_statistics(stats_root, tmp_path / "bench_stats")
    shell = open_shell(stats_root)
    pair = run_ok(shell, f"vc -lt debug_0 -rt {bench_dir}")
    summary = _summary(pair)
    assert summary["mode"] == "statistics"
    assert summary["failing_outputs"] == 0 and summary["failing"] == []
    csv_path = Path(summary["csv"])
    assert csv_path.name.startswith("statistics_")
    with csv_path.open(newline="") as fh:
        reader = csv.reader(fh)
        assert tuple(next(reader)) == STATISTICS_HEADER
        cells = {row[4]: dict(zip(STATISTICS_HEADER, row, strict=True)) for row in reader}
    rows = read_statistics_csv(csv_path)
    conv1 = _output(rows, CONV1)
    recorded = _recorded(_dump_dir(stats_root), CONV1)
    npy = np.asarray(
        load_benchmark(next((stats_root / "precision_data/tf/dump").glob("relu1_Relu.0.*.npy"))),
        dtype=np.float64,
    )
    npu_norm, bench_norm, allowed = conv1.statistic("l2norm")
    assert recorded.format == "NC1HWC0" and conv1.format == "NC1HWC0"
    assert npu_norm == recorded.values["l2norm"]
    assert bench_norm == pytest.approx(float(np.linalg.norm(npy.ravel())), rel=1e-12)
    cell = cells[f"{CONV1}:output:0"]
    assert float(cell["RelDiffL2Norm"]) == pytest.approx(
        abs(npu_norm - bench_norm) / bench_norm, rel=1e-9
    )
    assert allowed == pytest.approx(8 * 2.0**-11 * bench_norm, rel=1e-12)
    # like with like: the device's pads taken out, its mean over the real elements
    assert conv1.real_count == npy.size and conv1.pad_count == recorded.element_count - npy.size
    npu_mean, bench_mean, _ = conv1.statistic("mean")
    assert npu_mean == pytest.approx(recorded.values["mean"] * recorded.element_count / npy.size)
    assert bench_mean == pytest.approx(float(npy.mean()), rel=1e-12)
    assert conv1.verdict == "pass"
    # the same compare as against the .npy dir: every verdict, every benchmark number
    direct = run_ok(shell, f"vc -lt debug_0 -rt {stats_root / 'precision_data/tf/dump'}")
    assert _summary(direct)["mode"] == "statistics"
    by_tensor = {r.tensor_index: r for r in read_statistics_csv(Path(_summary(direct)["csv"]))}
    compared = [r for r in rows if r.compared]
    assert len(compared) > 20
    for row in compared:
        twin = by_tensor[row.tensor_index]
        assert row.verdict == twin.verdict, row.tensor_index
        assert row.deviation == pytest.approx(twin.deviation, rel=1e-9, abs=1e-12)
        assert row.statistic("l2norm") == pytest.approx(twin.statistic("l2norm"), rel=1e-12)
        assert (row.real_count, row.pad_count) == (twin.real_count, twin.pad_count)


def test_a_planted_fault_in_the_benchmark_statistics_is_the_only_deviation(
    healthy, tmp_path: Path
) -> None:
    stats_root, _ = healthy
    bench_dir = _benchmark_statistics(stats_root, tmp_path / "planted", plant=CONV2)
    result = run_ok(open_shell(stats_root), f"vc -lt debug_0 -rt {bench_dir}")
    summary = _summary(result)
    assert [f["op"] for f in summary["failing"]] == [CONV2]
    rows = result.primary.rows
    assert _deviating_outputs(rows) == [CONV2]
    conv2 = _output(rows, CONV2)
    assert conv2.verdict == "deviates" and conv2.main_statistic == "l2norm"
    npu_norm, bench_norm, _ = conv2.statistic("l2norm")
    assert bench_norm == pytest.approx(1.3 * npu_norm, rel=0.01)
    # its consumer read the unplanted tensor: its input passes
    conv3_in = next(r for r in rows if r.op_name == CONV3 and r.kind == "input" and r.slot == 0)
    assert conv3_in.verdict == "pass"


def test_two_statistics_runs_same_layout_and_made_here(tmp_path: Path) -> None:
    """debug_0 with a local error in conv2 against debug_1 without it, both statistics dumps
    in the same layouts: compared as recorded; only conv2 deviates, what follows it drifts."""
    build_demo(tmp_path, _spec("stats", (Fault("local_error", "conv2/Conv2D", 0.3),)))
    result = run_ok(open_shell(tmp_path), "vc -lt debug_0 -rt debug_1")
    summary = _summary(result)
    assert summary["mode"] == "statistics"
    assert summary["left"] == "debug_0" and summary["right"] == "debug_1"
    rows = result.primary.rows
    assert _deviating_outputs(rows) == [CONV2]
    assert [f["op"] for f in summary["failing"]] == [CONV2]
    compared = [r for r in rows if r.compared]
    assert compared and all(r.pad_count == 0 and r.real_count == r.count for r in compared)
    conv2 = _output(rows, CONV2)
    left = _recorded(_dump_dir(tmp_path, "debug_0"), CONV2)
    right = _recorded(_dump_dir(tmp_path, "debug_1"), CONV2)
    assert conv2.statistic("l2norm")[:2] == (left.values["l2norm"], right.values["l2norm"])
    assert conv2.statistic("mean")[:2] == (left.values["mean"], right.values["mean"])
    # made here or inherited: conv3 received conv2's error (its input row is drift, judged at
    # conv2); the outputs beyond rounding downstream carry what they received: drift
    conv3_in = next(r for r in rows if r.op_name == CONV3 and r.kind == "input" and r.slot == 0)
    assert conv3_in.verdict == "drift" and conv3_in.deviation == conv2.deviation
    beyond = [r for r in rows if r.kind == "output" and (r.deviation or 0) > 1 and r is not conv2]
    assert "dense/MatMul" in {r.op_name for r in beyond}
    assert {r.verdict for r in beyond} == {"drift"}
    # ops before the fault: bit for bit the same statistics
    assert _output(rows, CONV1).deviation == 0.0
    # the printed title says what the right side is
    assert result.primary.against_device
    assert "vc: device statistics vs another device dump" in _rendered(result)


def test_a_wrong_constant_between_two_runs_fails_the_op_reading_it(tmp_path: Path) -> None:
    """debug_0 with the default wrong constant (bn2, folded into conv2's filter and bias)
    against debug_1 without it: conv2's constant inputs deviate and no op computes them, so
    conv2 fails there; what follows carries it (drift). ac -c -lt/-rt names the constant."""
    build_demo(tmp_path, _spec("stats", DEFAULT_FAULTS))
    shell = open_shell(tmp_path)
    result = run_ok(shell, "vc -lt debug_0 -rt debug_1")
    summary = _summary(result)
    assert summary["failing_outputs"] == 1 and summary["totals"]["failing_outputs"] == 1
    assert [(f["tensor"], f["verdict"]) for f in summary["failing"]] == [
        (f"{CONV2}:output:0", "constant input deviates")
    ]
    rows = result.primary.rows
    verdicts = {r.tensor_index: r.verdict for r in rows if r.op_name == CONV2}
    assert verdicts == {
        f"{CONV2}:input:0": "pass",
        f"{CONV2}:input:1": "constant input deviates",
        f"{CONV2}:input:2": "constant input deviates",
        f"{CONV2}:output:0": "constant input deviates",
    }
    beyond = [r for r in rows if (r.deviation or 0) > 1 and r.op_name != CONV2]
    assert beyond and {r.verdict for r in beyond} == {"drift"}
    assert "constant input deviates" in _rendered(result)
    check = run_ok(shell, "ac -c -lt debug_0 -rt debug_1")
    first = check.statistics.suspects[0]
    assert (first.op, first.kind) == (CONV2, "constant input")
    assert first.output.tensor_index == f"{CONV2}:input:2"  # the bias: 22x, the filter 8x
    diagnosis = _summary(check.statistics_compare)["diagnosis"]
    assert diagnosis["root_causes"][0]["op"] == CONV2
    assert diagnosis["root_causes"][0]["kind"] == "constant input"
    assert check.statistics.dump_config is not None
    shown = _rendered(check)
    assert "Fusion" not in shown and "Suspects (statistics)" in shown
    # what the pair has no use for: one line
    outcome = run_fail(shell, "ac -c -lt debug_0 -rt debug_1 --report")
    assert outcome.error == "ac: --report is for workspace compares, not -lt/-rt dump pairs"
    outcome = run_fail(shell, "ac -lt debug_0 -rt debug_1")
    assert outcome.error == "ac: -lt/-rt go with -c (compare the pair, rank its suspects)"


def test_ac_pair_of_tensor_dumps_says_what_to_run(healthy) -> None:
    """Two tensor dumps are no statistics compare: one line, before any compare."""
    _, tensor_root = healthy
    before = list(tensor_root.rglob("summary.json"))
    outcome = run_fail(open_shell(tensor_root), "ac -c -lt debug_0 -rt debug_1")
    assert outcome.error.startswith("ac: -lt/-rt take two MegEngine/SigmaStar dumps, or a pair")
    assert list(tensor_root.rglob("summary.json")) == before


def _rendered(result: object) -> str:
    import io

    from rich.console import Console

    import precision_shell.render.views  # noqa: F401  (registers the views)
    from precision_shell.render.output import Renderer

    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    Renderer(console, console).result(result)
    return out.getvalue()


def test_a_healthy_pair_of_runs_deviates_nowhere(healthy) -> None:
    stats_root, _ = healthy
    result = run_ok(open_shell(stats_root), "vc -lt debug_0 -rt debug_1")
    summary = _summary(result)
    assert summary["failing_outputs"] == 0 and summary["compared"] > 20
    assert all(r.deviation == 0.0 for r in result.primary.rows if r.compared)


def test_statistics_against_a_tensor_dump_either_way(healthy) -> None:
    """A tensor dump's statistics (float64, as stored) against the statistics dump of the
    same values: the same numbers exactly, whichever side is which."""
    stats_root, tensor_root = healthy
    stats_dir, tensor_dir = _dump_dir(stats_root), _dump_dir(tensor_root)
    shell = open_shell(stats_root)
    for left, right in ((stats_dir, tensor_dir), (tensor_dir, stats_dir)):
        result = run_ok(shell, f"vc -lt {left} -rt {right}")
        summary = _summary(result)
        assert summary["mode"] == "statistics" and summary["failing_outputs"] == 0
        rows = result.primary.rows
        compared = [r for r in rows if r.compared]
        assert len(compared) == len(rows) > 20
        assert all(r.deviation == 0.0 and r.verdict == "pass" for r in compared)
        conv1 = _output(rows, sanitize_dump_name(CONV1))  # dirs, no graph: the files' names
        assert conv1.format == "NC1HWC0" and conv1.pad_count == 0
        recorded = _recorded(stats_dir, CONV1)
        assert conv1.statistic("l2norm")[:2] == (recorded.values["l2norm"],) * 2


def test_exit_status_and_one_line_errors(healthy, tmp_path: Path, monkeypatch) -> None:
    stats_root, _ = healthy
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    assert main([str(stats_root), "--no-cache", "-e", "vc -lt debug_0 -rt debug_1"]) == 0
    # a statistics dump of ops the left run does not have: nothing to pair
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    row = StatsRow("output", 0, "FLOAT", "ND", (2,), 8, {"count": 2.0, "l2norm": 1.0})
    write_stats_dump(stranger / "Add.other_Add.3.0.1700000000000000.csv", [row])
    line = f"vc -lt debug_0 -rt {stranger}"
    assert main([str(stats_root), "--no-cache", "-e", line]) == 1
    outcome = run_fail(open_shell(stats_root), line)
    assert "no op of debug_0 has a dump in" in outcome.error
    for chosen in ("--rank 0", "--step all"):  # "all" is not dropped without a word either
        outcome = run_fail(open_shell(stats_root), f"vc -lt debug_0 -rt debug_1 {chosen}")
        assert outcome.error == (
            "vc: --rank/--step are not taken with a statistics dump pair given by -lt/-rt (vc "
            "--rank/--step compares the workspace's own statistics dumps)"
        )


def _row(fmt: str, shape: tuple[int, ...], dtype: str = "FLOAT16", **values: float) -> StatsRow:
    return StatsRow("output", 0, dtype, fmt, shape, None, {"count": math.prod(shape), **values})


def test_judge_rows_takes_each_side_to_its_real_elements() -> None:
    # the benchmark side padded (8 real of 16 stored), all real values negative: its max 0 is
    # the padding's and is not compared; its mean is rescaled to the real elements
    device = _row("ND", (2, 4), max=-0.5, min=-2.0, mean=-1.0, l2norm=3.0)
    bench = _row("NC1HWC0", (2, 1, 1, 1, 8), max=0.0, min=-2.0, mean=-0.5, l2norm=3.0)
    verdict = judge_rows(device, bench)
    assert verdict.verdict == "pass" and verdict.real_count == 8
    assert verdict.diffs["max"].allowed is None and verdict.diffs["max"].note == "the padding's 0"
    assert verdict.diffs["mean"].benchmark == pytest.approx(-1.0)
    assert any("benchmark max 0 is the padding's" in note for note in verdict.notes)
    # both padded, in different layouts, and no graph to say how many are real: not compared
    other = _row("FRACTAL_NZ", (1, 1, 16, 16), max=0.0, min=-2.0, mean=-1 / 32, l2norm=3.0)
    unknown = judge_rows(bench, other)
    assert unknown.verdict == "not compared" and "real element count" in unknown.notes[0]
    assert judge_rows(bench, other, origin_count=8).verdict == "pass"
    # the coarser dtype of the two sides decides what may differ
    fine = _row("ND", (8,), "FLOAT", l2norm=2.0)
    coarse = _row("ND", (8,), "BF16", l2norm=2.0 * (1 + 2.0**-9))
    allowed = judge_rows(fine, coarse).diffs["l2norm"].allowed
    assert allowed == pytest.approx(8 * 2.0**-8 * coarse.values["l2norm"])
    assert judge_rows(coarse, fine).verdict == "pass"


def test_nan_input_data_between_two_runs_and_on_both(tmp_path: Path) -> None:
    """debug_0 was fed a NaN the fixed debug_1 was not: the input data is where it was born.
    Then both runs fed the same NaN: no difference between the runs (nothing fails, no
    suspect), but ac -c says the input data itself holds NaN."""
    fault = Fault("corrupt_input", "input", 1, variant="nan")
    build_demo(tmp_path, _spec("stats", (fault,)))
    shell = open_shell(tmp_path)
    check = run_ok(shell, "ac -c -lt debug_0 -rt debug_1")
    (first,) = check.statistics.suspects
    assert (first.op, first.kind, first.source) == ("trans_Cast_0", "nonfinite input data", "input")
    assert check.statistics.nonfinite_sources == []
    summary = _summary(check.statistics_compare)
    assert summary["failing"][0]["verdict"] == "input data nonfinite"
    # the same NaN fed to both runs
    left, right = _dump_dir(tmp_path, "debug_0"), _dump_dir(tmp_path, "debug_1")
    for f in right.iterdir():
        f.unlink()
    for f in left.iterdir():
        shutil.copy(f, right / f.name)
    check = run_ok(open_shell(tmp_path), "ac -c -lt debug_0 -rt debug_1")
    assert check.statistics.suspects == []
    summary = _summary(check.statistics_compare)
    assert summary["failing_outputs"] == 0 and summary["totals"]["failing_outputs"] == 0
    (note,) = check.statistics.nonfinite_sources
    assert note.text == (
        "the network's input data (input) holds 1 nan on both sides (read by trans_Cast_0 as "
        "trans_Cast_0:input:0): not a difference between the runs, but what is computed from "
        "it carries it; check the data fed"
    )
    (advice,) = summary["diagnosis"]["advice"]
    assert advice["detection"] == "nonfinite source" and advice["advice"] == note.text
    assert advice["evidence"]["nan_inf"]["nan_count"] == [1, 1]
    assert f"NaN/inf at a source: {note.text}" in " ".join(_rendered(check).split())
