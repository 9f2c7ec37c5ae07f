"""The per-file unit of work: layouts converted inside the compare, slicing, and reasoned rows."""

from __future__ import annotations

import numpy as np
import pytest

from precision_shell.compare.diagnosis.root_cause import tensor_quality
from precision_shell.compare.pipeline.plan import FileTask, MappingRow
from precision_shell.compare.pipeline.worker import CompareOptions, compare_file
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.formats.benchmark import write_benchmark
from precision_shell.formats.layouts import DumpFormat, from_origin_layout
from precision_shell.formats.npu_dump_writer import TensorSpec, write_dump
from tests.hostile_files import make_sparse

TS = 1700000000000001


def _nhwc(seed: int = 0, shape=(2, 3, 4, 5)) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float16)


def _nc1hwc0_spec(nhwc: np.ndarray, pad_value: float = 0.0, output: bool = True) -> TensorSpec:
    device = from_origin_layout(nhwc, "NC1HWC0", "NHWC")
    if pad_value:
        device = device.copy()
        device[..., nhwc.shape[3] :] = pad_value  # the C0 pad is not data
    return TensorSpec(
        device,
        format=DumpFormat.NC1HWC0,
        original_shape=nhwc.shape,
        original_op=("relu", 0) if output else None,
        original_format=DumpFormat.NHWC if output else None,
    )


def _cosine(x: np.ndarray, y: np.ndarray) -> float:
    x = np.asarray(x, np.float64).ravel()
    y = np.asarray(y, np.float64).ravel()
    return float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))


def _task(path, outputs=(), inputs=(), fallback=None, seq=0) -> FileTask:
    return FileTask(
        seq, seq, "net/relu", "Relu", str(path), tuple(inputs), tuple(outputs), fallback
    )


def _benchmark_row(benchmark, shape, fmt="NHWC") -> MappingRow:
    return MappingRow("relu", str(benchmark), origin_format=fmt, origin_shape=tuple(shape))


def test_nc1hwc0_device_output_equal_to_the_nhwc_benchmark_has_cosine_one(tmp_path):
    values = _nhwc()
    dump = tmp_path / "Relu.net_relu.1.1.1700000000000000"
    # garbage in the C0 pad must not count: it is cut off by the conversion
    write_dump(dump, "net/relu", outputs=[_nc1hwc0_spec(values, pad_value=7.0)])
    benchmark = write_benchmark(tmp_path, "relu:0", values.astype(np.float32), TS)
    result = compare_file(_task(dump, [_benchmark_row(benchmark, values.shape)]), CompareOptions())
    (row,) = result.rows
    assert row.reason == ""
    assert row.tensor_index == "net/relu:output:0"
    assert (row.device_dtype, row.benchmark_dtype) == ("DT_FLOAT16", "DT_FLOAT")
    assert row.shape == "[2,3,4,5]"
    assert row.metrics["CosineSimilarity"] == pytest.approx(1.0, abs=1e-6)
    assert row.metrics["MaxAbsoluteError"] == 0.0
    assert result.bytes_read == dump.stat().st_size


def test_bytes_read_are_the_header_and_payloads_not_a_sparse_hole_after_them(tmp_path):
    values = _nhwc()
    dump = tmp_path / "Relu.net_relu.1.1.1700000000000000"
    write_dump(dump, "net/relu", outputs=[_nc1hwc0_spec(values)])
    written = dump.stat().st_size
    make_sparse(dump, 50 << 30)  # vc once said "291199 MB/s of device dumps"
    benchmark = write_benchmark(tmp_path, "relu:0", values.astype(np.float32), TS)
    result = compare_file(_task(dump, [_benchmark_row(benchmark, values.shape)]), CompareOptions())
    (row,) = result.rows
    assert row.metrics["CosineSimilarity"] == pytest.approx(1.0, abs=1e-6)
    assert result.bytes_read == written


