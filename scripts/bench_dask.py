#!/usr/bin/env python3
"""vc on a local Dask cluster against the local process pool, on the large demo workspace.

Times, each run in its own process, the two alternately (best of --reps):
  (a) `vc --backend processes -j N` end to end, and its compare alone (pool start included);
  (b) `vc --cluster local:N` end to end (cluster start and close included), and its compare;
  (c) the per-task overhead: --tasks trivial tasks (no work at all) through run_tasks on each
      pool, so all that is timed is submitting, scheduling and collecting a batch.
Prints the figures and the ratios (target: the Dask compare within 15% of the process pool's).

Usage: scripts/bench_dask.py [--root DIR] [--workers N] [--reps R] [--tasks T]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def phase_vc(workspace: Path, workers: int, how: str) -> dict:
    import precision_shell.commands  # noqa: F401
    from precision_shell.settings import Settings
    from precision_shell.shell.context import ShellContext
    from precision_shell.shell.dispatcher import Dispatcher

    if how == "dask":
        flags = f"--cluster local:{workers}"
    elif how.startswith("scheduler="):
        flags = f"--scheduler {how.split('=', 1)[1]}"
    else:
        flags = f"--backend {how} -j {workers}"
    t0 = time.perf_counter()
    ctx = ShellContext(workspace, Settings.load())
    outcome = Dispatcher(ctx).execute(f"vc -r debug_0 {flags}")
    elapsed = time.perf_counter() - t0
    if not outcome.ok:
        raise SystemExit(f"vc {flags} failed: {outcome.error}")
    run = outcome.result.primary
    return {
        "seconds": elapsed,
        "compare_seconds": run.elapsed,
        "files": run.files_done,
        "rows": run.tally.rows,
        "mb": run.bytes_read / 1e6,
    }


def phase_warm(workspace: Path, workers: int) -> dict:
    """`vc --scheduler` on a running cluster whose workers already ran one vc (imports done):
    a long-lived cluster's steady state."""
    import distributed

    from precision_shell.compare.pipeline.dask_backend import DaskTarget, open_pool

    cluster = distributed.LocalCluster(
        n_workers=workers, threads_per_worker=1, memory_limit=0, dashboard_address=":0"
    )
    try:
        with open_pool(DaskTarget(local_workers=workers)):
            pass  # quiets the logs, as vc does
        phase_vc(workspace, workers, f"scheduler={cluster.scheduler_address}")
        return phase_vc(workspace, workers, f"scheduler={cluster.scheduler_address}")
    finally:
        cluster.close()


