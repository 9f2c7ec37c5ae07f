"""`ac -c`'s diagnosis step: every (rank, step) compare diagnosed, the root cause chosen
across cards, replays (the diagnosed card and the others that could go wrong before it, or
every one with `--replay all`), and the panel a user acts on (`RootCausePanel`: the cause,
its rows, the advisor's readings, the next commands)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from precision_shell.commands.compare_summary import summary_of
from precision_shell.compare.diagnosis.advisor import (
    ACCUMULATED_DRIFT,
    Finding,
    OverflowHit,
    with_replay_partial,
    with_replay_unfinished,
)
from precision_shell.compare.diagnosis.cards import (
    CardDiagnosis,
    card_scope,
    first_card,
    named_not_proven,
    other_step_faults,
    slice_check,
)
from precision_shell.compare.diagnosis.diagnose import (
    Diagnosis,
    Replayer,
    diagnose,
    with_replays,
    with_scope,
)
from precision_shell.compare.diagnosis.replay_evidence import (
    DEFAULT_BUDGET_S,
    DEFAULT_REPLAY_MODE,
    ReplayPass,
    before,
    measured_fault,
    measured_text,
    replay_pass,
    replay_targets,
    replayable,
    stop_reason,
    unjudged_before,
    untargeted,
)
from precision_shell.compare.diagnosis.root_cause import OpEvidence, RootCause
from precision_shell.compare.diagnosis.slice_replays import (
    Also,
    Before,
    DiagnosedSlice,
    SliceReplays,
    proven,
    replay_every_slice,
    replay_going_on,
    shown_slice,
)
from precision_shell.compare.results.schema import ResultRow, ResultTable, read_result_csv
from precision_shell.compare.results.slice_results import SliceResult, slice_results
from precision_shell.shell.context import ShellContext
from precision_shell.workspace.dump_checks import number_order
from precision_shell.workspace.graph_index import GraphIndex, OpRecord

if TYPE_CHECKING:
    from precision_shell.commands.autocheck import AutoCheck

# why the root cause shown is in its (rank, step) when no replay moved it (`_moved_text`):
# the compare's choice (cards.first_card), said as such: the replays, unless `--replay all`
# finished, did not look at every op of every slice
FIRST_CARD = (
    "of the root causes the compare shows: the first step, then the earliest op across its cards"
)
ONE_SELECTED = "the one selected; the other ranks and steps were not compared"


@dataclass
class RootCausePanel:
    """The best root cause with what a user needs to act on it."""

    cause: RootCause
    record: OpRecord | None
    rows: list[ResultRow]  # its input and output compare rows
    findings: list[Finding]
    next_commands: list[str]
    lines: PanelLines = field(default_factory=lambda: PanelLines())


@dataclass(frozen=True)
class PanelLines:
    """What the root-cause panel says beside the op: where and on which cards when several
    cards or steps were dumped, and the earlier candidates the replay could not judge;
    summary.json keeps it (`DiagnosisRecord.lines`) so the report says the same."""

    where: str | None = None  # "rank 3 step 0" when several ranks/steps were diagnosed
    where_why: str = FIRST_CARD  # why `where`
    cards: str | None = None  # one card only, or every card (the other ranks of that step)
    card_notes: list[str] = field(default_factory=list)  # the cards that differ, and how
    other_steps: list[str] = field(default_factory=list)  # other steps' faults of their own
    # candidates before the proven fault shown that no replay judged (`unjudged_before`)
    not_proven: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any] | None:
        payload: dict[str, Any] = {}
        if self.where is not None:
            payload["where"] = f"{self.where} ({self.where_why})"
        if self.cards is not None:
            payload["cards"] = self.cards
        if self.card_notes:
            payload["card_notes"] = list(self.card_notes)
        if self.other_steps:
            payload["other_steps"] = list(self.other_steps)
        if self.not_proven:
            payload["not_proven"] = list(self.not_proven)
        return payload or None


def _next_commands(
    ctx: ShellContext, cause: RootCause, rows: list[ResultRow], entry: SliceResult | None
) -> list[str]:
    ws = ctx.workspace
    where = f" --rank {entry.rank} --step {entry.step}" if entry is not None else ""
    commands = [f"ni {_quote(cause.op)} -s 2{where}"]
    if entry is not None:
        refs = ws.dump_files(ws.run(), cause.op, entry.rank, entry.step)
    else:
        refs = ws.dump_files(ws.run(), cause.op)
    benchmark = None
    graph = ws.run().dump_graph()
    rec = graph.get(cause.op) if graph else None
    if rec is not None:
        if entry is not None:
            benchmark = ws.output_benchmark(rec, 0, entry.rank, entry.step)
        else:
            benchmark = ws.output_benchmark(rec, 0)
    # the same file name is in every rank's dir: the hint names the slice, as `ni`'s does
    if refs and benchmark is not None:
        benchmark_name = os.path.basename(benchmark.path)
        commands.append(f"cp {refs[-1].file_name}:output:0 {benchmark_name}{where}")
    elif refs:
        commands.append(f"pt {refs[-1].file_name}:output:0{where}")
    return commands


def _quote(name: str) -> str:
    return f'"{name}"' if any(c.isspace() for c in name) else name


def _slice_tables(
    check: AutoCheck, primary: ResultTable
) -> list[tuple[SliceResult | None, ResultTable]]:
    """Every (rank, step) compare with its rows, in (step, rank) order; the primary alone
    when the run compared one dump dir."""
    assert check.compare is not None
    entries = slice_results(check.compare.summary)
    if len(entries) <= 1:
        return [(entries[0] if entries else None, primary)]
    tables: list[tuple[SliceResult | None, ResultTable]] = []
    for entry in entries:
        path = Path(entry.csv)
        table = primary if path.name == primary.path.name else read_result_csv(path)
        tables.append((entry, table))
    return tables


@dataclass(frozen=True)
class ReplayChoice:
    """`ac -c --replay MODE --replay-budget S`."""

    mode: str = DEFAULT_REPLAY_MODE
    budget_s: float = DEFAULT_BUDGET_S


def _replayer(
    ctx: ShellContext,
    choice: ReplayChoice,
    entry: SliceResult | None,
    where: str | None = None,
    spent_s: float = 0.0,
    before_position: Before = None,
    also: Also = (),
) -> Replayer:
    """Replays in the (rank, step) `entry` names (`where`: its name when the compare covered
    several), with what `spent_s` left of the budget and a live progress bar at the prompt;
    `before_position` (the default going on past another slice's proven fault,
    slice_replays.Before): only the candidates that run before it, the slice's own first
    cause and `also` (the fault proven on another card of the step), never every op."""

    def run_pass(
        graph: GraphIndex, evidence: dict[str, OpEvidence], causes: list[RootCause]
    ) -> ReplayPass:
        ws, run = ctx.workspace, ctx.workspace.run()
        rank = entry.rank if entry is not None else None
        step = entry.step if entry is not None else None

        def one_pass(targets: list[str], mode: str, spent: float) -> ReplayPass:
            label = f"ac: replay ({mode})" + (f" {where}" if where else "")
            return replay_pass(
                ws,
                run,
                graph,
                targets,
                mode,
                rank=rank,
                step=step,
                budget_s=choice.budget_s,
                spent_s=spent,
                where=where,
                progress=ctx.progress(label, "ops"),
            )

        targets = replay_targets(graph, evidence, causes, choice.mode)
        if before_position is not None:
            targets = [
                name
                for name in targets
                if (rec := graph.get(name)) is not None and rec.position < before_position
            ]
            # is its own first cause drift, and does the other card's fault hold here too?
            # (QA Q28: a 9.9 dB wrong filter called drift, a shared kernel error "one card")
            own = (causes[0].op,) if causes else ()
            targets += [
                name
                for name in dict.fromkeys((*also, *own))
                if name not in targets and graph.get(name) is not None
            ]
        done = one_pass(targets, choice.mode, spent_s)
        if choice.mode != "candidates":
            return done
        rest = untargeted(ws, run, graph, evidence, causes, targets, rank, step)
        finished = not (done.unreached or done.interrupted)
        fault = done.first_fault(graph)
        widens = before_position is None and _fails_any(evidence)
        if rest and finished and fault is None and widens:
            done.widen(one_pass(rest, "all", spent_s + done.elapsed_s))
            return done
        # a proven fault: an earlier root cause can only be among the ops before it
        earlier = before(graph, rest, fault) if finished and fault is not None else []
        if fault is not None and earlier:
            done.look_before(fault, one_pass(earlier, "all", spent_s + done.elapsed_s))
            went_on = set(earlier)
            rest = [name for name in rest if name not in went_on]
        elif fault is not None and not finished:
            # cut (budget, Ctrl-C) while the candidates ran, after some proved a fault: the
            # ops before it were never replayed, an earlier fault is not ruled out
            pending = before(graph, [*done.unreached, *rest], fault)
            if pending:
                done.before, done.earlier, done.earlier_left = fault, len(pending), len(pending)
                kept = set(pending)
                rest = [name for name in rest if name not in kept]
        done.left_out = replayable(graph, rest)
        return done

    return run_pass


def _replay_unfinished(
    diagnosis: Diagnosis, slices: SliceReplays | None, named: list[ReplayPass]
) -> tuple[list[str], str, bool] | None:
    """The slices the replay did not finish (their labels; none: the one compared), why
    (Ctrl-C or SIGTERM, or the budget) and whether it was stopped (not the budget); None when
    it finished what it set out to replay. `named`: the cards replayed by themselves."""
    cut = [p for p in named if p.not_reached]
    if slices is not None:
        where = [p.where or "" for p in slices.unfinished + cut] + slices.not_begun
        if not where:
            return None
        stopped = slices.interrupted or any(p.interrupted for p in cut)
        return where, stop_reason(stopped, slices.budget_s), stopped
    done = diagnosis.replays
    passes = ([done] if done is not None and done.not_reached else []) + cut
    if not passes:
        return None
    where = [p.where for p in passes if p.where]
    stopped = any(p.interrupted for p in passes)
    return where, stop_reason(stopped, passes[0].budget_s), stopped


def _goes_on(first: Diagnosis, chosen: CardDiagnosis, cards: list[CardDiagnosis]) -> bool:
    """The default replay goes on to the other slices (slice_replays.replay_going_on): the
    slice diagnosed first proves a fault while another card of its step or an earlier step
    may hold an earlier one; or it proves no fault while another slice has an output failing
    the thresholds. A budget or Ctrl-C that cut the first slice keeps the others from
    beginning, and going on says so (QA: the budget ran out on the first of 6 slices, and
    nothing said the other 5 were never replayed)."""
    done = first.replays
    if done is None:
        return False
    if proven(first):
        at = number_order(chosen.entry.step)
        return any(number_order(c.entry.step) <= at for c in cards if c is not chosen)
    return any(_fails_any(c.diagnosis.evidence) for c in cards if c is not chosen)


def _fails_any(evidence: dict[str, OpEvidence]) -> bool:
    """Some op's output fails the thresholds."""
    return any(q.fails for ev in evidence.values() for q in ev.outputs.values())


