"""Rendered `ls` / `ni` / `pt` / `cp` / `dc` / `help` / `run` output shows the computed numbers."""

from __future__ import annotations

import dataclasses
import os
import re

import numpy as np
import pytest
from rich.console import Console

from precision_shell.commands.graph import NodeInfoResult, OpListing
from precision_shell.render.numbers import fmt_fixed, fmt_num
from precision_shell.render.output import Renderer
from tests.commands.shell_fixture import (
    CONV2,
    DENSE,
    POOL,
    benchmark_path,
    decoded,
    dump_path,
    fractal_z_to_nchw,
    nc1hwc0_to_nhwc,
    numpy_stats,
    open_shell,
    run_ok,
)


@pytest.fixture(scope="module")
def demo(tiny_demo_shared):
    root, manifest = tiny_demo_shared
    return root, manifest, open_shell(root)


def render(result) -> str:
    console = Console(record=True, width=200, color_system=None, highlight=False)
    Renderer(console, console).result(result)
    return console.export_text()


def _row(text: str, first_cell: str) -> list[str]:
    """Cells of the table row whose first cell is `first_cell` (panel borders dropped)."""
    for line in text.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line)]
        cells = [c for c in cells if c]
        if cells and cells[0] == first_cell:
            return cells
    raise AssertionError(f"no row {first_cell!r} in:\n{text}")


def _grid_row(text: str, first_cell: str) -> list[str]:
    """Cells of a borderless grid row (cells apart by 2+ spaces) starting with `first_cell`."""
    for line in text.splitlines():
        cells = [c for c in re.split(r" {2,}", line.strip(" │")) if c]
        if cells and cells[0] == first_cell:
            return cells
    raise AssertionError(f"no row {first_cell!r} in:\n{text}")


def _stats_text(values: np.ndarray) -> str:
    s = numpy_stats(values)
    return (
        f"shape {list(values.shape)}  dtype {values.dtype}  max {fmt_num(s.max)}  "
        f"min {fmt_num(s.min)}  mean {fmt_num(s.mean)}  std {fmt_num(s.std)}  "
        f"nan {s.nan}  inf {s.inf}"
    )


def test_ni_panel_shows_ports_and_the_numpy_stats_of_dump_and_benchmark(demo):
    root, manifest, shell = demo
    text = render(run_ok(shell, f"ni {CONV2}"))
    assert f"─ {CONV2} ─" in text
    assert _grid_row(text, "type") == ["type", "Conv2D"]
    assert _grid_row(text, "original ops") == [
        "original ops",
        "conv2/Conv2D, bn2/FusedBatchNormV3, relu2/Relu",
    ]
    assert _grid_row(text, "fusion pass")[1] == "ConvBatchnormFusionPass,AutomaticUbFusion"
    path = dump_path(root, manifest, CONV2)
    assert f"device dump {path.name}" in text
    lines = [ln for ln in text.splitlines() if "input 1" in ln]
    port, tensor = lines  # the port row, then the dump tensor row
    assert (
        "FRACTAL_Z" in port and "[9, 1, 16, 16]" in port and "conv2/Conv2D/folded_filter:0" in port
    )
    # stats of the filter in its benchmark layout (HWCN), pads cut off
    w = numpy_stats(fractal_z_to_nchw(decoded(path, "input", 1), 8, 8, 3, 3).transpose(2, 3, 1, 0))
    cells = [c.strip() for c in re.split(r"[│┃]", tensor) if c.strip()]
    assert cells == ["input 1", "[3, 3, 8, 8]", "FLOAT16", "FRACTAL_Z→HWCN", fmt_num(w.max),
                     fmt_num(w.min), fmt_num(w.mean), "0/0"]  # fmt: skip
    (bench_header,) = [ln for ln in text.splitlines() if "┃ file" in ln]
    assert [c.strip() for c in re.split(r"[│┃]", bench_header) if c.strip()] == [
        "tensor", "file", "shape", "dtype", "max", "min", "mean", "nan/inf"
    ]  # fmt: skip
    bench = benchmark_path(root, "relu2/Relu")
    b = numpy_stats(np.load(bench))
    out_rows = [
        [c.strip() for c in re.split(r"[│┃]", ln) if c.strip()]
        for ln in text.splitlines()
        if bench.name in ln
    ]
    assert out_rows == [["output 0", bench.name, "[2, 4, 4, 8]", "float32", fmt_num(b.max),
                         fmt_num(b.min), fmt_num(b.mean), "0/0"]]  # fmt: skip


