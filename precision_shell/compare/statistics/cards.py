"""Whether a statistics suspect is one card's or every card's: its outputs read on the other
cards (ranks) of the same step, as the tensor diagnosis's `cards` line reads a root cause."""

from __future__ import annotations

from collections.abc import Sequence

from precision_shell.compare.rank_divergence import ranks_text
from precision_shell.compare.statistics import suspects as kinds
from precision_shell.compare.statistics.run import StatisticsCompare
from precision_shell.compare.statistics.suspects import Suspect
from precision_shell.workspace.workspace import number_order

# what a suspect deviating on every card points at, by its kind
_SHARED_BLAME = {
    kinds.CONSTANT: "its constant",
    kinds.NONFINITE_CONSTANT: "its constant",
    kinds.INPUT_DATA: "the input data",
    kinds.NONFINITE_INPUT_DATA: "the input data",
    kinds.UNDUMPED: "the ops upstream the dump lacks",
}


def _verb(ranks: list[str], one: str, many: str) -> str:
    return one if len(ranks) == 1 else many


def statistics_card_scope(
    suspect: Suspect, chosen: StatisticsCompare, compares: Sequence[StatisticsCompare]
) -> str | None:
    """One line: on which cards of `chosen`'s step the suspect's outputs deviate; None when
    the step has no other card. A card whose compare has no compared output of the op is
    named as not compared there, never as matching."""
    where = chosen.where
    if where is None:
        return None
    deviating, matching, unseen = [where.rank], [], []
    for compare in compares:
        other = compare.where
        if compare is chosen or other is None or other.step != where.step:
            continue
        outputs = [
            r for r in compare.rows if r.op_name == suspect.op and r.kind == "output" and r.compared
        ]
        if not outputs:
            unseen.append(other.rank)
        elif any(r.deviates for r in outputs):
            deviating.append(other.rank)
        else:
            matching.append(other.rank)
    if len(deviating) == 1 and not matching and not unseen:
        return None
    deviating.sort(key=number_order)
    tail = (
        f"; not compared on {ranks_text(unseen)} ({suspect.op} has no compared output there)"
        if unseen
        else ""
    )
    if not matching and len(deviating) > 1:
        every = "every card" if not unseen else "every card compared"
        return (
            f"on {every}: all {len(deviating)} cards deviate here at step {where.step}: "
            f"suspect {_SHARED_BLAME.get(suspect.kind, 'the op')}, not one card{tail}"
        )
    if len(deviating) == 1 and matching:
        return (
            f"rank {where.rank} only: {ranks_text(matching)} "
            f"{_verb(matching, 'matches', 'match')} the benchmark here: suspect that card or "
            f"its input data{tail}"
        )
    if matching:
        return (
            f"{ranks_text(deviating)} deviate here; {ranks_text(matching)} "
            f"{_verb(matching, 'matches', 'match')} the benchmark: suspect those cards or "
            f"their input data{tail}"
        )
    # only the chosen card compared the op
    return f"rank {where.rank}: {tail.removeprefix('; ')}"
