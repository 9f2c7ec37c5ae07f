"""The statistics dump files (`.csv`) a tensor compare leaves out: a (rank, step) dump dir
holding tensor dumps and statistics dumps too (a targeted tensor dump beside the statistics
one, or a dump that wrote some ops' statistics only) is compared as a tensor dump, which
reads tensor files only. What it leaves out is said, never dropped without a word."""

from __future__ import annotations

from precision_shell.workspace.dump_index import DumpIndex


def statistics_left_out(where: str, dumps: DumpIndex) -> str | None:
    """The warning for the tensor compare of `dumps` (`where`: "debug_0 rank 1 step 1"),
    None when they hold no statistics file."""
    files = dumps.statistics_count()
    if not files:
        return None
    ops = [op for op in dumps.op_names() if dumps.stats_for_op(op) and not dumps.for_op(op)]
    alone = (
        f"; {len(ops)} ops have only a statistics dump there and were not compared at all"
        if ops
        else ""
    )
    return (
        f"{where}: {files} statistics dump files (.csv) not compared: a tensor compare reads "
        f"tensor dump files{alone} (vc -lt DIR -rt BENCHMARK_DIR compares a dir of statistics "
        "dumps)"
    )
