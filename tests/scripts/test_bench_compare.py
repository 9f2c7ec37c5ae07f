"""`scripts/bench_compare.py`'s 8-rank twin: hard links of the workspace, rank 0's dump dir
linked as ranks 1-7, which `vc --rank all` compares as 8 ranks with the same rows each."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from tests.commands.shell_fixture import CONV2, dump_path, open_shell, run_ok

ROOT = Path(__file__).resolve().parents[2]


def _bench_module():
    spec = importlib.util.spec_from_file_location(
        "bench_compare", ROOT / "scripts" / "bench_compare.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ranks_twin_links_rank_0_as_8_ranks(tiny_demo, tmp_path):
    root, manifest = tiny_demo
    workspace = root / "precision_data"
    twin = _bench_module().ranks_twin(workspace, tmp_path / "twin")
    assert twin == tmp_path / "twin" / "precision_data"
    original = dump_path(root, manifest, CONV2)
    device = original.parents[3]
    ranks = sorted(p.name for p in (twin / device.parent.relative_to(workspace)).iterdir())
    assert ranks == [str(r) for r in range(8)]
    for rank in range(8):
        copy = (
            twin / device.parent.relative_to(workspace) / str(rank) / original.relative_to(device)
        )
        assert os.path.samefile(copy, original)  # a hard link: no extra disk
    assert _bench_module().ranks_twin(workspace, tmp_path / "twin") == twin  # made once
    result = run_ok(open_shell(twin.parent), "vc -r debug_0 --rank all")
    results = result.summary.results
    assert [r["rank"] for r in results] == [str(r) for r in range(8)]
    assert {r["rows"] for r in results} == {result.primary.tally.rows}
