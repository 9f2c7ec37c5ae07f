"""The (rank, step) compares of one `vc` run, as its summary's `results` lists them: the
rank x step table `vcs`, `report` and `ac` show, and which entry's CSV `--rank/--step` picks."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precision_shell.compare.results.summary import RunSummary
from precision_shell.errors import PrecisionError
from precision_shell.workspace.workspace import number_order


@dataclass(frozen=True)
class SliceResult:
    """One entry of `results`: the compare of one (rank, step) dump dir."""

    rank: str
    step: str
    csv: str
    graph: str
    rows: int
    failed: int  # failing outputs
    first_failed_op: str | None
    partial: bool = False
    against: str | None = None  # `vc --across ranks`: the reference rank, not the benchmark

    @classmethod
    def from_json(cls, entry: dict[str, Any]) -> SliceResult:
        first = entry.get("first_failed_op")
        failed = entry.get("failed")
        rows = entry.get("rows")
        return cls(
            rank=str(entry.get("rank")),
            step=str(entry.get("step")),
            csv=str(entry.get("csv") or ""),
            graph=str(entry.get("graph") or ""),
            rows=rows if isinstance(rows, int) else 0,
            failed=failed if isinstance(failed, int) else 0,
            first_failed_op=first if isinstance(first, str) else None,
            partial=bool(entry.get("partial", False)),
            against=str(entry["against"]) if entry.get("against") is not None else None,
        )

    @property
    def label(self) -> str:
        versus = f" vs rank {self.against}" if self.against is not None else ""
        return f"rank {self.rank}{versus} step {self.step}"


@dataclass
class RankStepTable:
    """Failing outputs and the first failing op of every (rank, step) compared."""

    results: list[SliceResult]
    shown: tuple[str, str] | None = None  # the (rank, step) whose op table is shown

    @property
    def ranks(self) -> list[str]:
        return sorted({r.rank for r in self.results}, key=number_order)

    @property
    def steps(self) -> list[str]:
        return sorted({r.step for r in self.results}, key=number_order)

    @property
    def against(self) -> str | None:
        """The reference rank of a `vc --across ranks` result (None: against the benchmark)."""
        return next((r.against for r in self.results if r.against is not None), None)

    def cell(self, rank: str, step: str) -> SliceResult | None:
        return next((r for r in self.results if r.rank == rank and r.step == step), None)


def slice_results(summary: RunSummary | None) -> list[SliceResult]:
    """The (rank, step) entries with a rank (a compare of two dirs has none)."""
    if summary is None:
        return []
    entries = [SliceResult.from_json(e) for e in summary.results if e.get("rank") is not None]
    return sorted(entries, key=lambda r: (number_order(r.step), number_order(r.rank)))


def rank_step_table(summary: RunSummary | None, csv_path: Path) -> RankStepTable | None:
    """The table when the run compared more than one (rank, step); else None."""
    results = slice_results(summary)
    if len(results) <= 1:
        return None
    shown = entry_for_csv(results, csv_path)
    return RankStepTable(results, (shown.rank, shown.step) if shown else None)


def entry_for_csv(results: list[SliceResult], csv_path: Path) -> SliceResult | None:
    """The entry a result CSV belongs to (by file name: a moved result dir still matches)."""
    return next((r for r in results if Path(r.csv).name == csv_path.name), None)


def slice_csv(
    summary: RunSummary | None,
    csv_path: Path,
    rank: str | None,
    step: str | None,
    command: str,
) -> Path:
    """The CSV of the (rank, step) asked for; `csv_path` (the primary) when neither is given.

    Only a rank: its first step compared; only a step: the lowest rank compared at it."""
    if rank is None and step is None:
        return csv_path
    results = slice_results(summary)
    if not results:
        raise PrecisionError(
            f"{command}: {csv_path.parent}: this compare has no rank/step results "
            "(one dump dir, or an msaccucmp CSV); drop --rank/--step"
        )
    found = [
        r
        for r in results
        if (rank is None or r.rank == str(rank)) and (step is None or r.step == str(step))
    ]
    if not found:
        wanted = " ".join(
            p for p in (f"rank {rank}" if rank else "", f"step {step}" if step else "") if p
        )
        there = ", ".join(r.label for r in results)
        raise PrecisionError(f"{command}: {wanted} was not compared in this result; it has {there}")
    chosen = min(found, key=lambda r: (number_order(r.step), number_order(r.rank)))
    path = Path(chosen.csv)
    if not path.is_file():  # the result dir moved: the CSV sits beside the one given
        path = csv_path.parent / path.name
    if not path.is_file():
        raise PrecisionError(f"{command}: {path}: the CSV of {chosen.label} is missing")
    return path


def diagnosed_slice(cause: dict[str, Any] | None) -> tuple[str, str] | None:
    """The (rank, step) a recorded root cause was found in (`ac -c` over several ranks)."""
    if not cause or cause.get("rank") is None or cause.get("step") is None:
        return None
    return str(cause["rank"]), str(cause["step"])
