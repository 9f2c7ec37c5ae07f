"""`ac -c` over several cards: which card's root cause is shown, and what the other cards of
its step say about it (compare.diagnosis.cards), on small graphs built in code."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from precision_shell.compare.diagnosis.cards import (
    CardDiagnosis,
    card_scope,
    first_card,
    other_step_faults,
)
from precision_shell.compare.diagnosis.replay_evidence import ReplayPass
from precision_shell.compare.results.schema import ResultTable
from precision_shell.compare.results.slice_results import SliceResult
from precision_shell.replay.measure import OwnError
from precision_shell.replay.session import ReplayReport
from tests.compare.test_replay_rerank import EXACT, _output
from tests.compare.test_root_cause import COSINE_ONLY, chain_rows, diagnose, graph_of

# two branches off one input: a fault in one does not reach the other
FORK = {"a": [], "b": ["a"], "c": ["a"], "d": ["b"], "e": ["c"]}


def _card(rank: str, cosines: dict[str, float], step: str = "0") -> CardDiagnosis:
    graph = graph_of(FORK)
    rows = chain_rows(cosines, FORK)
    failing = [r for r in rows if r.kind == "output" and COSINE_ONLY.fails(r)]
    entry = SliceResult(rank, step, f"r{rank}.csv", "g", len(rows), len(failing), None)
    table = ResultTable(Path(f"r{rank}.csv"), [], rows)
    return CardDiagnosis(entry, table, graph, diagnose(graph, rows))


HEALTHY = {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0, "e": 1.0}


def _drifting(card: CardDiagnosis, op: str) -> CardDiagnosis:
    """`card` with its cause at `op` losing 3 dB (drift: no op loses 10 dB on its own)."""
    causes = card.diagnosis.causes
    causes[:] = [replace(c, drop_db=3.0) if c.op == op else c for c in causes]
    return card


def test_the_earliest_root_cause_across_cards_is_shown_not_the_lowest_rank():
    cards = [
        _card("0", HEALTHY),
        _card("1", {**HEALTHY, "d": 0.5}),  # later (index 3)
        _card("2", {**HEALTHY, "b": 0.5, "d": 0.5}),  # earlier (index 1)
    ]
    chosen = first_card(cards)
    assert chosen is cards[2] and chosen.cause.op == "b"
    scope = card_scope(COSINE_ONLY, chosen.cause, chosen, cards)
    assert scope.verdict == (
        "rank 2 only: the other 2 cards match the benchmark here: "
        "suspect that card or its input data"
    )
    assert [(e.rank, c.op) for e, c in scope.elsewhere] == [("1", "d")]
    assert scope.notes[0].startswith(
        "rank 1: matches the benchmark here; its own root cause is d (index 3): output crosses"
    )
    # named at rank 1's d, rank 2 fails there only after its own fault at b
    scope = card_scope(COSINE_ONLY, cards[1].cause, cards[1], cards)
    assert scope.verdict == (
        "rank 1 fails here; rank 0 matches the benchmark; rank 2 fails here too after a fault "
        "of its own (below): suspect that card or its input data"
    )
    assert scope.notes == [
        "rank 2: first goes wrong at b (index 1): output crosses the thresholds (CosineSimilarity "
        "0.500000000 < 0.98) while every input is within them; its failure at d comes after "
        "that, not from the same fault (ac -c --rank 2 --step 0)"
    ]


def test_cards_failing_alike_but_one_failing_more_is_named_where_it_parts():
    fault = {**HEALTHY, "b": 0.5, "d": 0.5}
    cards = [
        _card("0", fault),
        _card("1", {**fault, "e": 0.97}),  # a small fault of its own, not its root cause
        _card("2", fault),
    ]
    chosen = first_card(cards)
    assert chosen is cards[0] and [c.cause.op for c in cards] == ["b", "b", "b"]
    scope = card_scope(COSINE_ONLY, chosen.cause, chosen, cards)
    assert scope.verdict == (
        "on every card: all 3 cards fail here at step 0, but they disagree (below): "
        "suspect the op, and each card named below"
    )
    # rank 1's own fault after the shared one is named (its count note then says no more)
    assert scope.notes == [
        "rank 1: fails here too, then has a fault of its own at e (index 4): output crosses "
        "the thresholds (CosineSimilarity 0.970000000 < 0.98) while every input is within them "
        "(ac -c --rank 1 --step 0 names it after this op)"
    ]
    alike = [_card("0", fault), _card("1", fault)]
    assert card_scope(COSINE_ONLY, alike[0].cause, alike[0], alike).verdict == (
        "on every card: all 2 cards fail here at step 0: suspect the op, not one card"
    )
    assert card_scope(COSINE_ONLY, alike[0].cause, alike[0], alike[:1]) is None
    # no fault measured at the op (drift on every card): not "suspect the op"
    drift = [_drifting(_card(r, {**HEALTHY, "e": 0.5}), "e") for r in ("0", "1")]
    assert card_scope(COSINE_ONLY, drift[0].cause, drift[0], drift).verdict == (
        "on every card: all 2 cards fail here at step 0: the op's, or drift every card has, "
        "not one card"
    )


def _replayed(card: CardDiagnosis) -> CardDiagnosis:
    """`card` as if its replay had run to its end, at each of its causes too (proving
    nothing: an exact kernel)."""
    done = ReplayPass("candidates", 60.0, widened=True)
    out = _output(EXACT)
    causes = card.diagnosis.causes
    for c in causes:
        done.reports[c.op] = ReplayReport(c.op, "Op", "debug_0", f"{c.op}.dump", [], {}, [out])
    causes[:] = [replace(c, replay=out) for c in causes]
    card.diagnosis.replays = done
    return card


def test_only_a_fault_of_its_own_is_named_not_a_cause_the_shown_card_shares():
    """rank 0 fails at b (shown) and by drift at e; a card failing by drift only at e shares
    that (one line for all such cards; "no fault of their own" only when their replay ran to
    its end); drift at d, which the shown card has not, is named without "as this card does"
    (QA Q28 #5: two cards failing 35 outputs by drift went unsaid); a loss of 10 dB
    at d, or at e, where the shown card only drifts (QA: a proven wrong constant at the op
    where drift crosses the thresholds was said to be "as this card does"), is that card's
    own."""
    cards = [
        _drifting(_card("0", {**HEALTHY, "b": 0.5, "e": 0.5}), "e"),
        _replayed(_drifting(_card("1", {**HEALTHY, "e": 0.5}), "e")),
        _drifting(_card("2", {**HEALTHY, "d": 0.5}), "d"),
        _card("3", {**HEALTHY, "e": 0.5}),
        _replayed(_drifting(_card("4", {**HEALTHY, "e": 0.5}), "e")),
        _card("5", {**HEALTHY, "d": 0.5}),
        _drifting(_card("6", {**HEALTHY, "e": 0.5}), "e"),  # not replayed
    ]
    chosen = first_card(cards)
    assert chosen is cards[0] and [c.op for c in chosen.diagnosis.causes] == ["b", "e"]
    scope = card_scope(COSINE_ONLY, chosen.cause, chosen, cards)
    assert scope.verdict == (
        "rank 0 only: the other 6 cards match the benchmark here: suspect that card or its "
        "input data"
    )
    assert scope.notes == [
        "rank 3: matches the benchmark here; its own root cause is e (index 4): output crosses "
        "the thresholds (CosineSimilarity 0.500000000 < 0.98) while every input is within them "
        "(ac -c --rank 3 --step 0)",
        "rank 5: matches the benchmark here; its own root cause is d (index 3): output crosses "
        "the thresholds (CosineSimilarity 0.500000000 < 0.98) while every input is within them "
        "(ac -c --rank 5 --step 0)",
        "rank 2: matches the benchmark here and goes wrong first beyond it, at d (index 3): "
        "drift as the compare reads it; not replayed, so a fault drift hides is not ruled out "
        "(ac -c --rank 2 --step 0)",
        "ranks 1, 4: match the benchmark here and go wrong first beyond it, at e (index 4), as "
        "this card does: drift, no fault of their own",
        "rank 6: matches the benchmark here and goes wrong first beyond it, at e (index 4), as "
        "this card does: drift as the compare reads it; not replayed, so a fault drift hides "
        "is not ruled out (ac -c --rank 6 --step 0)",
    ]
    assert [(e.rank, c.op) for e, c in scope.elsewhere] == [("3", "e"), ("5", "d")]
    assert scope.shared_faults == []


def test_the_shown_cards_own_fault_on_another_card_is_shared_and_still_recorded():
    """rank 1 has rank 0's second fault (e, losing 10 dB on both): one shared line, and still
    rank 1's own cause for its report (`own_causes`)."""
    cards = [_card("0", {**HEALTHY, "b": 0.5, "e": 0.5}), _card("1", {**HEALTHY, "e": 0.5})]
    chosen = first_card(cards)
    assert chosen is cards[0] and [c.op for c in chosen.diagnosis.causes] == ["b", "e"]
    scope = card_scope(COSINE_ONLY, chosen.cause, chosen, cards)
    assert scope.elsewhere == []
    assert scope.notes == [
        "rank 1: matches the benchmark here and goes wrong first beyond it, at e (index 4), as "
        "this card does: it loses 10 dB or more there on its own (ac -c --rank 1 --step 0)"
    ]
    assert [(e.rank, c.op) for e, c in scope.own_causes] == [("1", "e")]


def test_the_other_steps_follow_the_same_rule():
    chosen = _drifting(_card("0", {**HEALTHY, "b": 0.5, "e": 0.5}), "e")
    cards = [
        chosen,
        _drifting(_card("0", {**HEALTHY, "e": 0.5}, step="1"), "e"),
        _drifting(_card("0", {**HEALTHY, "d": 0.5}, step="2"), "d"),
        # a loss of 10 dB at e, where the shown card only drifts: a fault of its own
        _card("0", {**HEALTHY, "e": 0.5}, step="3"),
        _card("0", {**HEALTHY, "d": 0.5}, step="4"),
    ]
    later = other_step_faults(chosen.cause, chosen, cards)
    assert [(e.step, c.op) for e, c in later.faults] == [("3", "e"), ("4", "d")]
    assert later.notes[1:] == [
        "rank 0 step 4: a fault of its own at d (index 3), 1 output failing: output crosses the "
        "thresholds (CosineSimilarity 0.500000000 < 0.98) while every input is within them "
        "(ac -c --rank 0 --step 4)"
    ]


def test_every_card_failing_at_an_op_the_replay_clears_is_drift_not_a_suspect_op():
    """QA: drift on every card at an op whose replay shows an exact kernel (no fault measured,
    no 10 dB lost on its own) was said "suspect the op"."""
    drift = {**HEALTHY, "b": 0.5, "d": 0.5}
    cards = [_drifting(_card("0", drift), "b"), _drifting(_card("1", drift), "b")]
    chosen = first_card(cards)
    assert chosen is cards[0] and chosen.cause.op == "b"
    exact = replace(chosen.cause, replay=_output(EXACT))
    # rank 1's replay never reached b (the budget ran out): nothing clears it there (QA Q28
    # #3: "the replay clears the op" of cards whose slices were never begun)
    assert card_scope(COSINE_ONLY, exact, chosen, cards).verdict == (
        "on every card: all 2 cards fail here at step 0: the op's, or drift every card has, "
        "not one card"
    )
    # a kernel the replay proves wrong is the op to suspect; no replay, no fault measured:
    # the op's, or drift
    wrong = replace(chosen.cause, replay=_output(OwnError(0.5, 1.0, 1.0, 5000.0)))
    assert card_scope(COSINE_ONLY, wrong, chosen, cards).verdict == (
        "on every card: all 2 cards fail here at step 0: suspect the op, not one card"
    )
    assert card_scope(COSINE_ONLY, chosen.cause, chosen, cards).verdict == (
        "on every card: all 2 cards fail here at step 0: the op's, or drift every card has, "
        "not one card"
    )
    _replayed(cards[1])  # its replay reached b too, and clears it
    assert card_scope(COSINE_ONLY, exact, chosen, cards).verdict == (
        "on every card: all 2 cards fail here at step 0; the replay clears the op: drift every "
        "card shares, not one card"
    )


def test_an_op_losing_10_db_that_its_replay_clears_on_cards_that_pass_is_said_so():
    """QA: a clean 4-card workspace (no output failing) named a softmax losing 10.6 dB and said
    "all 4 cards fail here at step 0: suspect the op", while its replay cleared it."""
    loud = {**HEALTHY, "b": 0.99, "d": 0.99}  # within the thresholds, 10 dB or more lost at b
    cards = [_card("0", loud), _replayed(_card("1", loud))]
    chosen = first_card(cards)
    assert chosen is cards[0] and chosen.cause.op == "b" and chosen.cause.drop_db >= 10
    exact = replace(chosen.cause, replay=_output(EXACT))
    assert card_scope(COSINE_ONLY, exact, chosen, cards).verdict == (
        "on every card: all 2 cards go furthest from the benchmark here (no output of this op "
        "crosses the thresholds) at step 0; the replay clears the op: drift every card shares, not one card"
    )
