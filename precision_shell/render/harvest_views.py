"""Rendering of `tf_run` and `tf_dump` results: counts, where files went, what was missed."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from precision_shell.harvest.outcome import HarvestBatch, HarvestOutcome
from precision_shell.render.output import renders

_MODE_TITLES = {
    "live": "tf_run: live tfdbg session",
    "offline": "tf_dump: read directly (DebugDumpDir)",
    "offline-pexpect": "tf_dump: tfdbg offline analyzer",
}
_MAX_LISTED = 20


def _facts(report: HarvestOutcome) -> Table:
    table = Table(show_header=False, show_edge=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")  # paths whole, to copy (QA: a transcript cut with "…")
    table.add_row("source", Text(report.source))
    saved_style = "green" if len(report.saved) == report.with_values else "yellow"
    table.add_row(
        "saved", Text(f"{len(report.saved)} of {report.with_values} tensors", style=saved_style)
    )
    if report.no_values:
        names = ", ".join(m.tensor_name for m in report.no_values[:_MAX_LISTED])
        more = len(report.no_values) - _MAX_LISTED
        table.add_row(
            "no values",
            Text(
                f"{len(report.no_values)} dumps hold no numbers to compare (resource handles, "
                f"variants, strings), not written: {names}"
                + (f" and {more} more" if more > 0 else "")
                + "; a variable's values are its ReadVariableOp's output",
                style="dim",
            ),
        )
    table.add_row("into", Text(report.out_dir))
    per_tensor = report.elapsed / report.total * 1000 if report.total else 0.0
    table.add_row("time", f"{report.elapsed:.2f} s ({per_tensor:.1f} ms per tensor)")
    if report.fresh_names:
        table.add_row(
            "fresh names",
            Text(
                f"{len(report.fresh_names)} taken (by an earlier harvest or a "
                "colliding name): written under a later timestamp",
                style="yellow",
            ),
        )
    replaced = sum(1 for s in report.saved if s.replaced)
    if replaced:
        table.add_row("replaced", Text(f"{replaced} files (--overwrite)", style="yellow"))
    if report.mapping_csv:
        table.add_row("mapping", Text(report.mapping_csv))
    if report.run_error:
        table.add_row("run failed", Text(report.run_error, style="red"))
    if report.aborted:
        table.add_row("stopped", Text(report.aborted, style="red"))
    if report.child_status:
        table.add_row("tfdbg", report.child_status)
    if report.transcript:
        table.add_row("transcript", Text(report.transcript, style="dim"))
    return table


@renders(HarvestOutcome)
def render_harvest_report(console: Console, report: HarvestOutcome) -> None:
    console.print(Text(_MODE_TITLES.get(report.mode, report.mode), style="bold"))
    console.print(_facts(report))
    for group in report.collisions:
        console.print(
            Text(
                f"  names that meet in one lookup key, all kept (see mapping.csv): {', '.join(group)}"
            ),
            soft_wrap=True,
        )
    if report.missed:
        console.print(Text(f"not saved ({len(report.missed)}):", style="bold red"))
        for missed in report.missed[:_MAX_LISTED]:
            console.print(
                Text(f"  {missed.tensor_name} (dump {missed.dump_index}): {missed.reason}"),
                soft_wrap=True,
            )
        if len(report.missed) > _MAX_LISTED:
            console.print(f"  ... {len(report.missed) - _MAX_LISTED} more")
    for note in report.notes:
        console.print(Text(f"note: {note}", style="dim"), soft_wrap=True)


@renders(HarvestBatch)
def render_harvest_batch(console: Console, batch: HarvestBatch) -> None:
    for note in batch.notes:
        console.print(Text(f"note: {note}", style="dim"), soft_wrap=True)
    for report in batch.reports:
        render_harvest_report(console, report)
