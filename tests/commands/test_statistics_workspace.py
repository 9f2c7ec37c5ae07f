"""Statistics-first, end to end: demo workspaces whose device run dumped statistics only
(`DemoSpec(dump_data="stats")`), with planted faults, through vc, vcs, ac -c, dump_config, ls,
ni, pt and dc. A tensor-dump twin of the same spec is the oracle for the recorded statistics
and for the size estimate of the targeted dump."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from precision_shell.compare.statistics.table import read_statistics_csv
from precision_shell.demo.builder import build_demo
from precision_shell.demo.spec import DemoManifest, DemoSpec, Fault
from precision_shell.formats.benchmark import load_benchmark
from precision_shell.formats.npu_dump import read_dump_header
from tests.commands.shell_fixture import decoded, open_shell, rendered, run_fail, run_ok
from tests.commands.test_second_dump_dir import _add

LOCAL_OP = "block1/conv2/Conv2Dblock1/relu2/Relu"
NAN_OP = "dense/MatMul"
CONV1 = "conv1/Conv2Drelu1/Relu"
BLOCK1_CONV3 = "block1/conv3/Conv2Dblock1/res/addblock1/relu3/Relu"
FAULTS = (Fault("local_error", "block1/conv2/Conv2D", 0.3), Fault("nan_birth", "dense/MatMul", 2))


def _spec(dump_data: str, faults: tuple[Fault, ...] = FAULTS, **knobs: object) -> DemoSpec:
    base: dict = dict(size="small", seed=3, faults=faults, second_run=False)
    base.update(knobs)
    return DemoSpec(dump_data=dump_data, **base)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, DemoManifest, Path, DemoManifest]:
    """The statistics workspace and its tensor-dump twin (same spec, same values)."""
    stats_root = tmp_path_factory.mktemp("stats")
    tensor_root = tmp_path_factory.mktemp("tensor")
    return (
        stats_root,
        build_demo(stats_root, _spec("stats")),
        tensor_root,
        build_demo(tensor_root, _spec("tensor")),
    )


def _dump_of(root: Path, manifest: DemoManifest, op: str) -> Path:
    record = next(o for o in manifest.device_ops if o.name == op)
    assert record.dump_file is not None
    return root / "precision_data" / record.dump_file


def test_vc_writes_a_statistics_compare_whose_cells_hold_both_sides(pair) -> None:
    stats_root, _, tensor_root, tensor_manifest = pair
    shell = open_shell(stats_root)
    result = run_ok(shell, "vc")
    assert not result.primary.against_device  # .npy benchmark tensors on the right
    summary = json.loads(result.summary_path.read_text())
    assert summary["mode"] == "statistics"
    assert summary["files_done"] == summary["files_total"] == 16
    assert {f["op"] for f in summary["failing"]} == {LOCAL_OP, NAN_OP, "softmax/Softmax"}
    csv_path = Path(summary["csv"])
    assert csv_path.name.startswith("statistics_")
    rows = read_statistics_csv(csv_path)
    conv1 = next(r for r in rows if r.op_name == CONV1 and r.kind == "output")
    # the device side: what the device recorded, on the stored NC1HWC0 tensor (pads included)
    stored = decoded(_dump_of(tensor_root, tensor_manifest, CONV1), "output", 0).astype(np.float64)
    assert conv1.format == "NC1HWC0" and conv1.shape == stored.shape
    device_norm, bench_norm, allowed = conv1.statistic("l2norm")
    assert device_norm == pytest.approx(
        math.sqrt(float(np.dot(stored.ravel(), stored.ravel()))), rel=1e-12
    )
    # the benchmark side: the .npy in float64
    bench = np.asarray(
        load_benchmark(next((tensor_root / "precision_data/tf/dump").glob("relu1_Relu.*.npy"))),
        dtype=np.float64,
    )
    assert bench_norm == pytest.approx(float(np.linalg.norm(bench.ravel())), rel=1e-12)
    assert allowed == pytest.approx(8 * 2.0**-11 * bench_norm, rel=1e-12)
    # like with like: 24 channels stored as 32, the 8 pad channels are zeros
    n, c1, h, w, c0 = stored.shape
    assert conv1.pad_count == n * h * w * (c1 * c0 - 24)
    assert conv1.real_count == bench.size
    device_mean, bench_mean, _ = conv1.statistic("mean")
    assert device_mean == pytest.approx(stored.sum() / bench.size, rel=1e-9)  # rescaled
    assert abs(device_mean - bench_mean) < 2.0**-11 * 8 * bench_norm / math.sqrt(bench.size)
    assert conv1.verdict == "pass"
    local = next(r for r in rows if r.op_name == LOCAL_OP and r.kind == "output")
    assert local.verdict == "deviates" and local.main_statistic == "l2norm"
    nan = next(r for r in rows if r.op_name == NAN_OP and r.kind == "output")
    assert nan.verdict == "nonfinite" and nan.counts["nan_count"][0] >= 1
    assert nan.counts["nan_count"][1] == 0
    weights = next(r for r in rows if r.op_name == NAN_OP and r.kind == "input" and r.slot == 1)
    assert weights.verdict == "not compared" and "constant input" in weights.reason


def test_vc_alg_is_refused_on_statistics_dumps(pair) -> None:
    """--alg picks tensor metrics; a statistics compare would ignore it without a word."""
    refused = run_fail(open_shell(pair[0]), "vc --alg cos")
    assert refused.error.endswith(
        "vc: --alg picks the metrics of a tensor compare; these are statistics dumps, "
        "compared by the statistics they hold (drop --alg)"
    )


def test_ac_names_the_planted_faults_first_and_writes_their_dump_config(pair) -> None:
    stats_root, _, tensor_root, tensor_manifest = pair
    shell = open_shell(stats_root)
    check = run_ok(shell, "ac -c --depth 0 --dump-path /data/dump")
    ops = [s.op for s in check.statistics.suspects]
    assert ops[:2] == [NAN_OP, LOCAL_OP]
    assert check.statistics.suspects[0].kind == "nonfinite birth"
    assert check.statistics.suspects[1].kind == "local deviation"
    assert "softmax/Softmax" not in ops  # its NaN came in through its input
    # ac's NaN/inf origin reads the statistics' counts (there are no tensors to scan)
    (origin,) = check.nonfinite
    assert origin.first is not None and origin.first.op == NAN_OP
    assert origin.first.file.endswith(".csv") and origin.first.nan >= 1
    summary = json.loads(check.statistics_compare.summary_path.read_text())
    causes = summary["diagnosis"]["root_causes"]
    assert [c["op"] for c in causes[:2]] == [NAN_OP, LOCAL_OP]
    assert causes[1]["evidence"] == "statistics" and causes[1]["measures"]["statistic"] == "l2norm"
    files = check.statistics.dump_config
    acl = json.loads(files.acl_json.read_text())["dump"]
    assert acl["dump_data"] == "tensor" and acl["dump_mode"] == "all"
    assert acl["dump_path"] == "/data/dump" and acl["dump_step"] == "0"
    assert acl["dump_list"][0]["layer"] == [LOCAL_OP, NAN_OP]  # execution order, depth 0
    session = files.session_options.read_text()
    assert f"tf.compat.as_bytes({LOCAL_OP + ' ' + NAN_OP!r})" in session
    assert 'parameter_map["dump_data"].s = tf.compat.as_bytes("tensor")' in session
    # the estimate against the real tensor bytes of those ops' dump files (inputs + outputs)
    real = 0
    for op in (LOCAL_OP, NAN_OP):
        header = read_dump_header(str(_dump_of(tensor_root, tensor_manifest, op)))
        real += sum(meta.size for meta in (*header.inputs, *header.outputs))
    estimate = json.loads(files.summary.read_text())["estimate_bytes"]
    assert abs(estimate - real) <= 0.01 * real
    full = sum(
        sum(m.size for m in (*h.inputs, *h.outputs))
        for h in (
            read_dump_header(str(p))
            for p in (tensor_root / "precision_data/npu/debug_0/dump").rglob("*.*.*")
        )
        if h is not None
    )
    assert files.plan.full_bytes == pytest.approx(full, rel=0.01)


def test_dump_config_from_summary_takes_producers_to_depth(pair) -> None:
    stats_root, *_ = pair
    shell = open_shell(stats_root)
    check = run_ok(shell, "ac -c")
    result_dir = check.statistics_compare.out_dir
    out = stats_root / "cfg"
    files = run_ok(shell, f"dump_config --from-summary {result_dir} --depth 1 -o {out}")
    layer = json.loads(files.acl_json.read_text())["dump"]["dump_list"][0]["layer"]
    # each suspect and its nearest dumped producers (through GE's task-less Reshape)
    assert set(layer) == {LOCAL_OP, "conv3/Conv2Dres/addrelu3/Relu", NAN_OP, "trans_TransData_2"}
    assert files.acl_json.parent == out
    outcome = run_fail(shell, "dump_config")
    assert "--from-summary" in outcome.error


def test_healthy_float16_drift_is_not_a_suspect(tmp_path: Path) -> None:
    """A deep stack whose float16 drift brings the last conv near cosine 0.99: no verdict
    cries wolf, no suspect, no dump config."""
    spec = _spec("stats", (), size="tiny", blocks=72, branch_gain=4.0, fp32_head=True, seed=0)
    build_demo(tmp_path, spec)
    check = run_ok(open_shell(tmp_path), "ac -c")
    assert check.statistics.suspects == []
    assert check.statistics.nonfinite_sources == []  # no source holds NaN/inf
    assert check.statistics.dump_config is None
    rows = check.statistics_compare.primary.rows
    assert not [r for r in rows if r.deviates]
    # drift is there, and named as such
    assert any(r.verdict == "drift" for r in rows)


def test_a_local_error_under_drift_is_named_first(tmp_path: Path) -> None:
    spec = _spec(
        "stats",
        (Fault("local_error", "block8/conv2/Conv2D", 0.3),),
        size="tiny",
        blocks=24,
        branch_gain=4.0,
        fp32_head=True,
        seed=5,
    )
    build_demo(tmp_path, spec)
    check = run_ok(open_shell(tmp_path), "ac -c")
    assert check.statistics.suspects[0].op == "block8/conv2/Conv2Dblock8/relu2/Relu"


def test_every_command_sees_the_statistics_files(pair) -> None:
    stats_root, *_ = pair
    shell = open_shell(stats_root)
    counts = run_ok(shell, "ls")
    assert counts.dump_files == {"debug_0": (0, 16)}
    info = run_ok(shell, f"ni {NAN_OP}").nodes[0]
    assert info.statistics is not None
    assert [r.label for r in info.statistics.rows] == ["input 0", "input 1", "input 2", "output 0"]
    assert info.dump_files[-1].endswith(".csv")
    # the device's mean holds a padded layout's zeros: said beside them, as pt says it (QA)
    assert "values the device recorded on the stored layout (pads included)" in " ".join(
        rendered(run_ok(shell, f"ni {NAN_OP}"), width=400).split()
    )
    shown = run_ok(shell, f"pt {NAN_OP}")
    out = shown.rows[-1]
    assert out.kind == "output" and out.values["nan_count"] >= 1 and out.shape == (4, 10)
    outcome = run_fail(shell, f"dc {NAN_OP}")
    assert "only a statistics dump" in outcome.error
    outcome = run_fail(
        shell, f"cp {Path(shown.path).name}:output:0 {Path(shown.path).name}:output:0"
    )
    assert "statistics dump" in outcome.error
    run_ok(shell, "vc")
    view = run_ok(shell, "vcs")
    assert view.deviating_total == 3
    assert [r.op_name for r in view.deviating] == [LOCAL_OP, NAN_OP, "softmax/Softmax"]
    outcome = run_fail(shell, "report")
    assert "statistics compare" in outcome.error


def test_input_data_that_differs_is_named(tmp_path: Path) -> None:
    """The network input fed to the device is not the benchmark's: no dumped op made it."""
    fault = Fault("corrupt_input", "input", 0.5, variant="mean")
    build_demo(tmp_path, _spec("stats", (fault,), size="tiny", seed=25))
    check = run_ok(open_shell(tmp_path), "ac -c")
    first = check.statistics.suspects[0]
    assert (first.op, first.kind) == ("trans_Cast_0", "input data")
    assert first.output.tensor_index == "trans_Cast_0:input:0"
    # the op reading it fails (every output after it only carries it: drift), so the
    # summary a CI gate reads counts it
    summary = json.loads(check.statistics_compare.summary_path.read_text())
    assert summary["failing_outputs"] == 1 and summary["totals"]["failing_outputs"] == 1
    assert [(f["tensor"], f["verdict"]) for f in summary["failing"]] == [
        ("trans_Cast_0:output:0", "input data deviates")
    ]
    rows = check.statistics_compare.primary.rows
    later = [r for r in rows if r.kind == "output" and r.op_name != "trans_Cast_0"]
    assert {r.verdict for r in later if (r.deviation or 0) > 1} == {"drift"}
    assert first.reason.endswith(
        "the network's input data, which no op computes; the two sides were fed different data"
    )