def test_nc1hwc0_against_a_different_benchmark_gives_numpys_cosine(tmp_path):
    values = _nhwc(1)
    bench = (
        values.astype(np.float32) + np.random.default_rng(2).standard_normal(values.shape)
    ).astype(np.float32)
    dump = tmp_path / "Relu.net_relu.1.1.1700000000000000"
    write_dump(dump, "net/relu", outputs=[_nc1hwc0_spec(values)])
    benchmark = write_benchmark(tmp_path, "relu:0", bench, TS)
    (row,) = compare_file(
        _task(dump, [_benchmark_row(benchmark, values.shape)]), CompareOptions()
    ).rows
    assert row.metrics["CosineSimilarity"] == pytest.approx(_cosine(values, bench), abs=1e-6)
    want_max = float(np.max(np.abs(values.astype(np.float32) - bench)))
    assert row.metrics["MaxAbsoluteError"] == pytest.approx(want_max, rel=1e-6)


def test_larger_device_dims_are_sliced_down_to_the_benchmark(tmp_path):
    device = np.arange(24, dtype=np.float32).reshape(4, 6) + 1
    bench = device[:3, :5].copy()
    dump = tmp_path / "MatMul.net_relu.1.1.1700000000000000"
    write_dump(dump, "net/relu", outputs=[TensorSpec(device, format=DumpFormat.ND)])
    benchmark = write_benchmark(tmp_path, "relu:0", bench, TS)
    row_map = MappingRow("relu", str(benchmark), origin_format="ND", origin_shape=(3, 5))
    (row,) = compare_file(_task(dump, [row_map]), CompareOptions()).rows
    assert row.reason == "device shape [4,6] cut to the benchmark's [3,5] (9 elements not compared)"
    assert row.shape == "[3,5]"
    assert row.metrics["CosineSimilarity"] == pytest.approx(1.0, abs=1e-6)
    assert row.metrics["MaxAbsoluteError"] == 0.0
    assert not ThresholdRule.default().fails(row)


def test_nan_and_inf_in_the_part_cut_off_fail_the_row(tmp_path):
    """QA: a pooling output 16x16 on the device against a 15x15 benchmark passed with cosine
    1.000000, OverFlow NO and no reason, while its last row and column held NaN and inf."""
    device = np.arange(24, dtype=np.float16).reshape(4, 6) + 1
    device[3, 0], device[0, 5], device[3, 5] = np.nan, np.inf, np.nan
    bench = device[:3, :5].astype(np.float32)
    dump = tmp_path / "MaxPool.net_relu.1.1.1700000000000000"
    write_dump(dump, "net/relu", outputs=[TensorSpec(device, format=DumpFormat.ND)])
    benchmark = write_benchmark(tmp_path, "relu:0", bench, TS)
    row_map = MappingRow("relu", str(benchmark), origin_format="ND", origin_shape=(3, 5))
    (row,) = compare_file(_task(dump, [row_map]), CompareOptions(overflow=True)).rows
    assert row.reason == (
        "device shape [4,6] cut to the benchmark's [3,5] (9 elements not compared; "
        "NaN/inf in the part cut off: 2 NaN, 1 inf)"
    )
    assert row.metrics["CosineSimilarity"] == pytest.approx(1.0, abs=1e-6)  # msaccucmp's cell
    assert row.overflow == "YES"  # flagged on the whole tensor
    (crossing,) = ThresholdRule.default().crossings(row)
    assert str(crossing) == (
        "CosineSimilarity nan (NaN/inf in the device elements cut to the benchmark's shape) < 0.98"
    )
    assert tensor_quality(row, ThresholdRule.default()).nonfinite


def test_a_smaller_device_dim_fails_the_row_with_a_reason(tmp_path):
    device = np.ones((2, 5), np.float32)
    dump = tmp_path / "MatMul.net_relu.1.1.1700000000000000"
    write_dump(dump, "net/relu", outputs=[TensorSpec(device, format=DumpFormat.ND)])
    benchmark = write_benchmark(tmp_path, "relu:0", np.ones((3, 5), np.float32), TS)
    row_map = MappingRow("relu", str(benchmark), origin_format="ND", origin_shape=(3, 5))
    (row,) = compare_file(_task(dump, [row_map]), CompareOptions()).rows
    assert row.compared is False
    assert row.reason == "device shape [2,5] is smaller than benchmark shape [3,5]"
    assert row.benchmark_dtype == "DT_FLOAT"


