"""Rendering of `vc --across ranks`: which ranks leave the reference rank, and where."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from precision_shell.compare.rank_divergence import (
    RankDivergence,
    RankDivergenceResult,
    rank_list_text,
)
from precision_shell.render.columns import number_column, path_text, text_column
from precision_shell.render.numbers import fmt_num
from precision_shell.render.output import renders


def _failing_text(divergence: RankDivergence) -> Text:
    point, first = divergence.failing, divergence.first
    if point is None and divergence.partial is not None:
        done, total = divergence.partial
        return Text(f"not within the first {done:,} of {total:,} files (partial)", style="yellow")
    if point is None:
        return Text("never (within the thresholds)", style="green")
    if (point.op, point.index) == (first.op, first.index):  # not ==: a NaN cosine is no equal
        return Text("the same op")
    index = "" if point.index is None else f"[{point.index}] "
    return Text(f"{index}{point.op} (cosine {fmt_num(point.cosine)})")


@renders(RankDivergenceResult)
def render_rank_divergence(console: Console, result: RankDivergenceResult) -> None:
    compared = [pair.rank for pair, _ in result.compares]
    ranks = "rank" if len(compared) == 1 else "ranks"
    console.print(
        Text(
            f"vc --across ranks: {result.run_name} step {result.step}, {ranks} "
            f"{rank_list_text(compared)} against rank {result.against} "
            f"({result.summary.rule.describe()})"
        )
    )
    for warning in result.warnings:
        console.print(Text(warning), style="yellow")
    if result.divergence:
        table = Table(
            title=f"ranks that differ from rank {result.against} (first output whose values "
            "differ at all, then the first that crosses the thresholds)",
            title_justify="left",
            show_edge=False,
            pad_edge=False,
        )
        number_column(table, "rank", justify="left")
        number_column(table, "Index", justify="left")
        text_column(table, f"first op that differs from rank {result.against}")
        number_column(table, "cosine")
        number_column(table, "max abs err")
        text_column(table, "crosses the thresholds at")
        for d in result.divergence:
            table.add_row(
                d.rank,
                "" if d.first.index is None else str(d.first.index),
                Text(d.first.op),
                fmt_num(d.first.cosine),
                fmt_num(d.first.max_abs_error),
                _failing_text(d),
            )
        console.print(table)
    if result.reference_is_odd:
        console.print(
            Text(
                f"ranks {rank_list_text(compared)} give the same numbers against rank "
                f"{result.against} on every output: they agree with each other, and rank "
                f"{result.against} is the one that differs",
                style="bold yellow",
            )
        )
    agreeing = result.agreeing
    if agreeing:
        who = "rank {} matches" if len(agreeing) == 1 else "ranks {} match"
        console.print(
            Text(
                f"{who.format(rank_list_text(agreeing))} rank {result.against} on every "
                "compared output",
                style="green",
            )
        )
        # QA: beside "matches", vcs counted its rows failing: the same NaN/inf on both ranks
        for pair, run in result.compares:
            failing = run.tally.failing
            if pair.rank in agreeing and failing:
                n = len(failing)
                console.print(
                    Text(
                        f"rank {pair.rank}: {n} output{'s' if n != 1 else ''} "
                        f"{'fail' if n != 1 else 'fails'} the thresholds against rank "
                        f"{result.against} all the same: both hold the same NaN/inf (first: "
                        f"{failing[0].op_name})",
                        style="yellow",
                    )
                )
    nothing = result.compared_nothing
    if nothing:
        who = "rank {} has" if len(nothing) == 1 else "ranks {} have"
        console.print(
            Text(
                f"{who.format(rank_list_text(nothing))} no output compared with rank "
                f"{result.against}: nothing is known of them (the CSV says why)",
                style="bold yellow",
            )
        )
    for pair, run in result.compares:
        console.print(
            Text.assemble((f" rank {pair.rank} csv ", "bold"), path_text(run.csv_path)),
            soft_wrap=True,
        )
    console.print(Text(f"summary: {result.summary_path}"), style="dim", soft_wrap=True)
