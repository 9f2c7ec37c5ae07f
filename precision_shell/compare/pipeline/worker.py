"""The unit of work of a whole-network compare: one device dump file -> its result rows.

`compare_file(task, options)` is a pure function of its arguments (it reads the files the
task names and returns rows), so threads, processes or a distributed backend can run it.
Nothing raises out of it: a bad file or tensor becomes a row with a CompareFailReason.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from precision_shell.compare.metrics.cells import METRIC_COLUMNS, NOT_COMPUTED, csv_values
from precision_shell.compare.metrics.compute import MetricRow, compute_metrics
from precision_shell.compare.pipeline.plan import FileTask, MappingRow
from precision_shell.compare.pipeline.recent import RecentByPath
from precision_shell.compare.results.schema import CUT_TO_BENCHMARK, ResultRow
from precision_shell.compare.results.thresholds import SLICED_NONFINITE_MARK
from precision_shell.errors import PrecisionError
from precision_shell.formats.benchmark import load_benchmark, real_part
from precision_shell.formats.benchmark_layout import own_elements, to_benchmark_layout
from precision_shell.formats.dtypes import dtype_name
from precision_shell.formats.layouts import LayoutError, format_name, is_plain_format
from precision_shell.formats.npu_dump import (
    DumpHeader,
    TensorMeta,
    check_tensor,
    read_dump_header,
    read_tensor,
)

# numpy dtype -> the DT_* name msaccucmp prints for ground-truth tensors
_NUMPY_DT = {
    "float16": "DT_FLOAT16",
    "float32": "DT_FLOAT",
    "float64": "DT_DOUBLE",
    "int8": "DT_INT8",
    "uint8": "DT_UINT8",
    "int16": "DT_INT16",
    "uint16": "DT_UINT16",
    "int32": "DT_INT32",
    "int64": "DT_INT64",
    "uint32": "DT_UINT32",
    "uint64": "DT_UINT64",
    "bool": "DT_BOOL",
    "bfloat16": "DT_BF16",
    "complex64": "DT_COMPLEX64",
    "complex128": "DT_COMPLEX128",
}


# what changes whenever a file's content may have: (size, mtime, ctime, inode)
FileIdentity = tuple[int, int, int, int]


@dataclass(frozen=True)
class CompareOptions:
    algorithms: tuple[str, ...] | None = None  # None: all
    overflow: bool = False
    fp16_limit: float = 65504.0  # settings thresholds.fp16_overflow: max |x| that is flagged


@dataclass(frozen=True)
class FileResult:
    seq: int
    rows: list[ResultRow]
    bytes_read: int


def _device_dtype(meta: TensorMeta) -> str:
    return "DT_" + dtype_name(meta.dtype)


@functools.lru_cache(maxsize=64)
def _dtype_text(dtype: np.dtype) -> str:
    name = str(dtype)  # str() of a dtype is slow: once per dtype, not per tensor
    return _NUMPY_DT.get(name, name)


def _numpy_dt(array: np.ndarray) -> str:
    return _dtype_text(array.dtype)


def _shape_text(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def _address(meta: TensorMeta) -> str:
    return hex(meta.address) if meta.address else "NaN"


def _to_benchmark_layout(values: np.ndarray, meta: TensorMeta, mapping: MappingRow) -> np.ndarray:
    """Device layout -> the benchmark's layout and original shape, by the one rule that
    `cp`/`pt` use too (formats/benchmark_layout: the dump's record first, then the graph's)."""
    return to_benchmark_layout(values, meta, mapping.origin_format, mapping.origin_shape)


def _fit(device: np.ndarray, benchmark: np.ndarray) -> np.ndarray:
    """Slice larger device dims down to the benchmark shape (msaccucmp's rule; `sliced_note`
    says what was left out); raise when a dim is smaller."""
    if device.size == benchmark.size:
        return device
    if device.ndim != benchmark.ndim:
        raise ValueError(
            f"element counts differ: device {_shape_text(device.shape)} vs benchmark "
            f"{_shape_text(benchmark.shape)}"
        )
    pairs = list(zip(device.shape, benchmark.shape, strict=True))
    if any(d < r for d, r in pairs):
        if any(d > r for d, r in pairs):  # QA: said "smaller" of a shape larger in one dim
            raise ValueError(
                f"device shape {_shape_text(device.shape)} does not fit benchmark shape "
                f"{_shape_text(benchmark.shape)} (smaller in one dim, larger in another)"
            )
        raise ValueError(
            f"device shape {_shape_text(device.shape)} is smaller than benchmark shape "
            f"{_shape_text(benchmark.shape)}"
        )
    if benchmark.size == 0:  # QA: 0 of 24576 elements compared gave cosine 1.0, a pass
        raise ValueError(
            f"the benchmark is empty ({_shape_text(benchmark.shape)}); the device tensor "
            f"{_shape_text(device.shape)} holds {device.size} elements"
        )
    return device[tuple(slice(0, r) for r in benchmark.shape)]


def sliced_note(whole: np.ndarray, kept: np.ndarray) -> str:
    """The CompareFailReason note of a device tensor `_fit` cut to the benchmark's shape: how
    many elements were not compared, and the NaN/inf among them (QA: a pooling output
    16x16 on the device against a 15x15 benchmark passed with cosine 1.000000 and an empty
    reason while its cut-off row held NaN and inf; thresholds.sliced_nonfinite fails it)."""
    left_out = whole.size - kept.size
    note = (
        f"device shape {_shape_text(whole.shape)} {CUT_TO_BENCHMARK} "
        f"{_shape_text(kept.shape)} ({left_out} elements not compared"
    )
    if whole.dtype.kind in "fc":
        nan = int(np.count_nonzero(np.isnan(whole))) - int(np.count_nonzero(np.isnan(kept)))
        inf = int(np.count_nonzero(np.isinf(whole))) - int(np.count_nonzero(np.isinf(kept)))
        cut = [i for i, (w, k) in enumerate(zip(whole.shape, kept.shape, strict=True)) if w > k]
        if (nan or inf) and cut == [0]:
            # only samples past the benchmark's batch: a device compiled for a larger batch
            # (dynamic batch gears) pads it with what it likes (QA): said, not judged
            return f"{note}; {nan} NaN, {inf} inf in the batch samples cut off, not judged)"
        if nan or inf:
            return f"{note}; {SLICED_NONFINITE_MARK}: {nan} NaN, {inf} inf)"
    return note + ")"


class _Benchmarks:
    """Benchmark tensors of one task, each file opened once. `identities`: of each .npy
    loaded, the file identity it was loaded by, which the metric memo keys by too (one stat,
    and both agree on which version of the file the values are)."""

    def __init__(self) -> None:
        self._headers: dict[str, DumpHeader] = {}
        self.identities: dict[str, FileIdentity | None] = {}

    def load(
        self, mapping: MappingRow, kind: str, slot: int
    ) -> tuple[np.ndarray, TensorMeta | None]:
        """The benchmark values, and their dump metadata when the benchmark is a dump."""
        assert mapping.benchmark_path is not None
        if mapping.benchmark_kind == "npy":
            identity = _file_identity(mapping.benchmark_path)
            self.identities[mapping.benchmark_path] = identity
            return _BENCHMARKS.load(mapping.benchmark_path, identity), None
        header = self._headers.get(mapping.benchmark_path)
        if header is None:
            header = read_dump_header(mapping.benchmark_path)
            self._headers[mapping.benchmark_path] = header
        ref_kind, ref_slot = mapping.benchmark_slot or (kind, slot)
        return read_tensor(header, ref_kind, ref_slot), header.tensor(ref_kind, ref_slot)


def _align(
    raw: np.ndarray,
    meta: TensorMeta,
    benchmark: np.ndarray,
    ref_meta: TensorMeta | None,
    mapping: MappingRow,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bring device and benchmark values to one layout and shape: (device, benchmark, the
    whole device tensor, which is `device` unless `_fit` cut it to the benchmark's shape).

    Both sides go back to the original layout (a benchmark .npy is always in it already);
    two dumps in one layout that cannot be converted back are compared as stored.
    """
    if ref_meta is not None:
        if ref_meta.format == meta.format and benchmark.shape == raw.shape:
            if is_plain_format(format_name(meta.format)):
                return raw, benchmark, raw
            # The C0/fractal pads are not data (and need not be zero on a device):
            # compare in the original layout when both sides convert back alike.
            try:
                device = _to_benchmark_layout(raw, meta, mapping)
                converted = _to_benchmark_layout(benchmark, ref_meta, MappingRow("", None))
            except (LayoutError, ValueError):
                return raw, benchmark, raw
            if device.shape != converted.shape:
                return raw, benchmark, raw
            device = _read_only(np.ascontiguousarray(device))
            return device, np.ascontiguousarray(converted), device
        benchmark = _to_benchmark_layout(benchmark, ref_meta, MappingRow("", None))
    whole = _to_benchmark_layout(raw, meta, mapping)
    device = _fit(whole, benchmark)
    # One strided copy now; the metrics' chunked passes over a transposed view cost ~2x more.
    kept = _read_only(np.ascontiguousarray(device))
    return kept, benchmark, (whole if device.size != whole.size else kept)