def test_a_missing_benchmark_gives_a_reasoned_row_and_the_rest_of_the_file_compares(tmp_path):
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    dump = tmp_path / "Relu.net_relu.1.1.1700000000000000"
    write_dump(dump, "net/relu", inputs=[TensorSpec(x)], outputs=[TensorSpec(x)])
    benchmark = write_benchmark(tmp_path, "relu:0", x, TS)
    missing = MappingRow("producer", None, reason="benchmark producer.0.*.npy not found")
    task = _task(dump, [_benchmark_row(benchmark, x.shape, "ND")], inputs=[missing])
    rows = compare_file(task, CompareOptions()).rows
    assert [r.tensor_index for r in rows] == ["net/relu:input:0", "net/relu:output:0"]
    assert rows[0].compared is False
    assert rows[0].reason == "benchmark producer.0.*.npy not found"
    assert rows[0].ground_truth == "producer" and rows[0].shape == "[3,4]"
    assert (
        rows[1].metrics["CosineSimilarity"] == pytest.approx(1.0, abs=1e-6) and rows[1].reason == ""
    )


def test_a_corrupt_dump_fails_every_row_of_that_file_naming_it_while_others_complete(tmp_path):
    x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    good = tmp_path / "Relu.net_relu.1.1.1700000000000000"
    write_dump(good, "net/relu", inputs=[TensorSpec(x)], outputs=[TensorSpec(x)])
    bad = tmp_path / "Relu.net_relu.2.1.1700000000000001"
    bad.write_bytes(good.read_bytes()[:-10])  # the output payload runs past the end
    benchmark = write_benchmark(tmp_path, "relu:0", x, TS)
    mapping = _benchmark_row(benchmark, x.shape, "ND")
    in_map = MappingRow("relu", str(benchmark), origin_format="ND", origin_shape=(3, 4))
    bad_rows = compare_file(_task(bad, [mapping], [in_map]), CompareOptions()).rows
    assert [r.tensor_index for r in bad_rows] == ["net/relu:input:0", "net/relu:output:0"]
    for row in bad_rows:
        assert row.compared is False
        assert row.reason.startswith(f"{bad}: ")
    good_rows = compare_file(_task(good, [mapping], [in_map], seq=1), CompareOptions()).rows
    assert [r.metrics["CosineSimilarity"] for r in good_rows] == pytest.approx([1.0, 1.0], abs=1e-6)


def test_a_corrupt_benchmark_file_fails_its_row_naming_the_file(tmp_path):
    x = np.ones((3, 4), np.float32)
    dump = tmp_path / "Relu.net_relu.1.1.1700000000000000"
    write_dump(dump, "net/relu", outputs=[TensorSpec(x)])
    benchmark = tmp_path / "relu.0.1700000000000001.npy"
    benchmark.write_bytes(b"\x93NUMPY not really")
    (row,) = compare_file(
        _task(dump, [_benchmark_row(benchmark, x.shape, "ND")]), CompareOptions()
    ).rows
    assert row.compared is False
    assert row.reason.startswith(f"benchmark: {benchmark}: ")


def test_device_vs_device_identical_dumps_give_cosine_one_in_the_original_layout(tmp_path):
    values = _nhwc(3)
    left = tmp_path / "left" / "Relu.net_relu.1.1.1700000000000000"
    right = tmp_path / "right" / "Relu.net_relu.1.1.1700000000000005"
    left.parent.mkdir()
    right.parent.mkdir()
    inp = _nc1hwc0_spec(values, output=False)
    write_dump(left, "net/relu", inputs=[inp], outputs=[_nc1hwc0_spec(values, pad_value=3.0)])
    write_dump(right, "net/relu", inputs=[inp], outputs=[_nc1hwc0_spec(values, pad_value=-5.0)])
    fallback = MappingRow("net/relu", str(right), benchmark_kind="dump")
    rows = compare_file(_task(left, fallback=fallback), CompareOptions()).rows
    assert [r.tensor_index for r in rows] == ["net/relu:input:0", "net/relu:output:0"]
    for row in rows:
        assert row.reason == ""
        assert row.ground_truth == "net/relu"
        assert (row.device_dtype, row.benchmark_dtype) == ("DT_FLOAT16", "DT_FLOAT16")
        assert row.shape == "[2,3,4,5]"  # pads (which differ here) cut off
        assert row.metrics["CosineSimilarity"] == pytest.approx(1.0, abs=1e-6)
        assert row.metrics["MaxAbsoluteError"] == 0.0


