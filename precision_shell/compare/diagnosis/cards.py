"""`ac -c` over several cards (ranks) and steps: which (rank, step) names the root cause, and
what the other cards of that step say about it.

Each (rank, step) compare is diagnosed on its own (its best root cause is what
`ac -c --rank R --step S` names). The root cause shown is the first that goes wrong: the
first step with one, then the earliest in execution order across that step's cards (cards
run the same graph side by side, so a rank number says nothing of which went wrong first;
the NaN/inf origin orders the same way), then the lowest rank. Data-parallel cards should
agree, so the other cards of that step are read against it: which fail at the same op for
the same reason, which match the benchmark there, which have a fault of their own elsewhere
(each is named: a failure here may be inherited from it), which go wrong beyond it only where
the chosen card does too (one line per op: drift every card has is no fault of their own),
and which fail more outputs than the others (where they first fail alone).

A card's root cause is "a fault of its own" (`fault_of_its_own`, the one rule for the cards
of the step and of the other steps) when it is measured (`measured_fault`) or the op loses
OUTLIER_DROP dB by itself, and the chosen card does not share it (the op is not among its
causes).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from precision_shell.compare.diagnosis.advisor import SliceCheck, is_fault, loses_on_its_own
from precision_shell.compare.diagnosis.diagnose import Diagnosis
from precision_shell.compare.diagnosis.replay_evidence import (
    measured_fault,
    measured_text,
    proof_text,
    proves_fault,
    replay_clears,
    unjudged_before_cause,
)
from precision_shell.compare.diagnosis.root_cause import OUTLIER_DROP, RootCause
from precision_shell.compare.pipeline.matcher import input_source
from precision_shell.compare.rank_divergence import ranks_text
from precision_shell.compare.results.schema import ResultRow, ResultTable
from precision_shell.compare.results.slice_results import SliceResult, first_wrong_order
from precision_shell.compare.results.tally import benchmark_missing
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.workspace.graph_index import GraphIndex


@dataclass
class CardDiagnosis:
    """The diagnosis of one (rank, step) compare."""

    entry: SliceResult
    table: ResultTable
    graph: GraphIndex
    diagnosis: Diagnosis

    @property
    def cause(self) -> RootCause | None:
        """Its best root cause (the estimate)."""
        return self.diagnosis.causes[0] if self.diagnosis.causes else None

    def outputs_of(self, op: str) -> list[ResultRow]:
        """The compared rows of `op`'s outputs; for an op with no dump of its own (a network
        input), its consumers' input rows it feeds, as the root cause reads it."""
        rows = self.table.rows
        found = [r for r in rows if r.op_name == op and r.kind == "output" and r.compared]
        if found:
            return found
        return [
            r
            for r in rows
            if r.kind == "input"
            and r.compared
            and (source := input_source(self.graph, r.op_name, r.slot)) is not None
            and source[0] == op
        ]


def first_card(cards: list[CardDiagnosis]) -> CardDiagnosis | None:
    """The card whose root cause is shown: the first step with one, then the earliest op in
    execution order, then the lowest rank; the first card when none has a root cause."""
    with_cause = [c for c in cards if c.cause is not None]
    if not with_cause:
        return cards[0] if cards else None

    def order(card: CardDiagnosis) -> tuple:
        assert card.cause is not None
        return first_wrong_order(card.entry.step, card.cause.position, card.entry.rank)

    return min(with_cause, key=order)


