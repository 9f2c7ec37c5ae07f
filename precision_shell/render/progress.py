"""A live rich progress bar for long commands: files and tensors done, MB/s, ETA (interactive
mode only)."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from precision_shell.compare.run import ProgressSink
from precision_shell.compare.worker import FileResult


def live_progress_factory(console: Console) -> Callable[[str], ProgressSink]:
    def make(title: str) -> ProgressSink:
        progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("files, {task.fields[tensors]} tensors"),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        )
        state = {"task": None, "bytes": 0, "tensors": 0}

        def start(total_files: int, total_bytes: int) -> None:
            progress.start()
            state["task"] = progress.add_task(title, total=total_files, rate="", tensors=0)

        def advance(result: FileResult) -> None:
            state["bytes"] += result.bytes_read
            state["tensors"] += len(result.rows)
            task = state["task"]
            elapsed = (progress.tasks[0].elapsed or 0.0) if progress.tasks else 0.0
            rate = f"{state['bytes'] / 1e6 / elapsed:7.1f} MB/s" if elapsed > 0 else ""
            progress.update(task, advance=1, rate=rate, tensors=state["tensors"])

        return ProgressSink(start=start, advance=advance, stop=progress.stop)

    return make
