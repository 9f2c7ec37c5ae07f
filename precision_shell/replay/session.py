"""`replay` in a workspace: one device op recomputed in float64 from its own dumped inputs.

The device's inputs are shared by the replay, so the device output against the replay is the
kernel's OWN error. Where the output has a benchmark tensor, the replay against the benchmark
is the error the op INHERITED from its inputs, and the device against the benchmark is the
TOTAL. A total that the inherited part explains points upstream; a large own error points at
this kernel.

Tensors are read from the op's newest dump file in the (rank, step) asked for and brought to
their original layout by the rule `vc` uses (formats/benchmark_layout: the dump's original
layout and shape, else the GE graph desc's), so a kernel sees NHWC activations, HWCN filters
and ND matrices. TransData is the exception: its job is the device layout, so its tensors are
handed over as stored, with their device formats.

Verdict per output, from the own error in ULPs of the output's dtype (see `verdict`):
- max ULP <= 1: the kernel is exact for its dtype (correctly rounded, or nearly);
- max ULP > 4 and a relative Euclidean distance above twice the dtype's unit roundoff (or a
  NaN/inf the replay does not have): the kernel itself is wrong;
- otherwise: within the rounding of a kernel that accumulates in a wider type (a large ULP
  count at a few elements where values cancel near zero, with a tiny overall distance, is
  cancellation, not a wrong kernel).
An element whose exact value rounds to inf in the dtype, where the device holds that same inf,
counts as correct (the value does not fit the dtype; the kernel rounded it right) and is
reported as an overflow count instead.
Anything that cannot be replayed faithfully (no kernel, a missing attribute, a layout that
does not convert) is a PrecisionError with a one-line reason, never a guess.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from precision_shell.errors import PrecisionError
from precision_shell.explore.op_lookup import lookup_ops
from precision_shell.formats.benchmark import load_benchmark
from precision_shell.formats.benchmark_layout import to_benchmark_layout_named
from precision_shell.formats.ge.model import OpDef, TensorDesc
from precision_shell.formats.layouts import LayoutError
from precision_shell.formats.npu_dump import DumpHeader, TensorMeta, read_tensor
from precision_shell.json_numbers import json_number
from precision_shell.replay.chain import describe_fused, replay_fused
from precision_shell.replay.isolated import (
    BenchmarkInputs,
    allowed_distance,
    benchmark_inputs,
    constants_differ,
    rounded_constants,
)
from precision_shell.replay.kernels.registry import (
    KernelCall,
    TensorInfo,
    describe_attrs,
    has_kernel,
    replay_op,
)
from precision_shell.replay.measure import FLOAT_TYPES, OwnError, own_error, ulp
from precision_shell.workspace.dump_index import DumpFileRef
from precision_shell.workspace.graph_index import GraphIndex, OpRecord
from precision_shell.workspace.workspace import RunIndex, Workspace

EXACT_ULP = 1.0  # at most this many ULP: the kernel is exact for its dtype
WRONG_ULP = 4.0  # beyond this many ULP (and a distance beyond rounding): the kernel is wrong
WRONG_DISTANCE_ROUNDOFFS = 2.0  # ... a relative distance beyond this many unit roundoffs

_DTYPE_WORDS = {
    "DT_FLOAT16": "float16",
    "DT_FLOAT": "float32",
    "DT_BF16": "bfloat16",
    "DT_BFLOAT16": "bfloat16",
    "DT_DOUBLE": "float64",
}


@dataclass(frozen=True)
class OutputReplay:
    """One output of the replayed op: the three error measures and the verdict."""

    slot: int
    dtype: str  # GE name of the device dtype, "DT_FLOAT16"
    layout: str  # layout the values were compared in
    shape: tuple[int, ...]
    own: OwnError  # device vs replay
    inherited: OwnError | None  # replay vs benchmark
    total: OwnError | None  # device vs benchmark
    benchmark: str | None  # the benchmark file compared, when one exists
    verdict: str
    note: str | None = None  # why there is no inherited / total although a benchmark exists
    overflow: int = 0  # elements whose exact value overflows the dtype, as the device's does
    isolated: OwnError | None = None  # replay from the benchmark's data inputs vs benchmark
    isolated_note: str | None = None  # why there is no isolated measure (with a benchmark)
    isolated_allowed: float | None = None  # how far rounding lets the isolated replay be off

    @property
    def constants_differ(self) -> bool:
        """From the benchmark's own inputs the op is off beyond rounding (replay/isolated)."""
        return constants_differ(self.isolated, self.allowed)

    @property
    def allowed(self) -> float:
        """What rounding allows the isolated replay (the dtype's base when not measured)."""
        if self.isolated_allowed is not None:
            return self.isolated_allowed
        return allowed_distance(self.dtype)


