"""`pt`, `cp` and `dc` through the real dispatcher on the tiny demo workspace."""

from __future__ import annotations

import dataclasses
import errno
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from precision_shell.commands.tensor import DecodedFiles, TensorComparison, TensorSummaries
from precision_shell.compare.metrics.cells import COSINE, MAX_ABS
from precision_shell.compare.metrics.elementwise import compare_elements
from precision_shell.compare.pipeline.plan import FileTask, MappingRow
from precision_shell.compare.pipeline.worker import CompareOptions, compare_file
from precision_shell.explore.tensor_target import resolve_tensors
from precision_shell.formats.benchmark import write_benchmark
from precision_shell.formats.layout_guess import guess_origin_format
from precision_shell.formats.layouts import DumpFormat, from_origin_layout
from precision_shell.formats.npu_dump_writer import TensorSpec, write_dump
from precision_shell.shell.registry import REGISTRY
from tests.commands.shell_fixture import (
    CONV1,
    CONV2,
    DENSE,
    POOL,
    assert_stats_equal,
    benchmark_path,
    decoded,
    dump_path,
    fractal_z_to_nchw,
    nc1hwc0_to_nhwc,
    open_shell,
    run_fail,
    run_ok,
)


@pytest.fixture(scope="module")
def demo(tiny_demo_shared):
    root, manifest = tiny_demo_shared
    return root, manifest, open_shell(root)


def _parse_pt_text(path: Path) -> tuple[dict[str, str], np.ndarray]:
    lines = path.read_text().splitlines()
    header = dict(ln[2:].split(": ", 1) for ln in lines if ln.startswith("# "))
    return header, np.loadtxt(path, dtype=np.float64, comments="#", ndmin=1)


# -- pt ---------------------------------------------------------------------------------------


def test_pt_op_name_summarises_its_first_output(demo):
    root, manifest, shell = demo
    result = run_ok(shell, f"pt {DENSE}")
    assert isinstance(result, TensorSummaries)
    (item,) = result.items
    path = dump_path(root, manifest, DENSE)
    values = decoded(path, "output", 0)
    assert item.label == f"{path.name} output 0" and item.path == str(path)
    assert item.layout == "ND" and item.stats.dtype == "float16"
    assert_stats_equal(item.stats, values)
    assert item.preview == values.reshape(-1)[:20].astype(np.float64).tolist()


def test_pt_writes_the_values_as_text_under_temp_pt_and_they_parse_back(demo):
    root, manifest, shell = demo
    (item,) = run_ok(shell, f"pt {CONV2}").items
    text = Path(item.text_file)
    assert text.parent == root / "precision_data" / "temp" / "pt"
    header, values = _parse_pt_text(text)
    # in the benchmark layout: the C0 pad (8 channels in 16) is no data
    want = nc1hwc0_to_nhwc(decoded(dump_path(root, manifest, CONV2), "output", 0), 8)
    assert header["shape"] == "[2, 4, 4, 8]" and header["layout"] == "NHWC"
    assert header["stored as"] == "NC1HWC0 [2, 1, 4, 4, 16]"
    assert header["dtype"] == "float16"
    assert (item.layout, item.stored, item.note) == ("NHWC", "NC1HWC0 [2, 1, 4, 4, 16]", None)
    np.testing.assert_array_equal(values.astype(np.float16), want.reshape(-1))
    # a second pt of the same tensor replaces its own file: no .1 copies pile up
    text.write_text("stale")
    (again,) = run_ok(shell, f"pt {CONV2}").items
    assert again.text_file == item.text_file
    np.testing.assert_array_equal(_parse_pt_text(text)[1].astype(np.float16), want.reshape(-1))
    assert [p.name for p in text.parent.iterdir() if p.name.startswith(text.stem)] == [text.name]


def test_pt_dump_file_name_summarises_every_tensor_and_selector_picks_one(demo):
    root, manifest, shell = demo
    path = dump_path(root, manifest, CONV2)
    result = run_ok(shell, f"pt {path.name}")
    assert [i.label.split(" ", 1)[1] for i in result.items] == [
        "input 0",
        "input 1",
        "input 2",
        "output 0",
    ]
    # statistics of the benchmark layout, pads cut off, as cp and vc see the tensors
    want = {
        "input 0": nc1hwc0_to_nhwc(decoded(path, "input", 0), 8),
        "input 1": fractal_z_to_nchw(decoded(path, "input", 1), 8, 8, 3, 3).transpose(2, 3, 1, 0),
        "input 2": decoded(path, "input", 2),
        "output 0": nc1hwc0_to_nhwc(decoded(path, "output", 0), 8),
    }
    for item in result.items:
        assert_stats_equal(item.stats, want[item.label.split(" ", 1)[1]])
    assert [i.layout for i in result.items] == ["NHWC", "HWCN", "ND", "NHWC"]
    (bias,) = run_ok(shell, f"pt -n {path}:input:2").items
    assert bias.label == f"{path.name} input 2"
    assert bias.preview == decoded(path, "input", 2).astype(np.float64).tolist()
    assert len(bias.preview) == 8