def test_pt_of_a_statistics_file_name_reads_the_rank_given(pair, tmp_path: Path) -> None:
    """Every card writes the same statistics file names: `--rank` picks the card's file."""
    import shutil

    from tests.commands.test_second_dump_dir import _add, _step_dir

    root = tmp_path / "ws"
    shutil.copytree(pair[0], root, symlinks=True)
    rank0_file = next(p for p in _step_dir(root).iterdir() if p.name.endswith(".csv"))
    rank, step = _add(root, "device")
    device = rank0_file.parents[3]  # <ts>/0/<graph>/<model>/<step>/<file>
    shell = open_shell(root)
    assert run_ok(shell, f"pt {rank0_file.name}").path == str(rank0_file)
    mine = run_ok(shell, f"pt {rank0_file.name} --rank {rank} --step {step}")
    assert mine.path == str(device.parent / rank / rank0_file.relative_to(device))


def test_vcs_rank_step_picks_the_statistics_compare_of_that_slice(pair, tmp_path: Path) -> None:
    stats_root, *_ = pair
    root = tmp_path / "ws"
    shutil.copytree(stats_root, root, symlinks=True)
    rank, step = _add(root, "device")  # rank 1: the same files as rank 0
    shell = open_shell(root)
    run_ok(shell, "vc")
    plain = run_ok(shell, "vcs")
    other = run_ok(shell, f"vcs --rank {rank} --step {step}")
    assert other.csv_path.name.endswith(f"_rank{rank}_step{step}.csv")
    assert other.csv_path != plain.csv_path
    assert (plain.slice_label, other.slice_label) == ("rank 0 step 0", f"rank {rank} step {step}")
    assert "the compare of rank 1 step 0" in rendered(other)
    assert "rank 7 was not compared" in run_fail(shell, "vcs --rank 7").error
    run_ok(shell, "ac -c")  # diagnoses rank 0, the first with suspects
    assert run_ok(shell, "vcs").suspects
    elsewhere = run_ok(shell, f"vcs --rank {rank}")
    assert (elsewhere.suspects, elsewhere.diagnosed_elsewhere) == ([], "rank 0 step 0")
    assert (
        "suspects: ac -c diagnosed rank 0 step 0, not this compare; ac -c --rank R --step S "
        "diagnoses this one" in rendered(elsewhere)
    )


