"""The report page: one HTML file with everything inline (style, script, SVGs).

Sections follow MindStudio's accuracy analyzer: the facts of the compare, the accuracy plot,
the root cause with its subgraph, the advisor's findings and the full results table.

A MegEngine or SigmaStar compare (`ReportData.foreign`) is shown judged by its recorded rule,
its plot's second panel is that rule's error metric, its root cause panel shows what the
foreign diagnosis measured (crossed limits, the inputs' verdicts), and it has no subgraph.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Any

from precision_shell.compare.results.schema import HIGHER_IS_BETTER, ResultRow
from precision_shell.compare.results.slice_results import NOT_COMPARED, NOT_COMPARED_MEANS
from precision_shell.report.assets import SCRIPT, STYLE
from precision_shell.report.big_plot import big_plot
from precision_shell.report.data import ReportData
from precision_shell.report.plot_svg import FAIL_COLOR, accuracy_plot_svg
from precision_shell.report.points import COSINE, RED, cosine_of

_MAX_WARNINGS = 1_000
_TEXT_METRICS = frozenset({"StandardDeviation"})
_NAME_COLUMNS = frozenset({"NPUDump", "GroundTruth", "TensorIndex", "CompareFailReason", "LeftOp"})
_MISSING_NOTE = f" {NOT_COMPARED.capitalize()}: {NOT_COMPARED_MEANS}."
_NODE_COLORS = (  # as `ni -s` colors nodes (commands/latest_compare.py)
    ("#c8e6c9", "cosine at or above threshold + 0.01"),
    ("#fff59d", "within 0.01 above the threshold"),
    ("#ef9a9a", "below the threshold or NaN/inf"),
    ("#eeeeee", "not compared"),
)


@dataclass(frozen=True)
class SubgraphPicture:
    """The root cause's neighbourhood: dot's SVG when `dot` ran, else the .gv text."""

    op: str
    depth: int
    svg: str | None
    gv: str | None
    note: str | None = None  # why there is no SVG (or no subgraph at all)


def inline_svg(text: str) -> str | None:
    """dot's SVG without its XML prolog and DOCTYPE, ready to sit inside HTML."""
    start = text.find("<svg")
    return text[start:].strip() if start >= 0 else None


def _e(value: Any) -> str:
    return escape(str(value))


def _facts(pairs: list[tuple[str, str]]) -> str:
    items = "".join(f"<dt>{_e(k)}</dt><dd>{v}</dd>" for k, v in pairs)
    return f'<dl class="facts">{items}</dl>'


def _header(data: ReportData, generated: str) -> str:
    failing = data.failing_points
    why = ", ".join(f"{n} x {r}" for r, n in data.failed_by_reason.items())
    pairs = [
        ("Workspace", _e(data.workspace or "(not recorded: no summary.json)")),
        ("Compared at", _e(data.created)),
        ("Result CSV", _e(data.csv_path)),
        ("Tensors compared", _e(f"{data.compared} of {data.total_rows} rows")),
        ("Not compared", _e(f"{data.constant_inputs} constant inputs (no benchmark by design)")),
        ("Could not be compared", _e(f"{data.failed}" + (f" ({why})" if why else ""))),
        ("Thresholds", _e(data.rule.describe() + _rule_origin(data))),
    ]
    if data.foreign and data.summary is not None:
        left, right = data.summary.primary.left, data.summary.primary.right
        pairs.append((f"{data.foreign} dumps", _e(f"{left} (left) vs {right} (right)")))
    if data.slice_label:
        pairs.append(("Rank and step", _e(data.slice_label)))
    if data.partial:
        pairs.append(
            ("Partial", f'<span class="bad">{_e(data.partial)}: {_e(data.partial_cause)}</span>')
        )
    pairs.append(
        (
            "Outputs failing the thresholds",
            f'<span class="{"bad" if failing else "good"}">{failing}</span>'
            f" of {data.point_count} plotted",
        )
    )
    if data.first_failing_op:
        pairs.append(("First failing op", _e(data.first_failing_op)))
    root = data.root_cause
    pairs.append(
        (
            "Root cause",
            f'<a href="#root-cause">{_e(root)}</a>' if root else _e(undiagnosed_text(data)),
        )
    )
    if data.baseline_first_below:
        pairs.append(("First op below threshold", _e(data.baseline_first_below)))
    return (
        f"<header><h1>{_e(_title(data))}</h1>"
        f'<p class="muted">precision_shell · generated {_e(generated)}</p>'
        f"{_facts(pairs)}</header>"
    )


def _title(data: ReportData) -> str:
    """ "Accuracy report: rank 3 step 10" when the run compared several (rank, step)s."""
    return f"Accuracy report: {data.slice_label}" if data.slice_label else "Accuracy report"