def test_pt_on_a_benchmark_npy_by_name_and_by_path(demo):
    root, _, shell = demo
    npy = benchmark_path(root, "relu2/Relu")
    want = np.load(npy)
    for target in (npy.name, str(npy)):
        (item,) = run_ok(shell, f"pt {target}").items
        assert item.layout == "npy" and item.stats.dtype == "float32"
        assert_stats_equal(item.stats, want)
        header, values = _parse_pt_text(Path(item.text_file))
        assert header["source"] == str(npy)
        np.testing.assert_array_equal(values.astype(np.float32), want.reshape(-1))


def test_pt_text_of_float64_and_int_tensors_reads_back_exactly(demo, tmp_path):
    _, _, shell = demo
    doubles = np.array([0.1, 1 / 3, -2.5e-300, 123456789.123456789])
    ints = np.array([[-3, 0], [7, 2**40]], dtype=np.int64)
    np.save(tmp_path / "doubles.npy", doubles)
    np.save(tmp_path / "ints.npy", ints)
    (item,) = run_ok(shell, f"pt {tmp_path / 'doubles.npy'}").items
    np.testing.assert_array_equal(_parse_pt_text(Path(item.text_file))[1], doubles)
    (item,) = run_ok(shell, f"pt {tmp_path / 'ints.npy'}").items
    assert Path(item.text_file).read_text().splitlines()[-4:] == ["-3", "0", "7", str(2**40)]
    assert (item.stats.max, item.stats.min, item.stats.dtype) == (2.0**40, -3.0, "int64")


def test_pt_counts_nan_and_inf_and_keeps_them_out_of_the_stats(demo, tmp_path):
    _, _, shell = demo
    arr = np.array([1.0, np.nan, 3.0, np.inf, -np.inf, -2.0], dtype=np.float32)
    np.save(tmp_path / "odd.npy", arr)
    (item,) = run_ok(shell, f"pt {tmp_path / 'odd.npy'}").items
    assert (item.stats.nan_count, item.stats.inf_count) == (1, 2)
    assert (item.stats.max, item.stats.min, item.stats.mean) == (3.0, -2.0, 2.0 / 3.0)
    assert not (tmp_path / "odd.txt").exists()  # never beside the source file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["odd.npy"]


# -- cp ---------------------------------------------------------------------------------------


def _oracle(x: np.ndarray, y: np.ndarray, atol: float, rtol: float):
    x = x.astype(np.float64).reshape(-1)
    y = y.astype(np.float64).reshape(-1)
    diff = np.abs(x - y)
    cosine = float(np.sum((x / np.linalg.norm(x)) * (y / np.linalg.norm(y))))
    ratio = float(np.mean(diff > atol + rtol * np.abs(y)))
    return x, y, diff, cosine, ratio


def test_cp_device_vs_benchmark_worst_rows_cosine_and_error_ratio(demo):
    root, manifest, shell = demo
    npy = benchmark_path(root, "dense/BiasAdd")
    result = run_ok(shell, f"cp {DENSE} {npy.name} -p 5 -al 0.01 -rl 0.05")
    assert isinstance(result, TensorComparison)
    left = decoded(dump_path(root, manifest, DENSE), "output", 0)
    right = np.load(npy)
    x, y, diff, cosine, ratio = _oracle(left, right, 0.01, 0.05)
    rep = result.report
    assert rep.shape == (2, 10) and rep.count == 20
    top = np.argsort(-diff, kind="stable")[:5]
    assert [r.diff for r in rep.worst] == diff[top].tolist()
    for row in rep.worst:
        flat = np.ravel_multi_index(row.index, (2, 10))
        assert (row.left, row.right) == (x[flat], y[flat])
        assert row.diff == abs(row.left - row.right)
        assert row.relative == row.diff / abs(row.right)
    assert [r.index for r in rep.first] == [(0, k) for k in range(5)]
    assert [r.left for r in rep.first] == x[:5].tolist()
    assert math.isclose(rep.cosine, cosine, rel_tol=0, abs_tol=1e-12)
    assert rep.error_ratio == ratio and rep.mismatch_count == round(ratio * 20)
    assert rep.allclose is (ratio == 0)
    assert rep.max_abs_error == diff.max()
    assert rep.max_relative_error == float(np.max(diff / np.abs(y)))
    assert_stats_equal(result.left_stats, left)
    assert_stats_equal(result.right_stats, right)
    assert result.saved is None


def test_cp_converts_the_device_layout_before_comparing(demo):
    root, manifest, shell = demo
    npy = benchmark_path(root, "relu2/Relu")
    rep = run_ok(shell, f"cp {CONV2} {npy}").report
    device = nc1hwc0_to_nhwc(decoded(dump_path(root, manifest, CONV2), "output", 0), 8)
    _, _, diff, cosine, _ = _oracle(device, np.load(npy), 1e-4, 1e-4)
    assert rep.shape == (2, 4, 4, 8) and rep.count == 256
    assert math.isclose(rep.cosine, cosine, abs_tol=1e-12)
    assert rep.max_abs_error == diff.max()
    assert len(rep.worst) == 20 and rep.worst[0].diff == diff.max()


