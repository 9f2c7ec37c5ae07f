"""`vc --across ranks`: every rank of a run against its lowest rank, at one step.

In data-parallel training the weights, the gradients after all-reduce and often the
activations agree across cards; a rank whose dump leaves the others points at a broken
collective or a card-specific fault. This module plans the rank-pair compares (device vs
device, ops matched by name) and finds, per rank that differs, the first output in execution
order whose values differ from the reference's and the first that fails the threshold rule.
`compare.runner` executes the plans.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precision_shell.compare.metrics.cells import COSINE, MAX_ABS
from precision_shell.compare.pipeline.execute import CompareRun
from precision_shell.compare.pipeline.plan import ComparePlan, device_plan
from precision_shell.compare.pipeline.worker import SAME_BYTES
from precision_shell.compare.results.schema import ResultRow
from precision_shell.compare.results.summary import RunSummary, SummaryBacked
from precision_shell.errors import PrecisionError
from precision_shell.json_numbers import json_number
from precision_shell.listing_text import in_workspace
from precision_shell.workspace.graph_index import GraphIndex
from precision_shell.workspace.workspace import RunIndex, Workspace

ACROSS_CHOICES = ("ranks",)


@dataclass(frozen=True)
class RankPair:
    """One rank's dump against the reference rank's, at the same step."""

    rank: str
    against: str
    step: str
    plan: ComparePlan


@dataclass(frozen=True)
class DivergencePoint:
    """One output of a rank against the reference rank's."""

    op: str
    index: int | None
    cosine: float | None  # nan/inf when the CSV prints it so; None when not computed
    max_abs_error: float | None

    @classmethod
    def of(cls, row: ResultRow) -> DivergencePoint:
        return cls(row.op_name, row.index, row.measured(COSINE), row.measured(MAX_ABS))

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "index": self.index,
            "cosine": json_number(self.cosine),
            "max_abs_error": json_number(self.max_abs_error),
        }


@dataclass(frozen=True)
class RankDivergence:
    """Where one rank leaves the reference rank: the first output whose values differ at all
    (`first`), and the first one that fails the threshold rule (`failing`, None when every
    output stays within it)."""

    rank: str
    step: str
    against: str
    first: DivergencePoint
    failing: DivergencePoint | None
    # (files compared, of its files) when the compare was cut short: `failing` None then
    # says no output crossed the thresholds in the files it got to, not in all of them
    partial: tuple[int, int] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "step": self.step,
            "first_op": self.first.op,
            "index": self.first.index,
            "cosine": json_number(self.first.cosine),
            "max_abs_error": json_number(self.first.max_abs_error),
            "first_failing": self.failing.to_json() if self.failing is not None else None,
        }


def own_benchmark_notes(ws: Workspace, pairs: Sequence[RankPair]) -> list[str]:
    """A line per compared rank with a benchmark dir of its own (`tf/dump/rank1/`: a card fed
    its own batch): it differs from the reference rank by design, whatever its kernels."""
    notes = []
    for pair in pairs:
        own = ws.benchmark_for(pair.rank, pair.step)
        reference = ws.benchmark_for(pair.against, pair.step)
        if own is None or own is reference:
            continue
        theirs = in_workspace(reference.directory) if reference is not None else "none"
        notes.append(
            f"rank {pair.rank} step {pair.step} has a benchmark of its own "
            f"({in_workspace(own.directory)}/, rank {pair.against}'s: {theirs}/): it was fed "
            f"other data, so it differs from rank {pair.against} whatever its kernels; vc "
            f"--rank all --step {pair.step} compares each rank with its own benchmark"
        )
    return notes


def rank_pair_plans(
    run: RunIndex,
    step: str | None,
    graph: GraphIndex | None,
    warnings: list[str],
    rank: str | None = None,
) -> list[RankPair]:
    """A device-vs-device plan per rank against the lowest rank, at the lowest rank's step
    `step` (its first by default); a rank without that step is a warning and is skipped.
    `rank` keeps one rank's compare only."""
    if step == "all":
        raise PrecisionError("vc: --across ranks compares one step; give --step S (or none)")
    ranks = run.ranks()
    if len(ranks) < 2:
        have = ranks[0] if ranks else "none"
        raise PrecisionError(
            f"{run.name}: --across ranks needs two ranks or more; this run has rank {have}"
        )
    base = run.slice(ranks[0], step)
    others = ranks[1:]
    if rank not in (None, "all"):
        chosen = run.slice(rank, base.step).rank  # an unknown rank lists the ranks there are
        if chosen == base.rank:
            raise PrecisionError(
                f"vc: --rank {rank} is the reference rank of --across ranks; give another rank"
            )
        others = [chosen]
    pairs = []
    for r in others:
        if base.step not in run.steps(r):
            warnings.append(f"{run.name} rank {r} has no step {base.step}; not compared")
            continue
        slice_ = run.slice(r, base.step)
        stats = [w.label for w in (base, slice_) if w.dumps.holds_statistics_only()]
        if stats:  # no tensor to compare: a compare of nothing would read as a match
            raise PrecisionError(
                f"vc: --across ranks compares tensor dumps; {run.name} {stats[0]} holds "
                "statistics dumps (dump_data: stats): vc --rank all compares each rank's "
                "statistics with the benchmark"
            )
        plan = device_plan(
            slice_.dumps,
            base.dumps,
            f"{run.name} rank {r} step {base.step}",
            f"{run.name} {base.label}",
            graph,
        )
        pairs.append(RankPair(r, base.rank, base.step, plan))
    if not pairs:
        raise PrecisionError(
            f"{run.name}: no rank other than {base.rank} has step {base.step}; nothing to compare"
        )
    return pairs