def _read_only(values: np.ndarray) -> np.ndarray:
    """`values`, no longer writable: the memo may keep it instead of a copy."""
    values.flags.writeable = False
    return values


_NOT_COMPARED = dict.fromkeys(METRIC_COLUMNS, NOT_COMPUTED)
SAME_BYTES = "same_bytes"  # extras key: 1.0 when both dumps hold the tensor byte for byte


def _row(
    task: FileTask,
    meta_kind: str,
    slot: int,
    mapping: MappingRow,
    *,
    metrics: MetricRow | None = None,
    reason: str | None = None,
    device_dtype: str = "NaN",
    address: str = "NaN",
    benchmark_dtype: str = "NaN",
    shape: str = "NaN",
    overflow: str = "NaN",
    same_bytes: bool = False,
) -> ResultRow:
    """The row as msaccucmp prints it; the metrics become their printed cells here, once.
    `same_bytes`: device vs device, both dumps hold this tensor byte for byte (kept in
    `extras`, not in the CSV)."""
    texts = (
        dict(zip(METRIC_COLUMNS, csv_values(metrics), strict=True)) if metrics else _NOT_COMPARED
    )
    extras = {}
    if metrics is not None:
        extras = {
            "sqnr_db": metrics.sqnr_db,
            "rel_err_ratio_0_001": metrics.ratio_rel_err_below_0_001,
            "rel_err_ratio_0_005": metrics.ratio_rel_err_below_0_005,
        }
        if same_bytes:
            extras[SAME_BYTES] = 1.0
    return ResultRow(
        index=task.group_index,
        op_type=task.op_type,
        npu_dump=task.npu_dump or task.op_name,
        ground_truth=task.ground_truth or mapping.ground_truth,
        tensor_index=f"{task.op_name}:{meta_kind}:{slot}",
        shape=shape,
        texts=dict(texts),
        reason=mapping.reason if reason is None else reason,
        overflow=overflow,
        device_dtype=device_dtype,
        benchmark_dtype=benchmark_dtype,
        address=address,
        extras=extras,
    )


