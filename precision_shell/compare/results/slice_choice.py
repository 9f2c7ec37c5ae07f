"""Which (rank, step) compare's CSV a command reads: the one `--rank/--step` pick, or the one
shown when neither is given."""

from __future__ import annotations

from pathlib import Path

from precision_shell.compare.results.slice_results import RunSlices, entry_csv
from precision_shell.errors import PrecisionError
from precision_shell.workspace.workspace import number_order


def default_csv(slices: RunSlices, csv_path: Path) -> Path:
    """The CSV shown when no --rank/--step picks one: `csv_path` (the primary: the lowest
    rank's first step), but for `vc --across ranks`, whose pairs have no primary, the first
    pair with a failing output (the `first:` of the verdict line), else the first pair."""
    pairs = [r for r in slices.results if r.against is not None]
    if not pairs:
        return csv_path
    chosen = next((r for r in pairs if r.failed), pairs[0])
    path = entry_csv(chosen, csv_path)
    return path if path.is_file() else csv_path


def slice_csv(
    slices: RunSlices,
    csv_path: Path,
    rank: str | None,
    step: str | None,
    command: str,
) -> Path:
    """The CSV of the (rank, step) asked for; `csv_path` (the primary) when neither is given.

    Only a rank: its first step compared; only a step: the lowest rank compared at it.
    Neither: `default_csv`."""
    if rank is None and step is None:
        return default_csv(slices, csv_path)
    results = slices.results
    begun_not = [
        w
        for w in slices.not_begun
        if (rank is None or w[0] == str(rank)) and (step is None or w[1] == str(step))
    ]
    if begun_not and not any(
        (rank is None or r.rank == str(rank)) and (step is None or r.step == str(step))
        for r in results
    ):
        r, s = min(begun_not, key=lambda w: (number_order(w[1]), number_order(w[0])))
        raise PrecisionError(
            f"{command}: rank {r} step {s} was not begun: the compare was cut short before it; "
            f"vc --resume -o {csv_path.parent} compares it"
        )
    if not results:
        per_slice = sorted(csv_path.parent.glob(f"{csv_path.stem}_rank*_step*.csv"))
        if per_slice:  # the CSVs of several (rank, step)s, without the summary naming them
            raise PrecisionError(
                f"{command}: {csv_path.parent}: its summary.json is missing or unreadable, so "
                f"which CSV is which (rank, step) is not known; -f {per_slice[0]} reads one "
                "by its path"
            )
        raise PrecisionError(
            f"{command}: {csv_path}: this compare has no rank/step results "
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
    path = entry_csv(chosen, csv_path)
    if not path.is_file():
        raise PrecisionError(f"{command}: {path}: the CSV of {chosen.label} is missing")
    return path
