"""`scripts/bench_results.py`'s workspace at a small size: the result it generates is what
`vcs` and `report` find by default, with the rows, failing outputs and NaN/inf it claims."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from precision_shell.compare.results.schema import read_result_csv
from precision_shell.compare.results.thresholds import ThresholdRule
from tests.commands.shell_fixture import open_shell, run_ok

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_results.py"


def _bench_module():
    spec = importlib.util.spec_from_file_location("bench_results", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_bench_workspace_is_what_vcs_and_report_read(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    bench = _bench_module()
    root, csv_path = bench.bench_workspace(ops=500, rows_per_op=3, failing=12)
    assert bench.bench_workspace(ops=500, rows_per_op=3, failing=12) == (root, csv_path)  # cached
    table = read_result_csv(csv_path)
    assert len(table.rows) == 1500 and table.warnings == []
    rule = ThresholdRule({"CosineSimilarity": 0.98, "RelativeEuclideanDistance": 0.05})
    failing = {r.op_name for r in table.rows if r.kind == "output" and rule.fails(r)}
    nonfinite = {r.op_name for r in table.rows if r.nonfinite("CosineSimilarity")}
    assert len(failing - nonfinite) == 12 and len(nonfinite) == 1
    assert sum(r.constant_input for r in table.rows) > 0
    shell = open_shell(root)
    summary = run_ok(shell, "vcs")
    assert summary.path == csv_path and summary.failing_total == len(failing)
    written = run_ok(shell, "report")
    assert written.csv_path == csv_path and written.failing_outputs == len(
        [r for r in table.rows if r.kind == "output" and rule.fails(r)]
    )