def _rule_origin(data: ReportData) -> str:
    if not data.foreign:
        return ""
    return f" ({data.foreign}'s own rule, recorded in summary.json)"


def undiagnosed_text(data: ReportData) -> str:
    """Why the page shows no root cause of its own (the page and `report`'s line say it)."""
    other = data.elsewhere
    if other is not None:
        found = f"{other.root_cause} in {other.label}" if other.root_cause else ""
        see = f" (report {other.command} reports that one)" if other.command else ""
        if other.where is None:  # the device compare
            return f"not diagnosed: the diagnosis is of {other.label}"
        own = other.own_cause
        if own is not None:
            return (
                f"this card's own: {own.get('op')} (index {own.get('index')}); the run's root"
                f" cause, the earliest across its cards: {found}{see}"
            )
        if other.diagnosed_here and found:
            return f"none in this compare; the run's root cause: {found}{see}"
        if other.diagnosed_here:
            return "none: no op degrades the signal on its own (ac -c diagnosed every compare)"
        shown = data.ranks.shown if data.ranks is not None else None
        this = f"ac -c --rank {shown[0]} --step {shown[1]}" if shown else "ac -c --rank R --step S"
        return (
            "not recorded: ac -c records the first step with a root cause (its cards) and"
            f" names the earliest: {found}{see}; {this} diagnoses this one"
        )
    if data.diagnosed:
        return "none: no op degrades the signal on its own"
    if data.partial:
        return f"not diagnosed: the compare is {data.partial} ({data.partial_cause})"
    return "diagnosis did not run (ac -c --report compares, diagnoses and writes this report)"


def _plot(data: ReportData) -> str:
    """The plot section: the note on what a foreign compare's plot shows, then the SVG (the
    page's script draws a big result's points: big_plot)."""
    panel = data.error_panel
    second = panel.column if panel is not None else "relative Euclidean distance"
    if data.point_count == 0:
        body = f'<p class="note">No output has a cosine similarity or a {_e(second)} to plot.</p>'
    elif data.big is not None:
        body = big_plot(data)
    else:
        cause = data.root_causes[0] if data.root_causes else {}
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
        f'<p class="note" id="plot-metrics">A {_e(data.foreign)} compare, judged by'
        f" {_e(data.foreign)}'s own rule as recorded in summary.json"
        f" ({_e(data.rule.describe())}): red points fail that rule; {_e(cosine)}; {_e(second)}."
        "</p>"
    )


def _metric_text(row: ResultRow, name: str) -> str:
    return row.texts.get(name, "") or "-"


_ROW_METRICS = ((COSINE, "cosine"), ("MaxAbsoluteError", "max abs error"), (RED, "rel. Euclidean"))


def _row_metrics(data: ReportData) -> list[tuple[str, str]]:
    """The root cause rows' metric columns: cosine, max abs error, relative Euclidean
    distance; a foreign compare's: those it has, and every metric its rule limits."""
    if not data.foreign:
        return list(_ROW_METRICS)
    shown = [(c, label) for c, label in _ROW_METRICS if c in data.metric_columns]
    for column, _ in data.rule.active(data.metric_columns):
        if column not in [c for c, _ in shown]:
            shown.append((column, column))
    return shown