def slice_check(
    chosen: CardDiagnosis,
    cards: list[CardDiagnosis],
    left_out: tuple[tuple[str, str], ...] = (),
) -> SliceCheck:
    """What the other (rank, step) compares say of "no single op loses 10 dB" and of "the
    network matches"; `left_out`: the (rank, step) dumps the compare did not cover."""
    clean: list[tuple[str, str]] = []
    lossy: list[tuple[tuple[str, str], RootCause]] = []
    failing: list[tuple[str, str]] = []
    uncompared: list[tuple[tuple[str, str], int]] = []
    for card in cards:
        if card is chosen:
            continue
        where = (card.entry.rank, card.entry.step)
        missing = sum(1 for row in card.table.rows if benchmark_missing(row))
        if missing:
            uncompared.append((where, missing))
        big = [c for c in card.diagnosis.causes if loses_on_its_own(c)]
        if big:
            lossy.append((where, big[0]))
        else:
            clean.append(where)
        if card.entry.failed:
            failing.append(where)
    return SliceCheck(
        (chosen.entry.rank, chosen.entry.step),
        tuple(clean),
        tuple(lossy),
        tuple(failing),
        left_out,
        tuple(uncompared),
    )


def shared_ops(cause: RootCause, chosen: CardDiagnosis) -> set[str]:
    """The ops the chosen card goes wrong at: `cause` (the one shown) and its other causes."""
    return {cause.op} | {c.op for c in chosen.diagnosis.causes}


def fault_ops(cause: RootCause, chosen: CardDiagnosis) -> set[str]:
    """The ops where the chosen card has a fault (`advisor.is_fault`), of `cause` (the one shown)
    and its other causes: where another card's fault is the chosen card's too."""
    return {c.op for c in (cause, *chosen.diagnosis.causes) if is_fault(c)}


def fault_of_its_own(own: RootCause, faults: set[str]) -> bool:
    """Whether another card's root cause `own` is a fault of its own: a fault (`advisor.is_fault`)
    at an op where the chosen card has none (`faults`, from `fault_ops`). Drift, which every
    card has alike, is not; nor is the chosen card's own fault found on another card too."""
    return own.op not in faults and is_fault(own)


def _clears(card: CardDiagnosis, op: str) -> bool:
    """The card's replay ran at `op` and proves no fault there."""
    done = card.diagnosis.replays
    out = done.worst(op) if done is not None else None
    return out is not None and not proves_fault(out)


def _replayed(card: CardDiagnosis) -> bool:
    """The card's replay ran to its end (not cut by the budget or Ctrl-C, nor left out)."""
    done = card.diagnosis.replays
    return done is not None and not done.not_reached and not done.interrupted


def _shared_text(own: RootCause, replayed: bool) -> str:
    """What a card's cause at an op the chosen card shares is: the fault measured there, a
    loss of its own, "" (drift, its replay proving no fault), or drift the compare reads
    where no replay ran to its end."""
    if measured_fault(own):
        return measured_text(own) or own.reason
    if loses_on_its_own(own):
        return (
            "NaN/inf is born there"
            if own.drop_db == math.inf
            else f"it loses {OUTLIER_DROP:g} dB or more there on its own"
        )
    if not replayed:
        return (
            "drift as the compare reads it; not replayed, so a fault drift hides is not ruled out"
        )
    return ""


def _shared_notes(
    shared: dict[tuple[str, str, bool], list[tuple[SliceResult, RootCause]]],
) -> list[str]:
    """One line per op (and what it is) for the cards that match the benchmark at the cause
    shown and go wrong first beyond it by drift: at an op the chosen card goes wrong at too
    ("as this card does"), or at one it does not reach failing by drift first (QA Q28 #5:
    two cards failing 35 outputs each were not named)."""
    notes = []
    for (_, text, alike), found in sorted(shared.items(), key=lambda kv: kv[1][0][1].position):
        ranks = [e.rank for e, _ in found]
        own = found[0][1]
        one = len(ranks) == 1
        entry = found[0][0]
        ask = f" (ac -c --rank {entry.rank} --step {entry.step})" if one else ""
        what = text or f"drift, no fault of {'its' if one else 'their'} own"
        notes.append(
            f"{ranks_text(ranks)}: match{'es' if one else ''} the benchmark here and "
            f"{'goes' if one else 'go'} wrong first beyond it, at {_where(own)}"
            f"{', as this card does' if alike else ''}: {what}{ask}"
        )
    return notes