_FP16_INF_BITS = 0x7C00


@functools.lru_cache(maxsize=8)
def _fp16_magnitude_bits(limit: float) -> int:
    """The bits of the smallest float16 magnitude >= `limit` (inf's above 65504): for
    non-negative float16 values, x >= limit exactly when their bits are >= these."""
    if limit <= 0:
        return 0
    with np.errstate(over="ignore"):  # a limit above 65504: only inf reaches it
        least = np.float16(limit)
        if float(least) < limit:
            least = np.nextafter(least, np.float16(np.inf))
    return int(least.view(np.uint16))


def _overflow_flag(values: np.ndarray, limit: float) -> str:
    if values.dtype != np.float16:
        return "NaN"
    if values.size == 0:
        return "NO"
    # On the bits with the sign cleared: no float32 copy. NaN (above inf's bits) is not an
    # overflow (a NaN born from 0/0 says nothing about range); inf is.
    magnitude = np.bitwise_and(values.view(np.uint16), 0x7FFF)
    peak = int(np.max(magnitude, where=magnitude <= _FP16_INF_BITS, initial=0))
    return "YES" if peak >= _fp16_magnitude_bits(limit) else "NO"


def _own_overflow_flag(
    raw: np.ndarray, meta: TensorMeta, mapping: MappingRow, options: CompareOptions
) -> str:
    """The OverFlow cell of a tensor not compared: read on its own elements, the pad lanes of
    a padded layout cut off (they hold whatever the kernel left there); as stored when it does
    not convert back."""
    if not options.overflow or raw.dtype != np.float16:
        return "NaN"
    try:
        values = own_elements(raw, meta, mapping.origin_format, mapping.origin_shape)
    except (LayoutError, ValueError):
        values = raw
    return _overflow_flag(values, options.fp16_limit)


