"""Checks that need no compare: fusion passes and the ops they made, dangerous casts, and
dtype/layout differences between two device runs of the same graph."""

from __future__ import annotations

from dataclasses import dataclass

from precision_shell.formats.fusion_result import FusionPass
from precision_shell.workspace.graph_index import GraphIndex

_FLOATS = {"DT_FLOAT", "DT_FLOAT16", "DT_BF16", "DT_DOUBLE"}
_INTS = {
    "DT_INT8",
    "DT_UINT8",
    "DT_INT16",
    "DT_UINT16",
    "DT_INT32",
    "DT_UINT32",
    "DT_INT64",
    "DT_UINT64",
    "DT_BOOL",
    "DT_INT4",
}
_FLOAT_BITS = {"DT_DOUBLE": 64, "DT_FLOAT": 32, "DT_FLOAT16": 16, "DT_BF16": 16}
_INT_BITS = {
    "DT_INT8": 8,
    "DT_UINT8": 8,
    "DT_INT16": 16,
    "DT_UINT16": 16,
    "DT_INT32": 32,
    "DT_UINT32": 32,
    "DT_INT64": 64,
    "DT_UINT64": 64,
}


@dataclass(frozen=True)
class PassUse:
    kind: str  # graph_fusion / ub_fusion, "" when only seen on ops
    name: str
    match_times: int | None
    effect_times: int | None
    device_ops: tuple[str, ...]


@dataclass(frozen=True)
class DangerousCast:
    op: str
    src: str
    dst: str
    why: str
    note: bool = False  # a precision note (float narrowing), not a loss of values


@dataclass(frozen=True)
class RunDifference:
    op: str
    port: str  # "output 0"
    left: str  # "DT_FLOAT16 NC1HWC0"
    right: str


def fusion_uses(passes: list[FusionPass], graph: GraphIndex | None) -> list[PassUse]:
    """Each pass of fusion_result.json with the device ops whose `pass_name` names it."""
    by_pass: dict[str, list[str]] = {}
    if graph is not None:
        for rec in graph.records():
            for name in (rec.pass_name or "").split(","):
                if name.strip():
                    by_pass.setdefault(name.strip(), []).append(rec.name)
    uses = [
        PassUse(p.kind, p.name, p.match_times, p.effect_times, tuple(by_pass.pop(p.name, ())))
        for p in passes
    ]
    uses += [PassUse("", name, None, None, tuple(ops)) for name, ops in by_pass.items()]
    return uses


def dangerous_casts(graph: GraphIndex) -> list[DangerousCast]:
    """Casts that lose information: float to integer/bool, or a narrower integer; float
    narrowing (float32 -> float16) comes as a note: it is how mixed precision works, and
    where an overflow or a precision loss starts."""
    found = []
    for rec in graph.records():
        if rec.type != "Cast":
            continue
        op = graph.op(rec.name)
        if op is None or not op.input_descs or not op.output_descs:
            continue
        src, dst = op.input_descs[0].dtype, op.output_descs[0].dtype
        if src in _FLOATS and dst in _INTS:
            found.append(
                DangerousCast(
                    rec.name,
                    src,
                    dst,
                    "float to integer drops the fraction "
                    "and saturates or wraps out-of-range values",
                )
            )
        elif src in _INT_BITS and dst in _INT_BITS and _INT_BITS[dst] < _INT_BITS[src]:
            found.append(DangerousCast(rec.name, src, dst, "narrowing integer cast can wrap"))
        elif src in _FLOAT_BITS and dst in _FLOAT_BITS and _float_narrows(src, dst):
            found.append(DangerousCast(rec.name, src, dst, _float_note(dst), note=True))
    return found


def _float_narrows(src: str, dst: str) -> bool:
    # float16 <-> bfloat16 narrows both ways: range one way, precision the other
    return _FLOAT_BITS[dst] < _FLOAT_BITS[src] or {src, dst} == {"DT_FLOAT16", "DT_BF16"}


def _float_note(dst: str) -> str:
    if dst == "DT_FLOAT16":
        return "float narrowing: ~3 significant digits, |x| > 65504 becomes inf"
    if dst == "DT_BF16":
        return "float narrowing: ~2-3 significant digits (range kept)"
    return "float narrowing: precision drops to float32's ~7 digits"


def run_differences(left: GraphIndex, right: GraphIndex) -> list[RunDifference]:
    """Ops present in both graphs whose inputs/outputs differ in dtype or layout."""
    diffs = []
    for rec in left.records():
        if rec.name not in right:
            continue
        a, b = left.op(rec.name), right.op(rec.name)
        if a is None or b is None:
            continue
        for kind, da, db in (
            ("input", a.input_descs, b.input_descs),
            ("output", a.output_descs, b.output_descs),
        ):
            for k, (x, y) in enumerate(zip(da, db, strict=False)):
                if (x.dtype, x.layout) != (y.dtype, y.layout):
                    diffs.append(
                        RunDifference(
                            rec.name,
                            f"{kind} {k}",
                            f"{x.dtype} {x.layout}",
                            f"{y.dtype} {y.layout}",
                        )
                    )
    return diffs
