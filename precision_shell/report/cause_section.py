"""The report's root-cause and advisor sections: the cause's facts (what its own error rests
on: replay or estimate; a foreign compare's crossed limits), its compare rows, its subgraph,
the other causes, and the advisor's findings; or why there is no root cause on this page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from precision_shell.compare.diagnosis.replay_evidence import root_cause_title
from precision_shell.compare.diagnosis.root_cause import INPUT_EVIDENCE, QUALITY_CAP
from precision_shell.compare.results.schema import ResultRow
from precision_shell.compare.results.summary import NO_LOSS, none_found_text, recorded_no_fault
from precision_shell.replay.session import finite_only_text
from precision_shell.report.data import ReportData
from precision_shell.report.html_parts import esc, facts_html
from precision_shell.report.points import COSINE, RED

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
        if other.shares and found:  # QA Q28 #1: a fault every card shares read "none"
            return f"the run's root cause, which this card shares (it goes wrong there too): {found}{see}"
        if other.diagnosed_here and found:
            return f"none in this compare; the run's root cause: {found}{see}"
        if other.diagnosed_here:
            found_none = none_found_text(data.compared, data.failed, see="vcs lists why")
            return f"none: {found_none} (ac -c diagnosed every compare)"
        shown = data.ranks.shown if data.ranks is not None else None
        this = f"ac -c --rank {shown[0]} --step {shown[1]}" if shown else "ac -c --rank R --step S"
        return (
            "not recorded: ac -c records the first step with a root cause (its cards) and"
            f" names the earliest: {found}{see}; {this} diagnoses this one"
        )
    if data.diagnosed and data.none_proven:
        return (
            f"none proven: the deviation shows first at {data.shows_first}, where the replay "
            "finds no fault"
        )
    if data.diagnosed:
        clean = "nothing fails" if data.foreign else NO_LOSS
        return f"none: {none_found_text(data.compared, data.failed, clean, 'vcs lists why')}"
    if data.partial:
        return f"not diagnosed: the compare is {data.partial} ({data.partial_cause})"
    return "diagnosis did not run (ac -c --report compares, diagnoses and writes this report)"


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
    head = "".join(f"<th>{esc(h)}</th>" for h in labels)
    body = "".join(
        f'<tr><td class="name">{esc(r.tensor_index)}</td><td class="name">{esc(r.ground_truth)}</td>'
        + "".join(f'<td class="num">{esc(_metric_text(r, c))}</td>' for c, _ in metrics)
        + f"<td>{esc(r.reason)}</td></tr>"
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
    text = ", ".join(f"{label} {error[key]}" for key, label in names if key in error)
    left_out = error.get("left_out")
    if isinstance(left_out, dict) and isinstance(error.get("elements"), int):
        finite_only = finite_only_text(error["elements"], sum(left_out.values()))
        text += f" ({finite_only})" if finite_only else ""
    return text


def _foreign_facts(cause: dict[str, Any]) -> list[tuple[str, str]]:
    """A MegEngine / SigmaStar diagnosis: judged from the compare alone (no replay)."""
    measures = cause.get("measures")
    measures = measures if isinstance(measures, dict) else {}
    facts = [("Evidence", esc("estimate from the compare (no replay for these dumps)"))]
    crossed = measures.get("crossed")
    if isinstance(crossed, list) and crossed:
        facts.append(("Crossed", esc("; ".join(map(str, crossed)))))
    inputs = measures.get("inputs")
    if isinstance(inputs, list) and inputs:
        texts = [
            f"{i.get('op', '?')} (var {i.get('var', '?')}): {i.get('status', '?')}"
            for i in inputs
            if isinstance(i, dict)
        ]
        facts.append(("Inputs", esc("; ".join(texts))))
    downstream = measures.get("failing_downstream")
    if downstream is not None:
        facts.append(("Failing downstream", esc(downstream)))
    if measures.get("layer_order") is not None:
        facts.append(("Layer order", esc(measures["layer_order"])))
    if cause.get("pairing"):
        facts.append(("Pairing", esc(cause["pairing"])))
    return facts


def _split_facts(cause: dict[str, Any]) -> list[tuple[str, str]]:
    """Own vs inherited error: measured by a replay, or the compare's estimate. A summary
    written before replays existed has its numbers under "evidence"."""
    kind = cause.get("evidence")
    if isinstance(kind, dict):
        return [("Evidence", esc(_evidence(kind)))]
    measures = esc(_evidence(cause.get("measures")))
    if kind == "input":
        return [("Evidence", esc(INPUT_EVIDENCE)), ("Measures", measures)]
    if kind != "replay":
        own = cause.get("own_error")
        drop = own.get("drop_db") if isinstance(own, dict) else None
        skipped = cause.get("replay_skipped")
        note = f" (no replay: {skipped})" if isinstance(skipped, str) else ""
        return [
            ("Evidence", esc(f"estimate from the compare{note}")),
            ("Own (estimate)", esc(f"loses {drop} dB by itself" if drop is not None else "-")),
            ("Measures", measures),
        ]
    replay = cause.get("replay")
    verdict = replay.get("verdict", "") if isinstance(replay, dict) else ""
    return [
        ("Evidence", "replay from the device's own inputs"),
        ("Own error", esc(_error_text(cause.get("own_error")))),
        ("Inherited", esc(_error_text(cause.get("inherited_error")))),
        ("Replay says", esc(str(verdict))),
        ("Measures", measures),
    ]


def _evidence(evidence: Any) -> str:
    if not isinstance(evidence, dict) or not evidence:
        return ""
    return "; ".join(f"{k} {_measure(k, v)}" for k, v in evidence.items())


def _measure(key: str, value: Any) -> str:
    """A measure as the page prints it; an SQNR at QUALITY_CAP is clamped there, so `>= 60`."""
    if isinstance(value, list):
        return ", ".join(map(str, value))
    capped = key.endswith("sqnr_db") and isinstance(value, int | float) and value >= QUALITY_CAP
    return f">= {QUALITY_CAP:g}" if capped else str(value)


def _subgraph(picture: SubgraphPicture | None) -> str:
    if picture is None:
        return ""
    title = f"<h3>Subgraph around {esc(picture.op)} (depth {picture.depth})</h3>"
    if not picture.svg and not picture.gv:  # no graph to draw: only why
        title = f"<h3>Subgraph around {esc(picture.op)}</h3>"
        return f'{title}<p class="note" id="no-subgraph">{esc(picture.note or "")}</p>'
    legend = " · ".join(
        f'<span style="background:{c};padding:0 6px;border:1px solid #bdbdbd">&nbsp;</span> {esc(t)}'
        for c, t in _NODE_COLORS
    )
    note = f'<p class="note">{esc(picture.note)}</p>' if picture.note else ""
    if picture.svg:
        body = f'<div class="figure subgraph">{picture.svg}</div>'
    elif picture.gv:
        body = f'<pre class="gv">{esc(picture.gv)}</pre>'
    else:
        body = ""
    return f'{title}<p class="muted">Nodes by output cosine: {legend}</p>{note}{body}'


def _replay_unfinished(data: ReportData) -> str:
    caveat = data.replay_unfinished
    return f'<p class="note" id="replay-unfinished">{esc(caveat)}</p>' if caveat else ""


def root_cause_section(data: ReportData, picture: SubgraphPicture | None) -> str:
    if not data.root_causes:
        inner = f'<p class="note">{esc(undiagnosed_text(data))}</p>' + _replay_unfinished(data)
        return f'<section id="root-cause"><h2>Root cause</h2>{inner}</section>'
    cause = data.root_causes[0]
    op = str(cause.get("op"))
    facts = facts_html(
        [
            ("Op", f'<span class="bad">{esc(op)}</span>'),
            *_card_facts(data),
            ("Type", esc(cause.get("type", ""))),
            ("Index", esc(cause.get("index", "-"))),
            ("Why", esc(cause.get("reason", ""))),
            *(_foreign_facts(cause) if data.foreign else _split_facts(cause)),
        ]
    )
    own = data.rows_of(op)
    measured_by = cause.get("measured_by")
    if not own and isinstance(measured_by, list):  # a network input: the rows measuring it
        wanted = {m for m in measured_by if isinstance(m, str)}
        own = [r for r in data.rows if r.tensor_index in wanted]
    rows = _rows_table(own, _row_metrics(data))
    parts = [_replay_unfinished(data), facts, "<h3>Its compare rows</h3>", rows]
    advice = [a for a in data.advice if a.get("op") == op]
    for a in advice:
        parts.append(f"<p><b>{esc(a.get('detection', ''))}:</b> {esc(a.get('advice', ''))}</p>")
    others = data.root_causes[1:]
    if others:
        items = "".join(
            f"<li>[{esc(c.get('index'))}] {esc(c.get('op'))}: {esc(c.get('reason', ''))}"
            f"{esc(_replay_said(c))}</li>"
            for c in others
        )
        parts.append(f"<h3>Other candidates</h3><ul>{items}</ul>")
    parts.append(_subgraph(picture))
    return (
        f'<section id="root-cause"><h2>{esc(root_cause_title(recorded_no_fault(cause)))}</h2>'
        f'<div class="panel">{"".join(parts)}</div></section>'
    )


def _card_facts(data: ReportData) -> list[tuple[str, str]]:
    """Where / Cards / Other steps / Not proven: what the terminal's panel said beside the op
    (summary.json `diagnosis.lines`)."""
    diagnosis = data.summary.diagnosis if data.summary is not None else None
    lines = diagnosis.lines if diagnosis is not None else None
    if not lines:
        return []
    facts: list[tuple[str, str]] = []
    if "where" in lines:
        facts.append(("Where", esc(lines["where"])))
    if "cards" in lines:
        notes = "".join(f"<br>{esc(n)}" for n in lines.get("card_notes", []))
        facts.append(("Cards", f'<span class="warn">{esc(lines["cards"])}</span>{notes}'))
    if lines.get("other_steps"):
        facts.append(("Other steps", "<br>".join(esc(n) for n in lines["other_steps"])))
    if lines.get("not_proven"):
        shown = "<br>".join(esc(n) for n in lines["not_proven"])
        facts.append(("Not proven", f'<span class="warn">{shown}</span>'))
    return facts


def advisor_section(data: ReportData) -> str:
    where = data.elsewhere.label if data.elsewhere is not None else None
    if not data.diagnosed or (data.elsewhere is not None and data.elsewhere.where is None):
        body = f'<p class="note">{esc(undiagnosed_text(data))}</p>'
    elif not data.advice:
        there = f" in {where} (the compare the advisor read, not this one)" if where else ""
        # as the terminal says it beside a root cause (QA Q28 #6: "Nothing found" there)
        found = "No finding beyond the root cause" if data.root_causes else "Nothing found"
        body = f'<p class="good">{found}{esc(there)}.</p>'
    else:
        rows = "".join(
            f"<tr><td>{esc(a.get('detection', ''))}</td>"
            f'<td class="name">{esc(_op_label(a))}</td><td>{esc(a.get("advice", ""))}</td>'
            f"<td>{esc(_evidence(a.get('evidence')))}</td></tr>"
            for a in data.advice
        )
        body = (
            "<table><thead><tr><th>detection</th><th>op</th><th>advice</th><th>evidence</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>"
        )
        if where:
            body = (
                f'<p class="note" id="advisor-slice">Found in {esc(where)}, the compare the'
                f" advisor read, not in this one.</p>{body}"
            )
    return f'<section id="advisor"><h2>Advisor</h2>{body}</section>'


def _op_label(finding: dict[str, Any]) -> str:
    op = finding.get("op")
    if not op:
        return "(whole network)"
    index = finding.get("index")
    return f"[{index}] {op}" if index is not None else str(op)


def _replay_said(cause: dict[str, Any]) -> str:
    """` (replay: ...)`: what the replay of another candidate says (it may clear it)."""
    replay = cause.get("replay")
    verdict = replay.get("verdict") if isinstance(replay, dict) else None
    return f" (replay: {verdict})" if isinstance(verdict, str) and verdict else ""