def test_cp_an_input_uses_the_origin_format_the_dump_does_not_record(demo):
    """Dump inputs carry no original format; the graph (or the shapes) tell it is NHWC."""
    root, manifest, shell = demo
    npy = benchmark_path(root, POOL)
    rep = run_ok(shell, f"cp {CONV2}:input:0 {npy.name} -p 1").report
    device = nc1hwc0_to_nhwc(decoded(dump_path(root, manifest, CONV2), "input", 0), 8)
    assert rep.shape == (2, 4, 4, 8)
    assert rep.max_abs_error == _oracle(device, np.load(npy), 0, 0)[2].max()


def test_cp_different_element_counts_error_unless_flatten_to_min(demo):
    root, _, shell = demo
    small, big = benchmark_path(root, "dense/BiasAdd"), benchmark_path(root, "relu2/Relu")
    error = run_fail(shell, f"cp {small.name} {big.name}").error
    assert error == (
        "element counts differ: left 20 (2, 10) vs right 256 (2, 4, 4, 8); "
        "use --flatten-to-min to compare the first 20 elements"
    )
    rep = run_ok(shell, f"cp {small.name} {big.name} --flatten-to-min -p 3").report
    assert rep.truncated_from == (20, 256) and rep.count == 20
    x = np.load(small).reshape(-1).astype(np.float64)
    y = np.load(big).reshape(-1)[:20].astype(np.float64)
    assert rep.max_abs_error == np.abs(x - y).max()
    assert [r.index for r in rep.first] == [(0,), (1,), (2,)]


def test_cp_s_saves_left_right_diff_under_temp_cp(demo):
    root, _, shell = demo
    npy = benchmark_path(root, "dense/BiasAdd")
    result = run_ok(shell, f"cp -n {DENSE} {npy.name} -s")
    saved = Path(result.saved)
    assert saved.parent == root / "precision_data" / "temp" / "cp"
    table = np.loadtxt(saved)
    assert table.shape == (20, 3)
    np.testing.assert_array_equal(table[:, 1], np.load(npy).reshape(-1).astype(np.float64))
    np.testing.assert_allclose(table[:, 2], table[:, 0] - table[:, 1], rtol=1e-8)


def test_cp_usage_errors(demo):
    _, _, shell = demo
    assert "cp: give two tensors" in run_fail(shell, f"cp {DENSE}").error
    assert "must not be negative" in run_fail(shell, f"cp {DENSE} {DENSE} -p -1").error
    for flag, value in (("-al", "nan"), ("-rl", "nan"), ("-al", "inf"), ("-rl", "inf")):
        error = run_fail(shell, f"cp {DENSE} {DENSE} {flag} {value}").error
        assert error == f"cp: {flag} must be a finite number, got {value}"
    error = run_fail(shell, f"cp {CONV2}:input:7 {DENSE}").error
    assert error.endswith("has no input 7")


def test_cp_a_whole_dump_file_asks_which_tensor(demo):
    root, manifest, shell = demo
    name = dump_path(root, manifest, CONV2).name
    rep = run_ok(shell, f"cp {name} {name}").report  # a file: its first output by default
    assert rep.allclose and rep.cosine == 1.0 and rep.shape == (2, 4, 4, 8)


# -- dc ---------------------------------------------------------------------------------------


def test_dc_writes_every_tensor_of_the_op_as_npy_under_temp_decode(demo):
    root, manifest, shell = demo
    result = run_ok(shell, f"dc {CONV2}")
    assert isinstance(result, DecodedFiles)
    out_dir = root / "precision_data" / "temp" / "decode"
    assert result.out_dir == str(out_dir) and result.notes == []
    path = dump_path(root, manifest, CONV2)
    slots = [("input", 0), ("input", 1), ("input", 2), ("output", 0)]
    assert [f[0] for f in result.files] == [f"{path.name} {k} {i}" for k, i in slots]
    for (_, npy, shape, layout), (kind, index) in zip(result.files, slots, strict=True):
        assert Path(npy).parent == out_dir
        want = decoded(path, kind, index)
        got = np.load(npy, allow_pickle=False)
        assert got.dtype == want.dtype and shape == want.shape
        np.testing.assert_array_equal(got, want)
        assert Path(npy).name == f"{path.name}.{kind}.{index}.{layout}.npy"
    # QA: pt of the name dc printed was "not a file" unless given the whole path
    _, npy, _, _ = result.files[-1]
    shown = run_ok(shell, f"pt {Path(npy).name}")
    (item,) = shown.items
    assert item.path == npy and item.stats.count == np.load(npy).size


