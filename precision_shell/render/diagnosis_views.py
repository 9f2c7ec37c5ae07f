"""Rendering of `ac`: one panel per check, each saying "nothing found" when empty, then the
compare, the advisor and the root cause."""

from __future__ import annotations

import math

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from precision_shell.commands.ac_diagnosis import RootCausePanel
from precision_shell.commands.autocheck import AutoCheck
from precision_shell.compare.diagnosis.advisor import GLOBAL_CONSISTENCY, Finding
from precision_shell.compare.diagnosis.replay_evidence import (
    finds_no_fault,
    proves_constants_differ,
    proves_wrong,
    replay_clears,
    replay_reading,
    root_cause_title,
)
from precision_shell.compare.diagnosis.root_cause import INPUT_EVIDENCE, RootCause, quality_text
from precision_shell.compare.rank_divergence import rank_list_text
from precision_shell.compare.results.summary import none_found_text
from precision_shell.explore.nonfinite_origin import NonfiniteHit, NonfiniteOrigin
from precision_shell.listing_text import some_of
from precision_shell.render.compare_views import render_compare_summary, render_vector_compare
from precision_shell.render.graph_views import tensor_table
from precision_shell.render.output import renders
from precision_shell.render.replay_lines import (
    named_replays_line,
    replay_pass_line,
    slice_replays_line,
)
from precision_shell.render.statistics_views import (
    render_statistics_compare,
    render_statistics_diagnosis,
)
from precision_shell.replay.measure import OwnError
from precision_shell.replay.session import finite_only_text, ulp_text
from precision_shell.workspace.dump_checks import number_order


def _panel(
    console: Console, title: str, body: RenderableType | None, empty: str | None = None
) -> None:
    content = (
        body
        if body is not None
        else Text(f"nothing found{f' ({empty})' if empty else ''}", style="green")
    )
    console.print(Panel(content, title=title, title_align="left"))


def _fusion(console: Console, check: AutoCheck) -> None:
    if not check.fusion:
        _panel(console, "Fusion passes", None, "no fusion/fusion_result.json and no pass_name")
        return
    table = Table(show_edge=False, pad_edge=False)
    for col in ("kind", "pass", "matched", "effective", "device ops"):
        table.add_column(col, overflow="fold")
    for use in check.fusion:
        ops = ", ".join(use.device_ops[:4]) + (
            f" (+{len(use.device_ops) - 4})" if len(use.device_ops) > 4 else ""
        )
        table.add_row(
            use.kind or "-",
            Text(use.name),
            str(use.match_times if use.match_times is not None else "-"),
            str(use.effect_times if use.effect_times is not None else "-"),
            Text(ops or "-"),
        )
    _panel(console, "Fusion passes", table)


def _nonfinite_counts(hit: NonfiniteHit) -> str:
    return ", ".join(
        p for p in (f"{hit.nan} NaN" if hit.nan else "", f"{hit.inf} inf" if hit.inf else "") if p
    )


def nonfinite_line(origin: NonfiniteOrigin, several_runs: bool) -> Text:
    """`first NaN/inf: rank R step S op X (output k)`, or that there is none; and, in one
    line, an earlier output holding NaN/inf only in its pad lanes."""
    prefix = f"{origin.run}: " if several_runs else ""
    hit = origin.first
    if hit is None:
        line = Text(f"{prefix}no NaN/inf in any device output", style="green")
    else:
        line = Text(prefix)
        line.append(
            f"first NaN/inf: rank {hit.rank} step {hit.step} op {hit.op} (output {hit.output})",
            style="red",
        )
        line.append(f"  {_nonfinite_counts(hit)}; {hit.file}", style="dim")
    if hit is not None and origin.also:
        others = ", ".join(f"rank {h.rank} ({h.op})" for h in origin.also)
        line.append(f"\nsame step, also: {others}", style="yellow")
    pad = origin.pad_only
    if pad is not None:
        line.append(
            "\nNaN/inf in pad lanes only (no value of the tensor, not counted): "
            f"rank {pad.rank} step {pad.step} op {pad.op} (output {pad.output}) "
            f"{_nonfinite_counts(pad)} in its {pad.pad_layout} padding",
            style="dim",
        )
    return line


