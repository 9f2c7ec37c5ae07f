"""The report page: one HTML file with everything inline (style, script, SVGs).

Sections follow MindStudio's accuracy analyzer: the facts of the compare, the accuracy plot,
the root cause with its subgraph, the advisor's findings and the full results table. The
root-cause and advisor sections are written by `cause_section`.

A MegEngine or SigmaStar compare (`ReportData.foreign`) is shown judged by its recorded rule,
its plot's second panel is that rule's error metric, its root cause panel shows what the
foreign diagnosis measured (crossed limits, the inputs' verdicts), and it has no subgraph.
"""

from __future__ import annotations

import math
from html import escape

from precision_shell.compare.results.schema import HIGHER_IS_BETTER, ResultRow
from precision_shell.compare.results.slice_results import NOT_COMPARED, NOT_COMPARED_MEANS
from precision_shell.compare.results.thresholds import NOT_JUDGED
from precision_shell.report.assets import SCRIPT, STYLE
from precision_shell.report.big_plot import big_plot
from precision_shell.report.cause_section import (
    SubgraphPicture,
    advisor_section,
    root_cause_section,
    undiagnosed_text,
)
from precision_shell.report.data import ReportData
from precision_shell.report.html_parts import esc, facts_html
from precision_shell.report.plot_svg import FAIL_COLOR, accuracy_plot_svg
from precision_shell.report.points import COSINE, cosine_of

_MAX_WARNINGS = 1_000


_TEXT_METRICS = frozenset({"StandardDeviation"})


_NAME_COLUMNS = frozenset({"NPUDump", "GroundTruth", "TensorIndex", "CompareFailReason", "LeftOp"})


_MISSING_NOTE = f" {NOT_COMPARED.capitalize()}: {NOT_COMPARED_MEANS}."


def _header(data: ReportData, generated: str) -> str:
    failing = data.failing_points
    why = ", ".join(f"{n} x {r}" for r, n in data.failed_by_reason.items())
    pairs = [
        ("Workspace", esc(data.workspace or "(not recorded: no summary.json)")),
        ("Compared at", esc(data.created)),
        ("Result CSV", esc(data.csv_path)),
        ("Tensors compared", esc(f"{data.compared} of {data.total_rows} rows")),
        ("Not compared", esc(f"{data.constant_inputs} constant inputs (no benchmark by design)")),
        ("Could not be compared", esc(f"{data.failed}" + (f" ({why})" if why else ""))),
        (
            "Thresholds",
            esc((data.rule.describe() if data.judged else NOT_JUDGED) + _rule_origin(data)),
        ),
    ]
    if data.foreign and data.summary is not None:
        left, right = data.summary.primary.left, data.summary.primary.right
        pairs.append((f"{data.foreign} dumps", esc(f"{left} (left) vs {right} (right)")))
    elif data.benchmark:
        pairs.append(("Benchmark", esc(data.benchmark)))
    if data.unmatched:
        pairs.append(("Not in the graph", f'<span class="bad">{esc(data.unmatched)}</span>'))
    if data.slice_label:
        pairs.append(("Rank and step", esc(data.slice_label)))
    if data.untabled_lines:
        pairs.append(("Selected, not compared", esc("; ".join(data.untabled_lines))))
    if data.stale:
        pairs.append(("Stale", f'<span class="bad">{esc(data.stale)}</span>'))
    if data.partial:
        pairs.append(
            ("Partial", f'<span class="bad">{esc(data.partial)}: {esc(data.partial_cause)}</span>')
        )
    pairs.append(
        (
            "Outputs failing the thresholds",
            f'<span class="{"bad" if failing else "good"}">{failing}</span>'
            f" of {data.point_count} plotted",
        )
    )
    if data.first_failing_op:
        pairs.append(("First failing op", esc(data.first_failing_op)))
    root = data.root_cause
    pairs.append(
        (
            "Root cause",
            f'<a href="#root-cause">{esc(root)}</a>' if root else esc(undiagnosed_text(data)),
        )
    )
    if data.baseline_first_below:
        pairs.append(("First op below threshold", esc(data.baseline_first_below)))
    return (
        f"<header><h1>{esc(_title(data))}</h1>"
        f'<p class="muted">precision_shell · generated {esc(generated)}</p>'
        f"{facts_html(pairs)}</header>"
    )


def _title(data: ReportData) -> str:
    """ "Accuracy report: rank 3 step 10" when the run compared several (rank, step)s."""
    return f"Accuracy report: {data.slice_label}" if data.slice_label else "Accuracy report"