def test_dc_f_nchw_converts_activations_and_the_hwcn_filter(demo):
    root, manifest, shell = demo
    path = dump_path(root, manifest, CONV2)
    result = run_ok(shell, f"dc {CONV2} -f nchw")
    files = {
        label.split(" ", 1)[1]: (npy, shape, layout) for label, npy, shape, layout in result.files
    }
    x = np.load(files["input 0"][0])
    want_x = nc1hwc0_to_nhwc(decoded(path, "input", 0), 8).transpose(0, 3, 1, 2)
    assert files["input 0"][1:] == ((2, 8, 4, 4), "NCHW")
    np.testing.assert_array_equal(x, want_x)
    # FRACTAL_Z filter of an HWCN (3, 3, 8, 8) weight: as NCHW it is (N=8, C=8, 3, 3)
    assert files["input 1"][1:] == ((8, 8, 3, 3), "NCHW")
    want_w = fractal_z_to_nchw(decoded(path, "input", 1), 8, 8, 3, 3)
    np.testing.assert_array_equal(np.load(files["input 1"][0]), want_w)
    y = np.load(files["output 0"][0])
    want_y = nc1hwc0_to_nhwc(decoded(path, "output", 0), 8).transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(y, want_y)
    # the bias is 1-D: kept as it is, with the reason
    assert files["input 2"][1:] == ((8,), "ND")
    assert result.notes == [f"{path.name} input 2: kept ND: NCHW needs a 4-D tensor; the "
                            "original shape is [8]"]  # fmt: skip


def test_dc_f_hwcn_gives_the_benchmark_filter_layout(demo):
    root, manifest, shell = demo
    path = dump_path(root, manifest, CONV1)  # 3 input channels: (3, 3, 3, 8)
    result = run_ok(shell, f"dc {path.name}:input:1 -f HWCN")
    ((_, npy, shape, layout),) = result.files
    assert (shape, layout) == ((3, 3, 3, 8), "HWCN")
    want = fractal_z_to_nchw(decoded(path, "input", 1), 8, 3, 3, 3).transpose(2, 3, 1, 0)
    np.testing.assert_array_equal(np.load(npy), want)


def test_dc_outside_the_workspace_infers_hwcn_from_the_shapes(demo, tmp_path):
    """A copied dump file has no graph to ask: FRACTAL_Z (9,1,16,16) with origin (3,3,8,8) fits
    only HWCN; conv1's (3,3,3,8) fits HWCN and NHWC, so dc keeps it and says why."""
    root, manifest, shell = demo
    conv2 = shutil.copy(dump_path(root, manifest, CONV2), tmp_path / "conv2.dump")
    conv1 = shutil.copy(dump_path(root, manifest, CONV1), tmp_path / "conv1.dump")
    out = tmp_path / "out"
    ((_, npy, shape, layout),) = run_ok(shell, f"dc {conv2}:input:1 -f NCHW -o {out}").files
    assert (shape, layout) == ((8, 8, 3, 3), "NCHW") and Path(npy).parent == out
    want = fractal_z_to_nchw(decoded(Path(conv2), "input", 1), 8, 8, 3, 3)
    np.testing.assert_array_equal(np.load(npy), want)
    result = run_ok(shell, f"dc {conv1}:input:1 -f NCHW -o {out}")
    assert result.files[0][2:] == ((9, 1, 16, 16), "FRACTAL_Z")
    (note,) = result.notes
    assert note.startswith("conv1.dump input 1: kept FRACTAL_Z: cannot convert FRACTAL_Z")
    assert note.endswith(
        "(the dump does not record the original layout of this FRACTAL_Z tensor and its shapes "
        "do not tell it; read the original shape as NCHW)"
    )


def test_dc_usage_errors(demo):
    root, _, shell = demo
    assert run_fail(shell, f"dc {CONV2} -f XYZ").error == "dc: -f: unknown tensor format 'XYZ'"
    npy = benchmark_path(root, POOL).name
    assert run_fail(shell, f"dc {npy}").error == (
        f"dc: {npy} is a .npy file already; dc decodes device dump files"
    )
    assert run_fail(shell, "dc flatten/Reshape").error == (
        "op 'flatten/Reshape' (debug_0) has no dump file"
    )


def test_pt_and_cp_on_the_float16_overflow(demo):
    """The demo's l2_loss/Sum overflows float16 on the device: inf counted, metrics honest."""
    root, manifest, shell = demo
    (item,) = run_ok(shell, "pt l2_loss/Sum").items
    values = decoded(dump_path(root, manifest, "l2_loss/Sum"), "output", 0)
    assert np.isinf(values).all() and item.stats.inf_count == values.size == 2
    assert (item.stats.max, item.stats.min) == (math.inf, math.inf)
    assert item.preview == [math.inf, math.inf]
    rep = run_ok(shell, f"cp l2_loss/Sum {benchmark_path(root, 'l2_loss/Sum').name}").report
    assert rep.max_abs_error == math.inf and math.isnan(rep.cosine)
    assert rep.error_ratio == 1.0 and not rep.allclose


def test_dc_f_to_the_device_layout_itself_keeps_the_values(demo):
    root, manifest, shell = demo
    path = dump_path(root, manifest, CONV2)
    result = run_ok(shell, f"dc {path.name}:output:0 -f NC1HWC0")
    ((_, npy, shape, layout),) = result.files
    assert (shape, layout, result.notes) == ((2, 1, 4, 4, 16), "NC1HWC0", [])
    np.testing.assert_array_equal(np.load(npy), decoded(path, "output", 0))


