"""Root-cause localisation: the op where the error is born, not where it is inherited.

Each compared tensor gets a signal quality in dB (SQNR from the relative Euclidean
distance, clamped at `QUALITY_CAP` so healthy float16 ops compare equal). An op's own
degradation is the drop from its worst input to its worst output. Candidates are the ops
whose outputs cross the thresholds while every data input is still within them, and ops
whose own drop is an outlier; NaN/inf born in an op (finite inputs, non-finite outputs) is
an infinite drop. Candidates are ranked by drop, earliest first on ties.

Inputs without a compared row are resolved through the graph: the producer's output
quality, or, walking further up through ops with no benchmark, the worst of their inputs.
A producer that was never dumped (a Data op) takes the quality its consumers' input rows
measured, so a corrupted network input is found at the input itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from precision_shell.compare.pipeline.matcher import constant_input, input_source
from precision_shell.compare.results.schema import ResultRow
from precision_shell.compare.results.tally import benchmark_missing
from precision_shell.compare.results.thresholds import (
    ThresholdRule,
    sliced_nonfinite,
    zero_benchmark,
)
from precision_shell.json_numbers import json_number
from precision_shell.workspace.graph_index import GraphIndex

if TYPE_CHECKING:
    from precision_shell.replay.session import OutputReplay

QUALITY_CAP = 60.0  # dB; float16 rounding alone gives ~60-70 dB, so above this is "healthy"
OUTLIER_DROP = 10.0  # dB an op must lose on its own to be a candidate without crossing a threshold
# dB (cosine ~0.9995): an op whose inputs are unknown (the first ops) is judged against a
# perfect input, so only an output worse than this makes it a candidate
CONCERN = 30.0
_RED = "RelativeEuclideanDistance"
_COS = "CosineSimilarity"


@dataclass(frozen=True, slots=True)
class TensorQuality:
    cosine: float  # nan when not computed
    sqnr: float  # dB, clamped to QUALITY_CAP; -inf when the device tensor holds NaN/inf
    nonfinite: bool
    crossed: tuple[str, ...] = ()  # the threshold rule's limits this tensor crosses

    @property
    def fails(self) -> bool:
        return self.nonfinite or bool(self.crossed)

    @property
    def known(self) -> bool:
        return self.nonfinite or not math.isnan(self.sqnr)


def tensor_quality(row: ResultRow, rule: ThresholdRule) -> TensorQuality | None:
    """Quality of one compared tensor, or None when it was not compared."""
    crossed = tuple(str(c) for c in rule.crossings(row))
    if row.nonfinite(_COS) or row.nonfinite(_RED) or sliced_nonfinite(row):
        return TensorQuality(math.nan, -math.inf, True, crossed)
    cos = row.metrics.get(_COS, math.nan)
    red = row.metrics.get(_RED, math.nan)
    if zero_benchmark(row):  # no signal, all noise: msaccucmp's distance 0 is a convention
        return TensorQuality(cos, -QUALITY_CAP, False, crossed)
    if math.isnan(red) and not math.isnan(cos):
        red = math.sqrt(max(0.0, 2.0 * (1.0 - cos)))  # small-error equivalence of the two
    if math.isnan(red):
        return None
    return TensorQuality(cos, quality_db(red), False, crossed)


def quality_db(red: float) -> float:
    """The signal quality in dB of a relative Euclidean distance, clamped at QUALITY_CAP."""
    return QUALITY_CAP if red <= 0 else min(QUALITY_CAP, -20.0 * math.log10(red))


def loss_text(drop: float, input_quality: float) -> str:
    """`20.0 dB`; `at least 20.0 dB` when the inputs sit at QUALITY_CAP, whose clamp hides
    how much better they are (QA Q29 #6: "loses 20.0 dB" of inputs at 70.5 dB, outputs 40)."""
    words = f"{drop:.1f} dB"
    return f"at least {words}" if input_quality >= QUALITY_CAP else words


def quality_text(db: float) -> str:
    """`6.1 dB`; `>= 60 dB` at QUALITY_CAP, where the quality is clamped, not measured (QA
    Q27 #6: "inputs 60.0 dB" beside a plot of the same tensor at 70.5 dB)."""
    return f">= {QUALITY_CAP:g} dB" if db >= QUALITY_CAP else f"{db:.1f} dB"


@dataclass
class OpEvidence:
    name: str
    op_type: str
    position: int  # execution order in the graph
    index: int | None  # CSV Index (fusion group)
    inputs: dict[int, TensorQuality] = field(default_factory=dict)
    outputs: dict[int, TensorQuality] = field(default_factory=dict)
    inferred_output: bool = False  # output quality taken from consumers' input rows
    # those rows (`op:input:k`), for an inferred output: what a view shows as its rows
    measured_by: list[str] = field(default_factory=list)
    is_source: bool = False  # no data inputs in the graph: a network input (Data op)


# The evidence of a network input that differs (`RootCause.input_differs`), as views say it.
INPUT_EVIDENCE = (
    "the compare itself: the network input differs from the benchmark before any op runs"
)


@dataclass(frozen=True)
class RootCause:
    op: str
    type: str
    index: int | None
    position: int
    reason: str
    drop_db: float
    input_quality: float  # worst input, dB
    output_quality: float  # worst output, dB
    input_cosine: float
    output_cosine: float
    # the replay of this op from the device's own inputs (its worst output), when one ran
    replay: OutputReplay | None = None
    replay_skipped: str | None = None  # why a replay was tried and could not run
    # whether any input comes from a constant (weights, bias); None: not known
    takes_constants: bool | None = None
    # a network input whose values fail the thresholds: the device was fed other data, so
    # whatever goes wrong after it (an overflow included) follows from it; measured, first
    input_differs: bool = False
    # the data inputs (by position) no compare measured, nor any upstream of them: no
    # benchmark tensor. The input quality is then unknown (NaN), never taken as perfect
    unknown_inputs: tuple[int, ...] = ()
    # an op with no rows of its own (a network input): its consumers' input rows measuring it
    measured_by: tuple[str, ...] = ()

    @property
    def drop_text(self) -> str | None:
        """`53.9 dB lost` (the signal quality the op loses by itself, not its quality), or
        `NaN/inf` where one is born; None when the loss was not measured."""
        if math.isnan(self.drop_db):
            return None
        if math.isinf(self.drop_db):
            return "NaN/inf"
        return f"{loss_text(self.drop_db, self.input_quality)} lost"

    def evidence(self) -> dict:
        """The compare's numbers for this op, as summary.json holds them (`json_number`)."""
        return {
            "drop_db": json_number(round(self.drop_db, 3)),
            "input_sqnr_db": json_number(round(self.input_quality, 3)),
            "output_sqnr_db": json_number(round(self.output_quality, 3)),
            "input_cosine": json_number(self.input_cosine),
            "output_cosine": json_number(self.output_cosine),
            **({"inputs_not_compared": list(self.unknown_inputs)} if self.unknown_inputs else {}),
        }


class Evidence(dict[str, OpEvidence]):
    """Each op's compared tensors (`OpEvidence` by op name), and `unmeasured`: the (op, output
    slot)s that have a benchmark op but could not be compared with it (its file missing or
    unreadable: `tally.benchmark_missing`). The quality of such an output is unknown: it is
    never read from its producer's inputs, as a device-only op's (a GE-inserted TransData or
    Cast, no benchmark by design) is."""

    def __init__(self) -> None:
        super().__init__()
        self.unmeasured: set[tuple[str, int]] = set()


def collect_evidence(
    graph: GraphIndex, rows: Iterable[ResultRow], rule: ThresholdRule
) -> dict[str, OpEvidence]:
    evidence = Evidence()
    for row in rows:
        rec = graph.get(row.op_name)
        if rec is None or not row.kind:
            continue
        if row.kind == "output" and benchmark_missing(row):
            evidence.unmeasured.add((rec.name, row.slot))
        q = tensor_quality(row, rule)
        if q is None:
            continue
        ev = evidence.get(rec.name)
        if ev is None:
            ev = evidence[rec.name] = OpEvidence(rec.name, rec.type, rec.position, row.index)
        (ev.inputs if row.kind == "input" else ev.outputs)[row.slot] = q
    _infer_undumped_producers(graph, evidence)
    return evidence


def _infer_undumped_producers(graph: GraphIndex, evidence: dict[str, OpEvidence]) -> None:
    """Producers with no compared output take what their consumers' input rows measured."""
    for ev in list(evidence.values()):
        for k, q in ev.inputs.items():
            source = input_source(graph, ev.name, k)
            if source is None:
                continue
            producer = graph.get(source[0])
            if producer is None:
                continue
            pev = evidence.get(producer.name)
            if pev is not None and pev.outputs and not pev.inferred_output:
                continue
            if pev is None:
                pev = evidence[producer.name] = OpEvidence(
                    producer.name,
                    producer.type,
                    producer.position,
                    None,
                    inferred_output=True,
                    is_source=not producer.data_inputs,
                )
            current = pev.outputs.get(source[1])
            pev.measured_by.append(f"{ev.name}:input:{k}")
            if current is None or q.sqnr < current.sqnr:
                pev.outputs[source[1]] = q


def _input_quality(
    graph: GraphIndex,
    evidence: dict[str, OpEvidence],
    name: str,
    memo: dict[str, TensorQuality | None],
) -> TensorQuality | None:
    """Worst quality over the data inputs of `name`, through ops with no compared output."""
    if name in memo:
        return memo[name]
    memo[name] = None  # cycle guard
    ev = evidence.get(name)
    rec = graph.get(name)
    worst: TensorQuality | None = None
    if rec is not None:
        for k, (src, idx) in enumerate(rec.data_inputs):
            q = ev.inputs.get(k) if ev is not None else None
            if q is None:
                q = _output_quality(graph, evidence, src, idx, memo)
            if q is not None and (worst is None or q.sqnr < worst.sqnr):
                worst = q
    memo[name] = worst
    return worst


def _output_quality(
    graph: GraphIndex,
    evidence: dict[str, OpEvidence],
    name: str,
    idx: int,
    memo: dict[str, TensorQuality | None],
) -> TensorQuality | None:
    ev = evidence.get(name)
    if ev is not None and ev.outputs:
        return ev.outputs.get(idx) or min(ev.outputs.values(), key=lambda q: q.sqnr)
    if (name, idx) in getattr(evidence, "unmeasured", ()):
        return None  # its benchmark is missing: unknown, not its inputs' quality
    return _input_quality(graph, evidence, name, memo)  # no benchmark here: skip to producers


def _unknown_inputs(
    graph: GraphIndex,
    evidence: dict[str, OpEvidence],
    name: str,
    memo: dict[str, TensorQuality | None],
) -> tuple[int, ...]:
    """The data inputs of `name` (not its constants) that no compare measured, nor anything
    upstream of them through ops with no compared output: no benchmark tensor for them."""
    ev = evidence.get(name)
    rec = graph.get(name)
    if rec is None:
        return ()
    return tuple(
        k
        for k, (src, idx) in enumerate(rec.data_inputs)
        if (ev is None or k not in ev.inputs)
        and not constant_input(graph, name, k)
        and _output_quality(graph, evidence, src, idx, memo) is None
    )


def _unmeasured_source(graph: GraphIndex, name: str, k: int) -> str | None:
    """The tensor data input `k` of `name` stands for, named by the first producer up the
    chain that is not a device-only layout or cast op (`trans_*`, no benchmark by design)."""
    rec = graph.get(name)
    if rec is None or k >= len(rec.data_inputs):
        return None
    src, idx = rec.data_inputs[k]
    for _ in range(16):  # a chain of TransData/Cast GE inserted; never a cycle
        producer = graph.get(src)
        if producer is None or not src.startswith("trans_") or not producer.data_inputs:
            break
        src, idx = producer.data_inputs[0]
    return f"{src}:{idx}"


def _not_compared_text(graph: GraphIndex, name: str, unknown: tuple[int, ...]) -> str:
    parts = []
    for k in unknown:
        source = _unmeasured_source(graph, name, k)
        parts.append(f"{k} ({source})" if source else str(k))
    return (
        f"data input{'s' if len(unknown) > 1 else ''} {', '.join(parts)} could not be compared "
        "(no benchmark tensor), so whether the op or what it was given is wrong is not known"
    )


def localise(graph: GraphIndex, evidence: dict[str, OpEvidence]) -> list[RootCause]:
    """Root-cause candidates, best first."""
    memo: dict[str, TensorQuality | None] = {}
    found: list[RootCause] = []
    for ev in sorted(evidence.values(), key=lambda e: e.position):
        if not ev.outputs:
            continue
        out = min(ev.outputs.values(), key=lambda q: q.sqnr)
        inp, unknown, (in_q, in_cos, drop) = _inputs_read(graph, evidence, ev.name, out, memo)
        inputs_ok = inp is None or not inp.fails
        reason = ""
        if out.nonfinite and drop == math.inf:
            reason = "NaN/inf born here: finite data inputs, non-finite output"
            if unknown:
                reason = (
                    "NaN/inf in its output, the first compared; it may be born before it: its "
                    f"{_not_compared_text(graph, ev.name, unknown)}"
                )
        elif out.fails and inputs_ok and unknown:
            crossed = "; ".join(out.crossed)
            reason = (
                f"output crosses the thresholds ({crossed}); its "
                f"{_not_compared_text(graph, ev.name, unknown)}"
            )
        elif out.fails and inputs_ok:
            crossed = "; ".join(out.crossed)
            reason = f"output crosses the thresholds ({crossed}) while every input is within them"
        elif drop >= OUTLIER_DROP and (inp is not None or out.sqnr < CONCERN):
            reason = f"the op alone loses {loss_text(drop, in_q)} of signal quality"
        if not reason:
            continue
        if ev.is_source and out.fails:  # it has no inputs: its values are what was fed
            reason = (
                "network input differs from the benchmark: the data fed crosses the thresholds "
                f"({'; '.join(out.crossed)})"
            )
        elif ev.is_source:
            reason = "network input differs from the benchmark: " + reason
        cause = _cause_of(
            graph, ev.name, ev.op_type, ev.index, ev.position, reason, in_q, in_cos, drop, out
        )
        cause = replace(cause, unknown_inputs=unknown, measured_by=tuple(ev.measured_by))
        found.append(replace(cause, input_differs=True) if ev.is_source and out.fails else cause)
    found.sort(key=_candidate_order)
    return found


def _candidate_order(cause: RootCause) -> tuple:
    """A network input fed other data first, then the largest loss of its own (NaN/inf born
    here: infinite), then an unmeasured loss (a data input not compared), earliest first."""
    drop = cause.drop_db
    if math.isnan(drop):
        return (not cause.input_differs, math.inf, cause.position)
    loss = -round(drop, 1) if math.isfinite(drop) else -math.inf
    return (not cause.input_differs, loss, cause.position)


def _inputs_read(
    graph: GraphIndex,
    evidence: dict[str, OpEvidence],
    name: str,
    out: TensorQuality,
    memo: dict[str, TensorQuality | None],
) -> tuple[TensorQuality | None, tuple[int, ...], tuple[float, float, float]]:
    """(worst input quality, the data inputs not measured, `_drop`) of `name`, whose worst
    output is `out`: how a root cause reads its inputs."""
    inp = _input_quality(graph, evidence, name, memo)
    unknown = _unknown_inputs(graph, evidence, name, memo)
    return inp, unknown, _drop(inp, out, bool(unknown))


def _drop(
    inp: TensorQuality | None, out: TensorQuality, unknown: bool = False
) -> tuple[float, float, float]:
    """(worst input dB, worst input cosine, the op's own drop in dB) for an op whose worst
    output is `out`. An op with no data input at all (a network input) counts its input as
    perfect; one with a data input no compare measured (`unknown`) has an unknown input
    quality and drop (NaN). NaN/inf born here is an infinite drop, NaN/inf inherited none."""
    if unknown:
        in_q, in_cos = math.nan, math.nan
    else:
        in_q = inp.sqnr if inp is not None else QUALITY_CAP
        in_cos = inp.cosine if inp is not None else 1.0
    drop = math.inf if out.nonfinite and (inp is None or not inp.nonfinite) else in_q - out.sqnr
    if out.nonfinite and inp is not None and inp.nonfinite:
        drop = 0.0  # NaN inherited, not born here
    return in_q, in_cos, drop


def measured_cause(
    graph: GraphIndex, evidence: dict[str, OpEvidence], name: str, op_type: str, reason: str
) -> RootCause | None:
    """A root cause for `name` found by other means (a replay), with the compare's numbers
    for it where its outputs were compared; None when the op is not in the graph."""
    rec = graph.get(name)
    if rec is None:
        return None
    ev = evidence.get(name)
    if ev is None or not ev.outputs:
        nan = math.nan
        index = ev.index if ev is not None else None
        return RootCause(
            name,
            op_type,
            index,
            rec.position,
            reason,
            nan,
            nan,
            nan,
            nan,
            nan,
            takes_constants=takes_constants(graph, name),
        )
    out = min(ev.outputs.values(), key=lambda q: q.sqnr)
    _, unknown, (in_q, in_cos, drop) = _inputs_read(graph, evidence, name, out, {})
    cause = _cause_of(graph, name, op_type, ev.index, rec.position, reason, in_q, in_cos, drop, out)
    return replace(cause, unknown_inputs=unknown)


def _cause_of(
    graph: GraphIndex,
    name: str,
    op_type: str,
    index: int | None,
    position: int,
    reason: str,
    in_q: float,
    in_cos: float,
    drop: float,
    out: TensorQuality,
) -> RootCause:
    """A root cause with the compare's numbers for it (its worst input and output)."""
    return RootCause(
        name,
        op_type,
        index,
        position,
        reason,
        drop,
        in_q,
        out.sqnr,
        in_cos,
        out.cosine,
        takes_constants=takes_constants(graph, name),
    )


def takes_constants(graph: GraphIndex, name: str) -> bool | None:
    """Whether an input of `name` comes from a constant op (weights, bias, scale: what GE
    folds); None when the op is not in the graph."""
    rec = graph.get(name)
    if rec is None:
        return None
    return any(constant_input(graph, name, k) for k in range(len(rec.data_inputs)))


def own_drops(graph: GraphIndex, evidence: dict[str, OpEvidence]) -> dict[str, float]:
    """Each op with compared outputs -> the quality in dB it loses by itself (NaN/inf born
    here: inf): the order in which a bounded replay of every op goes."""
    memo: dict[str, TensorQuality | None] = {}
    drops = {}
    for ev in evidence.values():
        if ev.outputs and not ev.inferred_output:
            out = min(ev.outputs.values(), key=lambda q: q.sqnr)
            drops[ev.name] = _drop(_input_quality(graph, evidence, ev.name, memo), out)[2]
    return drops


def first_below_baseline(evidence: dict[str, OpEvidence], cosine: float = 0.98) -> str | None:
    """What older tools report: the first op in execution order whose output cosine is below
    `cosine` (or NaN/inf): the cosine alone, as they judge."""
    for ev in sorted(evidence.values(), key=lambda e: e.position):
        if ev.inferred_output:
            continue
        if any(q.nonfinite or q.cosine < cosine for q in ev.outputs.values()):
            return ev.name
    return None