@dataclass(frozen=True)
class ReplayReport:
    """`replay OP`: what was replayed, from which file, with which attributes, per output."""

    op: str
    type: str
    run: str
    dump_file: str
    original_types: list[str]  # the fused members' TF types ([] when not fused)
    attrs: dict[str, Any]  # describe_attrs, or describe_fused per member
    outputs: list[OutputReplay]
    dump_slice: str = ""  # "rank 0 step 1" when the run has several dump dirs
    rank: str | None = None  # ... and that (rank, step)
    step: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-ready data; NaN and inf become the strings "nan", "inf", "-inf"."""
        return {
            "op": self.op,
            "type": self.type,
            "run": self.run,
            "rank": self.rank,
            "step": self.step,
            "dump_file": self.dump_file,
            "attrs": _json_value(self.attrs),
            "outputs": [
                {
                    "slot": out.slot,
                    "dtype": out.dtype,
                    "own": error_json(out.own, "own"),
                    "inherited": error_json(out.inherited, "inherited"),
                    "total": error_json(out.total, "total"),
                    "isolated": error_json(out.isolated, "isolated"),
                    "isolated_allowed": json_number(out.allowed) if out.isolated else None,
                    "isolated_note": out.isolated_note,
                    "constants_differ": out.constants_differ,
                    "benchmark": out.benchmark,
                    "verdict": out.verdict,
                    "overflow": out.overflow,
                }
                for out in self.outputs
            ],
        }


# The two sides of each measure of an output, in `OwnError`'s order (first, second).
SIDES = {
    "own": ("device", "replay"),
    "inherited": ("replay", "benchmark"),
    "total": ("device", "benchmark"),
    "isolated": ("isolated replay", "benchmark"),
}


def error_json(error: OwnError | None, measure: str) -> dict[str, Any] | None:
    """The four error measures of one comparison (`measure`: a key of SIDES), NaN and inf as
    strings; `elements`, and `left_out`: the elements NaN/inf on a side, which cosine and
    relative_euclidean_distance leave out (`<side>_only`, `both_different`, `both_same`)."""
    if error is None:
        return None
    first, second = (side.replace(" ", "_") for side in SIDES[measure])
    return {
        "cosine": json_number(error.cosine),
        "max_abs_error": json_number(error.max_abs_error),
        "relative_euclidean_distance": json_number(error.relative_euclidean_distance),
        "max_ulp": json_number(error.max_ulp),
        "elements": error.elements,
        "left_out": {
            f"{first}_only": error.nonfinite_first,
            f"{second}_only": error.nonfinite_second,
            "both_different": error.nonfinite_differ,
            "both_same": error.nonfinite_same,
        },
    }


def _json_value(value: Any) -> Any:
    """Attribute values (numpy scalars and arrays, tuples, bytes) as plain JSON data."""
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [
            _json_value(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value)
        ]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return json_number(float(value))
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if value is None or isinstance(value, str):
        return value
    return str(value)


# --- verdict ---------------------------------------------------------------------------------


def dtype_word(dtype: str) -> str:
    """ "DT_FLOAT16" -> "float16" (other names lower-cased without the prefix)."""
    return _DTYPE_WORDS.get(dtype.upper(), dtype.upper().removeprefix("DT_").lower())


def ulp_text(value: float) -> str:
    """A ULP count for sentences: two significant digits below 10, whole numbers above."""
    if not math.isfinite(value):
        return "inf"
    return f"{value:.2g}" if value < 10 else f"{value:.0f}"


def is_wrong(own: OwnError, dtype: str) -> bool:
    """True when the own error is beyond what any correct kernel of `dtype` makes.

    Large ULP counts alone are not enough: near zero the ULP is tiny and a wider-type
    accumulation that cancels leaves many of them at a few elements. The kernel is wrong
    when, beyond WRONG_ULP, the whole output is also off by more than WRONG_DISTANCE_ROUNDOFFS
    unit roundoffs of its dtype (or has a NaN/inf the replay does not)."""
    if not math.isfinite(own.max_ulp):
        return True
    if own.max_ulp <= WRONG_ULP:
        return False
    roundoff = float(ulp(np.array(1.0), dtype)) / 2  # unit roundoff: half the spacing at 1
    return own.relative_euclidean_distance > WRONG_DISTANCE_ROUNDOFFS * roundoff


def verdict(
    own: OwnError, dtype: str, isolated: OwnError | None = None, allowed: float | None = None
) -> str:
    """One sentence on the kernel's own error (thresholds in the module docstring), and on
    what the op does from the benchmark's own inputs when that is off beyond `allowed`."""
    units, word = ulp_text(own.max_ulp), dtype_word(dtype)
    if is_wrong(own, dtype):
        kernel, inherits = f"own error {units} ULP: the kernel itself is wrong", False
    elif own.max_ulp <= EXACT_ULP:
        kernel, inherits = (
            f"the kernel's own error is {units} ULP: this op is exact for {word}",
            True,
        )
    elif own.max_ulp <= WRONG_ULP:
        kernel = (
            f"the kernel's own error is {units} ULP: within the rounding of a {word} kernel "
            "that accumulates in a wider type"
        )
        inherits = True
    else:
        kernel = (
            f"the kernel's own error is {units} ULP at its worst element but only "
            f"{own.relative_euclidean_distance:.2g} relative overall: cancellation near zero "
            f"within {word} rounding, not a wrong kernel"
        )
        inherits = True
    allowed = allowed_distance(dtype) if allowed is None else allowed
    if constants_differ(isolated, allowed):
        assert isolated is not None
        return f"{kernel}; {isolated_text(isolated, allowed)}"
    return f"{kernel}; its deviation comes from its inputs" if inherits else kernel


