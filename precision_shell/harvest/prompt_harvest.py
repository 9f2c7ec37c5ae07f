"""Harvesting at an open `tfdbg> ` prompt: list the dumps, `pt -w` each one, publish the files.

Shared by the live session (`tf_run`) and the offline analyzer (`tf_dump` without
TensorFlow in our process). The listing goes through `lt > FILE` so a long list is read
from a file, not scraped from the terminal. Each `pt NAME -n K -w STAGED` writes into the
writer's staging dir; the file is checked and published under its benchmark name with the
real dump timestamp: tfdbg's `t0` (from the dump files' names) plus the `lt` time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from precision_shell.harvest.benchmark_writer import BenchmarkDirWriter, NoValues, TensorNotSaved
from precision_shell.harvest.outcome import HarvestOutcome, MissedTensor
from precision_shell.harvest.shadowed import shadowed_tensors
from precision_shell.harvest.tfdbg_session import (
    TfdbgAborted,
    TfdbgSession,
    Timeouts,
    tfdbg_quoted,
)
from precision_shell.harvest.tfdbg_text import (
    ListedDump,
    ListingError,
    error_lines,
    parse_tensor_list,
)
from precision_shell.progress import ProgressSink, Tick


def _list_dumps(session: TfdbgSession, listing_file: Path, timeouts: Timeouts) -> list[ListedDump]:
    screen = session.command(
        f"lt > {tfdbg_quoted(listing_file)}", timeouts.command, "listing the dumped tensors"
    )
    try:
        text = listing_file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = screen  # tfdbg said "Failed to write output to ..."; the screen has the same rows
    try:
        return parse_tensor_list(text)
    except ListingError as error:
        raise TfdbgAborted(f"cannot read tfdbg's tensor list: {error}", session.tail()) from None


def _passable(tensor_name: str) -> bool:
    # tfdbg splits a command on blanks and strips quotes; TF names never hold either.
    return not any(c.isspace() or c in "\"'" for c in tensor_name)


def harvest_at_prompt(
    session: TfdbgSession,
    report: HarvestOutcome,
    timeouts: Timeouts,
    progress: ProgressSink,
    scratch_dir: Path,
    first_timestamp: Callable[[], int | None],
    overwrite: bool = False,
) -> None:
    """Write every listed dump into `report.out_dir`, recording saved and missed tensors.

    `first_timestamp` gives tfdbg's `t0`; when it cannot (the dump root is not visible), the
    timestamps are estimated from the clock and the report says so. A timeout, crash or
    Ctrl-C stops the loop: what was written stays, the rest is listed as missed.
    """
    rows = _list_dumps(session, scratch_dir / "tensor_list.txt", timeouts)
    report.total = len(rows)
    t0 = first_timestamp()
    if t0 is None:
        # The run ended moments ago; its last dump is about now.
        t0 = time.time_ns() // 1000 - max((row.rel_us for row in rows), default=0)
        report.timestamps_estimated = True
    writer = BenchmarkDirWriter(Path(report.out_dir), [row.tensor_name for row in rows], overwrite)
    report.collisions = writer.collisions
    progress.start(len(rows), 0)
    done = 0
    try:
        for row in rows:
            written = _harvest_one(session, writer, report, row, t0 + row.rel_us, timeouts)
            done += 1
            progress.advance(Tick(bytes=written))
    except (TfdbgAborted, KeyboardInterrupt) as stop:
        report.aborted = stop.reason if isinstance(stop, TfdbgAborted) else "interrupted"
        if isinstance(stop, TfdbgAborted) and stop.tail:
            report.notes.append(f"last output: {stop.tail}")
        report.missed.extend(
            MissedTensor(row.tensor_name, row.dump_index, f"not harvested: {report.aborted}")
            for row in rows[done:]
        )
    finally:
        progress.stop()
        mapping = writer.close(finished=report.aborted is None)
        report.mapping_csv = str(mapping) if mapping else None
        report.shadowed = shadowed_tensors(writer.out_dir, report.saved)


def _harvest_one(
    session: TfdbgSession,
    writer: BenchmarkDirWriter,
    report: HarvestOutcome,
    row: ListedDump,
    timestamp: int,
    timeouts: Timeouts,
) -> int:
    """Write one dump; the bytes written (0 when it was missed)."""
    if not _passable(row.tensor_name):
        reason = "the name cannot be passed to tfdbg's command line"
        report.missed.append(MissedTensor(row.tensor_name, row.dump_index, reason))
        return 0
    staged = writer.staging_path()
    output = session.command(
        f"pt {row.tensor_name} -n {row.dump_index} -w {tfdbg_quoted(staged)}",
        timeouts.command,
        f"writing {row.tensor_name} (dump {row.dump_index})",
    )
    if not staged.exists():
        errors = error_lines(output)
        reason = f"tfdbg: {errors[0]}" if errors else "tfdbg wrote no file"
        report.missed.append(MissedTensor(row.tensor_name, row.dump_index, reason))
        return 0
    size = staged.stat().st_size
    try:
        saved = writer.publish_file(row.tensor_name, row.dump_index, timestamp, staged)
    except NoValues as error:
        report.no_values.append(MissedTensor(row.tensor_name, row.dump_index, str(error)))
        return 0
    except TensorNotSaved as error:
        report.missed.append(MissedTensor(row.tensor_name, row.dump_index, str(error)))
        return 0
    report.saved.append(saved)
    return size