def test_device_vs_device_missing_slot_in_the_reference_fails_only_that_row(tmp_path):
    x = np.ones((2, 3), np.float32)
    left = tmp_path / "Relu.net_relu.1.1.1700000000000000"
    right = tmp_path / "Relu.net_relu.1.1.1700000000000009"
    write_dump(left, "net/relu", inputs=[TensorSpec(x)], outputs=[TensorSpec(x)])
    write_dump(right, "net/relu", outputs=[TensorSpec(x)])
    fallback = MappingRow("net/relu", str(right), benchmark_kind="dump")
    rows = compare_file(_task(left, fallback=fallback), CompareOptions()).rows
    assert rows[0].compared is False and rows[0].reason.startswith("benchmark: ")
    assert rows[1].metrics["CosineSimilarity"] == pytest.approx(1.0, abs=1e-6)


def test_overflow_flag_is_filled_only_when_asked(tmp_path):
    x = np.array([1.0, np.inf, 2.0], np.float16)
    dump = tmp_path / "Relu.net_relu.1.1.1700000000000000"
    write_dump(dump, "net/relu", outputs=[TensorSpec(x)])
    benchmark = write_benchmark(tmp_path, "relu:0", np.array([1, 70000, 2], np.float32), TS)
    task = _task(dump, [_benchmark_row(benchmark, x.shape, "ND")])
    assert compare_file(task, CompareOptions(overflow=True)).rows[0].overflow == "YES"
    assert compare_file(task, CompareOptions()).rows[0].overflow == "NaN"


def test_overflow_flag_compares_the_magnitude_with_the_limit_nan_left_out():
    from precision_shell.compare.pipeline.worker import _overflow_flag

    def flag(values, limit=65504.0):
        return _overflow_flag(np.array(values, np.float16), limit)

    assert [flag([1, -65504]), flag([65472, np.nan]), flag([-np.inf]), flag([])] == [
        "YES",
        "NO",
        "YES",
        "NO",
    ]
    # a limit between float16 values: the next one up reaches it; above 65504 only inf does
    assert [flag([2048], 2049.0), flag([2050], 2049.0), flag([65504], 70000.0)] == [
        "NO",
        "YES",
        "NO",
    ]
    assert flag([np.inf], 70000.0) == "YES"
    assert _overflow_flag(np.array([1e9], np.float32), 65504.0) == "NaN"


def _pad_lanes_only(nhwc: np.ndarray, output: bool = True) -> TensorSpec:
    """`nhwc` (finite) stored as NC1HWC0 with an inf and a NaN in the C0 pad lanes only."""
    spec = _nc1hwc0_spec(nhwc, output=output)
    device = spec.array.copy()
    device[0, 0, 0, 0, nhwc.shape[3]] = np.inf
    device[1, 0, 1, 2, nhwc.shape[3] + 1] = np.nan
    return TensorSpec(
        device,
        format=spec.format,
        original_shape=spec.original_shape,
        original_op=spec.original_op,
        original_format=spec.original_format,
    )


