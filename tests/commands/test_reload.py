"""Files changed under a running shell: the next command sees them (`vc` after a benchmark
is re-harvested), the metric memo keys on the file's content identity, and `reload`."""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path

import numpy as np
import pytest

from precision_shell.commands.system import WorkspaceReloaded
from precision_shell.compare.pipeline.plan import MappingRow
from precision_shell.compare.pipeline.worker import _file_identity, _MetricMemo
from precision_shell.render.output import Renderer, make_console
from tests.commands.shell_fixture import POOL, benchmark_path, open_shell, run_ok
from tests.workspace.file_times import settle


def _rows(result) -> list[list[str]]:
    with open(result.primary.csv_path, newline="", encoding="utf-8") as fh:
        lines = list(csv.reader(fh))
    header = lines[0]
    return [dict(zip(header, cells, strict=False)) | {"_cells": cells} for cells in lines[1:]]


def _row(rows, tensor_index: str) -> dict:
    (row,) = [r for r in rows if r["TensorIndex"] == tensor_index]
    return row


def _no_missing_file(rows) -> None:
    assert not [r for r in rows if "No such file" in r["CompareFailReason"]]


def _negate_benchmark(path: Path, to: Path | None = None) -> None:
    """Write -values: the cosine against any device tensor flips its sign, the size stays."""
    values = np.load(path)
    if to is None or to == path:
        np.save(path, -values)
    else:
        np.save(to, -values)


@pytest.fixture
def shell_on_demo(tiny_demo):
    root, manifest = tiny_demo
    settle(root)
    shell = open_shell(root)
    first = _rows(run_ok(shell, "vc"))
    row = _row(first, f"{POOL}:output:0")
    return root, shell, row


def test_vc_after_a_benchmark_is_rewritten_in_place_uses_the_new_values(shell_on_demo):
    root, shell, before = shell_on_demo
    bench = benchmark_path(root, before["GroundTruth"])
    _negate_benchmark(bench)  # same name, same size: only the content (and mtime) changed
    rows = _rows(run_ok(shell, "vc"))
    after = _row(rows, f"{POOL}:output:0")
    assert float(after["CosineSimilarity"]) == pytest.approx(
        -float(before["CosineSimilarity"]), abs=2e-6
    )
    _no_missing_file(rows)


def test_vc_after_delete_and_recreate_with_the_same_size_uses_the_new_values(shell_on_demo):
    root, shell, before = shell_on_demo
    bench = benchmark_path(root, before["GroundTruth"])
    st = bench.stat()
    values = np.load(bench)
    bench.unlink()
    np.save(bench, -values)
    assert bench.stat().st_size == st.st_size
    # Only the mtime tells, whatever the clock's granularity.
    os.utime(bench, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    rows = _rows(run_ok(shell, "vc"))
    after = _row(rows, f"{POOL}:output:0")
    assert float(after["CosineSimilarity"]) == pytest.approx(
        -float(before["CosineSimilarity"]), abs=2e-6
    )
    _no_missing_file(rows)


def test_vc_after_the_benchmark_dir_is_harvested_again_finds_the_new_files(shell_on_demo):
    """The `rm -rf tf/dump/* && tf_dump` loop: new files, new timestamps in their names."""
    root, shell, before = shell_on_demo
    bench = benchmark_path(root, before["GroundTruth"])
    stem, _index, timestamp, _ = bench.name.rsplit(".", 3)
    renamed = bench.with_name(f"{stem}.0.{int(timestamp) + 1000}.npy")
    _negate_benchmark(bench, to=renamed)
    bench.unlink()
    rows = _rows(run_ok(shell, "vc"))
    _no_missing_file(rows)
    after = _row(rows, f"{POOL}:output:0")
    assert after["CompareFailReason"] == before["CompareFailReason"]
    assert float(after["CosineSimilarity"]) == pytest.approx(
        -float(before["CosineSimilarity"]), abs=2e-6
    )
    assert shell.context.workspace.benchmark_file(before["GroundTruth"], 0).path == str(renamed)


def test_the_metric_memo_keys_on_the_file_content_not_its_path(tmp_path):
    memo = _MetricMemo()
    path = tmp_path / "op.0.1.npy"
    device = np.arange(1, 9, dtype=np.float32)
    np.save(path, device)
    mapping = MappingRow("op", str(path))
    first = memo.compute(device, np.load(path), mapping, None, _file_identity(str(path)))
    assert first.cosine == pytest.approx(1.0)
    reference = device[::-1].copy()  # same path, same shape and dtype, other values
    st = path.stat()
    np.save(path, reference)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    second = memo.compute(device, np.load(path), mapping, None, _file_identity(str(path)))
    expected = float(device @ reference) / float(np.linalg.norm(device) * np.linalg.norm(reference))
    assert second.cosine == pytest.approx(expected, rel=1e-6)
    assert not math.isclose(second.cosine, first.cosine)
    # Unchanged file, same device values: the memo answers (the very same row).
    assert memo.compute(device, np.load(path), mapping, None, _file_identity(str(path))) is second


def test_reload_reads_everything_again_and_reports_counts_and_warnings(tiny_demo, capsys):
    root, manifest = tiny_demo
    shell = open_shell(root)
    run_ok(shell, "ls")
    fusion = root / "precision_data" / "fusion" / "fusion_result.json"
    fusion.write_text("[1, 2")
    result = run_ok(shell, "reload")
    assert isinstance(result, WorkspaceReloaded)
    n_ops = len(manifest.device_ops)
    dumped = sum(1 for op in manifest.device_ops if op.dump_file)
    assert [(name, graphs, ops) for name, graphs, ops, _ in result.summary.runs] == [
        ("debug_0", 1, n_ops),
        ("debug_1", 1, n_ops),
    ]
    assert result.summary.runs[0][3] == dumped
    # One tensor per key (op, output index): dense_BiasAdd.0 was harvested twice.
    bench_dir = root / "precision_data" / "tf" / "dump"
    bench_files = len({p.name.rsplit(".", 2)[0] for p in bench_dir.glob("*.npy")})
    assert result.summary.benchmark_tensors == bench_files
    assert result.summary.fusion_passes == 0
    (warning,) = result.warnings
    assert warning.startswith(f"{fusion}:")
    wide = make_console(False, width=1000)  # one warning, one line
    Renderer(wide, make_console(False, stderr=True)).result(result)
    out = capsys.readouterr().out
    assert "reloaded: every file read again" in out
    assert f"benchmark tensors: {bench_files}" in out
    assert [line for line in out.splitlines() if line.startswith("warning:")] == [
        f"warning: {warning}"
    ]


def test_reload_ignores_the_on_disk_cache(tiny_demo):
    root, _ = tiny_demo
    shell = open_shell(root)
    shell.context.use_cache = True
    run_ok(shell, "ls")
    result = run_ok(shell, "reload")
    ws = shell.context.workspace
    assert ws.cache.hits == 0 and ws.cache.misses > 0
    assert result.warnings == []