def test_dc_f_nd_gives_the_original_layout(demo):
    root, manifest, shell = demo
    path = dump_path(root, manifest, CONV2)
    result = run_ok(shell, f"dc {CONV2} -f ND")
    assert result.notes == []
    got = {label.split(" ", 1)[1]: (shape, layout) for label, _, shape, layout in result.files}
    assert got == {
        "input 0": ((2, 4, 4, 8), "NHWC"),
        "input 1": ((3, 3, 8, 8), "HWCN"),
        "input 2": ((8,), "ND"),
        "output 0": ((2, 4, 4, 8), "NHWC"),
    }
    npy = result.files[3][1]
    np.testing.assert_array_equal(np.load(npy), nc1hwc0_to_nhwc(decoded(path, "output", 0), 8))


@pytest.mark.parametrize(
    ("device", "device_shape", "origin_shape", "origin"),
    [
        ("NC1HWC0", (2, 1, 4, 5, 16), (2, 4, 5, 8), "NHWC"),
        ("NC1HWC0", (2, 1, 4, 5, 16), (2, 8, 4, 5), "NCHW"),
        ("NC1HWC0", (2, 1, 4, 4, 16), (2, 4, 4, 4), None),  # C == H == W: cannot tell
        ("FRACTAL_Z", (9, 1, 16, 16), (3, 3, 8, 8), "HWCN"),
        ("FRACTAL_Z", (18, 2, 16, 16), (3, 3, 20, 17), "HWCN"),
        ("FRACTAL_Z", (50, 1, 16, 16), (8, 20, 5, 5), "NCHW"),
        ("FRACTAL_Z", (50, 1, 16, 16), (8, 5, 5, 20), "NHWC"),
        ("FRACTAL_Z", (9, 1, 16, 16), (3, 3, 3, 8), None),  # HWCN and NHWC both fit
        ("FRACTAL_Z", (7, 1, 16, 16), (3, 3, 8, 8), None),  # nothing fits
        ("FRACTAL_NZ", (1, 1, 16, 16), (10, 10), "ND"),  # NZ is only made from ND
    ],
)
def test_guess_origin_format_from_the_shapes(device, device_shape, origin_shape, origin):
    assert guess_origin_format(device, device_shape, origin_shape) == origin


# -- statistics, tolerances and names ---------------------------------------------------------


def test_pt_stats_of_a_padded_nc1hwc0_are_of_the_real_channels(demo, tmp_path):
    """C=24 padded to 32: the 8 pad channels (garbage here) are no data for the statistics."""
    _, _, shell = demo
    nhwc = np.random.default_rng(3).uniform(0.5, 1.5, (2, 3, 3, 24)).astype(np.float16)
    device = from_origin_layout(nhwc, "NC1HWC0", "NHWC").copy()
    device[:, 1, :, :, 8:] = 0.0  # the pad a device leaves (zeros pull the mean down)
    dump = tmp_path / "Relu.net_relu.1.1.1700000000000000"
    spec = TensorSpec(
        device,
        format=DumpFormat.NC1HWC0,
        original_shape=nhwc.shape,
        original_op=("relu", 0),
        original_format=DumpFormat.NHWC,
    )
    write_dump(dump, "net/relu", outputs=[spec])
    (item,) = run_ok(shell, f"pt {dump}:output:0").items
    assert_stats_equal(item.stats, nhwc)
    assert item.stats.mean == pytest.approx(float(nhwc.astype(np.float64).mean()), rel=1e-12)
    assert (item.layout, item.stored) == ("NHWC", "NC1HWC0 [2, 2, 3, 3, 16]")


def test_pt_of_a_string_npy_names_the_file_and_its_dtype(demo, tmp_path):
    _, _, shell = demo
    npy = tmp_path / "names.npy"
    np.save(npy, np.array(["a", "bc"]))
    assert run_fail(shell, f"pt {npy}").error == f"{npy}: dtype <U2 is not numeric; no statistics"


def test_cp_default_tolerances_follow_the_dtypes(demo, tmp_path):
    """float16 rounding of a float32 benchmark is up to 4.9e-4 relative: allclose by default."""
    _, _, shell = demo
    bench = np.random.default_rng(5).standard_normal(4096).astype(np.float32) * 10
    np.save(tmp_path / "bench.npy", bench)
    np.save(tmp_path / "half.npy", bench.astype(np.float16))
    rep = run_ok(shell, f"cp {tmp_path / 'half.npy'} {tmp_path / 'bench.npy'}").report
    assert (rep.rtol, rep.atol) == (1e-3, 1e-3)
    assert rep.allclose and rep.mismatch_count == 0
    near = bench * np.float32(1 + 2e-6)
    np.save(tmp_path / "near.npy", near)
    rep = run_ok(shell, f"cp {tmp_path / 'near.npy'} {tmp_path / 'bench.npy'}").report
    assert (rep.rtol, rep.atol) == (1e-5, 1e-8) and rep.allclose
    # explicit flags win over the defaults
    rep = run_ok(shell, f"cp {tmp_path / 'half.npy'} {tmp_path / 'bench.npy'} -rl 0 -al 0").report
    assert (rep.rtol, rep.atol) == (0.0, 0.0) and not rep.allclose


def test_cp_help_states_the_tolerance_table():
    text = " ".join(REGISTRY.lookup("cp").parser().format_help().split())
    assert "float64/float32 rtol 1e-5 atol 1e-8; float16 1e-3 1e-3; bfloat16 1e-2 1e-2" in text