def test_the_overflow_flag_reads_the_tensors_own_elements_not_its_pad_lanes(tmp_path):
    """A device keeps whatever a kernel left in the NC1HWC0 pad lanes: an inf there is no
    float16 overflow of the tensor, compared or not (a weight without benchmark)."""
    values = _nhwc(shape=(2, 3, 4, 5))  # C=5 stored in C0=16: lanes 5..15 are pads
    dump = tmp_path / "Relu.net_relu.1.1.1700000000000000"
    write_dump(
        dump,
        "net/relu",
        inputs=[_pad_lanes_only(values, output=False)],
        outputs=[_pad_lanes_only(values)],
    )
    benchmark = write_benchmark(tmp_path, "relu:0", values.astype(np.float32), TS)
    none = MappingRow("*", None, reason="constant input: no benchmark")
    weight = MappingRow("*", None, origin_format="NHWC", origin_shape=values.shape)
    compared = _benchmark_row(benchmark, values.shape)
    for inputs in ([none], [weight]):
        rows = compare_file(_task(dump, [compared], inputs), CompareOptions(overflow=True)).rows
        assert [r.overflow for r in rows] == ["NO", "NO"]
        assert rows[1].metrics["CosineSimilarity"] == pytest.approx(1.0, abs=1e-6)
    # an inf in a real lane still is one, compared or not
    real = values.copy()
    real[1, 2, 3, 4] = np.inf
    write_dump(
        dump, "net/relu", inputs=[_pad_lanes_only(real, False)], outputs=[_pad_lanes_only(real)]
    )
    rows = compare_file(_task(dump, [compared], [none]), CompareOptions(overflow=True)).rows
    assert [r.overflow for r in rows] == ["YES", "YES"]


def test_metric_memo_reuses_only_identical_device_values():
    import numpy as np

    from precision_shell.compare.pipeline import worker
    from precision_shell.compare.pipeline.plan import MappingRow

    memo = worker._MetricMemo()
    mapping = MappingRow("x", "/bench/x.0.1.npy")
    ref = np.linspace(-1, 1, 64, dtype=np.float32)
    dev = ref.astype(np.float16)
    first = memo.compute(dev, ref, mapping, None, None)
    assert memo.compute(dev.copy(), ref, mapping, None, None) is first  # same values: reused
    changed = dev.copy()
    changed[3] += np.float16(0.5)
    other = memo.compute(changed, ref, mapping, None, None)
    assert other is not first and other.max_abs_error > first.max_abs_error
    # another benchmark file never shares a result
    assert memo.compute(dev, ref, MappingRow("y", "/bench/y.0.1.npy"), None, None) is not first


def test_metric_memo_keeps_read_only_values_and_copies_writable_ones():
    import numpy as np

    from precision_shell.compare.pipeline import worker
    from precision_shell.compare.pipeline.plan import MappingRow

    memo = worker._MetricMemo()
    ref = np.linspace(-1, 1, 64, dtype=np.float32)
    frozen = ref.astype(np.float16)
    frozen.flags.writeable = False
    kept_row = memo.compute(frozen, ref, MappingRow("x", "/bench/x.0.1.npy"), None, None)
    ((kept, row),) = memo.entries.get(("/bench/x.0.1.npy", None, "<f2", (64,), None))
    assert kept is frozen and row is kept_row  # read-only: kept as it is, no copy
    writable = ref.astype(np.float16)
    first = memo.compute(writable, ref, MappingRow("y", "/bench/y.0.1.npy"), None, None)
    writable[5] = np.float16(9.0)  # changing the caller's array afterwards...
    again = memo.compute(writable, ref, MappingRow("y", "/bench/y.0.1.npy"), None, None)
    assert again is not first and again.max_abs_error > first.max_abs_error  # ...is no false hit


def test_metric_memo_matches_bytes_nan_included_and_tells_zeros_apart():
    import numpy as np

    from precision_shell.compare.pipeline import worker
    from precision_shell.compare.pipeline.plan import MappingRow

    memo = worker._MetricMemo()
    mapping = MappingRow("x", "/bench/x.0.1.npy")
    ref = np.linspace(-1, 1, 64, dtype=np.float32)
    dev = ref.astype(np.float16)
    dev[7] = np.nan
    first = memo.compute(dev, ref, mapping, None, None)
    assert memo.compute(dev.copy(), ref, mapping, None, None) is first  # same bytes, NaN and all
    zeros = np.zeros(64, np.float16)
    positive = memo.compute(zeros, ref, mapping, None, None)
    negative = memo.compute(-zeros, ref, mapping, None, None)  # -0 == +0, but not the same bytes
    assert negative is not positive