def _nonfinite(console: Console, check: AutoCheck) -> None:
    if not check.nonfinite:
        return
    several = len(check.nonfinite) > 1
    parts: list[RenderableType] = [nonfinite_line(o, several) for o in check.nonfinite]
    read = sum(o.files_read for o in check.nonfinite)
    slices = sum(o.slices_read for o in check.nonfinite)
    parts.append(Text(f"{read} dump files read over {slices} rank/step dirs", style="dim"))
    for origin in check.nonfinite:
        parts += [_unread_steps_line(origin, several)] if origin.unread_steps else []
    for origin in check.nonfinite:
        for err in origin.errors[:5]:
            parts.append(Text(err, style="yellow"))
    console.print(Panel(Group(*parts), title="NaN/inf origin (device outputs)", title_align="left"))


def _unread_steps_line(origin: NonfiniteOrigin, several_runs: bool) -> Text:
    """`steps 10, 20 not read: the search stops at step 5, the first holding NaN/inf (ac
    --step 10 reads that step)`: a later step may hold a NaN born at an earlier op of its own."""
    prefix = f"{origin.run}: " if several_runs else ""
    steps = origin.unread_steps
    hit = origin.first
    return Text(
        f"{prefix}{'steps' if len(steps) > 1 else 'step'} {some_of(steps, 4)} not read: the "
        f"search stops at step {hit.step if hit else '?'}, the first holding NaN/inf (ac --step "
        f"{steps[0]} reads that step)",
        style="yellow",
    )


def _places_text(places: list[tuple[str, str]]) -> str:
    """`ranks 0, 1 step 0; rank 2 step 10`: the ranks of each step, steps in numeric order."""
    by_step: dict[str, list[str]] = {}
    for rank, step in places:
        by_step.setdefault(step, []).append(rank)
    parts = []
    for step in sorted(by_step, key=number_order):
        ranks = sorted(by_step[step], key=number_order)
        parts.append(f"rank{'s' if len(ranks) > 1 else ''} {rank_list_text(ranks)} step {step}")
    return "; ".join(parts)


def _overflow(console: Console, check: AutoCheck) -> None:
    if not check.overflows and not check.overflow_errors:
        console.print(
            Panel(
                Text("nothing found (no Opdebug files in the newest overflow dump)", style="green"),
                title="Overflow",
                title_align="left",
            )
        )
        return
    for n, f in enumerate(check.overflows, start=1):
        head = Text.assemble(("status: ", "bold"), "; ".join(f.texts) or "no status bit set")
        where = f"  on {_places_text(f.places)}" if f.places else ""
        # repeats within one (rank, step) (a loop) are only counted
        repeats = f"  (x{f.count} identical)" if f.count > max(1, len(f.places)) else ""
        parts: list[RenderableType] = [head, Text(f"Opdebug file: {f.first_file}{where}{repeats}")]
        if f.tensors:
            first = f", rank {f.places[0][0]} step {f.places[0][1]}" if len(f.places) > 1 else ""
            parts.append(tensor_table(f"tensors of its overflow dump{first}", f.tensors, False))
        title = Text.assemble(
            (f"Overflow #{n}: ", "bold red"),
            f.op or "(op dump not found)",
            (f" [{f.op_type}]" if f.op_type else "", "cyan"),
        )
        console.print(Panel(Group(*parts), title=title, title_align="left"))
    if check.overflow_total > len(check.overflows):
        console.print(
            f"... {check.overflow_total - len(check.overflows)} more overflowing ops (ac -l 0 shows all)",
            style="dim",
        )
    for err in check.overflow_errors:
        console.print(Text(err, style="yellow"))


def _casts(console: Console, check: AutoCheck) -> None:
    if not check.casts:
        _panel(console, "Dangerous casts", None, "no float->int, integer or float narrowing cast")
        return
    table = Table(show_edge=False, pad_edge=False)
    for col in ("op", "from", "to", "why"):
        table.add_column(col)
    for c in check.casts:
        why = Text(f"note: {c.why}", style="dim") if c.note else Text(c.why, style="red")
        table.add_row(Text(c.op), c.src, c.dst, why)
    _panel(console, "Dangerous casts", table)


def _run_diffs(console: Console, check: AutoCheck) -> None:
    if check.run_pair is None:
        return
    title = f"dtype/layout differences {check.run_pair[0]} vs {check.run_pair[1]}"
    if not check.run_diffs:
        _panel(console, title, None)
        return
    table = Table(show_edge=False, pad_edge=False)
    for col in ("op", "port", check.run_pair[0], check.run_pair[1]):
        table.add_column(col)
    for d in check.run_diffs:
        table.add_row(Text(d.op), d.port, d.left, d.right)
    _panel(console, title, table)