def test_ni_candidates_are_listed_when_nothing_matches_exactly(demo):
    _, _, shell = demo
    outcome = shell.execute("ni MaxPo")
    assert outcome.error == f"ni: no op named 'MaxPo'; 1 op(s) contain it: {POOL}"
    text = render(outcome.result)
    assert text.splitlines() == [
        "no op named exactly 'MaxPo'; possible ops:",
        f"debug_0 [MaxPool] {POOL}",
        f"debug_1 [MaxPool] {POOL}",
    ]


def test_ls_views(demo):
    _, manifest, shell = demo
    listing = render(run_ok(shell, "ls -k te_maxpool -g " + manifest.graph_name))
    assert listing.splitlines() == [
        f"debug_0 [MaxPool] {POOL}",
        f"debug_1 [MaxPool] {POOL}",
        f"2 op(s) match kernel~'te_maxpool', graph~'{manifest.graph_name}'",
    ]
    fused = render(run_ok(shell, "ls -n bn2/fused"))
    assert fused.splitlines() == [
        f"debug_0 [Conv2D][ConvBatchnormFusionPass,AutomaticUbFusion] {CONV2} "
        "(fuses bn2/FusedBatchNormV3)",
        f"debug_1 [Conv2D][ConvBatchnormFusionPass,AutomaticUbFusion] {CONV2} "
        "(fuses bn2/FusedBatchNormV3)",
        "2 op(s) match name~'bn2/fused'",
    ]
    counts = render(run_ok(shell, "ls"))
    assert _row(counts, "Conv2D") == ["Conv2D", "3", "3"]
    n = str(len(manifest.device_ops))
    assert _row(counts, "total") == ["total", n, n]


def test_pt_view_shows_numpy_stats_and_the_preview(demo):
    root, manifest, shell = demo
    result = run_ok(shell, f"pt {DENSE}")
    text = render(result)
    values = decoded(dump_path(root, manifest, DENSE), "output", 0)
    lines = text.splitlines()
    assert lines[0] == result.items[0].label
    assert lines[1] == f"  {_stats_text(values)}  layout ND"
    preview = ", ".join(fmt_num(float(v)) for v in values.reshape(-1)[:20])
    assert lines[2] == f"  values: [{preview}]"  # 20 values: all of them, no "..."
    assert lines[3] == f"  saved {result.items[0].text_file}"


def test_pt_view_marks_a_cut_preview(demo):
    root, manifest, shell = demo
    text = render(run_ok(shell, f"pt {CONV2}"))
    # the preview is of the benchmark layout (NHWC), the C0 pad cut off
    values = nc1hwc0_to_nhwc(decoded(dump_path(root, manifest, CONV2), "output", 0), 8).reshape(-1)
    preview = ", ".join(fmt_num(float(v)) for v in values[:20])
    assert f"  values: [{preview} ...]" in text.splitlines()


def test_cp_view_shows_the_worst_rows_and_metrics_as_computed(demo):
    root, manifest, shell = demo
    npy = benchmark_path(root, "dense/BiasAdd")
    text = render(run_ok(shell, f"cp {DENSE} {npy.name} -p 3"))
    x = decoded(dump_path(root, manifest, DENSE), "output", 0).astype(np.float64)
    y = np.load(npy).astype(np.float64)
    diff = np.abs(x - y)
    lines = text.splitlines()
    assert lines[1] == f"       {_stats_text(x.astype(np.float16))}"
    assert lines[3] == f"       {_stats_text(y.astype(np.float32))}"
    assert "3 largest differences" in text and "first 3 elements" in text
    top = np.argsort(-diff.reshape(-1))[:3]
    for flat in top:
        idx = np.unravel_index(flat, x.shape)
        cells = _row(text, str([int(i) for i in idx]))
        assert cells[1:] == [fmt_num(x[idx]), fmt_num(y[idx]), fmt_num(diff[idx]),
                             fmt_num(diff[idx] / abs(y[idx]))]  # fmt: skip
    xs, ys = x.reshape(-1), y.reshape(-1)
    cosine = float(np.sum(xs / np.linalg.norm(xs) * (ys / np.linalg.norm(ys))))
    bad = int((diff > 1e-3 + 1e-3 * np.abs(y)).sum())  # float16 vs float32: float16's defaults
    assert "allclose: no" in lines
    assert (
        f"cosine {fmt_fixed(cosine)}  max abs error {fmt_num(diff.max())}  "
        f"max relative error {fmt_num((diff / np.abs(y)).max())}  error ratio "
        f"{fmt_fixed(bad / 20)} ({bad}/20 with |l-r| > 0.001 + 0.001*|r|)"
    ) in lines