def _retype_input(dump, index: int, code: int) -> None:
    from precision_shell.formats.npu_dump_writer import LENGTH_PREFIX, dump_proto

    raw = dump.read_bytes()
    (length,) = LENGTH_PREFIX.unpack_from(raw)
    start = LENGTH_PREFIX.size
    message = dump_proto.DumpData()
    message.ParseFromString(raw[start : start + length])
    message.input[index].data_type = code
    header = message.SerializeToString()
    dump.write_bytes(LENGTH_PREFIX.pack(len(header)) + header + raw[start + length :])


def test_a_tensor_without_benchmark_is_not_read_unless_its_overflow_is_asked(tmp_path, monkeypatch):
    """A weight (no benchmark) needs no values: its row is the same without reading it, and
    a tensor that could not be decoded still says why."""
    from precision_shell.compare.pipeline import worker
    from precision_shell.formats.dtypes import DumpDataType

    weight = np.array([1.0, np.inf], np.float16)  # an overflow
    x = np.linspace(-1, 1, 6, dtype=np.float32)
    dump = tmp_path / "Relu.net_relu.1.1.1700000000000000"
    odd = TensorSpec(np.zeros(4, np.uint8))
    write_dump(dump, "net/relu", inputs=[TensorSpec(weight), odd], outputs=[TensorSpec(x)])
    _retype_input(dump, 1, DumpDataType.QINT8)  # a type we cannot decode (nor write)
    benchmark = write_benchmark(tmp_path, "relu:0", x, TS)
    none = MappingRow("*", None, reason="constant input: no benchmark")
    task = _task(dump, [_benchmark_row(benchmark, x.shape, "ND")], inputs=[none, none])
    reads: list[str] = []
    real = worker.read_tensor

    def counted(header, kind, index):
        reads.append(f"{kind}:{index}")
        return real(header, kind, index)

    monkeypatch.setattr(worker, "read_tensor", counted)
    rows = compare_file(task, CompareOptions()).rows
    assert reads == ["output:0"]
    assert [(r.reason, r.shape, r.device_dtype, r.overflow) for r in rows[:2]] == [
        ("constant input: no benchmark", "[2]", "DT_FLOAT16", "NaN"),
        (
            f"{dump}: input 1: data type QINT8: no numpy type is known for it",
            "[4]",
            "DT_QINT8",
            "NaN",
        ),
    ]
    assert rows[2].metrics["CosineSimilarity"] == pytest.approx(1.0, abs=1e-6)
    reads.clear()
    rows = compare_file(task, CompareOptions(overflow=True)).rows
    assert reads == ["input:0", "input:1", "output:0"]
    assert rows[0].overflow == "YES" and rows[0].reason == "constant input: no benchmark"


def _load(cache, path: str):
    """As a task loads a benchmark: the file's identity taken just before."""
    from precision_shell.compare.pipeline import worker

    return cache.load(path, worker._file_identity(path))


