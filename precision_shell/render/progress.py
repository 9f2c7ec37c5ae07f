"""A live rich progress bar for long jobs: units (and items) done, MB/s, ETA (at the prompt
only). It reads the neutral `Tick`, so every job gets the same bar."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from precision_shell.progress import ProgressFactory, ProgressLabels, ProgressSink, Tick


def live_progress_factory(console: Console) -> ProgressFactory:
    def make(labels: ProgressLabels) -> ProgressSink:
        counts = (
            f"{labels.units}, {{task.fields[items]}} {labels.items}"
            if labels.items
            else labels.units
        )
        progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(counts),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        )
        state = {"bytes": 0, "items": 0}
        task_ids = []

        def start(total_units: int, total_bytes: int) -> None:
            progress.start()
            task_ids.append(progress.add_task(labels.title, total=total_units, rate="", items=0))

        def advance(tick: Tick) -> None:
            if not task_ids:
                return
            state["bytes"] += tick.bytes
            state["items"] += tick.items
            elapsed = progress.tasks[0].elapsed or 0.0
            rate = (
                f"{state['bytes'] / 1e6 / elapsed:7.1f} MB/s"
                if elapsed > 0 and state["bytes"]
                else ""
            )
            progress.update(task_ids[0], advance=tick.units, rate=rate, items=state["items"])

        return ProgressSink(start=start, advance=advance, stop=progress.stop)

    return make
