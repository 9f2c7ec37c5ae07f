"""Replays over a compare of several (rank, step) dumps: `ac -c --replay all` replays every
slice; the default goes on from the slice diagnosed to the others (`replay_going_on`).

A kernel error on one card (or at one step) is in that slice's dumps only, so a replay of
the slice the diagnosis picked says nothing about the others. Every slice is replayed under
the one budget: the slice diagnosed first (its panel needs it), then the others by how far
their compare leaves the other slices of their step, so a budget that runs out leaves the
slices most like the ones replayed. The slice shown is, of those whose best cause is a
measured fault (its replay proves a wrong kernel, constants that differ or an overflow born
there; or NaN/inf is born there and no replay ran), the first to go wrong (step, then the
cause's position, then rank); the diagnosed one when none is.

The default ("candidates") replays the slice diagnosed first, then goes on to the others
under the same budget, the one leaving the other cards of its step most first (a card with a
fault of its own leaves them; so a budget that runs out has reached it early), leaving out
the slices of steps after the earliest where a fault is measured: a later step cannot go
wrong first. Those are counted, not replayed. How far it goes on rests on the first slice:
- its replay proves no fault while other slices fail the thresholds (drift everywhere, a
  small fault on one card hidden under it): every other slice, each as fully as the first;
- its replay proves a fault at an op (step S): only another card or an earlier step can go
  wrong first (QA: a 5% filter at block25 on rank 0 was shown while a kernel error at block10
  on rank 1, failing no threshold, was never replayed). The other cards of step S replay
  their candidates that run before that op, the slices of earlier steps all their
  candidates, each then the ops before a fault its candidates prove, as the first slice
  did; never every op (`--replay all` does that): the cost stays that of the candidates.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from precision_shell.compare.diagnosis.advisor import OverflowHit
from precision_shell.compare.diagnosis.diagnose import Diagnosis, Replayer, with_replays
from precision_shell.compare.diagnosis.replay_evidence import (
    ReplayPass,
    measured_fault,
    stop_reason,
)
from precision_shell.compare.diagnosis.root_cause import OpEvidence, RootCause
from precision_shell.compare.results.schema import ResultRow
from precision_shell.compare.results.slice_results import first_wrong_order
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.workspace.dump_checks import number_order
from precision_shell.workspace.graph_index import GraphIndex

CANDIDATES_BEFORE_FAULT = "candidates_before_fault"

# how much of a slice the default's going on replays (`replay_going_on`'s `replayer_for`):
# None, as the first slice (the candidates, then every op or the ops before their fault); a
# position, only the candidates that run before it (math.inf: every candidate), with the
# slice's own first cause and `Also`'s ops
Before = float | None
# the ops a slice replays besides (`replayer_for`'s fourth): the fault proven on another card
# of its step, which passes the thresholds there as it may here (QA Q28 #1: a kernel error
# every card shared was "rank 0 only", the others never replayed at it)
Also = tuple[str, ...]


@dataclass(frozen=True)
class DiagnosedSlice:
    """One (rank, step) compare with its diagnosis (before any replay)."""

    where: str  # "rank 2 step 0"
    step: str
    graph: GraphIndex
    rows: Sequence[ResultRow]
    diagnosis: Diagnosis


@dataclass
class SliceReplays:
    """The replay passes over the slices, in the order they ran."""

    budget_s: float
    passes: list[ReplayPass]
    # the default going on from the slice diagnosed: "candidates" (it proved no fault), or
    # CANDIDATES_BEFORE_FAULT (it proved one, at `fault`)
    mode: str = "all"
    slices: int = 0  # the slices compared (the default's `passes` may cover fewer)
    fault: str | None = None
    same_step: int = 0  # CANDIDATES_BEFORE_FAULT: the other cards of the fault's step...
    earlier_steps: int = 0  # ...and the slices of earlier steps
    # the default's slices not replayed: of steps after a measured fault's...
    left: list[str] = field(default_factory=list)
    # ...and those the budget or Ctrl-C (`not_begun_why`) kept from beginning
    not_begun: list[str] = field(default_factory=list)
    not_begun_why: str = ""

    def replayed_by_themselves(self, wheres: Sequence[str]) -> None:
        """The slices `wheres`, named with a fault of their own, were replayed by
        themselves after these passes: no longer `left` nor `not_begun`."""
        self.left = [w for w in self.left if w not in wheres]
        self.not_begun = [w for w in self.not_begun if w not in wheres]

    @property
    def interrupted(self) -> bool:
        """Ctrl-C ended a pass (and kept any slice after it from its replay)."""
        return any(p.interrupted for p in self.passes)

    @property
    def wrong(self) -> list[tuple[str, str]]:
        """(slice, op) of every kernel proven wrong."""
        return [(p.where or "", op) for p in self.passes for op in p.wrong]

    @property
    def differing(self) -> list[tuple[str, str]]:
        """(slice, op) of every op whose constants (or attributes) are proven to differ."""
        return [(p.where or "", op) for p in self.passes for op in p.differing]

    @property
    def elapsed_s(self) -> float:
        return sum(p.elapsed_s for p in self.passes)

    @property
    def unfinished(self) -> list[ReplayPass]:
        """The passes the budget (or Ctrl-C) ended before their last op."""
        return [p for p in self.passes if p.not_reached]

    def to_json(self) -> list[dict[str, object]]:
        return [p.to_json() for p in self.passes]


def divergence_order(slices: Sequence[tuple[str, dict[str, OpEvidence]]]) -> list[int]:
    """Indexes of `slices` ((step, evidence) each), the one leaving the others most first:
    the largest gap in dB between an op's worst output quality on the slice and that op's
    median over the slices of the same step. Ties (a slice alone at its step: 0) keep
    their order."""
    by_op: dict[tuple[str, str], list[float]] = {}
    worst: list[dict[str, float]] = []
    for step, evidence in slices:
        qualities = {
            name: min(q.sqnr for q in ev.outputs.values())
            for name, ev in evidence.items()
            if ev.outputs and not ev.inferred_output
        }
        worst.append(qualities)
        for name, sqnr in qualities.items():
            by_op.setdefault((step, name), []).append(sqnr)
    medians = {key: statistics.median(values) for key, values in by_op.items()}

    def gap(n: int) -> float:
        step = slices[n][0]
        gaps = [_gap(sqnr, medians[(step, name)]) for name, sqnr in worst[n].items()]
        return max(gaps, default=0.0)

    return sorted(range(len(slices)), key=lambda n: -gap(n))


def _gap(value: float, median: float) -> float:
    if value == median:
        return 0.0  # also two -inf (NaN/inf on most slices)
    return math.inf if math.isinf(value) or math.isinf(median) else abs(value - median)


def replay_every_slice(
    slices: Sequence[DiagnosedSlice],
    first: int,
    rule: ThresholdRule,
    overflows: Sequence[OverflowHit],
    replayer_for: Callable[[int, float], Replayer],
    budget_s: float,
) -> tuple[list[Diagnosis], SliceReplays]:
    """Each slice's diagnosis re-ranked by its replays (module order: `first`, then by
    divergence) and the passes; `replayer_for(n, spent_s)` replays slice n with what is
    left of the budget. After a Ctrl-C the slices not begun are counted, not replayed: their
    passes count their ops as left by Ctrl-C."""
    order = [first] + [
        n for n in divergence_order([(s.step, s.diagnosis.evidence) for s in slices]) if n != first
    ]
    start = time.monotonic()
    replayed: dict[int, Diagnosis] = {}
    interrupted = False
    for n in order:
        s = slices[n]
        replayer = replayer_for(n, math.inf if interrupted else time.monotonic() - start)
        if interrupted:
            replayer = _after_ctrl_c(replayer)
        replayed[n] = with_replays(s.diagnosis, s.graph, s.rows, rule, overflows, replayer)
        interrupted = interrupted or _pass_of(replayed[n]).interrupted
    passes = [_pass_of(replayed[n]) for n in order]
    done = SliceReplays(budget_s, passes, slices=len(slices))
    return [replayed[n] for n in range(len(slices))], done


def proven(diagnosis: Diagnosis) -> bool:
    """Its best cause is a measured fault (`measured_fault`: its replay proves one, or
    NaN/inf is born there)."""
    return bool(diagnosis.causes) and measured_fault(diagnosis.causes[0])


def replay_going_on(
    slices: Sequence[DiagnosedSlice],
    first: int,
    replayed_first: Diagnosis,
    rule: ThresholdRule,
    overflows: Sequence[OverflowHit],
    replayer_for: Callable[[int, float, Before, Also], Replayer],
    budget_s: float,
) -> tuple[list[Diagnosis], SliceReplays]:
    """The default's going on (module doc): `replayed_first` is slice `first` replayed
    already; the others follow by divergence, the slices of steps after the earliest with a
    measured fault left out, until every slice is replayed or left, the budget runs out or
    Ctrl-C; `replayer_for(n, spent_s, before, also)` replays slice n as much as `before`
    and `also` say.
    Every slice's diagnosis (those not replayed: as diagnosed) and the passes, with the
    slices left and those the budget or Ctrl-C kept from beginning."""
    divergence = divergence_order([(s.step, s.diagnosis.evidence) for s in slices])
    others = [n for n in divergence if n != first]
    replayed = {first: replayed_first}
    at = number_order(slices[first].step)
    fault = first_fault(replayed_first, slices[first].graph)
    found = at if fault is not None else None
    last = _pass_of(replayed_first)
    start = time.monotonic() - last.elapsed_s
    done = SliceReplays(budget_s, [last], mode="candidates", slices=len(slices))
    if fault is not None:
        steps = [number_order(slices[n].step) for n in others]
        done.mode, done.fault = CANDIDATES_BEFORE_FAULT, fault[1]
        done.same_step = sum(step == at for step in steps)
        done.earlier_steps = sum(step < at for step in steps)
    for n in others:
        step = number_order(slices[n].step)
        if found is not None and step > found:
            done.left.append(slices[n].where)
            continue
        spent = time.monotonic() - start
        if last.interrupted or last.not_reached or spent >= budget_s:
            done.not_begun_why = stop_reason(last.interrupted, budget_s)
        if done.not_begun_why:
            done.not_begun.append(slices[n].where)
            continue
        before: Before = None
        also: Also = ()
        if fault is not None:  # only what can go wrong before it, and the fault itself
            before = float(fault[0]) if step == at else math.inf
            also = (fault[1],) if step == at else ()
        s = slices[n]
        replayed[n] = with_replays(
            s.diagnosis, s.graph, s.rows, rule, overflows, replayer_for(n, spent, before, also)
        )
        last = _pass_of(replayed[n])
        done.passes.append(last)
        if proven(replayed[n]):
            found = step if found is None else min(found, step)
    return [replayed.get(n, s.diagnosis) for n, s in enumerate(slices)], done


def first_fault(diagnosis: Diagnosis, graph: GraphIndex) -> tuple[int, str] | None:
    """(position, op) of the first op in execution order with a measured fault in the slice:
    its best cause when that is one (`proven`), or an earlier op its replay proves (a wrong
    kernel ranks ahead of constants that differ at an earlier op); None: none is proven. A
    card identical to this one can go wrong before it only at an earlier op."""
    if not proven(diagnosis):
        return None
    best = diagnosis.causes[0]
    done = diagnosis.replays
    op = done.first_fault(graph) if done is not None else None
    rec = graph.get(op) if op is not None else None
    if rec is not None and rec.position < best.position:
        return rec.position, rec.name
    return best.position, best.op


def _pass_of(diagnosis: Diagnosis) -> ReplayPass:
    assert diagnosis.replays is not None  # with_replays always records its pass
    return diagnosis.replays


def _after_ctrl_c(replayer: Replayer) -> Replayer:
    """`replayer` (given no budget left) with its ops counted as left by Ctrl-C."""

    def run(
        graph: GraphIndex, evidence: dict[str, OpEvidence], causes: list[RootCause]
    ) -> ReplayPass:
        done = replayer(graph, evidence, causes)
        done.interrupted = True
        return done

    return run


def shown_slice(
    diagnoses: Sequence[Diagnosis], first: int, where: Sequence[tuple[str, str]]
) -> int:
    """The slice whose root cause to show: of the slices whose best cause is a measured
    fault (`proven`), the first to go wrong (`first_wrong_order`; `where` holds each slice's
    (rank, step)); `first` when none is."""

    found = [n for n in range(len(diagnoses)) if proven(diagnoses[n])]
    if not found:
        return first

    def order(n: int) -> tuple:
        rank, step = where[n]
        return first_wrong_order(step, diagnoses[n].causes[0].position, rank)

    return min(found, key=order)