def test_benchmark_cache_reads_a_file_once_until_it_changes(tmp_path, monkeypatch):
    """An output's benchmark, compared again as its consumer's input, is not read again;
    a rewritten file is, and nothing past the bound is kept."""
    import os

    from precision_shell.compare.pipeline import worker

    reads: list[str] = []
    real = worker.load_benchmark

    def counted(path, mmap=True):
        reads.append(os.path.basename(path))
        return real(path, mmap)

    monkeypatch.setattr(worker, "load_benchmark", counted)
    cache = worker._BenchmarkCache(max_bytes=4 * 4000)  # keeps arrays of <= 4000 bytes
    small = write_benchmark(tmp_path, "a:0", np.arange(10, dtype=np.float32), TS)
    first = _load(cache, str(small))
    again = _load(cache, str(small))
    assert again is first and reads == [small.name]
    assert not first.flags.writeable
    # rewritten in place (tf_run --overwrite): a new identity, read again, new values
    before = small.stat().st_mtime_ns
    os.unlink(small)
    np.save(small, np.arange(10, 20, dtype=np.float32))
    os.utime(small, ns=(before, before + 10**9))  # not within the clock's tick of the first
    np.testing.assert_array_equal(_load(cache, str(small)), np.arange(10, 20, dtype=np.float32))
    assert reads == [small.name, small.name]
    # too big to keep: read every time
    big = write_benchmark(tmp_path, "b:0", np.zeros(2000, np.float32), TS)
    _load(cache, str(big))
    _load(cache, str(big))
    assert reads[2:] == [big.name, big.name]
    # the bound holds: four 4000-byte arrays fill it, a fifth evicts the oldest
    names = [
        write_benchmark(tmp_path, f"c{i}:0", np.full(1000, i, np.float32), TS) for i in range(5)
    ]
    reads.clear()
    for path in names:
        _load(cache, str(path))
    assert cache.entries.bytes <= 4 * 4000
    _load(cache, str(names[4]))
    _load(cache, str(names[0]))
    assert reads == [p.name for p in names] + [names[0].name]


def test_a_missing_benchmark_file_is_an_error_every_time(tmp_path):
    from precision_shell.compare.pipeline import worker
    from precision_shell.errors import PrecisionError

    cache = worker._BenchmarkCache()
    for _ in range(2):
        with pytest.raises((PrecisionError, OSError)):
            _load(cache, str(tmp_path / "gone.0.1.npy"))


def test_a_task_forgets_the_benchmark_files_no_later_task_uses(tmp_path):
    """What the memo and the benchmark cache keep of a file goes with its last use, and
    only then: an earlier task's entries stay for its consumer."""
    import dataclasses

    from precision_shell.compare.pipeline import worker

    values = np.linspace(-1, 1, 64, dtype=np.float32)
    dump = tmp_path / "Relu.net_relu.1.1.1700000000000000"
    write_dump(dump, "net/relu", outputs=[TensorSpec(values, DumpFormat.ND)])
    benchmark = str(write_benchmark(tmp_path, "relu:0", values, TS))
    task = _task(dump, [_benchmark_row(benchmark, values.shape, "ND")])

    first = compare_file(task, CompareOptions())
    assert benchmark in worker._MEMO.entries.paths()
    assert benchmark in worker._BENCHMARKS.entries.paths()
    last = compare_file(dataclasses.replace(task, last_uses=(benchmark,)), CompareOptions())
    assert last.rows[0].texts == first.rows[0].texts  # measured (or remembered) alike
    assert benchmark not in worker._MEMO.entries.paths()
    assert benchmark not in worker._BENCHMARKS.entries.paths()
    # a last use whose dump cannot be read forgets what earlier tasks kept all the same
    compare_file(task, CompareOptions())
    assert benchmark in worker._MEMO.entries.paths()
    unreadable = dataclasses.replace(
        task, device_file=str(tmp_path / "gone"), last_uses=(benchmark,)
    )
    assert compare_file(unreadable, CompareOptions()).rows[0].reason
    assert benchmark not in worker._MEMO.entries.paths()
    assert benchmark not in worker._BENCHMARKS.entries.paths()


@pytest.mark.parametrize(
    ("device_shape", "bench_shape", "reason"),
    [
        (
            (4, 6),
            (0, 6),
            "the benchmark is empty ([0,6]); the device tensor [4,6] holds 24 elements",
        ),
        (
            (4, 6),
            (3, 7),
            "device shape [4,6] does not fit benchmark shape [3,7] (smaller in one dim, "
            "larger in another)",
        ),
    ],
    ids=["empty-benchmark", "mixed"],
)
def test_shapes_that_cannot_be_cut_to_fit_are_not_compared(
    tmp_path, device_shape, bench_shape, reason
):
    """QA: a [0,...] benchmark gave cosine 1.0 after comparing 0 of 24576 elements; a shape
    larger in one dim and smaller in another was called "smaller"."""
    device = np.ones(device_shape, np.float32)
    dump = tmp_path / "MatMul.net_relu.1.1.1700000000000000"
    write_dump(dump, "net/relu", outputs=[TensorSpec(device, format=DumpFormat.ND)])
    benchmark = write_benchmark(tmp_path, "relu:0", np.ones(bench_shape, np.float32), TS)
    row_map = MappingRow("relu", str(benchmark), origin_format="ND", origin_shape=bench_shape)
    (row,) = compare_file(_task(dump, [row_map]), CompareOptions()).rows
    assert not row.compared and row.reason == reason


