"""Device tensor -> benchmark tensor: the matching rules of FORMATS.md section 5, in one place.

Outputs follow their output desc's `_datadump_origin_*` attributes; inputs follow the edge to
their producer's output, walking upstream through the Cast and TransData ops GE inserts.
"""

from __future__ import annotations

from dataclasses import dataclass

from precision_shell.formats.benchmark import benchmark_key
from precision_shell.formats.ge.graph import OpDef
from precision_shell.workspace.graph_index import GraphIndex, OpRecord

# Op types that hold a constant (weights, bias, scale, what GE folds); no kernel produces them.
CONSTANT_TYPES = frozenset({"Const", "Constant", "ConstPlaceHolder"})
# Ops GE inserts to change dtype or layout; they have no benchmark counterpart of their own.
# msaccucmp walks through Cast and TransData only (`ConstManager.SPECIAL_OPS_TYPE`); a
# Transpose reorders elements without recording it in the dump format, so it is never walked.
PASS_THROUGH_TYPES = frozenset({"Cast", "TransData", "TransDataRNN"})


@dataclass(frozen=True, slots=True)
class Origin:
    """The benchmark tensor a device output stands for."""

    name: str
    index: int
    format: str | None = None
    shape: tuple[int, ...] | None = None

    @property
    def key(self) -> str:
        return benchmark_key(self.name, self.index)


def record_output_origin(record: OpRecord, k: int) -> tuple[str, int] | None:
    """(origin name, index) of output k from the compact record; k past the descs -> desc 0."""
    if not record.output_origins:
        return None
    name, index = record.output_origins[k if k < len(record.output_origins) else 0]
    if not name:
        return None
    return name, index


def output_origin(op: OpDef, k: int) -> Origin | None:
    """The full origin of output k (name, index, layout, shape), or None for "no benchmark"."""
    if not op.output_descs:
        return None
    desc = op.output_descs[k if k < len(op.output_descs) else 0]
    name = desc.origin_name
    if not name:
        return None
    index = desc.origin_output_index
    return Origin(name, k if index is None else index, desc.origin_format, desc.origin_shape)


def input_source(graph: GraphIndex, op_name: str, k: int) -> tuple[str, int] | None:
    """The (producer op, output index) whose benchmark stands for input k of `op_name`.

    Walks upstream through GE-inserted Cast/TransData ops (those without an origin of their
    own); control edges never count as inputs.
    """
    record = graph.get(op_name)
    if record is None or k >= len(record.data_inputs):
        return None
    return _walk_upstream(graph, *record.data_inputs[k], seen={op_name})


def constant_input(graph: GraphIndex, op_name: str, k: int) -> bool:
    """Whether input k of `op_name` is a constant: its producer, through GE's Cast/TransData,
    is a CONSTANT_TYPES op."""
    return is_constant(graph, input_source(graph, op_name, k))


def is_constant(graph: GraphIndex, source: tuple[str, int] | None) -> bool:
    """Whether `source` (an `input_source`) is the output of a CONSTANT_TYPES op."""
    producer = graph.get(source[0]) if source is not None else None
    return producer is not None and producer.type in CONSTANT_TYPES


def output_source(graph: GraphIndex, op_name: str, k: int) -> tuple[str, int] | None:
    """For output k of a GE-inserted Cast/TransData without an origin of its own: the
    (producer op, output index) upstream of its input k, as msaccucmp compares it; else None."""
    record = graph.get(op_name)
    if record is None or record.type not in PASS_THROUGH_TYPES:
        return None
    if record_output_origin(record, k) or not record.data_inputs:
        return None
    # msaccucmp assumes output k of such an op comes from its input k
    src, idx = record.data_inputs[k if k < len(record.data_inputs) else 0]
    return _walk_upstream(graph, src, idx, seen={op_name})


def _walk_upstream(graph: GraphIndex, src: str, idx: int, seen: set[str]) -> tuple[str, int]:
    while True:
        producer = graph.get(src)
        if producer is None:
            return src, idx
        if producer.type not in PASS_THROUGH_TYPES or record_output_origin(producer, idx):
            return src, idx
        if src in seen or not producer.data_inputs:
            return src, idx
        seen.add(src)
        src, idx = producer.data_inputs[idx if idx < len(producer.data_inputs) else 0]


def input_origin(graph: GraphIndex, op_name: str, k: int) -> tuple[str, int] | None:
    """(origin name, index) of input k, through its producer; None when it has no benchmark."""
    source = input_source(graph, op_name, k)
    if source is None:
        return None
    producer = graph.get(source[0])
    if producer is None:
        return None
    return record_output_origin(producer, source[1])
