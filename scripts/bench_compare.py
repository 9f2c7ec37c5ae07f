#!/usr/bin/env python3
"""Whole-network compare benchmark on the large demo workspace (~1 GB, ~300 dumped ops).

Times in one run, each phase in its own process (so peak RSS is its own):
  (a) the I/O floor: read and decode every device tensor the compare reads (layout
      conversion included) and load every benchmark file, with the same number of threads;
  (b) `vc` end to end (index from its cache, plan, compare, CSV + summary.json).
Prints both, the ratio (target b <= 3 x a) and the peak RSS of (b) (target <= 500 MB).

Usage: scripts/bench_compare.py [--root DIR] [--jobs N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _peak_rss_mb() -> float:
    """This process's peak, or a worker process's when that was larger (process backend)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 1024


def _plan(workspace: Path):  # noqa: ANN202
    from precision_shell.compare.pipeline.plan import benchmark_plan
    from precision_shell.workspace.workspace import Workspace

    ws = Workspace.open(workspace)
    run = ws.run()
    return benchmark_plan(ws, run, run.dump_graph())


def phase_floor(workspace: Path, jobs: int) -> dict:
    import numpy as np

    from precision_shell.compare.pipeline.worker import _to_benchmark_layout
    from precision_shell.formats.benchmark import load_benchmark
    from precision_shell.formats.npu_dump import read_dump_header, read_tensor

    plan = _plan(workspace)
    t0 = time.perf_counter()

    def decode(task) -> int:  # noqa: ANN001
        header = read_dump_header(task.device_file)
        total = 0
        for meta in (*header.inputs, *header.outputs):
            values = np.array(read_tensor(header, meta.kind, meta.index))
            mapping = task.mapping(meta.kind, meta.index)
            with contextlib.suppress(ValueError):
                values = np.ascontiguousarray(_to_benchmark_layout(values, meta, mapping))
            total += values.nbytes
            if mapping.benchmark_path:
                total += np.array(load_benchmark(mapping.benchmark_path)).nbytes
        return total

    with ThreadPoolExecutor(jobs) as pool:
        decoded = sum(pool.map(decode, plan.tasks))
    return {
        "seconds": time.perf_counter() - t0,
        "decoded_mb": decoded / 1e6,
        "files": len(plan.tasks),
        "peak_rss_mb": _peak_rss_mb(),
    }


def phase_vc(workspace: Path, jobs: int, backend: str = "auto") -> dict:
    import precision_shell.commands  # noqa: F401
    from precision_shell.settings import Settings
    from precision_shell.shell.context import ShellContext
    from precision_shell.shell.dispatcher import Dispatcher

    t0 = time.perf_counter()
    ctx = ShellContext(workspace, Settings.load())
    outcome = Dispatcher(ctx).execute(f"vc -r debug_0 -j {jobs} --backend {backend}")
    elapsed = time.perf_counter() - t0
    if not outcome.ok:
        raise SystemExit(f"vc failed: {outcome.error}")
    run = outcome.result.primary
    return {
        "seconds": elapsed,
        "compare_seconds": run.elapsed,
        "rows": run.tally.rows,
        "compared": run.tally.compared,
        "mb": run.bytes_read / 1e6,
        "peak_rss_mb": _peak_rss_mb(),
        "csv": str(run.csv_path),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--root", type=Path, help="where the large demo is built once (default: user cache)"
    )
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="threads for both phases"
    )
    parser.add_argument("--phase", choices=("floor", "vc", "vc-threads"), help=argparse.SUPPRESS)
    parser.add_argument("--workspace", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        if args.phase == "floor":
            result = phase_floor(args.workspace, args.jobs)
        else:
            backend = "threads" if args.phase == "vc-threads" else "auto"
            result = phase_vc(args.workspace, args.jobs, backend)
        print(json.dumps(result))
        return 0

    from precision_shell.demo.builder import ensure_demo
    from precision_shell.demo.spec import DemoSpec

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    root = args.root or cache / "precision_shell" / "bench_large"
    t0 = time.perf_counter()
    manifest = ensure_demo(root, DemoSpec(size="large", second_run=False))
    workspace = Path(manifest.workspace)
    print(
        f"workspace {workspace}: {manifest.total_bytes / 2**20:.0f} MiB, "
        f"{sum(1 for op in manifest.device_ops if op.dump_file)} dumped ops "
        f"(ready in {time.perf_counter() - t0:.1f} s)"
    )

    def phase(name: str) -> dict:
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--phase",
                name,
                "--workspace",
                str(workspace),
                "--jobs",
                str(args.jobs),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        return json.loads(out.stdout.strip().splitlines()[-1])

    phase("floor")  # warm the page cache and the index cache
    floor = min((phase("floor") for _ in range(2)), key=lambda r: r["seconds"])
    vc = min((phase("vc") for _ in range(2)), key=lambda r: r["seconds"])
    # Process workers are forked by a forkserver, not by us, so their peak memory is not in our
    # rusage; the threads backend holds the whole compare in one process: its peak is the bound.
    threads = min((phase("vc-threads") for _ in range(2)), key=lambda r: r["seconds"])
    ratio = vc["seconds"] / floor["seconds"]
    print(
        f"(a) I/O floor: {floor['seconds']:.2f} s ({floor['files']} dump files, "
        f"{floor['decoded_mb']:.0f} MB decoded, {args.jobs} threads)"
    )
    print(
        f"(b) vc end to end: {vc['seconds']:.2f} s (compare {vc['compare_seconds']:.2f} s, "
        f"{vc['compared']}/{vc['rows']} tensors, {vc['mb']:.0f} MB of dumps)"
    )
    print(
        f"ratio b/a = {ratio:.2f}  (target <= 3)   vc with the threads backend: "
        f"{threads['seconds']:.2f} s (ratio {threads['seconds'] / floor['seconds']:.2f}), "
        f"peak RSS {threads['peak_rss_mb']:.0f} MB (whole compare in one process; target <= 500 MB)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