def _moved_text(first: CardDiagnosis, first_best: RootCause | None, shown: RootCause) -> str:
    """Why the card shown is not `first`: what its replay proves, and what `first`'s did."""
    proof = measured_text(shown)
    label = first.entry.label
    if first_best is not None and measured_fault(first_best):
        return f"{proof}, and it goes wrong before {label}'s proven fault at {first_best.op}"
    reading = "none" if first_best is None else "no fault its replay proves"
    return (
        f"{proof}; {label}, the compare's first root cause (the first step, then the earliest "
        f"op across its cards), has {reading}"
    )


def diagnose_compare(
    ctx: ShellContext,
    check: AutoCheck,
    primary: ResultTable,
    limit: int,
    choice: ReplayChoice = ReplayChoice(),
) -> None:
    """Diagnose every (rank, step) compare; the first that goes wrong (diagnosis.cards:
    step, then execution order, then rank) is recorded in the summary, its rank and step
    beside the root causes, with the other cards' own root causes. That one is diagnosed
    again with its replays (`choice`), which re-rank its causes. `--replay all` on several
    compares replays every one (slice_replays) and shows the card whose kernel it proves
    wrong when the first one's best cause is not; the default goes on to the other cards
    and earlier steps (slice_replays.replay_going_on)."""
    compare = check.compare
    assert compare is not None
    if compare.primary.plan_mode != "benchmark":
        check.diagnosis_skipped = "no benchmark: the root cause needs device vs benchmark"
        return
    run = ctx.workspace.run()
    hits = [OverflowHit(f.op, f.texts) for f in check.overflows]
    tables = _slice_tables(check, primary)
    cards: list[CardDiagnosis] = []
    single: tuple[ResultTable, GraphIndex, Diagnosis] | None = None
    for entry, table in tables:
        graph = run.graph_of_dump(entry.graph.split(",") if entry is not None else ())
        if graph is None:
            continue
        diagnosis = diagnose(graph, table.rows, compare.rule, hits)
        if entry is None:
            single = (table, graph, diagnosis)
        else:
            cards.append(CardDiagnosis(entry, table, graph, diagnosis))
    chosen = first_card(cards)
    if chosen is not None:
        entry, table, graph, diagnosis = chosen.entry, chosen.table, chosen.graph, chosen.diagnosis
    elif single is not None:
        entry, (table, graph, diagnosis) = None, single
    else:
        check.diagnosis_skipped = "no parsed graph to walk"
        return
    several = len(tables) > 1 and chosen is not None
    moved = FIRST_CARD  # why the card shown is not the first to go wrong, when moved
    left_out = tuple((str(e.get("rank")), str(e.get("step"))) for e in compare.summary.not_selected)
    if chosen is not None and (several or left_out):
        others = slice_check(chosen, cards, left_out)
        diagnosis = with_scope(diagnosis, graph, table.rows, compare.rule, hits, others)
    replay_named: Callable[..., list[CardDiagnosis] | None] | None = None
    if several and chosen is not None and choice.mode != "none":
        slices = [
            DiagnosedSlice(
                c.entry.label,
                c.entry.step,
                c.graph,
                c.table.rows,
                diagnosis
                if c is chosen
                else with_scope(
                    c.diagnosis,
                    c.graph,
                    c.table.rows,
                    compare.rule,
                    hits,
                    slice_check(c, cards, left_out),
                ),
            )
            for c in cards
        ]

        # the slices replayed in full (no `before`), as `ac -c --rank R --step S` replays one
        replayed_in_full: set[int] = set()

        def replayer_for(
            n: int, spent_s: float, before_position: Before = None, also: Also = ()
        ) -> Replayer:
            entry = cards[n].entry
            if before_position is None:
                replayed_in_full.add(n)
            return _replayer(ctx, choice, entry, slices[n].where, spent_s, before_position, also)

        def replay_named(
            now: list[CardDiagnosis], shown: CardDiagnosis, named: set[tuple[str, str]]
        ) -> list[CardDiagnosis] | None:
            """The cards in `named` (but the one shown) replayed in full, each by itself, as
            its own `ac -c --rank R --step S` would; None when none is to be."""
            # one budget for every replay of the command (QA: each named card was given what
            # the slice pass left, together well past --replay-budget)
            if check.slice_replays is not None:
                spent = check.slice_replays.elapsed_s
            else:
                done = diagnosis.replays  # the shown card's, replayed by then
                spent = done.elapsed_s if done is not None else 0.0
            redone = list(now)
            for n, card in enumerate(now):
                if card is shown or (card.entry.rank, card.entry.step) not in named:
                    continue
                if n in replayed_in_full and card.diagnosis.replays is not None:
                    # replayed so already (QA Q26 #6: rank 1 step 0 was replayed twice, the
                    # second time with what budget was left, and lost what the first proved)
                    continue
                own = with_replays(
                    slices[n].diagnosis,
                    card.graph,
                    card.table.rows,
                    compare.rule,
                    hits,
                    replayer_for(n, spent),
                )
                spent += own.replays.elapsed_s if own.replays is not None else 0.0
                if own.replays is not None:  # counted by the replay line (QA Q21 #4)
                    check.named_replays.append(own.replays)
                redone[n] = replace(card, diagnosis=own)
            return redone if redone != now else None

        at = cards.index(chosen)
        diagnoses: list[Diagnosis] | None = None
        if choice.mode == "all":  # every card replayed
            diagnoses, check.slice_replays = replay_every_slice(
                slices, at, compare.rule, hits, replayer_for, choice.budget_s
            )
        else:
            first = with_replays(
                diagnosis, graph, table.rows, compare.rule, hits, replayer_for(at, 0)
            )
            if _goes_on(first, chosen, cards):
                diagnoses, check.slice_replays = replay_going_on(
                    slices, at, first, compare.rule, hits, replayer_for, choice.budget_s
                )
            else:
                diagnosis = first
        if diagnoses is not None:
            shown = shown_slice(diagnoses, at, [(c.entry.rank, c.entry.step) for c in cards])
            if shown != at and diagnoses[shown].causes:
                first_causes = diagnoses[at].causes
                moved = _moved_text(
                    cards[at], first_causes[0] if first_causes else None, diagnoses[shown].causes[0]
                )
            # the other cards are read by their replayed causes too (card_scope's notes)
            cards = [replace(c, diagnosis=d) for c, d in zip(cards, diagnoses, strict=True)]
            chosen, diagnosis = cards[shown], diagnoses[shown]
            entry, table, graph = chosen.entry, chosen.table, chosen.graph
    elif choice.mode != "none":
        replayer = _replayer(ctx, choice, entry, None)
        diagnosis = with_replays(diagnosis, graph, table.rows, compare.rule, hits, replayer)
    scope = later = None
    named_unproven: list[str] = []  # the other cards' `not proven` rows
    if several and chosen is not None and diagnosis.causes:
        scope = card_scope(compare.rule, diagnosis.causes[0], chosen, cards)
        later = other_step_faults(diagnosis.causes[0], chosen, cards)
        elsewhere = (scope.own_causes if scope is not None else []) + later.faults
        if replay_named is not None and choice.mode != "all":
            # a card named with a root cause of its own is replayed as `ac -c --rank R --step
            # S` replays it, so the two name the same op (QA: a later NaN birth, the
            # estimate's first, was named where the card's own replay proves an earlier fault)
            naming = {(e.rank, e.step) for e, _ in elsewhere}
            redone = replay_named(cards, chosen, naming)
            if redone is not None:
                cards = redone
                scope = card_scope(compare.rule, diagnosis.causes[0], chosen, cards)
                later = other_step_faults(diagnosis.causes[0], chosen, cards)
                elsewhere = (scope.own_causes if scope is not None else []) + later.faults
        if scope is not None or elsewhere:
            diagnosis.other_cards = [(e.rank, e.step, c) for e, c in elsewhere]
        if scope is not None and entry is not None:
            diagnosis.sharing_cards = [(rank, entry.step) for rank in scope.sharing]
        named_unproven = named_not_proven(elsewhere, cards)
    if check.slice_replays is not None and check.named_replays:
        check.slice_replays.replayed_by_themselves([p.where or "" for p in check.named_replays])
    unfinished = _replay_unfinished(diagnosis, check.slice_replays, check.named_replays)
    if unfinished is not None:
        diagnosis.findings = [with_replay_unfinished(f, *unfinished) for f in diagnosis.findings]
        check.replay_interrupted = unfinished[2]
    else:  # done, but on its candidates only: what it left is not cleared (QA Q28 #4)
        passes = check.slice_replays.passes if check.slice_replays is not None else []
        left = sum(p.left_out for p in passes)
        if not passes and diagnosis.replays is not None:
            left = diagnosis.replays.left_out
        diagnosis.findings = [with_replay_partial(f, left) for f in diagnosis.findings]
    record = diagnosis.record()
    if check.slice_replays is not None:
        done = check.slice_replays
        if record.replay is None:  # the slice shown was not replayed (its NaN/inf birth)
            label = entry.label if entry is not None else None
            record.replay = {"slice": label, "mode": done.mode, "replayed": 0}
        record.replay["slices"] = done.to_json()
        record.replay["interrupted"] = done.interrupted
        if done.mode != "all":  # the default, gone on from the first slice
            record.replay["slices_mode"] = done.mode
            record.replay["slices_before_fault"] = done.fault
            record.replay["slices_left"] = done.left
            record.replay["slices_not_begun"] = done.not_begun
    if check.named_replays and record.replay is not None:
        record.replay["named_slices"] = [p.to_json() for p in check.named_replays]
    if entry is not None and len(run.slices) > 1:  # a run of one dump dir keeps the old keys
        record.rank, record.step = entry.rank, entry.step
        for cause_json in record.root_causes:
            cause_json["rank"], cause_json["step"] = entry.rank, entry.step
    # the (rank, step) shown, named (and in the next commands) when the run has others
    named = entry if entry is not None and (several or left_out) else None
    lines = PanelLines(
        named.label if named is not None else None,
        moved if several else ONE_SELECTED,
        scope.verdict if scope is not None else None,
        scope.notes if scope is not None else [],
        later.notes if later is not None else [],
        unjudged_before(diagnosis.causes) + named_unproven,
    )
    if diagnosis.causes:
        record.lines = lines.to_json()
    compare.summary.diagnosis = record
    compare.summary.write(compare.summary_path)
    check.diagnosis = diagnosis
    check.summary = summary_of(ctx, table, None, [], limit, compare.summary)
    if diagnosis.causes:
        cause = diagnosis.causes[0]
        rows = [r for r in table.rows if r.op_name == cause.op]
        if not rows and cause.measured_by:  # a network input: the rows that measured it
            rows = [r for r in table.rows if r.tensor_index in set(cause.measured_by)]
        # the advisor's reading: its findings on this op, and network-wide ones (drift)
        readings = diagnosis.findings_for(cause.op) + [
            f for f in diagnosis.findings if f.detection == ACCUMULATED_DRIFT and f.op != cause.op
        ]
        check.root_cause = RootCausePanel(
            cause,
            graph.get(cause.op),
            rows,
            readings,
            _next_commands(ctx, cause, rows, named),
            lines,
        )