def phase_overhead(workers: int, how: str, n_tasks: int) -> dict:
    from precision_shell.compare.pipeline.dask_backend import DaskTarget, open_pool
    from precision_shell.compare.pipeline.engine import batch_size, run_tasks
    from precision_shell.compare.pipeline.plan import FileTask
    from precision_shell.compare.pipeline.worker import CompareOptions
    from tests.compare.dask_work import trivial_work

    tasks = [FileTask(i, i, f"op{i}", "Relu", "/nowhere", (), ()) for i in range(n_tasks)]
    batches = -(-n_tasks // batch_size(n_tasks, workers))
    target = DaskTarget(local_workers=workers) if how == "dask" else None
    with open_pool(target) as pool:
        # warm up: every worker has imported the compare modules before the clock starts
        list(run_tasks(tasks[: workers * 8], CompareOptions(), workers, work=trivial_work,
                       backend=how, pool=pool))  # fmt: skip
        t0 = time.perf_counter()
        done = list(run_tasks(tasks, CompareOptions(), workers, work=trivial_work,
                              backend=how, pool=pool))  # fmt: skip
        elapsed = time.perf_counter() - t0
    assert [r.seq for r in done] == list(range(n_tasks))
    return {"seconds": elapsed, "tasks": n_tasks, "batches": batches}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, help="where the large demo is built once")
    parser.add_argument("--workers", type=int, default=2, help="pool size for both (default 2)")
    parser.add_argument("--reps", type=int, default=3, help="runs of each, best kept")
    parser.add_argument("--tasks", type=int, default=4000, help="trivial tasks for (c)")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--workspace", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        kind, how = args.phase.split(":")
        if kind == "vc":
            result = phase_vc(args.workspace, args.workers, how)
        elif kind == "warm":
            result = phase_warm(args.workspace, args.workers)
        else:
            result = phase_overhead(args.workers, how, args.tasks)
        print(json.dumps(result))
        return 0

    from precision_shell.demo.builder import ensure_demo
    from precision_shell.demo.spec import DemoSpec

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    root = args.root or cache / "precision_shell" / "bench_large"
    manifest = ensure_demo(root, DemoSpec(size="large", second_run=False))
    workspace = Path(manifest.workspace)
    print(
        f"workspace {workspace}: {manifest.total_bytes / 2**20:.0f} MiB, "
        f"{sum(1 for op in manifest.device_ops if op.dump_file)} dumped ops; "
        f"{args.workers} workers, {os.cpu_count()} cores, best of {args.reps}"
    )

    def phase(name: str) -> dict:
        out = subprocess.run(
            [sys.executable, __file__, "--phase", name, "--workspace", str(workspace),
             "--workers", str(args.workers), "--tasks", str(args.tasks)],
            check=True, capture_output=True, text=True,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),  # the workers import tests.compare
        )  # fmt: skip
        return json.loads(out.stdout.strip().splitlines()[-1])

    phase("vc:processes")  # warm the page cache and the index cache
    runs: dict[str, list[dict]] = {"vc:processes": [], "vc:dask": [], "warm:dask": []}
    for _ in range(args.reps):  # alternately, so both see the same machine load
        for name in runs:
            runs[name].append(phase(name))
    proc = min(runs["vc:processes"], key=lambda r: r["seconds"])
    dask = min(runs["vc:dask"], key=lambda r: r["seconds"])
    proc_c = min(r["compare_seconds"] for r in runs["vc:processes"])
    dask_c = min(r["compare_seconds"] for r in runs["vc:dask"])
    assert proc["rows"] == dask["rows"] and proc["files"] == dask["files"]
    print(
        f"(a) processes: {proc['seconds']:.2f} s end to end, compare {proc_c:.2f} s "
        f"({proc['files']} files, {proc['mb']:.0f} MB, {proc['rows']} rows)"
    )
    warm_c = min(r["compare_seconds"] for r in runs["warm:dask"])
    print(f"(b) local Dask cluster: {dask['seconds']:.2f} s end to end, compare {dask_c:.2f} s")
    print(f"    the same cluster's second vc (workers warm, --scheduler): compare {warm_c:.2f} s")
    print(
        f"    ratio dask/processes: end to end {dask['seconds'] / proc['seconds']:.2f}, "
        f"compare {dask_c / proc_c:.2f}, warm compare {warm_c / proc_c:.2f}  (target <= 1.15)"
    )
    over = {how: min((phase(f"overhead:{how}") for _ in range(args.reps)),
                     key=lambda r: r["seconds"]) for how in ("processes", "dask")}  # fmt: skip
    for how, r in over.items():
        print(
            f"(c) {how}: {r['tasks']} trivial tasks in {r['batches']} batches: "
            f"{r['seconds']:.2f} s = {r['seconds'] / r['tasks'] * 1e3:.3f} ms/task, "
            f"{r['seconds'] / r['batches'] * 1e3:.2f} ms/batch "
            f"({r['batches'] / r['seconds']:.0f} batches/s)"
        )
    per_task = over["dask"]["seconds"] / over["dask"]["tasks"]
    print(
        f"    Dask overhead per {proc['files']}-file compare: "
        f"~{per_task * proc['files']:.2f} s of {dask_c:.2f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