def _rule_origin(data: ReportData) -> str:
    if not data.foreign:
        return ""
    return f" ({data.foreign}'s own rule, recorded in summary.json)"


def _plot(data: ReportData) -> str:
    """The plot section: the note on what a foreign compare's plot shows, then the SVG (the
    page's script draws a big result's points: big_plot)."""
    panel = data.error_panel
    second = panel.column if panel is not None else "relative Euclidean distance"
    if data.point_count == 0:
        body = f'<p class="note">No output has a cosine similarity or a {esc(second)} to plot.</p>'
    elif data.big is not None:
        body = big_plot(data)
    else:
        cause = data.marked_cause
        label = f"root cause: {cause['op']} [{cause.get('index')}]" if cause else None
        index = cause.get("index") if isinstance(cause.get("index"), int) else None
        svg = accuracy_plot_svg(
            data.points,
            data.cosine_threshold,
            label,
            index,
            error_panel=panel,
            cosine_line=data.cosine_line,
        )
        body = (
            f'<div class="figure plot">{svg}</div><p class="muted">Hover a point for its op and'
            " values; click it to find its row in the table.</p>"
        )
    return f'<section id="plot"><h2>Accuracy plot</h2>{_plot_note(data)}{body}</section>'


def _plot_note(data: ReportData) -> str:
    """What a foreign compare's plot shows instead of cosine + SQNR, and why."""
    if not data.foreign:
        return ""
    panel = data.error_panel
    if panel is None:
        second = "its CSV has no relative Euclidean distance, so there is no SQNR panel"
    else:
        scale = " on a log10 scale" if panel.log else ""
        second = (
            f"the second panel is {panel.column}{scale}, the error the rule limits (the CSV"
            " has no relative Euclidean distance for an SQNR panel)"
        )
    cosine = (
        "the cosine threshold line is the rule's"
        if data.rule.cosine is not None
        else "the rule does not limit the cosine: no threshold line in the cosine panel"
    )
    return (
        f'<p class="note" id="plot-metrics">A {esc(data.foreign)} compare, judged by'
        f" {esc(data.foreign)}'s own rule as recorded in summary.json"
        f" ({esc(data.rule.describe())}): red points fail that rule; {esc(cosine)}; {esc(second)}."
        "</p>"
    )


def _column_heads(data: ReportData) -> str:
    seen: dict[str, int] = {}
    heads = []
    for name in data.header:
        seen[name] = seen.get(name, 0) + 1
        key = name if seen[name] == 1 else f"{name}.{seen[name]}"
        numeric = name == "Index" or (name in data.metric_columns and name not in _TEXT_METRICS)
        attrs = f' data-col="{esc(key)}" data-type="{"num" if numeric else "text"}"'
        if name in HIGHER_IS_BETTER:
            attrs += ' data-better="high"'
        heads.append(f"<th{attrs}>{esc(name)}</th>")
    return "".join(heads)


def _cell_class(name: str, data: ReportData) -> str:
    if name == "Index" or (name in data.metric_columns and name not in _TEXT_METRICS):
        return "num"
    return "name" if name in _NAME_COLUMNS else ""


def _cosine_class(row: ResultRow, threshold: float | None) -> str:
    cos = cosine_of(row)
    if cos is None or threshold is None:
        return ""
    return "bad" if math.isnan(cos) or cos < threshold else "good"


def _results(data: ReportData) -> str:
    width = len(data.header)
    opening = [
        f'<td class="{c}">' if c else "<td>" for c in (_cell_class(n, data) for n in data.header)
    ]
    cos_col = data.header.index(COSINE) if COSINE in data.header else -1
    body = []
    for row in data.rows:
        cells = data.cells.get(row.line, [])[:width]
        cells += [""] * (width - len(cells))
        tr_class = " ".join(
            c for c, on in (("fail", data.fails(row)), ("rc", row.op_name == data.root_cause)) if on
        )
        # text nodes need only &, < and > escaped; this loop runs once per cell of big tables
        tds = [
            f"{opening[k]}{escape(text.strip(), quote=False)}</td>" for k, text in enumerate(cells)
        ]
        if cos_col >= 0:
            cosine_class = f"num {_cosine_class(row, data.rule.cosine)}".strip()
            tds[cos_col] = (
                f'<td class="{cosine_class}">{escape(cells[cos_col].strip(), quote=False)}</td>'
            )
        cls_attr = f' class="{tr_class}"' if tr_class else ""
        body.append(f'<tr data-line="{row.line}"{cls_attr}>{"".join(tds)}</tr>')
    controls = (
        '<div class="controls"><input type="search" id="filter" placeholder="filter rows: op,'
        ' type, tensor, reason..." aria-label="filter rows">'
        '<label><input type="checkbox" id="failing-only"> failing outputs only</label>'
        f'<span><span id="shown">{len(data.rows)}</span> of {len(data.rows)} rows shown'
        " · click a column header to sort</span></div>"
    )
    title = f"Results ({len(data.rows)} rows)"
    if data.big is not None:
        title = f"Results ({len(data.rows)} of {data.big.total_rows} rows)"
        controls = _big_table_note(data) + controls
    return (
        f'<section id="results-section"><h2>{esc(title)}</h2>{controls}'
        f'<table id="results"><thead><tr>{_column_heads(data)}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></section>"
    )