def isolated_text(isolated: OwnError, allowed: float) -> str:
    """What a replay from the benchmark's own inputs that is off beyond rounding says."""
    if isolated.nonfinite_mismatch:
        off = f"from the benchmark's own inputs {nonfinite_mismatch_text(isolated, 'isolated')}"
    else:
        off = (
            f"from the benchmark's own inputs its output is still "
            f"{isolated.relative_euclidean_distance:.2g} off (rel. Euclidean; rounding allows "
            f"{allowed:.2g})"
        )
    return (
        f"{off}: what the device gives it besides data differs from the benchmark's: its "
        "constant inputs (weights, bias, scale) or its attributes"
    )


def finite_only_text(elements: int, left_out: int) -> str:
    """`cosine and rel. Euclidean over the 255 of 256 elements finite on both sides`, or ""
    when nothing was left out: one wording wherever a replay measure is shown."""
    if not left_out:
        return ""
    return (
        f"cosine and rel. Euclidean over the {elements - left_out} of {elements} elements "
        "finite on both sides"
    )


def nonfinite_mismatch_text(error: OwnError, measure: str) -> str:
    """`its output holds 2 NaN/inf where the benchmark's is finite`, ...: the elements whose
    NaN/inf the other side lacks, by side (`measure`: a key of SIDES; the first side is the
    op's output)."""
    _, second = SIDES[measure]
    parts = []
    if error.nonfinite_first:
        parts.append(
            f"its output holds {error.nonfinite_first} NaN/inf where the {second}'s is finite"
        )
    if error.nonfinite_second:
        parts.append(
            f"the {second} holds {error.nonfinite_second} NaN/inf where its output is finite"
        )
    if error.nonfinite_differ:
        parts.append(f"{error.nonfinite_differ} elements are NaN/inf on both sides but differ")
    return ", and ".join(parts)


# --- finding the op and its dump ---------------------------------------------------------------