def test_pt_and_cp_take_a_tf_op_name_and_say_which_benchmark_file(demo):
    root, _, shell = demo
    npy = benchmark_path(root, "relu2/Relu")
    for name in ("relu2/Relu", "relu2/Relu:0"):
        (item,) = run_ok(shell, f"pt {name}").items
        assert item.label == f"{npy.name} (benchmark of relu2/Relu:0)" and item.path == str(npy)
        assert_stats_equal(item.stats, np.load(npy))
    rep = run_ok(shell, f"cp {CONV2} relu2/Relu").report
    assert rep.shape == (2, 4, 4, 8)
    error = run_fail(shell, "pt no/such_op").error
    assert error.endswith("not an op name, and not a benchmark tensor name")


# -- dc: dirs, repeats ------------------------------------------------------------------------


def test_dc_of_a_dump_dir_decodes_every_dump_file_in_it(demo, tmp_path):
    root, manifest, shell = demo
    src = tmp_path / "dumps"
    (src / "sub").mkdir(parents=True)
    conv2 = Path(shutil.copy(dump_path(root, manifest, CONV2), src))
    dense = Path(shutil.copy(dump_path(root, manifest, DENSE), src / "sub"))
    out = tmp_path / "out"
    result = run_ok(shell, f"dc {src} -o {out}")
    labels = [label for label, *_ in result.files]
    assert sorted(labels) == sorted(
        [f"{conv2.name} input {k}" for k in range(3)]
        + [f"{conv2.name} output 0", f"{dense.name} output 0"]
        + [f"{dense.name} input {k}" for k in range(3)]
    )
    for label, npy, _, _ in result.files:
        name, kind, index = label.rsplit(" ", 2)
        source = conv2 if name == conv2.name else dense
        np.testing.assert_array_equal(np.load(npy), decoded(source, kind, int(index)))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_fail(shell, f"dc {empty}").error == (
        f"{empty}: no dump files found (searched its sub-dirs too)"
    )


def test_dc_twice_replaces_its_own_files(demo):
    root, _, shell = demo
    first = run_ok(shell, f"dc {CONV2}")
    out = Path(first.out_dir)
    Path(first.files[0][1]).write_bytes(b"stale")
    before = sorted(p.name for p in out.iterdir())
    second = run_ok(shell, f"dc {CONV2}")
    assert [f[1] for f in second.files] == [f[1] for f in first.files]
    assert sorted(p.name for p in out.iterdir()) == before  # no .1 copies, no temp files
    assert np.load(second.files[0][1]).shape == second.files[0][2]


def test_dc_never_writes_over_a_file_in_a_dir_the_user_named(demo, tmp_path):
    root, manifest, shell = demo
    out = tmp_path / "mine"
    out.mkdir()
    name = f"{dump_path(root, manifest, CONV2).name}.output.0.NC1HWC0.npy"
    (out / name).write_text("USER DATA")
    error = run_fail(shell, f"dc {CONV2} -o {out}").error
    assert error == (
        f"{out / name}: already exists; dc never writes over a file in a dir you name "
        "(give another -o dir, or remove it)"
    )
    # the inputs decoded before meeting it are removed again: all or nothing
    assert sorted(p.name for p in out.iterdir()) == [name]
    assert (out / name).read_text() == "USER DATA"


def test_dc_of_every_run_keeps_each_runs_files_apart(demo, tmp_path):
    """Both runs hold a mapping-numbered dump file `1`: one .npy each, with its own values."""
    root, _, shell = demo
    npu = root / "precision_data" / "npu"
    out = tmp_path / "out"
    result = run_ok(shell, f"dc {npu} -o {out}")
    paths = [npy for _, npy, _, _ in result.files]
    assert len(set(paths)) == len(paths) == len(list(out.iterdir()))
    for run in ("debug_0", "debug_1"):
        (source,) = (npu / run / "dump").glob("*/*/*/*/*/1")
        label = f"1 output 0 ({run})"
        (npy,) = [npy for lab, npy, _, _ in result.files if lab == label]
        assert Path(npy).name == f"1.{run}.output.0.ND.npy"
        np.testing.assert_array_equal(np.load(npy), decoded(source, "output", 0))


def test_dc_of_copies_outside_the_workspace_names_the_sub_dir(demo, tmp_path):
    root, manifest, shell = demo
    src = tmp_path / "copies"
    dense = dump_path(root, manifest, DENSE)
    for sub in ("a", "b"):
        (src / sub).mkdir(parents=True)
        shutil.copy(dense, src / sub)
    out = tmp_path / "out"
    result = run_ok(shell, f"dc {src} -o {out}")
    outputs = sorted(npy for label, npy, _, _ in result.files if " output 0 " in label)
    assert [Path(p).name for p in outputs] == [
        f"{dense.name}.{sub}.output.0.ND.npy" for sub in ("a", "b")
    ]
    assert len(list(out.iterdir())) == len(result.files) == 8


# -- outputs: links, full disk ----------------------------------------------------------------


