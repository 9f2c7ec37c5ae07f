"""`vc --across ranks`: every rank of a run against its lowest rank, at one step.

In data-parallel training the weights, the gradients after all-reduce and often the
activations agree across cards; a rank whose dump leaves the others points at a broken
collective or a card-specific fault. This module plans the rank-pair compares (device vs
device, ops matched by name) and finds, per rank that differs, the first output in execution
order that fails the threshold rule. `compare.runner` executes the plans.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precision_shell.compare.metrics.cells import COSINE, MAX_ABS
from precision_shell.compare.pipeline.execute import CompareRun
from precision_shell.compare.pipeline.plan import ComparePlan, device_plan
from precision_shell.compare.pipeline.worker import SAME_BYTES
from precision_shell.compare.results.summary import RunSummary, SummaryBacked
from precision_shell.errors import PrecisionError
from precision_shell.workspace.graph_index import GraphIndex
from precision_shell.workspace.workspace import RunIndex

ACROSS_CHOICES = ("ranks",)


@dataclass(frozen=True)
class RankPair:
    """One rank's dump against the reference rank's, at the same step."""

    rank: str
    against: str
    step: str
    plan: ComparePlan


@dataclass(frozen=True)
class RankDivergence:
    """Where one rank leaves the reference rank: its first failing output."""

    rank: str
    step: str
    against: str
    first_op: str
    index: int | None
    cosine: float | None
    max_abs_error: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "step": self.step,
            "first_op": self.first_op,
            "index": self.index,
            "cosine": self.cosine,
            "max_abs_error": self.max_abs_error,
        }


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
        plan = device_plan(
            slice_.dumps,
            base.dumps,
            f"{run.name} rank {r} step {base.step}",
            f"{run.name} rank {base.rank} step {base.step}",
            graph,
        )
        pairs.append(RankPair(r, base.rank, base.step, plan))
    if not pairs:
        raise PrecisionError(
            f"{run.name}: no rank other than {base.rank} has step {base.step}; nothing to compare"
        )
    return pairs


def divergence_of(pair: RankPair, compare: CompareRun) -> RankDivergence | None:
    """The first output (in execution order) of this rank that fails the rule, or None.

    An output that holds the same bytes on both ranks does not leave the reference even when
    the rule fails it: the same inf from an fp16 overflow on every card gives a NaN cosine."""
    row = next((r for r in compare.tally.failing if not r.extras.get(SAME_BYTES)), None)
    if row is None:
        return None
    return RankDivergence(
        pair.rank,
        pair.step,
        pair.against,
        row.op_name,
        row.index,
        row.value(COSINE),
        row.value(MAX_ABS),
    )


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
        """The compared ranks no output of which fails the rule."""
        differing = {d.rank for d in self.divergence}
        return [pair.rank for pair, _ in self.compares if pair.rank not in differing]

    @property
    def error_message(self) -> str | None:
        stopped = [pair.rank for pair, run in self.compares if run.interrupted]
        if not stopped:
            return None
        return (
            f"vc: interrupted (rank {', '.join(stopped)} partial); the rows written so far are kept"
        )


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