def _find_op(
    ws: Workspace, run: RunIndex | None, op_name: str
) -> tuple[RunIndex, GraphIndex, OpRecord, OpDef]:
    """The op `op_name` means, as `ni` looks it up (explore/op_lookup: its name, an original
    TF name fused into it, one of its dump files), in `run` or the first run holding it."""
    runs = [run] if run is not None else ws.runs
    if not runs:
        raise PrecisionError(f"{ws.root}: no device run (npu/debug_N/) in this workspace")
    lookup = lookup_ops(runs, op_name, ws.root)
    for candidate in runs:
        hits = lookup.matches.get(candidate.name, [])
        names = list(dict.fromkeys(rec.name for _, rec in hits))
        if len(names) > 1:
            raise PrecisionError(
                f"{op_name} is fused into several ops ({', '.join(names)}); name one"
            )
        if hits:
            graph, rec = hits[0]
            return candidate, graph, rec, _op_def(graph, rec)
    where = run.name if run is not None else ", ".join(r.name for r in runs)
    raise PrecisionError(f"op {op_name!r} is not in the graph of {where}")


def _op_def(graph: GraphIndex, rec: OpRecord) -> OpDef:
    op = graph.op(rec.name)
    if op is None:
        raise PrecisionError(f"op {rec.name!r}: its definition is missing from the graph")
    return op


def _newest_dump(
    ws: Workspace, run: RunIndex, name: str, rank: str | None, step: str | None
) -> DumpFileRef:
    refs = ws.dump_files(run, name, rank, step)
    if refs:
        return refs[-1]
    where = f", rank {rank}" if rank is not None else ""
    where += f", step {step}" if step is not None else ""
    if ws.dump_files(run, name, rank, step, statistics=True):
        raise PrecisionError(
            f"op {name!r} ({run.name}{where}) has only a statistics dump: no tensor values to "
            "replay"
        )
    raise PrecisionError(f"op {name!r} ({run.name}{where}) has no dump file")


# --- reading tensors ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Tensor:
    values: np.ndarray  # float64 for floats; ints and bools keep their dtype
    info: TensorInfo


def _ge_dtype(meta: TensorMeta) -> str:
    return f"DT_{meta.dtype_name}"


def _as_kernel_values(values: np.ndarray) -> np.ndarray:
    if values.dtype.kind in "iub":
        return np.asarray(values)
    return np.asarray(values, dtype=np.float64)


def _read(
    header: DumpHeader, meta: TensorMeta, desc: TensorDesc | None, as_stored: bool, op: str
) -> _Tensor:
    stored = read_tensor(header, meta.kind, meta.index)
    if as_stored:
        values, layout = stored, meta.format_name
    else:
        graph_format = desc.origin_format if desc is not None else None
        graph_shape = desc.origin_shape if desc is not None else None
        try:
            values, layout = to_benchmark_layout_named(stored, meta, graph_format, graph_shape)
        except LayoutError as exc:
            raise PrecisionError(f"{op}: {meta.label} does not convert: {exc}") from None
    info = TensorInfo(_ge_dtype(meta), layout, tuple(int(d) for d in values.shape))
    return _Tensor(_as_kernel_values(values), info)


def _tensors(
    header: DumpHeader, metas: Sequence[TensorMeta], descs: Sequence[TensorDesc], as_stored: bool
) -> list[_Tensor]:
    return [
        _read(header, meta, descs[k] if k < len(descs) else None, as_stored, header.op_name)
        for k, meta in enumerate(metas)
    ]


# --- the replay -----------------------------------------------------------------------------


def _original_types(op: OpDef) -> list[str]:
    value = op.attrs.get("_datadump_original_op_types")
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, list):
        return [str(item) for item in value]
    return []


def missing_kernel(op: OpDef) -> str | None:
    """Why `op` has no replay at all (its type, or a fused member's, has no kernel), from
    the graph alone and without reading a dump; None when a replay may run. A replay that
    passes this can still refuse for an attribute or a layout."""
    types = _original_types(op)
    if len(types) > 1:
        unknown = sorted({t for t in types if not has_kernel(t)})
        if unknown:
            return f"no replay kernel for {', '.join(unknown)} (fused into {op.type})"
        return None
    if has_kernel(op.type) or (types and has_kernel(types[0])):
        return None
    return f"no replay kernel for op type {op.type}"