def _files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_a_symlinked_temp_is_refused_and_nothing_lands_outside(tiny_demo, tmp_path):
    root, _ = tiny_demo
    outside = tmp_path / "outside"
    outside.mkdir()
    temp = root / "precision_data" / "temp"
    shutil.rmtree(temp, ignore_errors=True)
    temp.symlink_to(outside)
    shell = open_shell(root)
    for line in (f"pt {DENSE}", f"dc {DENSE}", f"ni {CONV2} -s 1"):
        error = run_fail(shell, line).error
        assert error == (
            f"{temp}: is a symbolic link; outputs are never written through links "
            "(remove it, or give another output dir)"
        ), line
    assert _files_under(outside) == []


def test_a_symlinked_temp_decode_and_a_dangling_link_at_an_output_name(tiny_demo, tmp_path):
    root, manifest = tiny_demo
    outside = tmp_path / "outside"
    outside.mkdir()
    temp = root / "precision_data" / "temp"
    temp.mkdir(exist_ok=True)
    (temp / "decode").symlink_to(outside)
    shell = open_shell(root)
    assert run_fail(shell, f"dc {DENSE}").error.startswith(f"{temp / 'decode'}: is a symbolic link")
    (temp / "pt").mkdir()
    name = f"{dump_path(root, manifest, DENSE).name}_output_0.txt"
    (temp / "pt" / name).symlink_to(outside / "planted.txt")
    error = run_fail(shell, f"pt {DENSE}").error
    assert error == (
        f"{temp / 'pt' / name}: is a symbolic link; outputs are never written through links "
        "(remove it)"
    )
    assert _files_under(outside) == []


def _full_disk(written: list[int]):
    """A writer that gets some bytes out, then meets a full disk."""

    def write(fh, *args, **kwargs):
        fh.write(b"partial" if "b" in getattr(fh, "mode", "b") else "partial")
        fh.flush()
        written.append(1)
        raise OSError(errno.ENOSPC, "No space left on device")

    return write


def test_dc_and_pt_on_a_full_disk_say_so_and_leave_no_partial_file(tiny_demo, monkeypatch):
    root, manifest = tiny_demo
    shell = open_shell(root)
    written: list[int] = []
    monkeypatch.setattr(np, "save", _full_disk(written))
    monkeypatch.setattr(np, "savetxt", _full_disk(written))
    decode = root / "precision_data" / "temp" / "decode"
    path = dump_path(root, manifest, DENSE)
    error = run_fail(shell, f"dc {path.name}:output:0").error
    assert error == f"no space left on {decode / f'{path.name}.output.0.ND.npy'}"
    assert _files_under(decode) == []
    pt_dir = root / "precision_data" / "temp" / "pt"
    error = run_fail(shell, f"pt {path.name}:output:0").error
    assert error == f"no space left on {pt_dir / f'{path.name}_output_0.txt'}"
    assert _files_under(pt_dir) == [] and len(written) == 2


# -- one layout rule for vc and cp ------------------------------------------------------------


def test_vc_and_cp_convert_by_one_rule_when_graph_and_dump_disagree(tmp_path):
    """The dump records NHWC (true); the graph's desc says NCHW. Both commands follow the
    dump, so both give the same (correct) numbers."""
    nhwc = np.random.default_rng(9).standard_normal((2, 5, 3, 20)).astype(np.float16)
    device = from_origin_layout(nhwc, "NC1HWC0", "NHWC")
    dump = tmp_path / "Relu.net_relu.1.1.1700000000000000"
    spec = TensorSpec(
        device,
        format=DumpFormat.NC1HWC0,
        original_shape=nhwc.shape,
        original_op=("relu", 0),
        original_format=DumpFormat.NHWC,
    )
    write_dump(dump, "net/relu", outputs=[spec])
    bench = write_benchmark(tmp_path, "relu:0", nhwc.astype(np.float32) + 0.01, 1)
    graph_shape = (2, 20, 5, 3)
    mapping = MappingRow("relu", str(bench), origin_format="NCHW", origin_shape=graph_shape)
    task = FileTask(0, 0, "net/relu", "Relu", str(dump), (), (mapping,))
    (row,) = compare_file(task, CompareOptions()).rows
    (handle,) = resolve_tensors(None, f"{dump}:output:0")
    handle = dataclasses.replace(handle, graph_origin_format="NCHW", graph_origin_shape=graph_shape)
    converted = handle.load_converted()
    np.testing.assert_array_equal(converted, nhwc)
    rep = compare_elements(converted, np.load(bench), 1e-3, 1e-3, 1, False)
    assert row.reason == "" and row.shape == "[2,5,3,20]"
    assert float(row.texts[MAX_ABS]) == pytest.approx(rep.max_abs_error, abs=1e-6)
    assert float(row.texts[COSINE]) == pytest.approx(rep.cosine, abs=1e-6)


def test_cp_refuses_a_complex_tensor_with_an_imaginary_part(demo, tmp_path):
    """QA: cp said "allclose: yes, cosine 1.000000" of real part + 5j against the real part."""
    _, _, shell = demo
    real = np.linspace(-1, 1, 6, dtype=np.float32)
    dump = tmp_path / "Mul.cplx.1.1.1700000000000000"
    write_dump(
        dump, "cplx", outputs=[TensorSpec((real + 5j).astype(np.complex64), format=DumpFormat.ND)]
    )
    bench = write_benchmark(tmp_path, "cplx:0", real, 1700000000000001)
    error = run_fail(shell, f"cp {dump}:output:0 {bench}").error
    assert error == (
        f"{dump}: complex64 values with a non-zero imaginary part; compares are of real tensors "
        "(cp compares real tensors)"
    )