def _with_rank_1_from(stats_root: Path, tmp_path: Path, fault: Fault) -> Path:
    """A copy of the statistics workspace with a rank 1 dir holding the dump of another build
    of the same network (so the same benchmark) with `fault` only."""
    root = tmp_path / "ws"
    shutil.copytree(stats_root, root, symlinks=True)
    other = tmp_path / "other"
    build_demo(other, _spec("stats", (fault,)))
    step = next(p for p in (other / "precision_data/npu/debug_0/dump").rglob("*") if p.is_file())
    rank_dir = step.parent.parents[2]
    mine = _add(root, "device")  # the new rank 1 dir, then filled with the other build's files
    target = next(
        p.parent
        for p in (root / "precision_data/npu/debug_0/dump").rglob("*")
        if p.is_file() and p.relative_to(root / "precision_data/npu/debug_0/dump").parts[1] == "1"
    )
    for f in target.iterdir():
        f.unlink()
    for f in step.parent.iterdir():
        shutil.copy(f, target / f.name)
    assert mine == ("1", step.parent.name) and rank_dir.name == "0"
    return root


def test_ac_names_each_card_s_own_suspect_and_dumps_them_all(pair, tmp_path: Path) -> None:
    """rank 0: the planted local error and NaN birth; rank 1: a wrong constant in conv2 only
    (another build of the same network, so the benchmark is the same)."""
    root = _with_rank_1_from(
        pair[0], tmp_path, Fault("wrong_constant", "bn2/FusedBatchNormV3", 0.5)
    )
    check = run_ok(open_shell(root), "ac -c")
    diagnosis = check.statistics
    ops = {s.op for s in diagnosis.suspects}
    others = {where.label: [s.op for s in found] for where, found in diagnosis.others}
    every = ops | {op for found in others.values() for op in found}
    assert {LOCAL_OP, NAN_OP, "conv2/Conv2Drelu2/Relu"} <= every
    assert len(others) == 1  # the card not shown has a suspect of its own, named
    (where,) = others
    assert f"{where}: a suspect of its own: " in rendered(check)
    saved = json.loads(check.statistics_compare.summary_path.read_text(encoding="utf-8"))
    (own,) = saved["diagnosis"]["other_cards"]
    assert f"rank {own['rank']} step {own['step']}" == where
    layer = set(diagnosis.dump_config.plan.ops)
    assert {LOCAL_OP, NAN_OP, "conv2/Conv2Drelu2/Relu"} <= layer