def differs(row: ResultRow) -> bool:
    """The output holds other values on the two ranks: not the same bytes, and a max abs
    error the CSV prints as non-zero (or NaN/inf on one side). Cards fed the same data run
    the same kernels, so they agree bit for bit; -0 against +0, or a difference below the
    CSV's six decimals, is not counted, so that every departure named has its row."""
    if row.extras.get(SAME_BYTES):
        return False
    if row.nonfinite(MAX_ABS) or row.nonfinite(COSINE):
        return True
    error = row.metrics.get(MAX_ABS, math.nan)
    return not math.isnan(error) and error > 0


def divergence_of(pair: RankPair, compare: CompareRun) -> RankDivergence | None:
    """The first output (in execution order) of this rank whose values differ from the
    reference's, and the first that fails the rule; None when no output differs.

    An output that holds the same bytes on both ranks does not leave the reference even when
    the rule fails it: the same inf from an fp16 overflow on every card gives a NaN cosine."""
    first = next((r for r in compare.tally.outputs if r.compared and differs(r)), None)
    if first is None:
        return None
    failing = next((r for r in compare.tally.failing if not r.extras.get(SAME_BYTES)), None)
    return RankDivergence(
        pair.rank,
        pair.step,
        pair.against,
        DivergencePoint.of(first),
        DivergencePoint.of(failing) if failing is not None else None,
        (compare.files_done, compare.tasks) if compare.interrupted else None,
    )


def _numbers(compare: CompareRun) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    """Every compared output's printed numbers, in order."""
    return [(r.tensor_index, tuple(sorted(r.texts.items()))) for r in compare.tally.outputs]


@dataclass
class RankDivergenceResult(SummaryBacked):
    """`vc --across ranks`: each rank's compare against the reference rank, and where the
    ranks that differ leave it."""

    out_dir: Path
    summary: RunSummary
    run_name: str
    against: str
    step: str
    compares: list[tuple[RankPair, CompareRun]]
    divergence: list[RankDivergence]
    warnings: list[str] = field(default_factory=list)

    @property
    def agreeing(self) -> list[str]:
        """The compared ranks every output of which holds the reference's values (a compare
        of no output matches nothing: `compared_nothing`)."""
        differing = {d.rank for d in self.divergence}
        return [
            pair.rank
            for pair, run in self.compares
            if pair.rank not in differing and run.tally.outputs
        ]

    @property
    def compared_nothing(self) -> list[str]:
        """The ranks whose compare with the reference had no output to compare."""
        differing = {d.rank for d in self.divergence}
        return [
            pair.rank
            for pair, run in self.compares
            if pair.rank not in differing and not run.tally.outputs
        ]

    @property
    def reference_is_odd(self) -> bool:
        """Two ranks or more were compared, each differs from the reference, and every
        output gives the same numbers against it on each: they agree with each other, and the
        reference rank is the one that differs."""
        if len(self.compares) < 2 or len(self.divergence) < len(self.compares):
            return False
        if any(run.interrupted for _, run in self.compares):
            return False
        first = _numbers(self.compares[0][1])
        return all(_numbers(run) == first for _, run in self.compares[1:])

    @property
    def user_interrupted(self) -> bool:
        """Ctrl-C cut a compare (see SummaryBacked.user_interrupted)."""
        return any(run.interrupted for _, run in self.compares)

    @property
    def error_message(self) -> str | None:
        stopped = [pair.rank for pair, run in self.compares if run.interrupted]
        if not stopped:
            return None
        left = [str(entry.get("rank")) for entry in self.summary.not_begun]
        never = f"; rank {', '.join(left)} not begun" if left else ""
        return (
            f"vc: interrupted (rank {', '.join(stopped)} partial{never}); the rows written so far "
            "are kept"
        )


def ranks_text(ranks: list[str]) -> str:
    """`rank 3`, `ranks 1, 2`, `ranks 1-7`: ranks named with their word."""
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {rank_list_text(ranks)}"


def rank_list_text(ranks: list[str]) -> str:
    """`1-7`, `1, 3, 5-6`: consecutive numeric ranks joined into ranges."""
    parts: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if len(run) > 2:
            parts.append(f"{run[0]}-{run[-1]}")
        else:
            parts.extend(run)
        run.clear()

    for r in ranks:
        if run and r.isdigit() and run[-1].isdigit() and int(r) == int(run[-1]) + 1:
            run.append(r)
            continue
        flush()
        run.append(r)
    flush()
    return ", ".join(parts)