def _replay(call: KernelCall, op: OpDef) -> tuple[list[np.ndarray], dict[str, Any]]:
    """(replayed outputs, attributes used): member by member for a fused op."""
    types, names = _original_types(op), op.original_op_names or []
    if len(types) > 1:
        described = describe_fused(call, types, names)
        return replay_fused(call, types, names), described
    described = describe_attrs(call)
    return replay_op(call), described


def _own(device: np.ndarray, replayed: np.ndarray, dtype: str) -> tuple[OwnError, int]:
    """The own error, and how many elements overflow `dtype` correctly.

    Where the exact value rounds to inf in `dtype` and the device holds that same inf, the
    kernel rounded correctly: the value does not fit the dtype, which is its inputs' (or the
    model's) doing. Those elements are measured as equal instead of as an inf mismatch."""
    kind = FLOAT_TYPES.get(dtype.upper())
    if kind is None or device.size != replayed.size:
        return own_error(device, replayed, dtype), 0
    device = device.reshape(replayed.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = replayed.astype(kind).astype(np.float64)
    overflow = np.isinf(rounded) & np.isfinite(replayed) & (device == rounded)
    reference = np.where(overflow, device, replayed)
    return own_error(device, reference, dtype), int(overflow.sum())


@dataclass(frozen=True)
class _Against:
    """One output's benchmark: the file, its values, or why they cannot be compared."""

    path: str | None = None
    values: np.ndarray | None = None
    note: str | None = None


def _benchmark(
    ws: Workspace, rec: OpRecord, slot: int, scope: tuple[str | None, str | None]
) -> _Against:
    benchmark = ws.output_benchmark(rec, slot, *scope)
    if benchmark is None:
        return _Against()
    try:
        values = np.asarray(load_benchmark(benchmark.path), dtype=np.float64)
    except PrecisionError as exc:
        return _Against(benchmark.path, note=f"benchmark not compared: {exc}")
    return _Against(benchmark.path, values)


@dataclass(frozen=True)
class _Errors:
    """One output against its benchmark: inherited, total and isolated errors, or a note."""

    inherited: OwnError | None = None
    total: OwnError | None = None
    isolated: OwnError | None = None
    note: str | None = None


def _errors(
    bench: _Against,
    replayed: np.ndarray,
    device: np.ndarray,
    isolated: np.ndarray | None,
    dtype: str,
) -> _Errors:
    if bench.values is None:
        return _Errors(note=bench.note)
    try:
        return _Errors(
            inherited=own_error(replayed, bench.values, dtype),
            total=own_error(device, bench.values, dtype),
            isolated=None if isolated is None else own_error(isolated, bench.values, dtype),
        )
    except PrecisionError as exc:
        return _Errors(note=f"benchmark not compared: {exc}")


@dataclass(frozen=True)
class _IsolatedRun:
    """The op replayed from the benchmark's data inputs (replay/isolated), or why not."""

    outputs: list[np.ndarray] | None = None
    note: str | None = None
    fed: BenchmarkInputs | None = None


def _replay_with(call: KernelCall, op: OpDef, inputs: list[np.ndarray]) -> list[np.ndarray]:
    with np.errstate(all="ignore"):
        return _replay(replace(call, inputs=inputs), op)[0]


def _isolated_replay(
    ws: Workspace,
    graph: GraphIndex,
    rec: OpRecord,
    op: OpDef,
    call: KernelCall,
    scope: tuple[str | None, str | None],
) -> _IsolatedRun:
    fed = benchmark_inputs(ws, graph, rec, call.inputs, scope)
    if fed.inputs is None:
        return _IsolatedRun(note=f"no isolated replay: {fed.note}")
    return _IsolatedRun(_replay_with(call, op, fed.inputs), None, fed)


def _allowances(
    run: _IsolatedRun, errors: Sequence[_Errors], dtypes: Sequence[str], call: KernelCall, op: OpDef
) -> list[float]:
    """Per output, how far its isolated replay may be off by rounding (replay/isolated):
    the dtype's base allowance, widened by what rounding its constants moves it by, which a
    third replay measures only when some output is beyond the base."""
    base = [allowed_distance(dtype) for dtype in dtypes]
    beyond = any(constants_differ(e.isolated, b) for e, b in zip(errors, base, strict=True))
    if not beyond or run.fed is None or run.outputs is None:
        return base
    moved = rounded_constants(run.fed, [info.dtype for info in call.input_info])
    if moved is None:
        return base
    shifted = _replay_with(call, op, moved)
    allowed = []
    for slot, dtype in enumerate(dtypes):
        if slot >= len(shifted) or slot >= len(run.outputs):
            allowed.append(base[slot])
            continue
        moves = own_error(shifted[slot], run.outputs[slot], dtype).relative_euclidean_distance
        allowed.append(allowed_distance(dtype, moves if np.isfinite(moves) else 0.0))
    return allowed


def replay_op_in_workspace(
    ws: Workspace,
    run: RunIndex | None,
    op_name: str,
    rank: str | None = None,
    step: str | None = None,
) -> ReplayReport:
    """Replay `op_name` (in `run`, else the first run holding it) from its newest dump file
    in the (rank, step) given, and measure its own, inherited and total error per output.

    Raises PrecisionError (ReplayUnsupported among them) with a one-line reason when the op
    is not in the graph, has no tensor dump, or cannot be replayed faithfully."""
    run, graph, rec, op = _find_op(ws, run, op_name)
    ref = _newest_dump(ws, run, rec.name, rank, step)
    where = run.slice(rank, step) if run.slices else None
    scope = (where.rank, where.step) if where is not None else (None, None)
    header = ws.header(ref)
    if not header.outputs:
        raise PrecisionError(f"{ref.file_name}: the dump holds no outputs to compare")
    as_stored = op.type == "TransData"
    inputs = _tensors(header, header.inputs, op.input_descs, as_stored)
    outputs = _tensors(header, header.outputs, op.output_descs, as_stored)
    call = KernelCall(
        op_type=op.type,
        attrs=op.attrs,
        inputs=[t.values for t in inputs],
        input_info=[t.info for t in inputs],
        output_info=[t.info for t in outputs],
        op_name=rec.name,
    )
    with np.errstate(all="ignore"):  # inf/NaN inputs give inf/NaN outputs, as on the device
        replayed, described = _replay(call, op)
    against = [_benchmark(ws, rec, slot, scope) for slot in range(len(replayed))]
    alone = _IsolatedRun()
    if not as_stored and any(a.values is not None for a in against):
        alone = _isolated_replay(ws, graph, rec, op, call, scope)
    device_values = [np.asarray(t.values, dtype=np.float64) for t in outputs]
    dtypes = [t.info.dtype for t in outputs][: len(replayed)]
    errors = [
        _errors(
            against[slot],
            value,
            device_values[slot],
            alone.outputs[slot]
            if alone.outputs is not None and slot < len(alone.outputs)
            else None,
            dtypes[slot],
        )
        for slot, value in enumerate(replayed[: len(outputs)])
    ]
    allowed = _allowances(alone, errors, dtypes, call, op)
    results = []
    for slot, (device, value) in enumerate(zip(outputs, replayed, strict=False)):
        dtype = device.info.dtype
        own, overflow = _own(device_values[slot], value, dtype)
        found = errors[slot]
        results.append(
            OutputReplay(
                slot=slot,
                dtype=dtype,
                layout=device.info.format,
                shape=device.info.shape,
                own=own,
                inherited=found.inherited,
                total=found.total,
                benchmark=against[slot].path,
                verdict=verdict(own, dtype, found.isolated, allowed[slot]),
                note=found.note,
                overflow=overflow,
                isolated=found.isolated,
                isolated_note=alone.note if found.inherited is not None else None,
                isolated_allowed=allowed[slot] if found.isolated is not None else None,
            )
        )
    shown = where.label if where is not None and len(run.slices) > 1 else ""
    if not shown:
        where = None
    return ReplayReport(
        op=rec.name,
        type=op.type,
        run=run.name,
        dump_file=ref.file_name,
        original_types=_original_types(op) if len(_original_types(op)) > 1 else [],
        attrs=described,
        outputs=results,
        dump_slice=shown,
        rank=where.rank if where is not None else None,
        step=where.step if where is not None else None,
    )
