"""Diagnosis of a statistics compare: the suspects, recorded in the summary, and the targeted
tensor dump config written beside it (`<result dir>/dump_config/`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from precision_shell.compare.results.summary import DiagnosisRecord, RunSummary
from precision_shell.compare.statistics.dump_config import (
    DEFAULT_DEPTH,
    DEFAULT_DUMP_PATH,
    DumpConfigFiles,
    plan_dump_config,
    write_dump_config,
)
from precision_shell.compare.statistics.run import StatisticsCompare, StatisticsCompareResult
from precision_shell.compare.statistics.suspects import Suspect, rank_suspects
from precision_shell.compare.statistics.table import StatisticsRow
from precision_shell.workspace.graph_index import GraphIndex

DUMP_CONFIG_DIR = "dump_config"


@dataclass
class StatisticsDiagnosis:
    suspects: list[Suspect]
    compare: StatisticsCompare
    dump_config: DumpConfigFiles | None
    where: str | None = None  # "rank 1 step 0" when several dumps were compared


def record(
    suspects: list[Suspect], rows: list[StatisticsRow], where: StatisticsCompare
) -> DiagnosisRecord:
    causes = [s.to_json() for s in suspects]
    slice_ = where.where
    if slice_ is not None:
        for cause in causes:
            cause["rank"], cause["step"] = slice_.rank, slice_.step
    first = next((r.op_name for r in rows if r.kind == "output" and r.deviates), None)
    if slice_ is None:
        return DiagnosisRecord(causes, [], first)
    return DiagnosisRecord(causes, [], first, rank=slice_.rank, step=slice_.step)


def config_for(
    suspects: list[Suspect],
    rows: list[StatisticsRow],
    graph: GraphIndex | None,
    out_dir: Path,
    step: str,
    depth: int = DEFAULT_DEPTH,
    dump_path: str = DEFAULT_DUMP_PATH,
) -> DumpConfigFiles | None:
    if not suspects:
        return None
    plan = plan_dump_config(rows, [s.op for s in suspects], graph, depth, step, dump_path)
    return write_dump_config(plan, out_dir)


def diagnose_statistics(
    result: StatisticsCompareResult, depth: int = DEFAULT_DEPTH, dump_path: str = DEFAULT_DUMP_PATH
) -> StatisticsDiagnosis:
    """Suspects of the first (rank, step) compare that has any (in compare order), recorded as
    the summary's root causes; its dump config written into the result dir."""
    chosen = result.compares[0]
    suspects: list[Suspect] = []
    for compare in result.compares:
        found = rank_suspects(compare.rows, compare.graph)
        if found:
            chosen, suspects = compare, found
            break
    summary: RunSummary = result.summary
    summary.diagnosis = record(suspects, chosen.rows, chosen)
    summary.write(result.summary_path)
    step = chosen.where.step if chosen.where is not None else "0"
    files = config_for(
        suspects,
        chosen.rows,
        chosen.graph,
        result.out_dir / DUMP_CONFIG_DIR,
        step,
        depth,
        dump_path,
    )
    where = None
    if len(result.compares) > 1 and chosen.where is not None:
        where = f"rank {chosen.where.rank} step {chosen.where.step}"
    return StatisticsDiagnosis(suspects, chosen, files, where)
