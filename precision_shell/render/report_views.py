"""Rendering of `report`: where the page went and what it holds."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from precision_shell.compare.results.thresholds import NOT_JUDGED
from precision_shell.render.output import renders
from precision_shell.report.writer import ReportWritten

_EMBEDDED = {
    "svg": "its subgraph inlined as SVG",
    "gv": "its subgraph as graphviz text (no dot)",
    None: "no subgraph",
}


def report_line(report: ReportWritten) -> Text:
    return Text.assemble(("report: ", "bold"), str(report.path))


@renders(ReportWritten)
def render_report(console: Console, report: ReportWritten) -> None:
    console.print(report_line(report), soft_wrap=True)
    verdict = f"{report.failing_outputs} failing the thresholds" if report.judged else NOT_JUDGED
    facts = f"{report.rows} table rows, {report.points} outputs plotted, {verdict}; "
    if report.root_cause:
        facts += f"root cause {report.root_cause}, {_EMBEDDED[report.subgraph]}"
    elif report.elsewhere:
        facts += f"root cause: {report.elsewhere}"
    elif report.diagnosed:
        facts += "no root cause found"
    elif report.partial:
        facts += f"not diagnosed: the compare is {report.partial}"
    else:
        facts += "diagnosis did not run (ac -c --report adds the root cause and the advisor)"
    console.print(Text(facts), style="dim")
    if report.slice_label:
        console.print(Text(_table_line(report)), style="dim")
    if report.partial:
        console.print(Text(f"{report.partial}: {report.partial_cause}"), style="yellow")
    for note in report.notes:
        console.print(Text(note), style="yellow")


def _table_line(report: ReportWritten) -> str:
    """Whose compare the page is, and what its rank x step table holds: the ranks and steps
    a run cut short never began are counted apart from the compares."""
    compared, never = report.ranks_compared, report.ranks_not_begun
    if not compared and not never:  # one (rank, step) compared, the run's others left out
        return f"the compare of {report.slice_label} only (vc --rank all --step all compares every one)"
    held = f"all {compared} rank/step compares"
    if never:
        held = (
            f"all {compared + never} selected ranks and steps ({compared} compared, "
            f"{never} not begun)"
        )
    return f"{report.slice_label}; the page's table has {held} (report --rank R --step S reports another)"