def test_nan_cut_off_fails_a_row_under_any_rule_with_a_limit() -> None:
    """QA: under `--metric mae:0.01` alone (no cosine or distance limit) NaN/inf cut off a
    tensor passed, and the first failing op moved downstream."""
    from precision_shell.compare.results.schema import ResultRow
    from precision_shell.compare.results.thresholds import SLICED_NONFINITE_MARK

    row = ResultRow(
        index=3,
        op_type="MaxPool",
        npu_dump="pool",
        ground_truth="pool",
        tensor_index="pool:output:0",
        shape="[2]",
        texts={"MaxAbsoluteError": "0.002171"},
        reason=f"device shape [3] cut to the benchmark's [2] (1 elements not compared; "
        f"{SLICED_NONFINITE_MARK}: 1 NaN, 0 inf)",
    )
    row.metrics["MaxAbsoluteError"] = 0.002171
    mae_only = ThresholdRule({"MaxAbsoluteError": 0.01})
    (crossing,) = mae_only.crossings(row)
    assert crossing.metric == "MaxAbsoluteError"
    assert not ThresholdRule({}).crossings(row)  # nothing judged: nothing fails


def test_nan_in_batch_samples_cut_off_is_said_not_judged(tmp_path):
    """QA (design): a device compiled for a larger batch (dynamic batch gears) pads the extra
    samples with anything; NaN there is no fault of the samples compared."""
    device = np.arange(24, dtype=np.float16).reshape(4, 6) + 1
    device[3, :] = np.nan  # the padded fourth sample
    bench = device[:3].astype(np.float32)
    dump = tmp_path / "MatMul.net_relu.1.1.1700000000000000"
    write_dump(dump, "net/relu", outputs=[TensorSpec(device, format=DumpFormat.ND)])
    benchmark = write_benchmark(tmp_path, "relu:0", bench, TS)
    row_map = MappingRow("relu", str(benchmark), origin_format="ND", origin_shape=(3, 6))
    (row,) = compare_file(_task(dump, [row_map]), CompareOptions()).rows
    assert row.reason == (
        "device shape [4,6] cut to the benchmark's [3,6] (6 elements not compared; 6 NaN, "
        "0 inf in the batch samples cut off, not judged)"
    )
    assert not ThresholdRule.default().fails(row)


def test_a_complex_device_tensor_with_an_imaginary_part_is_not_compared(tmp_path):
    """QA: a device tensor of real part + 5j was compared on its real part (cosine 1.000000,
    "no output fails"), numpy's ComplexWarning the only sign."""
    real = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    device = (real + 5j).astype(np.complex64)
    dump = tmp_path / "MatMul.net_relu.1.1.1700000000000000"
    write_dump(dump, "net/relu", outputs=[TensorSpec(device, format=DumpFormat.ND)])
    benchmark = write_benchmark(tmp_path, "relu:0", real, TS)
    row_map = MappingRow("relu", str(benchmark), origin_format="ND", origin_shape=(3, 4))
    (row,) = compare_file(_task(dump, [row_map]), CompareOptions()).rows
    assert not row.compared
    assert row.reason == (
        f"{dump}: complex64 values with a non-zero imaginary part; compares are of real "
        "tensors (output 0: not compared)"
    )
    # no imaginary part: its real part, compared
    write_dump(
        dump, "net/relu", outputs=[TensorSpec(real.astype(np.complex64), format=DumpFormat.ND)]
    )
    (row,) = compare_file(_task(dump, [row_map]), CompareOptions()).rows
    assert row.compared and row.metrics["CosineSimilarity"] == pytest.approx(1.0)
