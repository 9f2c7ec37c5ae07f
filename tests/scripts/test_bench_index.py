"""`scripts/bench_index.py`'s multi-rank workspace, at a small size: the layout it generates
is what the benchmark claims to measure (ranks x steps x ops dump files, no warnings)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from precision_shell.workspace.workspace import Workspace
from tests.workspace.file_times import settle

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_index.py"


def _bench_module():
    spec = importlib.util.spec_from_file_location("bench_index", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_multi_rank_workspace_has_every_rank_and_step(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    bench = _bench_module()
    root = tmp_path / "precision_data"
    assert bench.write_multi_rank(root, 40, 3, 2) == 240
    ws = Workspace.open(root)
    assert ws.warnings == []
    run = ws.run()
    assert run.op_count() == 40
    assert run.ranks() == ["0", "1", "2"]
    assert [run.steps(r) for r in run.ranks()] == [["0", "5"]] * 3
    assert len(run.dumps) == 40 and len(run.all_dumps) == 240
    assert ws.summary().rank_steps == {"debug_0": {r: ["0", "5"] for r in ("0", "1", "2")}}
    name = bench.op_name(7)
    assert [s.rank for s, refs in ws.dump_files_everywhere(run, name) if len(refs) == 1] == [
        "0",
        "0",
        "1",
        "1",
        "2",
        "2",
    ]


def test_bench_multi_rank_times_a_cold_and_a_warm_open(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    bench = _bench_module()
    write = bench.write_multi_rank

    def write_aged(root: Path, *args: int) -> int:
        n = write(root, *args)
        settle(root)  # files this fresh are not cached (racy mtimes): the warm open would miss
        return n

    monkeypatch.setattr(bench, "write_multi_rank", write_aged)
    cold, warm = bench.bench_multi_rank(tmp_path, 20, 2, 2)
    assert cold > 0 and warm > 0
    assert capsys.readouterr().out.startswith(
        "generated 2 ranks x 2 steps x 20 ops (80 dump files)"
    )