def test_the_card_shown_is_the_one_whose_best_suspect_comes_first(pair, tmp_path: Path) -> None:
    """As for tensor compares: cards are ordered by their top-ranked suspect's position, not
    their earliest suspect's. rank 0's best is the NaN birth in dense/MatMul (index 14; its
    local error in block1/conv2 comes earlier, index 6); rank 1's only one is block1/conv3
    (index 7): rank 1 goes wrong first."""
    root = _with_rank_1_from(pair[0], tmp_path, Fault("local_error", "block1/conv3/Conv2D", 0.3))
    check = run_ok(open_shell(root), "ac -c")
    diagnosis = check.statistics
    assert diagnosis.where == "rank 1 step 0"
    assert [(s.op, s.index) for s in diagnosis.suspects] == [(BLOCK1_CONV3, 7)]
    (where, theirs) = diagnosis.others[0]
    assert where.label == "rank 0 step 0"
    assert [(s.op, s.index) for s in theirs] == [(NAN_OP, 14), (LOCAL_OP, 6)]
    saved = json.loads(check.statistics_compare.summary_path.read_text(encoding="utf-8"))
    assert (saved["diagnosis"]["rank"], saved["diagnosis"]["step"]) == ("1", "0")


def test_nan_in_the_input_data_is_born_there(tmp_path: Path) -> None:
    """The network input fed to the device holds a NaN the benchmark's has not: the NaN was
    born in the data, not in the Cast reading it, and ac -c says so."""
    fault = Fault("corrupt_input", "input", 1, variant="nan")
    build_demo(tmp_path, _spec("stats", (fault,), size="tiny", seed=25))
    check = run_ok(open_shell(tmp_path), "ac -c")
    (first,) = check.statistics.suspects
    assert (first.op, first.kind, first.source) == ("trans_Cast_0", "nonfinite input data", "input")
    assert first.output.tensor_index == "trans_Cast_0:input:0"
    assert "the network's input data (input), which no op computes" in first.reason
    summary = json.loads(check.statistics_compare.summary_path.read_text())
    failing = [(f["tensor"], f["verdict"]) for f in summary["failing"]]
    assert failing[0] == ("trans_Cast_0:output:0", "input data nonfinite")
    # what follows carries it: nonfinite, counted, but no suspect of its own
    assert {v for _, v in failing[1:]} == {"nonfinite"}
    assert summary["totals"]["failing_outputs"] == summary["failing_outputs"] == len(failing)
    cause = summary["diagnosis"]["root_causes"][0]
    assert (cause["op"], cause["kind"], cause["source"]) == (
        "trans_Cast_0",
        "nonfinite input data",
        "input",
    )
    assert cause["measures"]["nan_inf"]["nan_count"] == [1, 0]