@dataclass
class CardScope:
    """What the other cards of the root cause's step say about it."""

    verdict: str  # one card, some cards or every card fails here
    notes: list[str] = field(default_factory=list)  # each card that differs, and how
    # the other cards whose root cause is a fault of its own (`fault_of_its_own`): (its
    # entry, that cause)
    elsewhere: list[tuple[SliceResult, RootCause]] = field(default_factory=list)
    # the other cards whose root cause is a fault (measured, or a loss of its own) at an op
    # the chosen card goes wrong at too: on the shared line, and still that card's own cause
    shared_faults: list[tuple[SliceResult, RootCause]] = field(default_factory=list)
    # the other cards whose own first failure is this op, as the card shown's (`here`)
    sharing: list[str] = field(default_factory=list)

    @property
    def own_causes(self) -> list[tuple[SliceResult, RootCause]]:
        """Every other card's root cause that is a fault, not drift: what a report of that
        card names as its own (`diagnosis.other_cards`)."""
        return self.elsewhere + self.shared_faults


def _outputs(count: int) -> str:
    return f"{count} output{'s' if count != 1 else ''}"


def _where(cause: RootCause) -> str:
    return f"{cause.op} (index {cause.index if cause.index is not None else '-'})"


def _elsewhere_note(card: CardDiagnosis, own: RootCause, cause: RootCause, fails_here: bool) -> str:
    entry = card.entry
    proof = proof_text(own.replay)
    ask = (f"; {proof}" if proof else "") + f" (ac -c --rank {entry.rank} --step {entry.step})"
    if fails_here and own.position < cause.position:
        return (
            f"rank {entry.rank}: first goes wrong at {_where(own)}: {own.reason}; its failure "
            f"at {cause.op} comes after that, not from the same fault{ask}"
        )
    if fails_here:
        return (
            f"rank {entry.rank}: fails here too, and has a root cause of its own at "
            f"{_where(own)}: {own.reason}{ask}"
        )
    return (
        f"rank {entry.rank}: matches the benchmark here; its own root cause is {_where(own)}: "
        f"{own.reason}{ask}"
    )


def _apart(card: CardDiagnosis, others: list[CardDiagnosis], rule: ThresholdRule) -> str:
    """Where `card` first parts from the others: its first output that fails on it alone,
    or else its first that passes on it alone."""
    fails_on: dict[str, list[bool]] = {}
    for other in others:
        for row in other.table.rows:
            if row.kind == "output" and row.compared:
                fails_on.setdefault(row.tensor_index, []).append(rule.fails(row))
    own = [r for r in card.table.rows if r.kind == "output" and r.compared]
    alone = next(
        (r for r in own if rule.fails(r) and not any(fails_on.get(r.tensor_index, [True]))),
        None,
    )
    rank = card.entry.rank
    if alone is not None:
        return f"the first that fails on rank {rank} alone: {alone.op_name} (index {alone.index})"
    spared = next(
        (
            r
            for r in own
            if not rule.fails(r) and (seen := fails_on.get(r.tensor_index)) and all(seen)
        ),
        None,
    )
    if spared is not None:
        return (
            f"the first that fails on the others but not on rank {rank}: {spared.op_name} "
            f"(index {spared.index})"
        )
    return "no output fails on it alone"


def _count_notes(
    card_of: dict[str, CardDiagnosis], ranks: list[str], named: set[str], rule: ThresholdRule
) -> list[str]:
    """Cards among `ranks` whose count of failing outputs is not the most common one (but
    those `named` already: their own root cause says where they part)."""
    counts = {r: card_of[r].entry.failed for r in ranks}
    if len(set(counts.values())) < 2:
        return []
    usual = Counter(counts[r] for r in ranks).most_common(1)[0][0]
    usual_ranks = [r for r in ranks if counts[r] == usual]
    notes = []
    for rank in ranks:
        if counts[rank] == usual or rank in named:
            continue
        others = [card_of[r] for r in ranks if r != rank]
        notes.append(
            f"rank {rank} fails {_outputs(counts[rank])}, {ranks_text(usual_ranks)} "
            f"{'fails' if len(usual_ranks) == 1 else 'fail'} {usual}: the "
            f"cards part after this op; {_apart(card_of[rank], others, rule)} "
            "(vc --across ranks compares the cards with each other)"
        )
    return notes