def test_dc_view_lists_each_file_and_the_notes(demo):
    root, manifest, shell = demo
    result = run_ok(shell, f"dc {CONV2} -f NCHW")
    lines = render(result).splitlines()
    name = dump_path(root, manifest, CONV2).name
    out = root / "precision_data" / "temp" / "decode"
    assert lines[0] == f"{name} input 0 -> {out}/{name}.input.0.NCHW.npy  [2, 8, 4, 4] NCHW"
    assert lines[1] == f"{name} input 1 -> {out}/{name}.input.1.NCHW.npy  [8, 8, 3, 3] NCHW"
    assert (
        lines[4] == f"{name} input 2: kept ND: NCHW needs a 4-D tensor; the original shape is [8]"
    )
    assert lines[5] == f"4 file(s) written under {out}"


def test_help_views(demo):
    _, _, shell = demo
    index = render(run_ok(shell, "help"))
    assert (
        _grid_row(index, "ni")[1]
        == "ni [-n] NAME [-g GRAPH] [-r RUN] [-a [ATTR]] [-s DEPTH] [--rank R] [--step S]"
    )
    assert index.splitlines()[-1] == "help CMD shows every flag of CMD."
    one = render(run_ok(shell, "help ni")).splitlines()
    assert (
        one[0]
        == "usage: ni [-n] NAME [-g GRAPH] [-r RUN] [-a [ATTR]] [-s DEPTH] [--rank R] [--step S]"
    )
    assert one[1] == ""
    assert sum(ln.startswith("usage:") for ln in one) == 1  # argparse's own usage is dropped
    assert any(ln.strip().startswith("-a [ATTR], --attrs [ATTR]") for ln in one)


def test_run_view_prints_stdout_then_stderr(demo):
    _, _, shell = demo
    outcome = shell.execute("run echo out; echo err >&2")
    assert render(outcome.result).splitlines() == ["out", "err"]


def test_brackets_in_names_and_queries_print_as_typed_not_as_markup(demo):
    _, _, shell = demo
    listing = run_ok(shell, "ls -n conv2/Conv2Drelu2")
    odd = dataclasses.replace(listing.rows[0][1], name="a[/x]b[bold]c")
    text = render(OpListing({"name": "[/x]"}, [("debug_0", odd)]))
    assert text.splitlines() == [
        "[Conv2D][ConvBatchnormFusionPass,AutomaticUbFusion] a[/x]b[bold]c",
        "1 op(s) match name~'[/x]'",
    ]
    text = render(NodeInfoResult("[/x]", candidates=[("debug_0", odd)]))
    assert text.splitlines()[0] == "no op named exactly '[/x]'; possible ops:"
    (info,) = run_ok(shell, f"ni {CONV2} -a").nodes
    info.record = odd
    info.attrs = {"[/k]": "[bold]v"}
    text = render(NodeInfoResult("x", nodes=[info]))
    assert "─ a[/x]b[bold]c ─" in text
    assert _row(text, "[/k]") == ["[/k]", "'[bold]v'"]


def test_ni_panel_with_an_unreadable_dump_says_so_in_one_message(tiny_demo):
    root, manifest = tiny_demo
    path = dump_path(root, manifest, CONV2)
    os.truncate(path, 3000)
    text = render(run_ok(open_shell(root), f"ni {CONV2}"))
    # the panel wraps long lines: compare with the borders and all whitespace removed
    flat = re.sub(r"[\s│]+", "", text)
    message = f"device dump: {path}: input 1 payload (4608 bytes at offset 1183) runs"
    assert re.sub(r"\s+", "", message) in flat
    assert "thedumpistruncated" in flat and "tensor┃shape" not in flat  # no table for it
    assert "benchmarktensors" in flat and "relu2_Relu.0." in flat