def test_nan_in_a_constant_is_born_there(tmp_path: Path) -> None:
    """conv2's folded filter holds a NaN on the device. The benchmark dumps no weights (the
    row is not compared), but conv2's output is NaN where the benchmark's is finite: the
    constant is where it was born, not conv2's kernel."""
    fault = Fault("wrong_constant", "conv2/Conv2D", 1, variant="nan")
    build_demo(tmp_path, _spec("stats", (fault,), size="tiny", seed=25))
    check = run_ok(open_shell(tmp_path), "ac -c")
    first = check.statistics.suspects[0]
    assert (first.op, first.kind) == ("conv2/Conv2Drelu2/Relu", "nonfinite constant")
    assert (first.source, first.output.tensor_index) == (
        "conv2/Conv2D/folded_filter",
        "conv2/Conv2Drelu2/Relu:input:1",
    )
    assert [s.kind for s in check.statistics.suspects].count("nonfinite birth") == 0
    rows = {r.tensor_index: r for r in check.statistics_compare.primary.rows}
    weights = rows["conv2/Conv2Drelu2/Relu:input:1"]
    assert weights.verdict == "constant input nonfinite"
    assert weights.reason.startswith("1 nan on the device; no benchmark of it")
    assert rows["conv2/Conv2Drelu2/Relu:output:0"].verdict == "constant input nonfinite"
    summary = json.loads(check.statistics_compare.summary_path.read_text())
    # the other 7 constants still have no benchmark
    assert summary["not_compared"]["by_reason"] == {"constant input": 7}


def test_an_empty_step_dir_beside_statistics_dumps_has_nothing_to_compare(
    pair, tmp_path: Path
) -> None:
    """An interrupted dump's empty step dir is of neither kind: the statistics compare runs,
    and says the dir held nothing to compare (it was selected, not left out)."""
    from tests.commands.test_second_dump_dir import _step_dir

    root = tmp_path / "ws"
    shutil.copytree(pair[0], root, symlinks=True)
    step = _step_dir(root)
    step.parent.joinpath(str(int(step.name) + 1)).mkdir()
    result = run_ok(open_shell(root), "vc --step all")
    saved = json.loads(result.summary_path.read_text(encoding="utf-8"))
    assert saved["nothing_to_compare"] == [
        {"rank": "0", "step": str(int(step.name) + 1), "reason": "no statistics dump"}
    ]
    assert "not_selected" not in saved
    assert saved["totals"]["nothing_to_compare"] == 1 and saved["totals"]["not_selected"] == 0