def _later_own(card: CardDiagnosis, cause: RootCause, faults: set[str]) -> RootCause | None:
    """A card that goes wrong at `cause` too: its first fault of its own after it (one the
    card shown lacks, that its replay, if any ran, does not clear), or None."""
    return next(
        (
            c
            for c in card.diagnosis.causes
            if c.position > cause.position
            and c.op != cause.op
            and fault_of_its_own(c, faults)
            and not replay_clears(c)
        ),
        None,
    )


def _first_own(card: CardDiagnosis, faults: set[str]) -> RootCause | None:
    """The card's earliest fault of its own (one at an op where the card shown has none)
    that its replay, if any ran, does not clear; None when it has none."""
    own = [c for c in card.diagnosis.causes if fault_of_its_own(c, faults) and not replay_clears(c)]
    return min(own, key=lambda c: c.position) if own else None


def _own_cause(card: CardDiagnosis, cause: RootCause) -> RootCause | None:
    """A card's own root cause as read beside `cause` (another card's): its first, or, when
    that is not before `cause`, its earliest candidate before `cause` that is a fault its
    replay (if any ran) does not clear: what goes wrong first on the card (an estimate alone
    ranks a later NaN birth first)."""
    own = card.cause
    if own is not None and own.position < cause.position:
        return own
    earlier = [
        c
        for c in card.diagnosis.causes
        if c.position < cause.position and is_fault(c) and not replay_clears(c)
    ]
    return min(earlier, key=lambda c: c.position) if earlier else own