def _num(v: float) -> str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:.6f}"


def _error_text(error: OwnError) -> str:
    finite_only = finite_only_text(error.elements, error.left_out)
    return (
        f"cosine {_num(error.cosine)}, rel euclid {error.relative_euclidean_distance:.3g}, "
        f"max abs {error.max_abs_error:.3g}, {ulp_text(error.max_ulp)} ULP"
    ) + (f" ({finite_only})" if finite_only else "")


def _replay_rows(head: Table, cause: RootCause) -> None:
    """evidence / own / inherited / replay rows: the replay's split of the op's error."""
    out = cause.replay
    if out is None:
        if cause.input_differs:
            head.add_row("evidence", Text(INPUT_EVIDENCE))
            return
        why = f" (no replay: {cause.replay_skipped})" if cause.replay_skipped else ""
        head.add_row("evidence", Text(f"estimate from the compare{why}"))
        return
    head.add_row("evidence", f"replay of output {out.slot} from the device's own inputs")
    head.add_row("own", Text(_error_text(out.own), style="red" if proves_wrong(out) else ""))
    if out.inherited is not None:
        head.add_row("inherited", Text(_error_text(out.inherited)))
    head.add_row("replay says", Text(replay_reading(cause) or ""))


def _finding_op(index: int | None, op: str | None) -> str:
    """An advisor finding's op: `[12] conv1/Conv2D`; the network input has no index."""
    if not op:
        return "-"
    return f"[{index}] {op}" if index is not None else op


def other_candidates_text(causes: list[RootCause]) -> str | None:
    """`other candidates: input (61.6 dB lost), ...`: the causes after the one shown (at most
    three); None when there is none."""
    if len(causes) < 2:
        return None
    return f"other candidates: {', '.join(_candidate(c) for c in causes[1:4])}"


def _candidate(cause: RootCause) -> str:
    if replay_clears(cause):
        return f"{cause.op} (its replay clears it: deviation inherited)"
    if proves_wrong(cause.replay):
        assert cause.replay is not None
        return f"{cause.op} (kernel wrong: {ulp_text(cause.replay.own.max_ulp)} ULP)"
    if proves_constants_differ(cause.replay):
        return f"{cause.op} (its replay proves its constants differ)"
    if cause.replay is not None and cause.replay.overflow:
        return f"{cause.op} (its replay proves an overflow born there)"
    return f"{cause.op} ({cause.drop_text})" if cause.drop_text else cause.op


def render_root_cause(console: Console, panel: RootCausePanel) -> None:
    c = panel.cause
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column(overflow="fold")  # a long path wraps, never cut to "…"
    head.add_row("op", Text(c.op))
    lines = panel.lines
    if lines.where is not None:
        head.add_row("where", Text(f"{lines.where} ({lines.where_why})"))
    if lines.cards is not None:
        head.add_row("cards", Text(lines.cards, style="bold yellow"))
    for note in lines.card_notes:
        head.add_row("", Text(note, style="yellow"))
    for n, note in enumerate(lines.other_steps):
        head.add_row("other steps" if n == 0 else "", Text(note, style="yellow"))
    for n, note in enumerate(lines.not_proven):
        head.add_row("not proven" if n == 0 else "", Text(note, style="bold yellow"))
    head.add_row("type", c.type)
    head.add_row("index", str(c.index) if c.index is not None else "-")
    if panel.record is not None:
        head.add_row("fusion pass", Text(panel.record.pass_name or "-"))
        originals = panel.record.original_names
        head.add_row("original ops", Text(", ".join(originals) if originals else "-"))
    head.add_row("why", Text(c.reason))
    if c.input_differs:  # a network input: no inputs of its own, its values are the data fed
        head.add_row(
            "quality",
            f"the data fed: {quality_text(c.output_quality)} (cosine {_num(c.output_cosine)})",
        )
    elif math.isfinite(c.input_quality) or math.isfinite(c.output_quality):
        inputs = (
            f"inputs {quality_text(c.input_quality)} (cosine {_num(c.input_cosine)})"
            if not c.unknown_inputs
            else "inputs not compared (data input "
            + ", ".join(str(k) for k in c.unknown_inputs)
            + ": no benchmark tensor)"
        )
        head.add_row(
            "quality",
            f"{inputs} -> outputs {quality_text(c.output_quality)} "
            f"(cosine {_num(c.output_cosine)})",
        )
    _replay_rows(head, c)
    rows = Table(show_edge=False, pad_edge=False, title="compare rows", title_justify="left")
    for col in ("tensor", "ground truth", "cosine", "max abs err", "rel euclid"):
        rows.add_column(col)
    for r in panel.rows:
        rows.add_row(
            r.tensor_index.rsplit(":", 2)[-2] + " " + r.tensor_index.rsplit(":", 1)[-1]
            if r.kind
            else r.tensor_index,
            Text(r.ground_truth),
            r.texts.get("CosineSimilarity", "-"),
            r.texts.get("MaxAbsoluteError", "-"),
            r.texts.get("RelativeEuclideanDistance", "-"),
        )
    parts: list[RenderableType] = [head, Text(""), rows]
    for f in panel.findings:
        parts.append(Text.assemble((f"{f.detection}: ", "bold yellow"), f.advice))
    parts.append(Text("next: " + "   ".join(panel.next_commands), style="cyan"))
    console.print(
        Panel(
            Group(*parts),
            title=Text(root_cause_title(finds_no_fault(c)), style="bold red"),
            title_align="left",
        )
    )