def _rows_table(rows: list[ResultRow], metrics: list[tuple[str, str]]) -> str:
    labels = ("tensor", "ground truth", *(label for _, label in metrics), "reason")
    head = "".join(f"<th>{_e(h)}</th>" for h in labels)
    body = "".join(
        f'<tr><td class="name">{_e(r.tensor_index)}</td><td class="name">{_e(r.ground_truth)}</td>'
        + "".join(f'<td class="num">{_e(_metric_text(r, c))}</td>' for c, _ in metrics)
        + f"<td>{_e(r.reason)}</td></tr>"
        for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _error_text(error: Any) -> str:
    if not isinstance(error, dict):
        return "-"
    names = (
        ("cosine", "cosine"),
        ("relative_euclidean_distance", "rel. Euclidean"),
        ("max_abs_error", "max abs"),
        ("max_ulp", "ULP"),
    )
    return ", ".join(f"{label} {error[key]}" for key, label in names if key in error)


def _foreign_facts(cause: dict[str, Any]) -> list[tuple[str, str]]:
    """A MegEngine / SigmaStar diagnosis: judged from the compare alone (no replay)."""
    measures = cause.get("measures")
    measures = measures if isinstance(measures, dict) else {}
    facts = [("Evidence", _e("estimate from the compare (no replay for these dumps)"))]
    crossed = measures.get("crossed")
    if isinstance(crossed, list) and crossed:
        facts.append(("Crossed", _e("; ".join(map(str, crossed)))))
    inputs = measures.get("inputs")
    if isinstance(inputs, list) and inputs:
        texts = [
            f"{i.get('op', '?')} (var {i.get('var', '?')}): {i.get('status', '?')}"
            for i in inputs
            if isinstance(i, dict)
        ]
        facts.append(("Inputs", _e("; ".join(texts))))
    downstream = measures.get("failing_downstream")
    if downstream is not None:
        facts.append(("Failing downstream", _e(downstream)))
    if measures.get("layer_order") is not None:
        facts.append(("Layer order", _e(measures["layer_order"])))
    if cause.get("pairing"):
        facts.append(("Pairing", _e(cause["pairing"])))
    return facts


def _split_facts(cause: dict[str, Any]) -> list[tuple[str, str]]:
    """Own vs inherited error: measured by a replay, or the compare's estimate. A summary
    written before replays existed has its numbers under "evidence"."""
    kind = cause.get("evidence")
    if isinstance(kind, dict):
        return [("Evidence", _e(_evidence(kind)))]
    measures = _e(_evidence(cause.get("measures")))
    if kind != "replay":
        own = cause.get("own_error")
        drop = own.get("drop_db") if isinstance(own, dict) else None
        skipped = cause.get("replay_skipped")
        note = f" (no replay: {skipped})" if isinstance(skipped, str) else ""
        return [
            ("Evidence", _e(f"estimate from the compare{note}")),
            ("Own (estimate)", _e(f"loses {drop} dB by itself" if drop is not None else "-")),
            ("Measures", measures),
        ]
    replay = cause.get("replay")
    verdict = replay.get("verdict", "") if isinstance(replay, dict) else ""
    return [
        ("Evidence", "replay from the device's own inputs"),
        ("Own error", _e(_error_text(cause.get("own_error")))),
        ("Inherited", _e(_error_text(cause.get("inherited_error")))),
        ("Replay says", _e(str(verdict))),
        ("Measures", measures),
    ]


def _evidence(evidence: Any) -> str:
    if not isinstance(evidence, dict) or not evidence:
        return ""
    return "; ".join(
        f"{k} {v if not isinstance(v, list) else ', '.join(map(str, v))}"
        for k, v in evidence.items()
    )


def _subgraph(picture: SubgraphPicture | None) -> str:
    if picture is None:
        return ""
    title = f"<h3>Subgraph around {_e(picture.op)} (depth {picture.depth})</h3>"
    if not picture.svg and not picture.gv:  # no graph to draw: only why
        title = f"<h3>Subgraph around {_e(picture.op)}</h3>"
        return f'{title}<p class="note" id="no-subgraph">{_e(picture.note or "")}</p>'
    legend = " · ".join(
        f'<span style="background:{c};padding:0 6px;border:1px solid #bdbdbd">&nbsp;</span> {_e(t)}'
        for c, t in _NODE_COLORS
    )
    note = f'<p class="note">{_e(picture.note)}</p>' if picture.note else ""
    if picture.svg:
        body = f'<div class="figure subgraph">{picture.svg}</div>'
    elif picture.gv:
        body = f'<pre class="gv">{_e(picture.gv)}</pre>'
    else:
        body = ""
    return f'{title}<p class="muted">Nodes by output cosine: {legend}</p>{note}{body}'


def _root_cause(data: ReportData, picture: SubgraphPicture | None) -> str:
    if not data.root_causes:
        inner = f'<p class="note">{_e(undiagnosed_text(data))}</p>'
        return f'<section id="root-cause"><h2>Root cause</h2>{inner}</section>'
    cause = data.root_causes[0]
    op = str(cause.get("op"))
    facts = _facts(
        [
            ("Op", f'<span class="bad">{_e(op)}</span>'),
            ("Type", _e(cause.get("type", ""))),
            ("Index", _e(cause.get("index", "-"))),
            ("Why", _e(cause.get("reason", ""))),
            *(_foreign_facts(cause) if data.foreign else _split_facts(cause)),
        ]
    )
    rows = _rows_table(data.rows_of(op), _row_metrics(data))
    parts = [facts, "<h3>Its compare rows</h3>", rows]
    advice = [a for a in data.advice if a.get("op") == op]
    for a in advice:
        parts.append(f"<p><b>{_e(a.get('detection', ''))}:</b> {_e(a.get('advice', ''))}</p>")
    others = data.root_causes[1:]
    if others:
        items = "".join(
            f"<li>[{_e(c.get('index'))}] {_e(c.get('op'))}: {_e(c.get('reason', ''))}</li>"
            for c in others
        )
        parts.append(f"<h3>Other candidates</h3><ul>{items}</ul>")
    parts.append(_subgraph(picture))
    return (
        f'<section id="root-cause"><h2>Root cause</h2><div class="panel">{"".join(parts)}</div>'
        "</section>"
    )


def _advisor(data: ReportData) -> str:
    where = data.elsewhere.label if data.elsewhere is not None else None
    if not data.diagnosed or (data.elsewhere is not None and data.elsewhere.where is None):
        body = f'<p class="note">{_e(undiagnosed_text(data))}</p>'
    elif not data.advice:
        there = f" in {where} (the compare the advisor read, not this one)" if where else ""
        body = f'<p class="good">Nothing found{_e(there)}.</p>'
    else:
        rows = "".join(
            f"<tr><td>{_e(a.get('detection', ''))}</td>"
            f'<td class="name">{_e(_op_label(a))}</td><td>{_e(a.get("advice", ""))}</td>'
            f"<td>{_e(_evidence(a.get('evidence')))}</td></tr>"
            for a in data.advice
        )
        body = (
            "<table><thead><tr><th>detection</th><th>op</th><th>advice</th><th>evidence</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>"
        )
        if where:
            body = (
                f'<p class="note" id="advisor-slice">Found in {_e(where)}, the compare the'
                f" advisor read, not in this one.</p>{body}"
            )
    return f'<section id="advisor"><h2>Advisor</h2>{body}</section>'


def _op_label(finding: dict[str, Any]) -> str:
    op = finding.get("op")
    if not op:
        return "(whole network)"
    index = finding.get("index")
    return f"[{index}] {op}" if index is not None else str(op)


def _column_heads(data: ReportData) -> str:
    seen: dict[str, int] = {}
    heads = []
    for name in data.header:
        seen[name] = seen.get(name, 0) + 1
        key = name if seen[name] == 1 else f"{name}.{seen[name]}"
        numeric = name == "Index" or (name in data.metric_columns and name not in _TEXT_METRICS)
        attrs = f' data-col="{_e(key)}" data-type="{"num" if numeric else "text"}"'
        if name in HIGHER_IS_BETTER:
            attrs += ' data-better="high"'
        heads.append(f"<th{attrs}>{_e(name)}</th>")
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
        f'<section id="results-section"><h2>{_e(title)}</h2>{controls}'
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
        f" cause, and of their neighbours ({_e(big.neighbours)}): {big.carried_ops} ops."
        f"{dropped} The full table is the CSV <code>{_e(data.csv_path)}</code>"
        " (vcs -l 0 lists every failing op; the plot above shows every output).</p>"
    )


