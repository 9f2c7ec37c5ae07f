"""The plan's graph-and-benchmark memo, kept in the index cache: a new command (or shell)
plans from it, and anything it depends on changing makes it start over."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from precision_shell.compare.pipeline.plan import GraphPlanMemo, benchmark_plan
from precision_shell.compare.pipeline.plan_memos import KIND, PlanMemos, _fingerprint
from precision_shell.formats.benchmark import scan_benchmark_dir
from precision_shell.workspace.graph_index import GraphIndex
from precision_shell.workspace.workspace import Workspace
from tests.workspace.file_times import settle


def _memo(ws: Workspace) -> tuple[PlanMemos, GraphIndex, GraphPlanMemo]:
    """A new command's memos, the run's dump graph, and that graph's memo from them."""
    graph = ws.run().dump_graph()
    memos = PlanMemos(ws)
    return memos, graph, memos.memo_for(graph, ws.benchmark)


def _plan(ws: Workspace):
    memos, graph, memo = _memo(ws)
    plan = benchmark_plan(ws, ws.run(), graph, memo=memo)
    memos.save()
    return plan, memo


def _fresh_plan(ws: Workspace):
    """The plan made without any memo: what every memo'd plan must equal."""
    run = ws.run()
    return benchmark_plan(ws, run, run.dump_graph(), memo=GraphPlanMemo())


def _same(plan, other) -> None:
    assert plan.tasks == other.tasks
    assert [t.last_uses for t in plan.tasks] == [t.last_uses for t in other.tasks]


def _stored(root: Path) -> list[Path]:
    return sorted((root / "precision_data/temp/index_cache").glob(f"{KIND}-*.pkl"))


def test_a_new_shell_plans_from_the_stored_memo(tiny_demo):
    root, _ = tiny_demo
    settle(root)
    first, memo = _plan(Workspace.open(root))
    assert memo.rows and len(_stored(root)) == 1

    ws = Workspace.open(root)
    _, _, loaded = _memo(ws)
    assert loaded.rows == memo.rows  # there before any plan ran
    assert loaded is not memo
    plan, _ = _plan(ws)
    _same(plan, first)
    _same(plan, _fresh_plan(ws))
    # the same index, a later command: from the cache again (memos go with their command)
    again, later = _plan(ws)
    assert later is not memo and later.rows == memo.rows
    _same(again, first)


def test_one_command_keeps_one_memo_per_graph(tiny_demo):
    root, _ = tiny_demo
    settle(root)
    ws = Workspace.open(root)
    memos, graph, memo = _memo(ws)
    assert memos.memo_for(graph, ws.benchmark) is memo
    # another benchmark dir (as -rt gives): a memo of its own, never kept
    other = scan_benchmark_dir(ws.layout.benchmark_dir)
    assert memos.memo_for(graph, other) is not memo
    assert memos.memo_for(graph, other) is not memos.memo_for(graph, other)


def test_a_newer_benchmark_file_makes_the_memo_start_over(tiny_demo):
    root, _ = tiny_demo
    settle(root)
    before, _ = _plan(Workspace.open(root))
    row = next(r for t in before.tasks for r in t.outputs if r.benchmark_path)
    old = Path(row.benchmark_path)
    op, index, stamp, ext = old.name.rsplit(".", 3)
    newer = old.with_name(f"{op}.{index}.{int(stamp) + 1}.{ext}")
    shutil.copyfile(old, newer)
    settle(root)

    ws = Workspace.open(root)
    plan, memo = _plan(ws)
    paths = {r.benchmark_path for t in plan.tasks for r in t.rows()}
    assert str(newer) in paths and str(old) not in paths
    _same(plan, _fresh_plan(ws))


def test_a_graph_changed_since_makes_the_memo_start_over(tiny_demo):
    root, _ = tiny_demo
    settle(root)
    ws = Workspace.open(root)
    _plan(ws)
    graph_file = Path(ws.run().dump_graph().source)
    graph_file.write_bytes(graph_file.read_bytes())  # same content, new mtime
    settle(root)  # a minute old, but not the minute it was stored at
    stored_fp = ws.pieces[("graph", str(graph_file))].fingerprint

    ws2 = Workspace.open(root)
    assert ws2.pieces[("graph", str(graph_file))].fingerprint != stored_fp
    _, _, memo = _memo(ws2)
    assert memo.rows == {}


def test_files_too_recent_to_trust_are_planned_for_this_shell_only(tiny_demo):
    root, _ = tiny_demo
    settle(root)
    bench_dir = Workspace.open(root).layout.benchmark_dir
    now = time.time_ns() + 10**9  # changed within the tick the index is built in
    os.utime(bench_dir, ns=(now, now))
    plan, memo = _plan(Workspace.open(root))
    assert memo.rows
    assert _stored(root) == []
    _same(plan, _fresh_plan(Workspace.open(root)))


def test_a_stored_memo_of_the_wrong_shape_is_not_used(tiny_demo):
    root, _ = tiny_demo
    settle(root)
    ws = Workspace.open(root)
    graph = ws.run().dump_graph()
    fingerprint = _fingerprint(ws, graph, ws.benchmark)  # what memo_for reads it under
    assert fingerprint is not None and ws.cache is not None
    bad = [
        {"no such op": ((), ())},
        {next(iter(graph.names())): (("not a row",), ())},
        ["a", "list"],
    ]
    for state in bad:
        ws.cache.store(KIND, Path(graph.source), fingerprint, state)
        fresh = Workspace.open(root)
        assert _memo(fresh)[2].rows == {}
        plan, _ = _plan(fresh)  # and the plan is right (and stores a good memo again)
        _same(plan, _fresh_plan(fresh))