def test_pt_of_a_complex_tensor_keeps_both_parts(demo, tmp_path):
    """QA: pt's statistics were of |z| beside a preview and a text of the real parts only."""
    _, _, shell = demo
    values = (np.arange(4, dtype=np.float32) + 1j * np.array([0, 1, 2, 3])).astype(np.complex64)
    dump = tmp_path / "Mul.cplx.1.1.1700000000000000"
    write_dump(dump, "cplx", outputs=[TensorSpec(values, format=DumpFormat.ND)])
    (item,) = run_ok(shell, f"pt {dump}:output:0").items
    np.testing.assert_allclose(item.preview, np.abs(values), rtol=1e-6)
    text = Path(item.text_file).read_text()
    assert "# complex: statistics and preview of |z|; each line: real, imaginary part" in text
    parts = np.loadtxt(item.text_file)
    np.testing.assert_array_equal(parts[:, 0] + 1j * parts[:, 1], values)


def test_a_transpose_that_keeps_the_shape_is_labelled_with_the_layout_shown(demo, tmp_path):
    """QA: NHWC [2,3,3,3] from an NCHW origin was shown transposed to NCHW, labelled NHWC."""
    _, _, shell = demo
    nchw = np.arange(54, dtype=np.float32).reshape(2, 3, 3, 3)
    spec = TensorSpec(
        nchw.transpose(0, 2, 3, 1).copy(),
        format=DumpFormat.NHWC,
        original_shape=(2, 3, 3, 3),
        original_op=("x", 0),
        original_format=DumpFormat.NCHW,
    )
    dump = tmp_path / "Conv2D.x.1.1.1700000000000000"
    write_dump(dump, "x", outputs=[spec])
    (item,) = run_ok(shell, f"pt {dump}:output:0").items
    assert (item.layout, item.stored) == ("NCHW", "NHWC [2, 3, 3, 3]")
    np.testing.assert_array_equal(np.loadtxt(item.text_file), nchw.reshape(-1))


def test_dc_of_bfloat16_writes_a_npy_numpy_reads(demo, tmp_path):
    """QA: dc wrote bf16 as `|V2` and float8_e5m2 as `<f1`, .npy files nothing could read."""
    import ml_dtypes

    _, _, shell = demo
    values = np.array([1.5, -2.25, 3.0e-3, 65280.0], dtype=ml_dtypes.bfloat16)
    dump = tmp_path / "Mul.bf.1.1.1700000000000000"
    write_dump(dump, "bf", outputs=[TensorSpec(values, format=DumpFormat.ND)])
    result = run_ok(shell, f"dc {dump} -o {tmp_path / 'out'}")
    (_, npy, _, _) = result.files[0]
    got = np.load(npy, allow_pickle=False)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, values.astype(np.float32))
    assert any("bfloat16 saved as float32" in n for n in result.notes)


def test_dc_of_two_names_made_safe_alike_writes_both(demo, tmp_path):
    """`convX a` and `convX_a` both make `convX_a` safe: the changed one is tagged, never
    written over the other (QA Q23 #4: dc printed both, the file held only the second)."""
    root, manifest, shell = demo
    src = tmp_path / "dumps"
    src.mkdir()
    a = shutil.copy(dump_path(root, manifest, CONV1), src / "Conv2D.convX a.5.1.1700000000000000")
    b = shutil.copy(dump_path(root, manifest, CONV2), src / "Conv2D.convX_a.5.1.1700000000000000")
    out = tmp_path / "out"
    files = run_ok(shell, f"dc {src} -o {out}").files
    paths = [npy for _, npy, _, _ in files]
    assert len(set(paths)) == len(paths) and all(Path(p).is_file() for p in paths)
    checked = 0
    for source in (a, b):
        for label, npy, _, _ in files:
            if label.startswith(Path(source).name + " output 0"):
                np.testing.assert_array_equal(np.load(npy), decoded(Path(source), "output", 0))
                checked += 1
    assert checked == 2
    # the made-safe name carries a tag of the real one; the safe name stays as it was
    by_source = {
        Path(src).name: Path(npy).name
        for src in (a, b)
        for label, npy, _, _ in files
        if label.startswith(Path(src).name + " output 0")
    }
    assert by_source[Path(b).name].startswith("Conv2D.convX_a.5.1.1700000000000000.output.0.")
    assert by_source[Path(a).name].startswith("Conv2D.convX_a.5.1.1700000000000000~")
    # and apart across calls (QA Q24 #12): each file decoded alone keeps its own name
    for source in (a, b):
        (alone,) = [f for f in run_ok(shell, f"dc '{source}'").files if " output 0" in f[0]]
        assert Path(alone[1]).name == by_source[Path(source).name]
        np.testing.assert_array_equal(np.load(alone[1]), decoded(Path(source), "output", 0))