def _big_table_note(data: ReportData) -> str:
    big = data.big
    assert big is not None
    dropped = (
        f" {big.dropped_ops} more ops did not fit in {len(data.rows)} rows and are left out."
        if big.dropped_ops
        else ""
    )
    return (
        f'<p class="note" id="full-table">This result has {big.total_rows} rows: the page'
        f" carries the rows of the {big.failing_ops} ops with a failing output, of the root"
        f" cause, and of their neighbours ({esc(big.neighbours)}): {big.carried_ops} ops."
        f"{dropped} The full table is the CSV <code>{esc(data.csv_path)}</code>"
        " (vcs -l 0 lists every failing op; the plot above shows every output).</p>"
    )


def _warnings(data: ReportData) -> str:
    if not data.warnings:
        return ""
    shown = data.warnings[:_MAX_WARNINGS]
    more = len(data.warnings) - len(shown)
    items = "".join(f"<li>{esc(w)}</li>" for w in shown)
    if more:
        items += f"<li>... {more} more</li>"
    return f'<section id="warnings"><h2 style="color:{FAIL_COLOR}">CSV warnings</h2><ul>{items}</ul></section>'


def _ranks(data: ReportData) -> str:
    """Rank per row, step per column: failing outputs and the first failing op."""
    ranks = data.ranks
    if ranks is None:
        return ""
    head = "".join(f"<th>step {esc(s)}</th>" for s in ranks.steps)
    rows = []
    for rank in ranks.ranks:
        cells = []
        for step in ranks.steps:
            entry = ranks.cell(rank, step)
            if entry is None:
                cells.append(f'<td class="muted">{esc(ranks.missing(rank, step) or "-")}</td>')
                continue
            shown = " (this page)" if ranks.shown == (rank, step) else ""
            partial = f"; {entry.not_compared} not compared" if entry.not_compared else ""
            partial += " partial" if entry.partial else ""
            if entry.failed:
                outputs = "output" if entry.failed == 1 else "outputs"
                text = (
                    f"{entry.failed} failing {outputs}; first failing op "
                    f"{entry.first_failed_op}{partial}{shown}"
                )
                cells.append(f'<td class="bad">{esc(text)}</td>')
            else:
                good = "muted" if entry.not_compared else "good"  # not all of it was seen
                cells.append(f'<td class="{good}">{esc(f"0 failing outputs{partial}{shown}")}</td>')
        rows.append(f"<tr><td>rank {esc(rank)}</td>{''.join(cells)}</tr>")
    lines = ranks.omitted_lines() + ranks.benchmark_dir_lines()
    omitted = "".join(f" {esc(line[:1].upper() + line[1:])}." for line in lines)
    return (
        '<section id="ranks"><h2>Ranks and steps</h2><p class="muted">Failing outputs and the'
        " first failing op of each (rank, step) compared; report --rank R --step S shows"
        f" another.{esc(_MISSING_NOTE) if ranks.dumped_not_compared else ''}{omitted}</p>"
        f"<table><thead><tr><th>rank</th>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
        + (f'<p class="note bad">{esc(data.stale_others)}</p>' if data.stale_others else "")
        + "</section>"
    )


def report_html(data: ReportData, picture: SubgraphPicture | None, generated: str) -> str:
    """The whole page; `generated` is the time shown as when the report was written."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(_title(data))}: {esc(data.csv_path.name)}</title><style>{STYLE}</style>"
        "</head>"
        f"<body>{_header(data, generated)}{_ranks(data)}{_plot(data)}{root_cause_section(data, picture)}"
        f"{advisor_section(data)}{_results(data)}{_warnings(data)}"
        f"<script>{SCRIPT}</script></body></html>\n"
    )