class _MetricMemo:
    """Identical (device values, benchmark file content) pairs are measured once.

    An op's input is usually its producer's output dumped a second time, compared against the
    same benchmark file; measuring it again would cost as much as the first time. Entries
    keep the device values (the array itself when it is read-only, as the readers and `_align`
    return it: no copy per tensor; a copy otherwise) and a hit needs the same bytes (`_equal`:
    a memcmp, far cheaper than the metrics, and cheaper than hashing). Bounded in bytes, and
    small: every byte it keeps is a page the next tensor cannot reuse and must fault in fresh
    (`page_reuse`), while its hits come soon after their entry (the consumer is a task or two
    later: on the large demo every one of 444 hits came within 1.1 MiB of later entries, on
    the big-tensors workspace within 16 MiB, the size of its largest tensor). Going from 64 to
    32 MiB took ~22k page faults off the two workers' ~96k on the distinct-tensor workspace,
    with every hit kept. A file's entries go once no later task uses the file
    (`FileTask.last_uses`).
    An entry can still outlive its `vc` (a Dask worker lives on, and its file's last use may
    have run on another worker; tasks built without the plan carry no last uses), and a
    benchmark file is rewritten under the same name (`tf_run --overwrite`), so the file is
    keyed by its identity (size, mtime, ctime, inode), not by its path.
    """

    def __init__(self, max_bytes: int = 32 * 2**20, max_entry_bytes: int = 16 * 2**20) -> None:
        self.entries: RecentByPath[list[tuple[np.ndarray, MetricRow]]] = RecentByPath(max_bytes)
        self._max_entry_bytes = max_entry_bytes

    def compute(
        self,
        device: np.ndarray,
        benchmark: np.ndarray,
        mapping: MappingRow,
        algorithms: tuple[str, ...] | None,
        identity: FileIdentity | None,
    ) -> MetricRow:
        """`identity`: the benchmark file's when its values were loaded (`_file_identity`).
        None (the file is gone) is a key of its own: a file made again gets a new identity."""
        if mapping.benchmark_kind != "npy" or device.nbytes > self._max_entry_bytes:
            return compute_metrics(device, benchmark, algorithms)
        key = (mapping.benchmark_path, identity, device.dtype.str, device.shape, algorithms)
        candidates = self.entries.get(key) or []
        for values, row in candidates:
            if _equal(values, device):
                return row
        row = compute_metrics(device, benchmark, algorithms)
        kept = np.array(device) if device.flags.writeable else device
        candidates = [*candidates, (kept, row)]
        self.entries.put(key, candidates, sum(values.nbytes for values, _ in candidates))
        return row


_PROBE = 4096  # elements compared first: distinct tensors almost always differ in them