def _none_found(findings: list[Finding]) -> str:
    """Why the root cause is empty: no op degrades the signal on its own, of the tensors the
    compare could compare (the advisor's consistency finding counts those it could not)."""
    missing = sum(
        int(m.get("tensors", 0))
        for f in findings
        if f.detection == GLOBAL_CONSISTENCY
        for m in f.evidence.get("uncompared", [])
    )
    return none_found_text(None, missing, see="see the advisor")


@renders(AutoCheck)
def render_autocheck(console: Console, check: AutoCheck) -> None:
    if not check.pair_only:  # the workspace checks; a -lt/-rt pair has none
        _fusion(console, check)
        _overflow(console, check)
        _nonfinite(console, check)
        _casts(console, check)
        _run_diffs(console, check)
    if check.statistics_compare is not None:
        render_statistics_compare(console, check.statistics_compare)
        if check.statistics is not None:
            render_statistics_diagnosis(console, check.statistics)
        elif check.diagnosis_skipped:
            console.print(Text(f"diagnosis did not run: {check.diagnosis_skipped}", style="yellow"))
        return
    if check.compare is None:
        if check.compare_error is None:  # an error is the command's own error line
            console.print(
                Text(
                    "compare not run (ac -c compares, advises and finds the root cause)",
                    style="dim",
                )
            )
        return
    render_vector_compare(console, check.compare)
    if check.summary is not None:
        render_compare_summary(console, check.summary)
    d = check.diagnosis
    if d is None and check.diagnosis_skipped:
        console.print(Text(f"diagnosis did not run: {check.diagnosis_skipped}", style="yellow"))
    if d is not None:
        if d.findings:
            table = Table(show_edge=False, pad_edge=False)
            for col in ("detection", "op", "advice"):
                table.add_column(col, overflow="fold")
            for f in d.findings:
                table.add_row(f.detection, Text(_finding_op(f.index, f.op)), f.advice)
            _panel(console, "Advisor", table)
        elif check.root_cause is not None:  # nothing beyond it: not "nothing found"
            note = "no finding beyond the root cause below"
            _panel(console, "Advisor", Text(note, style="green"))
        else:
            _panel(console, "Advisor", None)
        if check.root_cause is not None:
            render_root_cause(console, check.root_cause)
            others = other_candidates_text(d.causes)
            if others is not None:
                console.print(Text(others, style="dim"))
        else:
            _panel(console, "Root cause", None, _none_found(d.findings))
        if check.slice_replays is not None:
            console.print(Text(slice_replays_line(check.slice_replays), style="dim"))
        elif d.replays is not None:
            line = replay_pass_line(d.replays, alone=not check.named_replays)
            console.print(Text(line, style="dim"))
        if check.named_replays:
            console.print(Text(named_replays_line(check.named_replays), style="dim"))
    if check.report_path is not None:
        console.print(Text.assemble(("report: ", "bold"), str(check.report_path)), soft_wrap=True)
