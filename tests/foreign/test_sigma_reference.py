"""Which SigmaStar run is the benchmark, and in what order a per-tensor dir's layers run (QA
Q25 #1, #2, #7, #9): the framework's run beats the float simulator, which beats the fixed
one; per-tensor files are one run in `op_out[i]` order, however many there are."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from precision_shell.compare.results.schema import read_result_csv
from precision_shell.foreign.workspace import FRAMEWORK_IS_BENCHMARK, foreign_layout
from precision_shell.formats.sigmastar_dump import SigmaSpec, write_sigmastar_dump
from precision_shell.shell.dispatcher import Dispatcher
from tests.commands.shell_fixture import open_shell, run_fail, run_ok
from tests.foreign.test_foreign_workspace import _shell as opened_on

LAYERS = ("conv1", "relu1", "pool1", "conv2")
REF = {n: np.linspace(-1, 1, 8, dtype=np.float32) * (k + 1) for k, n in enumerate(LAYERS)}


def _specs(values: dict[str, np.ndarray]) -> list[SigmaSpec]:
    return [SigmaSpec(n, values[n], op_index=k, op_label=n.upper()) for k, n in enumerate(LAYERS)]


def _per_tensor_dir(root: Path, values: dict[str, np.ndarray]) -> Path:
    root.mkdir(parents=True)
    for spec in _specs(values):
        path = root / f"{spec.name}#({spec.values.size},)"
        write_sigmastar_dump(path, [spec], is_float_line=False)
    return root


@pytest.fixture
def shell(tmp_path: Path) -> Dispatcher:
    (tmp_path / "ws" / "precision_data").mkdir(parents=True)
    return open_shell(tmp_path / "ws")


def test_the_float_simulator_against_the_framework_s_run_is_the_sample(tmp_path: Path) -> None:
    """DumpDebug's first step: Float.sim (`isFloat: 1`) against caffe's run (`isFloat: 1`
    too). The sim is wrong at pool1 by 10.5%: caffe's run must be the benchmark (RMSE 0.105,
    failing), not the sim (0.095, passing)."""
    sim = dict(REF, pool1=REF["pool1"] * np.float32(1.105))
    pair = tmp_path / "pair"
    pair.mkdir()
    write_sigmastar_dump(pair / "sigma_outtensor_dump.bin", _specs(sim), is_float=True)
    write_sigmastar_dump(pair / "caffe_NHWC_outtensor_dump.bin", _specs(REF), trailer="none")
    layout = foreign_layout(pair)
    assert layout is not None and layout.rule == FRAMEWORK_IS_BENCHMARK
    assert [e.name for e in layout.entries] == [
        "sigma_outtensor_dump.bin",
        "caffe_NHWC_outtensor_dump.bin",
    ]
    result = run_ok(opened_on(pair), "vc")
    rows = {r.op_name: r for r in read_result_csv(result.csv_path).rows}
    rmse = float(np.abs(sim["pool1"] - REF["pool1"]).sum() / np.abs(REF["pool1"]).sum())
    assert rows["pool1"].metrics["SigmaStarRMSE"] == pytest.approx(rmse, rel=1e-5)
    assert rmse > 0.1 and [r.op_name for r in result.failing] == ["pool1"]


def test_lt_rt_swaps_the_framework_s_run_given_as_the_sample(
    shell: Dispatcher, tmp_path: Path
) -> None:
    caffe, sim = tmp_path / "caffe_NHWC_outtensor_dump.bin", tmp_path / "sigma_outtensor_dump.bin"
    write_sigmastar_dump(caffe, _specs(REF), trailer="none")
    write_sigmastar_dump(sim, _specs(REF), is_float=True)
    result = run_ok(shell, f"vc -lt {caffe} -rt {sim}")
    assert (result.left, result.right) == (str(sim), str(caffe))
    assert result.notes == [
        "-lt caffe_NHWC_outtensor_dump.bin is the framework's run (caffe / onnx / tflite), -rt "
        "sigma_outtensor_dump.bin the float run (isFloat: 1): swapped, the more original run is "
        "the benchmark (right)"
    ]


def test_a_per_tensor_dir_against_the_fixed_simulator_is_the_benchmark(tmp_path: Path) -> None:
    pair = tmp_path / "pair"
    _per_tensor_dir(pair / "NHWC", REF)
    quantized = [
        SigmaSpec(n, np.round(REF[n] / 0.01).astype(np.int16), "SGS_S16", 0.01, 0, op_index=k)
        for k, n in enumerate(LAYERS)
    ]
    write_sigmastar_dump(pair / "sigma_outtensor_dump.bin", quantized, is_float=False)
    layout = foreign_layout(pair)
    assert layout is not None and layout.rule == FRAMEWORK_IS_BENCHMARK
    assert [e.name for e in layout.entries] == ["sigma_outtensor_dump.bin", "NHWC"]


def test_per_tensor_files_are_one_run_in_layer_order(shell: Dispatcher, tmp_path: Path) -> None:
    """relu1 (op_out[1]) is wrong and every later layer inherits it: relu1 is the first
    failing layer, though `conv2#...` sorts before `relu1#...` by name."""
    device = {n: v + (np.float32(0.5) if n != "conv1" else 0) for n, v in REF.items()}
    dev = _per_tensor_dir(tmp_path / "dev" / "NHWC", device)
    ref = _per_tensor_dir(tmp_path / "ref" / "NHWC", REF)
    result = run_ok(shell, f"ac -c -lt {dev} -rt {ref}")
    assert [r.op_name for r in result.rows] == list(LAYERS)
    assert result.causes is not None and result.causes[0].op == "relu1"
    # two files are one run of two layers, not a pair of runs
    two = tmp_path / "two"
    two.mkdir()
    for spec in _specs(REF)[:2]:
        write_sigmastar_dump(two / f"{spec.name}#(8,)", [spec], is_float_line=False)
    layout = foreign_layout(two)
    assert layout is not None and len(layout.entries) == 1 and layout.rule == ""


def test_a_dir_holding_a_tensor_twice_is_refused_naming_both_files(
    shell: Dispatcher, tmp_path: Path
) -> None:
    """QA Q26 #7: per-tensor files beside a whole-network dump in one dir were read as one
    run; each tensor of both came twice and the copies were rows "not compared"."""
    ref = _per_tensor_dir(tmp_path / "ref" / "NHWC", REF)
    write_sigmastar_dump(ref / "caffe_NHWC_outtensor_dump.bin", _specs(REF))
    dev = _per_tensor_dir(tmp_path / "dev" / "NHWC", REF)
    error = run_fail(shell, f"vc -lt {dev} -rt {ref}").error or ""
    assert error == (
        f"{ref}: tensor conv1 is in both caffe_NHWC_outtensor_dump.bin and conv1#(8,): a "
        "dir of per-tensor files must hold each tensor once (give a whole-network dump file "
        "by itself)"
    )


def test_a_quantized_run_named_after_its_framework_stays_the_sample(tmp_path: Path) -> None:
    """QA Q26 #1: `onnx_fixed.bin` (`isFloat: 0`, named after the model's framework) was taken
    for the framework's run and made the benchmark over the float run; only the reference
    writers' float dumps can be the framework's run."""
    scale = 0.01
    fixed = [
        SigmaSpec(
            s.name,
            np.round(s.values / scale).astype(np.int8),
            "SGS_S8",
            scale=scale,
            op_index=s.op_index,
            op_label=s.op_label,
        )
        for s in _specs({n: v / np.float32(4) for n, v in REF.items()})
    ]
    pair = tmp_path / "pair"
    pair.mkdir()
    write_sigmastar_dump(pair / "onnx_fixed.bin", fixed, is_float=False)
    write_sigmastar_dump(pair / "float.bin", _specs({n: v / 4 for n, v in REF.items()}))
    layout = foreign_layout(pair)
    assert layout is not None and layout.rule == "the float run (isFloat: 1) is the benchmark"
    assert [e.name for e in layout.entries] == ["onnx_fixed.bin", "float.bin"]
    shell = opened_on(pair)
    given = run_ok(shell, f"vc -lt {pair / 'onnx_fixed.bin'} -rt {pair / 'float.bin'}")
    assert Path(given.left).name == "onnx_fixed.bin" and Path(given.right).name == "float.bin"
    assert not any("swapped" in n for n in given.notes)
