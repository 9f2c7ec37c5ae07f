"""Which (rank, step) compare a run's recorded diagnosis is about, and what a view of another
compare of the run says of it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precision_shell.compare.results.slice_results import (
    device_compare_of,
    entry_for_csv,
    slice_results,
)
from precision_shell.compare.results.summary import RunSummary


def diagnosed_slice(summary: RunSummary | None) -> tuple[str, str] | None:
    """The (rank, step) compare the recorded diagnosis is about (`ac -c` over several ranks:
    its root causes, advisor findings and baseline are that compare's). A summary written
    before the diagnosis recorded it: its root cause's, else the first compare in (step,
    rank) order (the one `ac -c` records when none has a root cause)."""
    diagnosis = summary.diagnosis if summary is not None else None
    if diagnosis is None:
        return None
    if diagnosis.rank is not None and diagnosis.step is not None:
        return diagnosis.rank, diagnosis.step
    cause = diagnosis.root_causes[0] if diagnosis.root_causes else {}
    if cause.get("rank") is not None and cause.get("step") is not None:
        return str(cause["rank"]), str(cause["step"])
    results = slice_results(summary)
    return (results[0].rank, results[0].step) if len(results) > 1 else None


@dataclass(frozen=True)
class DiagnosisElsewhere:
    """The recorded diagnosis is of another compare than the one looked at."""

    label: str  # "rank 1 step 10", or "the device vs benchmark compare"
    root_cause: str | None  # the op it found there
    # the compare looked at was read by the diagnosis too: a card of the step diagnosed (each
    # one with a root cause of its own is recorded in `other_cards`), an earlier step (no
    # root cause), or no compare had a root cause; `ac -c` records the first step with one
    diagnosed_here: bool
    where: tuple[str, str] | None = None  # (rank, step) of the compare diagnosed
    own_cause: dict[str, Any] | None = None  # this card's own root cause (`other_cards`)
    # this card goes wrong at the root cause too, as the card diagnosed does (`sharing_cards`)
    shares: bool = False

    @property
    def command(self) -> str:
        """The --rank/--step that picks the compare diagnosed ("" for the primary)."""
        return f"--rank {self.where[0]} --step {self.where[1]}" if self.where else ""


def diagnosis_elsewhere(summary: RunSummary | None, csv_path: Path) -> DiagnosisElsewhere | None:
    """What the recorded diagnosis is about when it is not the compare of `csv_path`; None
    when it is that one, or nothing was diagnosed."""
    diagnosis = summary.diagnosis if summary is not None else None
    if summary is None or diagnosis is None:
        return None
    if device_compare_of(summary, csv_path) is not None:
        return DiagnosisElsewhere("the device vs benchmark compare", diagnosis.root_cause, False)
    where = diagnosed_slice(summary)
    results = slice_results(summary)
    shown = entry_for_csv(results, csv_path)
    if where is None or shown is None or where == (shown.rank, shown.step):
        return None
    diagnosed = next((r for r in results if (r.rank, r.step) == where), None)
    label = diagnosed.label if diagnosed is not None else f"rank {where[0]} step {where[1]}"
    order = [(r.rank, r.step) for r in results]
    before = where in order and order.index((shown.rank, shown.step)) < order.index(where)
    cause = diagnosis.root_cause
    own = next(
        (
            c
            for c in diagnosis.other_cards or []
            if (str(c.get("rank")), str(c.get("step"))) == (shown.rank, shown.step)
        ),
        None,
    )
    read = before or cause is None or shown.step == where[1]
    shares = [shown.rank, shown.step] in (diagnosis.sharing_cards or [])
    return DiagnosisElsewhere(label, cause, read, where, own, shares)