def card_scope(
    rule: ThresholdRule, cause: RootCause, chosen: CardDiagnosis, cards: list[CardDiagnosis]
) -> CardScope | None:
    """Whether `cause` is one card's fault or every card's, read on the other cards of its
    step; None when it has no other card."""
    entry = chosen.entry
    here = [entry.rank]  # cards whose own first failure is this op
    passing: list[str] = []
    after_own: list[str] = []  # cards failing here that have a root cause of their own
    unseen: list[str] = []
    cleared: list[str] = []  # cards failing here whose replay clears the op: drift there
    # a fault the chosen card's replay proves here is shared only by cards whose replay
    # does not clear the op
    proven_here = cause.replay is not None and proves_fault(cause.replay)
    notes: list[str] = []
    elsewhere: list[tuple[SliceResult, RootCause]] = []
    # cards matching here that go wrong first beyond it by drift, by (op, what, whether the
    # chosen card goes wrong at that op too)
    alike: dict[tuple[str, str, bool], list[tuple[SliceResult, RootCause]]] = {}
    shared, faults = shared_ops(cause, chosen), fault_ops(cause, chosen)
    card_of = {entry.rank: chosen}
    for card in cards:
        other = card.entry
        if other.step != entry.step or other.rank == entry.rank:
            continue
        card_of[other.rank] = card
        outputs = card.outputs_of(cause.op)
        own = _own_cause(card, cause)
        # its own root cause is this op (a kernel the replay proves wrong may pass the
        # thresholds), or an output here fails them
        fails_here = (own is not None and own.op == cause.op) or any(rule.fails(r) for r in outputs)
        apart = own is not None and fault_of_its_own(own, faults)
        later_own = _later_own(card, cause, faults) if not apart and fails_here else None
        if own is not None and apart:
            elsewhere.append((other, own))
            notes.append(_elsewhere_note(card, own, cause, fails_here))
        elif later_own is not None:
            # it goes wrong here first, as the card shown does, then at a fault of its own
            elsewhere.append((other, later_own))
            notes.append(
                f"rank {other.rank}: fails here too, then has a fault of its own at "
                f"{_where(later_own)}: {later_own.reason} (ac -c --rank {other.rank} --step "
                f"{other.step} names it after this op)"
            )
        elif own is not None and outputs and not fails_here:
            # beyond this op, at an op the chosen card goes wrong at too, or failing by drift
            # the chosen card never reaches as drift (its fault fails it first; QA Q28 #5)
            as_this = own.op in shared
            if as_this or any(rule.fails(r) for r in card.outputs_of(own.op)):
                # drift only where the replay ran at its op (QA Q28 #2: a card's whole pass
                # ran, but not at that op, and its fault there was called drift)
                what = _shared_text(own, _replayed(card) and own.replay is not None)
                alike.setdefault((own.op, what, as_this), []).append((other, own))
        if not outputs:
            unseen.append(other.rank)
        elif not fails_here:
            passing.append(other.rank)
        elif proven_here and _clears(card, cause.op):
            cleared.append(other.rank)
        elif own is not None and apart and own.position < cause.position:
            after_own.append(other.rank)  # its failure here may be inherited from its own
        else:
            here.append(other.rank)
    if len(card_of) == 1:
        return None
    named = {e.rank for e, _ in elsewhere}
    notes += _shared_notes(alike)
    notes += _count_notes(card_of, here, named, rule)
    unseen_text = f"; not compared on rank {', '.join(unseen)}" if unseen else ""
    after_text = (
        f"; {ranks_text(after_own)} {'fails' if len(after_own) == 1 else 'fail'} here too after a "
        "fault of its own (below)"
        if after_own
        else ""
    )
    one_cleared = len(cleared) == 1
    cleared_text = (
        f"; {ranks_text(cleared)} {'fails' if one_cleared else 'fail'} the thresholds here too, "
        f"but {'its' if one_cleared else 'their'} replay clears the op (drift)"
        if cleared
        else ""
    )
    tail = cleared_text + unseen_text  # what every verdict ends with
    if len(here) > 1 and not passing and not after_own:
        # a replay that ran and proves nothing clears the op (its kernel computes what it is
        # given): what every card shares there is drift, not a faulty op, whatever the
        # estimate says it loses (QA: "suspect the op" of a softmax its replay cleared)
        # ... on every card that fails here: one whose replay never reached the op (the
        # budget ran out) may hold a fault there (QA Q28 #3: "the replay clears the op" of 3
        # cards with 5 of 6 slices not begun)
        op_cleared = (
            cause.replay is not None
            and not proven_here
            and all(_clears(card_of[rank], cause.op) for rank in here[1:])
        )
        if not any(rule.fails(r) for c in card_of.values() for r in c.outputs_of(cause.op)):
            # QA: "all 4 cards fail here" where no output crossed the thresholds
            # "here": outputs further on may fail (QA Q28 #6: read as none failing at all)
            here_text = (
                "go furthest from the benchmark here (no output of this op crosses the thresholds)"
            )
        else:
            here_text = "fail here"
        if notes:
            suspect = (
                "the replay clears the op (drift), see each card named below"
                if op_cleared
                else "suspect the op, and each card named below"
            )
            verdict = (
                f"on every card: all {len(here)} cards {here_text} at step {entry.step}, but "
                f"they disagree (below): {suspect}{tail}"
            )
        elif op_cleared:
            verdict = (
                f"on every card: all {len(here)} cards {here_text} at step {entry.step}; the "
                f"replay clears the op: drift every card shares, not one card{tail}"
            )
        else:
            # no replay ran there and no fault is measured: drift every card has reads the same
            suspect = "suspect the op" if is_fault(cause) else "the op's, or drift every card has"
            verdict = (
                f"on every card: all {len(here)} cards {here_text} at step {entry.step}: "
                f"{suspect}, not one card{tail}"
            )
    elif len(here) == 1 and passing and not after_own:
        matching = (
            (
                "the other card matches"
                if len(passing) == 1
                else f"the other {len(passing)} cards match"
            )
            if not cleared
            else f"{ranks_text(passing)} {'matches' if len(passing) == 1 else 'match'}"
        )
        verdict = (
            f"rank {entry.rank} only: {matching} the benchmark here: "
            f"suspect that card or its input data{tail}"
        )
    elif len(here) == 1 and cleared and not after_own:
        verdict = (
            f"rank {entry.rank} only: its replay proves the fault here{tail}: suspect "
            "that card or its input data"
        )
    elif passing:
        verdict = (
            f"{ranks_text(here)} fail{'s' if len(here) == 1 else ''} here; {ranks_text(passing)} "
            f"match{'es' if len(passing) == 1 else ''} the benchmark{after_text}: suspect "
            f"{'that card or its' if len(here) == 1 else 'those cards or their'} input data"
            f"{tail}"
        )
    elif after_own:
        verdict = (
            f"{ranks_text(here)} fail{'s' if len(here) == 1 else ''} here first{after_text}{tail}"
        )
    else:
        verdict = f"rank {entry.rank}: not compared on the other cards{tail}"
    shared_faults = [(e, c) for found in alike.values() for e, c in found if is_fault(c)]
    return CardScope(verdict, notes, elsewhere, shared_faults, here[1:])


