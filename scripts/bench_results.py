#!/usr/bin/env python3
"""Results benchmark: `vcs` and `report` on a 1M-row compare result of a ~345k-op network.

Generates once (cached under ~/.cache/precision_shell/bench_results/) a workspace whose newest
vc result is a msaccucmp-format result CSV (our ResultCsvWriter's header and cell formats:
mostly passing rows, a few thousand failing outputs, NaN/inf cells, constant inputs not
compared) with its summary.json, then times each command in its own subprocess (wall time of
the command, peak RSS of the process):
- baseline: `vcs` the old way, every row parsed from the CSV into a ResultRow (the code
  path before the columns cache; still what `read_result_csv` + `summarize` do),
- `vcs` cold (parses the CSV and writes the columns cache) and warm (reads the cache),
- `report` (warm), with the size of the page it writes,
and prints the ratios against the baseline.

Then `vc`'s side (skip with --no-vc): the same rows written again through `vc`'s own writing
loop (`execute_plans`, its engine replaced by one that hands back the rows of each op, ~3 per
dump file, made from the CSV as they are asked for; the time that takes is measured apart and
taken off: vc's workers make them), once without and once with the columns cache gathered
from the rows written, into a second workspace; then the first `vcs` on that result with the
cache `vc` wrote, and with none (built on demand, what the first `vcs` cost before). vc's
added time is printed as a ratio of its writing loop and of a whole compare of that many dump
files (an estimate: ~19 ms per file per worker, docs/SCALING.md, on 2 workers).

Usage: scripts/bench_results.py [--ops N] [--rows-per-op R] [--failing N] [--old-report] [--no-vc]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from precision_shell.compare.results.schema import csv_header  # noqa: E402

STAMP = "20261123120000"
VC_STAMP = "20261124120000"
FILE_COMPARE_S = 0.019  # one dump file compared on one worker (docs/SCALING.md, measured)
_TYPES = ("Conv2D", "BatchNorm", "Relu", "MatMul", "Add", "Mul", "Cast", "Transpose", "Softmax")
_BLOCKS = ("attention", "mlp", "norm1", "norm2", "proj", "embed")


def op_name(k: int) -> str:
    layer, block = divmod(k, 600)
    kind = _TYPES[k % len(_TYPES)]
    return (
        f"Default/network-WithLossCell/_backbone-Transformer/encoder-SequentialCell/"
        f"{layer}-Layer/{_BLOCKS[block % len(_BLOCKS)]}-Cell/{kind}-op{k}"
    )


def write_result_csv(path: Path, ops: int, rows_per_op: float, failing: int, seed: int = 7) -> int:
    """A result CSV with about ops x rows_per_op rows; returns the row count."""
    rng = random.Random(seed)
    inputs_per_op = max(0, round(rows_per_op) - 1)
    failing_ops = set(rng.sample(range(ops), min(failing, ops)))
    nan_ops = set(rng.sample(range(ops), ops // 5000 + 1))  # NaN/inf from the data
    header = csv_header(overflow=False)
    n = 0
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        for k in range(ops):
            name, kind = op_name(k), _TYPES[k % len(_TYPES)]
            shape = "[8,64,56,56]" if kind == "Conv2D" else "[8,1024]"
            for slot in range(inputs_per_op + 1):
                is_input = slot < inputs_per_op
                tensor = f"{name}:{'input' if is_input else 'output'}:{slot if is_input else 0}"
                constant = is_input and slot == 1 and kind in ("Conv2D", "MatMul")
                if constant:
                    metrics = ["NaN"] * 10
                    reason = f"{name}: input {slot} is a constant input; no benchmark"
                else:
                    bad = not is_input and k in failing_ops
                    cos = rng.uniform(0.5, 0.97) if bad else 1.0 - rng.random() * 1e-4
                    red = rng.uniform(0.06, 0.6) if bad else rng.random() * 0.01
                    mae = rng.random() * (2.0 if bad else 0.01)
                    metrics = [
                        f"{cos:.6f}",
                        f"{mae:.6f}",
                        f"{rng.random():.6f}",
                        f"{red:.6f}",
                        f"{rng.random() * 1e-3:.6f}",
                        "(0.012;0.998),(0.011;0.997)",
                        f"{mae / 4:.6f}",
                        f"{mae / 3:.6f}",
                        f"{rng.random():.6f}",
                        f"{rng.random() * 0.1:.6f}",
                    ]
                    if not is_input and k in nan_ops:
                        metrics[0], metrics[3] = "nan", "inf"
                    reason = ""
                writer.writerow(
                    [
                        str(k),
                        kind,
                        name,
                        "float16",
                        "NaN",
                        name,
                        "float32",
                        tensor,
                        shape,
                        *metrics,
                        reason,
                    ]
                )
                n += 1
    return n


def bench_workspace(ops: int, rows_per_op: float, failing: int) -> tuple[Path, Path]:
    """(workspace root, result CSV), generated once per size."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    root = base / "precision_shell" / "bench_results" / f"v2-ops{ops}-r{rows_per_op}-f{failing}"
    result_dir = root / "precision_data" / "temp" / "vector_compare" / STAMP
    csv_path = result_dir / f"result_{STAMP}.csv"
    done = root / "complete"
    if done.is_file():
        return root, csv_path
    if root.exists():
        shutil.rmtree(root)
    result_dir.mkdir(parents=True)
    rows = write_result_csv(csv_path, ops, rows_per_op, failing)
    summary = {
        "created": "2026-11-23T12:00:00+00:00",
        "workspace": str(root),
        "thresholds": {"cosine": 0.98, "relative_euclidean_distance": 0.05},
        "csv": str(csv_path),
        "rows": rows,
    }
    (result_dir / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    done.write_text(str(rows), encoding="utf-8")
    return root, csv_path


_CHILD = r"""
import io, json, resource, sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
import precision_shell.commands  # registers the commands
import precision_shell.render.views  # registers the views
from rich.console import Console
from precision_shell.render.output import Renderer
from precision_shell.settings import Settings
from precision_shell.shell.context import ShellContext
from precision_shell.shell.dispatcher import Dispatcher

workspace, mode, line = {workspace!r}, {mode!r}, {line!r}
settings = Settings.load(user_file=Path(workspace) / "no-user-settings.toml")
ctx = ShellContext(Path(workspace), settings, use_cache=False)
console = Console(file=io.StringIO(), width=160, color_system=None)
extra = {{}}
t0 = time.perf_counter()
if mode == "old-vcs":
    from precision_shell.commands.compare_summary import summarize
    from precision_shell.compare.results.schema import find_result_csv, read_result_csv
    from precision_shell.compare.results.thresholds import ThresholdRule
    path = find_result_csv(ctx.workspace.output_dir("vector_compare"))
    result = summarize(read_result_csv(path), ThresholdRule.from_settings(settings), 20)
    Renderer(console, console).result(result)
else:
    outcome = Dispatcher(ctx).execute(line)
    assert outcome.ok, outcome.error
    Renderer(console, console).result(outcome.result)
    if mode == "report":
        extra["page_bytes"] = outcome.result.path.stat().st_size
        extra["page"] = str(outcome.result.path)
elapsed = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({{"seconds": elapsed, "peak_rss": peak, **extra}}))
"""


_VC_CHILD = r"""
import json, resource, sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from precision_shell.compare.pipeline import execute
from precision_shell.compare.pipeline.plan import ComparePlan, FileTask
from precision_shell.compare.pipeline.worker import CompareOptions, FileResult
from precision_shell.compare.results.schema import iter_result_records
from precision_shell.compare.results.thresholds import ThresholdRule

source, out_csv, cache_dir, cached = {source!r}, {out_csv!r}, {cache_dir!r}, {cached!r}
def files():
    # the rows of each "dump file" (one per op), made from the CSV as the engine asks: only
    # a few are alive at once, as in vc (whose workers send them)
    layout, records = iter_result_records(source, [])
    rows, last, seq = [], None, 0
    for line, cells in records:
        row = layout.row(cells, 0)
        if last is not None and row.op_name != last:
            yield FileResult(seq, rows, 0)
            rows, seq = [], seq + 1
        rows.append(row)
        last = row.op_name
    yield FileResult(seq, rows, 0)

count = sum(1 for _ in files())
tasks = [FileTask(n, n, "op", "Relu", "/nonexistent", (), ()) for n in range(count)]
t0 = time.perf_counter()
for _ in files():  # what making the rows costs (taken off below: vc's workers do it)
    pass
making = time.perf_counter() - t0
def engine(*args, **kwargs):
    yield from files()
execute.run_tasks = engine
plan = ComparePlan(tasks, "benchmark", "left", "right", None, [])
t0 = time.perf_counter()
(run,) = execute.execute_plans(
    [plan], [Path(out_csv)], CompareOptions(), ThresholdRule.default(),
    columns_cache=(lambda: Path(cache_dir)) if cached else None,
)
elapsed = time.perf_counter() - t0 - making
assert run.files_done == len(tasks)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({{"seconds": elapsed, "peak_rss": peak, "files": len(tasks)}}))
"""


def measure_vc(source: Path, workspace: Path, cached: bool, env: dict[str, str]) -> dict:
    """vc's writing loop over the rows of `source` into a fresh result of `workspace`."""
    temp = workspace / "precision_data" / "temp"
    shutil.rmtree(temp, ignore_errors=True)
    out_dir = temp / "vector_compare" / VC_STAMP
    out_dir.mkdir(parents=True)
    cache_dir = temp / "result_columns"
    cache_dir.mkdir()
    out_csv = out_dir / f"result_{VC_STAMP}.csv"
    code = _VC_CHILD.format(
        root=str(ROOT),
        source=str(source),
        out_csv=str(out_csv),
        cache_dir=str(cache_dir),
        cached=cached,
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"vc ({cached=}) failed:\n{done.stderr[-3000:]}")
    summary = {
        "created": "2026-11-23T12:00:00+00:00",
        "workspace": str(workspace),
        "thresholds": {"cosine": 0.98, "relative_euclidean_distance": 0.05},
        "csv": str(out_csv),
    }
    (out_dir / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["cache_files"] = len(list(cache_dir.glob("*.cols")))
    return result


def measure(workspace: Path, mode: str, line: str, env: dict[str, str]) -> dict:
    code = _CHILD.format(root=str(ROOT), workspace=str(workspace), mode=mode, line=line)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=345_000)
    parser.add_argument("--rows-per-op", type=float, default=3.0)
    parser.add_argument("--failing", type=int, default=3_000)
    parser.add_argument(
        "--old-report", action="store_true", help="also time the old full-table page (slow)"
    )
    parser.add_argument("--no-vc", action="store_true", help="skip vc's side")
    args = parser.parse_args()
    workspace, csv_path = bench_workspace(args.ops, args.rows_per_op, args.failing)
    rows = int((workspace / "complete").read_text())
    print(f"result CSV: {csv_path} ({rows} rows, {csv_path.stat().st_size / 2**20:.0f} MB)")
    with tempfile.TemporaryDirectory() as cache_home:
        env = dict(os.environ, XDG_CACHE_HOME=cache_home)  # a fresh per-user key and cache
        cache = workspace / "precision_data" / "temp" / "result_columns"
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(workspace / "precision_data" / "temp" / "report", ignore_errors=True)
        results = {
            "vcs old (parse every row)": measure(workspace, "old-vcs", "vcs", env),
            "vcs cold (build cache)": measure(workspace, "vcs", "vcs", env),
            "vcs warm": measure(workspace, "vcs", "vcs", env),
            "report": measure(workspace, "report", "report", env),
        }
        if args.old_report:
            old_env = dict(env, PRECISION_SHELL_REPORT_FULL_TABLE="1")
            results["report old (full table)"] = measure(workspace, "report", "report", old_env)
        vc: dict[str, dict] = {}
        if not args.no_vc:
            with tempfile.TemporaryDirectory(dir=workspace.parent) as vc_root:
                vc_ws = Path(vc_root)
                vc["vc writing, no cache"] = measure_vc(csv_path, vc_ws, False, env)
                vc["vc writing + columns cache"] = measure_vc(csv_path, vc_ws, True, env)
                assert vc["vc writing + columns cache"]["cache_files"] == 1
                results["first vcs after vc (vc's cache)"] = measure(vc_ws, "vcs", "vcs", env)
                shutil.rmtree(vc_ws / "precision_data" / "temp" / "result_columns")
                results["first vcs, cache on demand"] = measure(vc_ws, "vcs", "vcs", env)
    base = results["vcs old (parse every row)"]["seconds"]
    for name, r in results.items():
        page = f"  page {r['page_bytes'] / 2**20:7.1f} MB" if "page_bytes" in r else ""
        print(
            f"{name:32s} {r['seconds']:7.2f} s  peak RSS {r['peak_rss'] / 2**20:7.0f} MB"
            f"  x{base / r['seconds']:6.1f} vs old vcs{page}"
        )
    if vc:
        for name, r in vc.items():
            print(f"{name:32s} {r['seconds']:7.2f} s  peak RSS {r['peak_rss'] / 2**20:7.0f} MB")
        plain = vc["vc writing, no cache"]
        added = vc["vc writing + columns cache"]["seconds"] - plain["seconds"]
        compare = plain["files"] * FILE_COMPARE_S / 2
        print(
            f"vc's added time {added:.2f} s: x{(plain['seconds'] + added) / plain['seconds']:.2f}"
            f" its writing loop; {100 * added / compare:.1f}% of a compare of {plain['files']}"
            f" dump files (~{compare / 60:.0f} min on 2 workers, estimate)"
        )


if __name__ == "__main__":
    main()