def _equal(kept: np.ndarray, device: np.ndarray) -> bool:
    """The same bytes, so the same metrics (a NaN matches itself; -0 and +0 do not match). A
    miss costs a probe of the first elements' bytes, not a whole pass (in a workspace whose
    tensors are all distinct, every lookup is a miss); bytes compare several times faster
    than float16 values do."""
    head_kept, head_device = kept.reshape(-1)[:_PROBE], device.reshape(-1)[:_PROBE]
    return head_kept.tobytes() == head_device.tobytes() and _same_bytes(kept, device)


def _file_identity(path: str | None) -> FileIdentity | None:
    """What changes whenever a file's content may have: a rewrite, a delete and re-create."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


_MEMO = _MetricMemo()


class _BenchmarkCache:
    """Benchmark .npy arrays loaded lately, by file identity (`_file_identity`, as the memo).

    An op's output is compared again as its consumer's input, against the same benchmark
    file: on the large demo `vc` loads 299 benchmark files 744 times (434 MB for 174 MB).
    The arrays are read-only (`load_benchmark`'s), so no user can change a cached one; a
    rewritten file has a new identity and is read again. Bounded in bytes; an array of more
    than a quarter of the bound (or memory-mapped) is not kept. The consumer is almost always
    a task or two later, so the bound is small: 8 MiB already read every file of that demo
    once; on a workspace of 8 MB files (39 tensors compared against 18 files) 32 MiB made 19
    loads, 16 MiB 31. Each process worker has its own. A file goes once no later task uses it
    (`FileTask.last_uses`)."""

    def __init__(self, max_bytes: int = 32 * 2**20) -> None:
        self.entries: RecentByPath[np.ndarray] = RecentByPath(max_bytes)

    def load(self, path: str, identity: FileIdentity | None) -> np.ndarray:
        """`path`'s values; `identity`: the file's, just taken (`_file_identity`)."""
        key = (path, identity)
        if identity is not None:
            values = self.entries.get(key)
            if values is not None:
                return values
        values = load_benchmark(path)
        keep = (
            identity is not None
            and not values.flags.writeable
            and not isinstance(values, np.memmap)
            and values.nbytes <= self.entries.max_bytes // 4
        )
        if keep:
            self.entries.put(key, values, values.nbytes)
        return values


_BENCHMARKS = _BenchmarkCache()


class _Cells(TypedDict, total=False):
    """The text cells `_row` takes by keyword besides the metrics and the reason."""

    device_dtype: str
    address: str
    benchmark_dtype: str
    shape: str
    overflow: str


def _compare_tensor(
    task: FileTask, header: DumpHeader, meta: TensorMeta, refs: _Benchmarks, options: CompareOptions
) -> ResultRow:
    mapping = task.mapping(meta.kind, meta.index)
    common = _Cells(
        device_dtype=_device_dtype(meta),
        address=_address(meta),
        shape=_shape_text(meta.original_shape or meta.shape),
    )
    if mapping.benchmark_path is None and not options.overflow:
        # Nothing to compare and no overflow to flag (a weight, mostly): the row needs no
        # values, so none are read; a tensor that could not be read still says why.
        try:
            check_tensor(header, meta.kind, meta.index)
        except PrecisionError as exc:
            return _row(task, meta.kind, meta.index, mapping, reason=str(exc), **common)
        return _row(task, meta.kind, meta.index, mapping, **common)
    try:
        raw = real_part(
            task.device_file,
            read_tensor(header, meta.kind, meta.index),
            f"{meta.label}: not compared",
        )
    except PrecisionError as exc:
        return _row(task, meta.kind, meta.index, mapping, reason=str(exc), **common)
    if mapping.benchmark_path is None:
        common["overflow"] = _own_overflow_flag(raw, meta, mapping, options)
        return _row(task, meta.kind, meta.index, mapping, **common)
    try:
        benchmark, ref_meta = refs.load(mapping, meta.kind, meta.index)
    except (PrecisionError, KeyError, LayoutError, ValueError) as exc:
        common["overflow"] = _own_overflow_flag(raw, meta, mapping, options)
        return _row(task, meta.kind, meta.index, mapping, reason=f"benchmark: {exc}", **common)
    common["benchmark_dtype"] = _device_dtype(ref_meta) if ref_meta else _numpy_dt(benchmark)
    # device vs device: whether both dumps hold the same bytes, while both are in memory
    same = ref_meta is not None and _same_bytes(raw, benchmark)
    try:
        device, benchmark, whole = _align(raw, meta, benchmark, ref_meta, mapping)
    except (LayoutError, ValueError) as exc:
        common["overflow"] = _own_overflow_flag(raw, meta, mapping, options)
        return _row(task, meta.kind, meta.index, mapping, reason=str(exc), **common)
    # the tensor's own values, pads cut (all of them, where `_fit` compares only a part):
    # flagged as they are, no second copy
    common["overflow"] = _overflow_flag(whole, options.fp16_limit) if options.overflow else "NaN"
    sliced = sliced_note(whole, device) if whole is not device else None
    common["shape"] = _shape_text(benchmark.shape)
    try:
        identity = refs.identities.get(mapping.benchmark_path)
        metrics = _MEMO.compute(device, benchmark, mapping, options.algorithms, identity)
    except (LayoutError, ValueError) as exc:
        return _row(task, meta.kind, meta.index, mapping, reason=str(exc), **common)
    # msaccucmp joins the messages of its algorithms with ","
    reason = ",".join((*metrics.reasons, *([sliced] if sliced else [])))
    return _row(
        task,
        meta.kind,
        meta.index,
        mapping,
        metrics=metrics,
        reason=reason,
        same_bytes=same,
        **common,
    )


def _same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    """The same dtype, shape and bytes (NaN payloads included, unlike ==)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return np.array_equal(
        np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8)
    )