OTHER_STEPS_SHOWN = 5  # the other steps' faults named one by one; the rest are counted


def named_not_proven(
    named: Sequence[tuple[SliceResult, RootCause]], cards: Sequence[CardDiagnosis]
) -> list[str]:
    """For each other card named with a fault of its own that its replay proves: the
    candidates before that fault on the card that no replay could judge, as the card shown's
    `not proven` row says them, each with its card (QA Q26 #3: said for the card shown only)."""
    card_of = {(c.entry.rank, c.entry.step): c for c in cards}
    lines = []
    for entry, own in named:
        card = card_of.get((entry.rank, entry.step))
        if card is None:
            continue
        for text in unjudged_before_cause(card.diagnosis.causes, own):
            lines.append(f"{entry.label}: {own.op}: {text}")
    return lines


@dataclass
class OtherSteps:
    """The faults of their own that cards of the other steps have (the root cause shown is
    one step's: a step after it may hold an unrelated fault that fails far more)."""

    faults: list[tuple[SliceResult, RootCause]]
    notes: list[str]


def other_step_faults(
    cause: RootCause, chosen: CardDiagnosis, cards: list[CardDiagnosis]
) -> OtherSteps:
    """The cards of steps other than `chosen`'s whose best cause is a fault of its own
    (`fault_of_its_own`): drift is not named, every card has it alike. In step order, then
    execution order, then rank."""
    found: list[tuple[SliceResult, RootCause]] = []
    faults = fault_ops(cause, chosen)
    for card in cards:
        own = card.cause
        if card.entry.step == chosen.entry.step or own is None:
            continue
        if fault_of_its_own(own, faults):
            found.append((card.entry, own))
            continue
        # its first cause is one the card shown has too: a fault of its own behind it is
        # still its own (QA Q21 #6: a constant wrong on one card of step 5 was named nowhere,
        # its estimate ranking the network input every card was fed alike first)
        behind = _first_own(card, faults) if own.op in faults else None
        if behind is not None:
            found.append((card.entry, behind))
    found.sort(key=lambda f: first_wrong_order(f[0].step, f[1].position, f[0].rank))
    notes = []
    for entry, own in found[:OTHER_STEPS_SHOWN]:
        proof = measured_text(own)
        notes.append(
            f"{entry.label}: a fault of its own at {_where(own)}, {_outputs(entry.failed)} failing: "
            f"{proof or own.reason} (ac -c --rank {entry.rank} --step {entry.step})"
        )
    if len(found) > OTHER_STEPS_SHOWN:
        notes.append(
            f"and {len(found) - OTHER_STEPS_SHOWN} more (summary.json diagnosis.other_cards)"
        )
    return OtherSteps(found, notes)
