"""Rendering of `vc --across ranks`: which ranks leave the reference rank, and where."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from precision_shell.compare.rank_divergence import RankDivergenceResult, rank_list_text
from precision_shell.render.columns import number_column, path_text, text_column
from precision_shell.render.output import renders


def _number(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


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
            title=f"ranks that leave rank {result.against}",
            title_justify="left",
            show_edge=False,
            pad_edge=False,
        )
        number_column(table, "rank", justify="left")
        number_column(table, "Index", justify="left")
        text_column(table, f"first op where it leaves rank {result.against}")
        number_column(table, "cosine")
        number_column(table, "max abs err")
        for d in result.divergence:
            table.add_row(
                d.rank,
                "" if d.index is None else str(d.index),
                Text(d.first_op),
                _number(d.cosine, 6),
                _number(d.max_abs_error, 6),
            )
        console.print(table)
    agreeing = result.agreeing
    if agreeing:
        who = "rank {} agrees" if len(agreeing) == 1 else "ranks {} agree"
        console.print(
            Text(f"{who.format(rank_list_text(agreeing))} with rank {result.against}"),
            style="green",
        )
    for pair, run in result.compares:
        console.print(
            Text.assemble((f" rank {pair.rank} csv ", "bold"), path_text(run.csv_path)),
            soft_wrap=True,
        )
    console.print(Text(f"summary: {result.summary_path}"), style="dim", soft_wrap=True)