def _warnings(data: ReportData) -> str:
    if not data.warnings:
        return ""
    shown = data.warnings[:_MAX_WARNINGS]
    more = len(data.warnings) - len(shown)
    items = "".join(f"<li>{_e(w)}</li>" for w in shown)
    if more:
        items += f"<li>... {more} more</li>"
    return f'<section id="warnings"><h2 style="color:{FAIL_COLOR}">CSV warnings</h2><ul>{items}</ul></section>'


def _ranks(data: ReportData) -> str:
    """Rank per row, step per column: failing outputs and the first failing op."""
    ranks = data.ranks
    if ranks is None:
        return ""
    head = "".join(f"<th>step {_e(s)}</th>" for s in ranks.steps)
    rows = []
    for rank in ranks.ranks:
        cells = []
        for step in ranks.steps:
            entry = ranks.cell(rank, step)
            if entry is None:
                cells.append(f'<td class="muted">{_e(ranks.missing(rank, step) or "-")}</td>')
                continue
            shown = " (this page)" if ranks.shown == (rank, step) else ""
            partial = f"; {entry.not_compared} not compared" if entry.not_compared else ""
            partial += " partial" if entry.partial else ""
            if entry.failed:
                text = (
                    f"{entry.failed} failing outputs; first failing op {entry.first_failed_op}"
                    f"{partial}{shown}"
                )
                cells.append(f'<td class="bad">{_e(text)}</td>')
            else:
                good = "muted" if entry.not_compared else "good"  # not all of it was seen
                cells.append(f'<td class="{good}">{_e(f"0 failing outputs{partial}{shown}")}</td>')
        rows.append(f"<tr><td>rank {_e(rank)}</td>{''.join(cells)}</tr>")
    return (
        '<section id="ranks"><h2>Ranks and steps</h2><p class="muted">Failing outputs and the'
        " first failing op of each (rank, step) compared; report --rank R --step S shows"
        f" another.{_e(_MISSING_NOTE) if ranks.dumped_not_compared else ''}</p>"
        f"<table><thead><tr><th>rank</th>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></section>"
    )


def report_html(data: ReportData, picture: SubgraphPicture | None, generated: str) -> str:
    """The whole page; `generated` is the time shown as when the report was written."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(_title(data))}: {_e(data.csv_path.name)}</title><style>{STYLE}</style>"
        "</head>"
        f"<body>{_header(data, generated)}{_ranks(data)}{_plot(data)}{_root_cause(data, picture)}"
        f"{_advisor(data)}{_results(data)}{_warnings(data)}"
        f"<script>{SCRIPT}</script></body></html>\n"
    )