def compare_file(task: FileTask, options: CompareOptions) -> FileResult:
    """Every input and output tensor of one device dump file against its benchmark. Then,
    however that went, the memo and the benchmark cache forget the benchmark files no later
    task uses (`FileTask.last_uses`)."""
    try:
        return _compare_tensors(task, options)
    finally:
        for path in task.last_uses:
            _MEMO.entries.forget(path)
            _BENCHMARKS.entries.forget(path)


def _compare_tensors(task: FileTask, options: CompareOptions) -> FileResult:
    try:
        header = read_dump_header(task.device_file)
    except (PrecisionError, OSError) as exc:
        message = (
            str(exc) if isinstance(exc, PrecisionError) else f"{task.device_file}: {exc.strerror}"
        )
        rows = [_row(task, "input", k, m, reason=message) for k, m in enumerate(task.inputs)]
        rows += [_row(task, "output", k, m, reason=message) for k, m in enumerate(task.outputs)]
        if not rows:
            rows = [_row(task, "output", 0, task.mapping("output", 0), reason=message)]
        return FileResult(task.seq, rows, 0)
    refs = _Benchmarks()
    rows = [
        _guarded_compare(task, header, meta, refs, options)
        for meta in (*header.inputs, *header.outputs)
    ]
    # what the header and its payloads span, not the file's size: bytes after the last
    # payload (a sparse hole of 50 GB, say) are never read
    return FileResult(task.seq, rows, header.file_size - header.trailing_bytes)


def _guarded_compare(
    task: FileTask, header: DumpHeader, meta: TensorMeta, refs: _Benchmarks, options: CompareOptions
) -> ResultRow:
    """One tensor; an unforeseen failure fails its row, never the whole compare."""
    try:
        return _compare_tensor(task, header, meta, refs, options)
    except Exception as exc:  # noqa: BLE001 - one odd tensor must not stop a network compare
        mapping = task.mapping(meta.kind, meta.index)
        reason = f"{task.device_file}: {meta.label}: cannot compare: {type(exc).__name__}: {exc}"
        return _row(task, meta.kind, meta.index, mapping, reason=reason)
