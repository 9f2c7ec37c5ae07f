"""Diagnosis of a statistics compare: the suspects, recorded in the summary, the sources holding
NaN/inf on both sides (advice: no difference between the runs, but worth knowing), and the
targeted tensor dump config written beside it (`<result dir>/dump_config/`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precision_shell.compare.results.slice_results import first_wrong_order
from precision_shell.compare.results.summary import DiagnosisRecord, RunSummary
from precision_shell.compare.statistics.cards import statistics_card_scope
from precision_shell.compare.statistics.dump_config import (
    DEFAULT_DEPTH,
    DEFAULT_DUMP_PATH,
    DumpConfigFiles,
    plan_dump_config,
    write_dump_config,
)
from precision_shell.compare.statistics.judge import INPUT_DATA
from precision_shell.compare.statistics.run import StatisticsCompare, StatisticsCompareResult
from precision_shell.compare.statistics.sources import Source, nonfinite_on_both_sides
from precision_shell.compare.statistics.suspects import Suspect, rank_suspects
from precision_shell.compare.statistics.table import StatisticsRow
from precision_shell.workspace.graph_index import GraphIndex
from precision_shell.workspace.run_index import DumpSlice
from precision_shell.workspace.workspace import number_order

DUMP_CONFIG_DIR = "dump_config"
NONFINITE_SOURCE = "nonfinite source"


@dataclass(frozen=True)
class NonfiniteSource:
    """A constant or the network's input data holding NaN/inf on both sides: no difference
    between the runs (no row fails for it), but every output computed from it carries it."""

    source: Source
    row: StatisticsRow  # its first reader's input row

    @property
    def text(self) -> str:
        row = self.row
        what = "the network's input data" if self.source.verdict == INPUT_DATA else "a constant"
        fix = "the data fed" if self.source.verdict == INPUT_DATA else "the model's own values"
        return (
            f"{what} ({self.source.name}) holds {row.device_nonfinite} on both sides (read by "
            f"{row.op_name} as {row.tensor_index}): not a difference between the runs, but "
            f"what is computed from it carries it; check {fix}"
        )

    def to_json(self) -> dict[str, Any]:
        """An advice entry (the advisor's shape)."""
        row = self.row
        return {
            "detection": NONFINITE_SOURCE,
            "op": row.op_name,
            "index": row.index,
            "advice": self.text,
            "evidence": {
                "tensor": row.tensor_index,
                "source": self.source.name,
                "nan_inf": {k: list(v) for k, v in (row.counts or {}).items()},
            },
        }


@dataclass
class StatisticsDiagnosis:
    suspects: list[Suspect]
    compare: StatisticsCompare
    dump_config: DumpConfigFiles | None
    where: str | None = None  # "rank 1 step 0" when several dumps were compared
    # the other (rank, step) compares with suspects the one shown lacks: (that dump, those)
    others: list[tuple[DumpSlice, list[Suspect]]] = field(default_factory=list)
    nonfinite_sources: list[NonfiniteSource] = field(default_factory=list)
    # the top suspect read on the other cards of its step (`statistics_card_scope`)
    cards: str | None = None


def record(
    suspects: list[Suspect],
    rows: list[StatisticsRow],
    where: StatisticsCompare,
    others: Sequence[tuple[StatisticsCompare, list[Suspect]]] = (),
    notes: Sequence[NonfiniteSource] = (),
) -> DiagnosisRecord:
    causes = [s.to_json() for s in suspects]
    advice = [n.to_json() for n in notes]
    slice_ = where.where
    if slice_ is not None:
        for cause in causes:
            cause["rank"], cause["step"] = slice_.rank, slice_.step
    first = next((r.op_name for r in rows if r.kind == "output" and r.deviates), None)
    if slice_ is None:
        return DiagnosisRecord(causes, advice, first)
    other_cards = [
        {"rank": c.where.rank, "step": c.where.step, **found[0].to_json()}
        for c, found in others
        if c.where is not None
    ]
    return DiagnosisRecord(
        causes, advice, first, rank=slice_.rank, step=slice_.step, other_cards=other_cards or None
    )


def config_for(
    suspects: list[Suspect],
    rows: list[StatisticsRow],
    graph: GraphIndex | None,
    out_dir: Path,
    step: str,
    depth: int = DEFAULT_DEPTH,
    dump_path: str = DEFAULT_DUMP_PATH,
) -> DumpConfigFiles | None:
    if not suspects:
        return None
    plan = plan_dump_config(rows, [s.op for s in suspects], graph, depth, step, dump_path)
    return write_dump_config(plan, out_dir)


def diagnose_statistics(
    result: StatisticsCompareResult, depth: int = DEFAULT_DEPTH, dump_path: str = DEFAULT_DUMP_PATH
) -> StatisticsDiagnosis:
    """Every (rank, step) compare's suspects. The one shown and recorded as the summary's root
    causes is the first that goes wrong, by the tensor compares' rule (`first_wrong_order`):
    the first step with suspects, then the earliest top-ranked suspect across its cards, then
    the lowest rank. The other compares with suspects it lacks are kept (`other_cards`: the
    first of those), and the dump config written into the result dir covers every suspect,
    at every step that has one."""
    found = [(c, rank_suspects(c.rows, c.graph)) for c in result.compares]
    with_suspects = [(c, s) for c, s in found if s]
    chosen, suspects = result.compares[0], list[Suspect]()
    if with_suspects:
        chosen, suspects = min(with_suspects, key=_first_wrong)
    shown = {s.op for s in suspects}
    # a card's own suspects: those the one shown lacks; at another step every one is its
    # own (another pass of the network, to be dumped at that step too)
    others = [
        (c, extra)
        for c, found_there in with_suspects
        if c is not chosen
        and (extra := [s for s in found_there if s.op not in shown or not _same_step(c, chosen)])
    ]
    notes = [
        NonfiniteSource(*found) for found in nonfinite_on_both_sides(chosen.rows, chosen.graph)
    ]
    summary: RunSummary = result.summary
    summary.diagnosis = record(suspects, chosen.rows, chosen, others, notes)
    summary.write(result.summary_path)
    steps = [c.where.step for c, _ in [(chosen, suspects), *others] if c.where is not None]
    every = {s.op: s for s in [*suspects, *(s for _, more in others for s in more)]}
    files = config_for(
        list(every.values()),
        chosen.rows,
        chosen.graph,
        result.out_dir / DUMP_CONFIG_DIR,
        "|".join(sorted(dict.fromkeys(steps), key=number_order)) or "0",
        depth,
        dump_path,
    )
    where = None
    if len(result.compares) > 1 and chosen.where is not None:
        where = chosen.where.label
    shown_others = [(c.where, s) for c, s in others if c.where is not None]
    cards = statistics_card_scope(suspects[0], chosen, result.compares) if suspects else None
    return StatisticsDiagnosis(suspects, chosen, files, where, shown_others, notes, cards)


def _same_step(one: StatisticsCompare, other: StatisticsCompare) -> bool:
    if one.where is None or other.where is None:
        return True
    return one.where.step == other.where.step


def _first_wrong(item: tuple[StatisticsCompare, list[Suspect]]) -> tuple:
    compare, suspects = item
    where = compare.where
    step, rank = (where.step, where.rank) if where is not None else ("0", "0")
    return first_wrong_order(step, suspects[0].index, rank)
