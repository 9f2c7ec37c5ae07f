#!/usr/bin/env python3
"""Whole-network compare benchmark on the large demo workspace (~1 GB, ~300 dumped ops).

Times in one run, each phase in its own process (so peak RSS is its own), on the large demo
and on its distinct-tensor twin (every device input has its lowest mantissa bits flipped, so
no input equals its producer's output and the metric memo cannot help):
  (a) the I/O floor: read and decode every tensor of every dump file the compare opens
      (layout conversion included) and load every benchmark file, each once, with the same
      number of threads; and the same for only the tensors `vc` reads values of (it skips
      those it neither compares nor flags: weights, mostly);
  (b) `vc` end to end (index from its cache, plan, compare, CSV + summary.json) on all cores,
      as `-e "vc"` runs it (its process workers' server starts with the shell), and with the
      threads backend (its peak RSS is the whole compare's);
  (c) `vc -j 1`: MB/s per core;
then `vc --rank all` over 8 ranks (a twin whose rank dir is hard-linked as ranks 1-7, no extra
disk) against one rank's MB/s; and (a), (b) on the distinct twin with its files dropped from
the page cache first (`--cold`: read from the disk, as a real dump is), and on a workspace of
few big tensors (8 MB files, median; ~450 MB), warm and cold. Targets: b <= 1.5 x a,
peak RSS <= 500 MB, 8 ranks >= 1 rank.

Usage: scripts/bench_compare.py [--root DIR] [--jobs N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _peak_rss_mb() -> float:
    """This process's peak, or a reaped child's when that was larger."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 1024


class _TreeRss:
    """The peak RSS of each process below this one (process workers, their server), sampled
    from /proc every 20 ms while a phase runs: workers are the forkserver's children, so
    RUSAGE_CHILDREN never sees them. Nothing where there is no /proc."""

    def __init__(self) -> None:
        import threading

        self.peaks: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _TreeRss:
        if Path("/proc/self/status").exists():
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        from tests.process_tree import descendants

        while not self._stop.wait(0.02):
            for pid in descendants(os.getpid()):
                with contextlib.suppress(OSError, ValueError, StopIteration):  # gone, zombie
                    status = Path(f"/proc/{pid}/status").read_text().splitlines()
                    rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))
                    self.peaks[pid] = max(self.peaks.get(pid, 0), rss)

    def total_mb(self) -> float:
        """This process's peak plus each process's below it (pages they share are counted
        in each: an upper bound)."""
        return _peak_rss_mb() + sum(self.peaks.values()) / 1024


def _plan(workspace: Path):  # noqa: ANN202
    from precision_shell.compare.pipeline.plan import benchmark_plan
    from precision_shell.workspace.workspace import Workspace

    ws = Workspace.open(workspace)
    run = ws.run()
    return benchmark_plan(ws, run, run.dump_graph())


def evict(workspace: Path) -> int:
    """Drop the workspace's files (dumps, benchmark, graphs, index cache) from the page cache,
    as after a reboot or on a dump too big to stay cached (posix_fadvise DONTNEED; no root
    needed; pages of clean files only, and they are). The bytes asked to drop."""
    dropped = 0
    for path in workspace.rglob("*"):
        if path.is_symlink() or not path.is_file():
            continue
        fd = os.open(path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            dropped += size
        finally:
            os.close(fd)
    return dropped


def phase_floor(workspace: Path, jobs: int, only_compared: bool = False) -> dict:
    """Every tensor of every dump file `vc` compares, and every benchmark file, read and
    decoded once (the issue's floor); with `only_compared`, only the tensors `vc` reads
    values of (it skips those it neither compares nor flags: weights, mostly)."""
    import numpy as np

    from precision_shell.compare.pipeline.worker import _to_benchmark_layout
    from precision_shell.formats.benchmark import load_benchmark
    from precision_shell.formats.npu_dump import read_dump_header, read_tensor

    plan = _plan(workspace)
    loaded: set[str] = set()  # each benchmark file once (rarely twice: two threads racing)
    t0 = time.perf_counter()

    def decode(task) -> int:  # noqa: ANN001
        header = read_dump_header(task.device_file)
        total = 0
        for meta in (*header.inputs, *header.outputs):
            mapping = task.mapping(meta.kind, meta.index)
            if only_compared and not mapping.benchmark_path:
                continue
            values = np.array(read_tensor(header, meta.kind, meta.index))
            with contextlib.suppress(ValueError):
                values = np.ascontiguousarray(_to_benchmark_layout(values, meta, mapping))
            total += values.nbytes
            if mapping.benchmark_path and mapping.benchmark_path not in loaded:
                loaded.add(mapping.benchmark_path)
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


def _as_the_cli() -> None:
    """What `precision_shell W -e "vc ..."` does before it runs a command (`cli.load_commands`:
    the worker server starts while the commands import, with one OpenBLAS thread)."""
    from precision_shell.cli import load_commands

    load_commands(warm=True)


def phase_vc(workspace: Path, jobs: int, backend: str = "auto") -> dict:
    """`vc` end to end in a new shell, as `-e "vc ..."` runs it (the timing starts once the
    commands are imported, as the floor's starts once its readers are)."""
    _as_the_cli()
    from precision_shell.settings import Settings
    from precision_shell.shell.context import ShellContext
    from precision_shell.shell.dispatcher import Dispatcher

    command = f"vc -r debug_0 -j {jobs} --backend {backend}"
    with _TreeRss() as tree:
        t0 = time.perf_counter()
        ctx = ShellContext(workspace, Settings.load())
        outcome = Dispatcher(ctx).execute(command)
        elapsed = time.perf_counter() - t0
    if not outcome.ok:
        raise SystemExit(f"vc failed: {outcome.error}")
    run = outcome.result.primary
    shutil.rmtree(outcome.result.out_dir, ignore_errors=True)  # runs must not pile up
    return {
        "seconds": elapsed,
        "compare_seconds": run.elapsed,
        "rows": run.tally.rows,
        "compared": run.tally.compared,
        "mb": run.bytes_read / 1e6,
        "peak_rss_mb": _peak_rss_mb(),
        "tree_rss_mb": tree.total_mb(),
    }


def phase_ranks(workspace: Path, jobs: int) -> dict:
    """`vc --rank all`: every rank's first step, one compare each; MB/s over all of them."""
    _as_the_cli()
    from precision_shell.settings import Settings
    from precision_shell.shell.context import ShellContext
    from precision_shell.shell.dispatcher import Dispatcher

    with _TreeRss() as tree:
        t0 = time.perf_counter()
        ctx = ShellContext(workspace, Settings.load())
        outcome = Dispatcher(ctx).execute(f"vc -r debug_0 -j {jobs} --rank all")
        elapsed = time.perf_counter() - t0
    if not outcome.ok:
        raise SystemExit(f"vc --rank all failed: {outcome.error}")
    runs = [outcome.result.primary, *(run for _, run in outcome.result.slices)]
    shutil.rmtree(outcome.result.out_dir, ignore_errors=True)
    return {
        "seconds": elapsed,
        "compare_seconds": sum(r.elapsed for r in runs),
        "ranks": len(runs),
        "mb": sum(r.bytes_read for r in runs) / 1e6,
        "rows": sum(r.tally.rows for r in runs),
        "peak_rss_mb": _peak_rss_mb(),
        "tree_rss_mb": tree.total_mb(),
    }


def _twin(workspace: Path, twin_root: Path, build: Callable[[Path], None]) -> Path:
    """`twin_root/<name>`, made once: `build` fills a `.partial` dir, renamed when complete."""
    twin = twin_root / workspace.name
    if twin.is_dir():
        return twin
    partial = twin_root / (workspace.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    build(partial)
    partial.rename(twin)
    return twin


def _copy_tree(
    src_root: Path,
    dst_root: Path,
    skip: Callable[[Path], bool] = lambda p: False,
    copy_file: Callable[[Path, Path], None] = os.link,
) -> None:
    """src_root's dirs and files under dst_root, files hard-linked (or `copy_file`); symlinks,
    `skip`ped paths and a top-level temp/ left out."""
    for src in src_root.rglob("*"):
        rel = src.relative_to(src_root)
        if src.is_symlink() or skip(rel):
            continue
        dst = dst_root / rel
        if src.is_dir():
            dst.mkdir(parents=True, exist_ok=True)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            copy_file(src, dst)


def _not_temp(rel: Path) -> bool:
    return rel.parts[0] == "temp"


def ranks_twin(workspace: Path, twin_root: Path, ranks: int = 8) -> Path:
    """A twin of `workspace` (hard links, made once) whose dump has `ranks` rank dirs, each a
    hard-linked copy of rank 0's."""

    def build(partial: Path) -> None:
        _copy_tree(workspace, partial, _not_temp)
        dump = partial / "npu" / "debug_0" / "dump"
        step = next(p for p in sorted(dump.rglob("*")) if p.is_file()).parent
        device = step.parents[2]  # <ts>/<device_id>/<graph>/<model_id>/<step>
        for rank in range(1, ranks):
            _copy_tree(device, device.parent / str(rank))

    return _twin(workspace, twin_root, build)


def distinct_twin(workspace: Path, twin_root: Path) -> Path:
    """A twin of `workspace` where every tensor is distinct (made once): each device dump's
    inputs get the lowest mantissa bit of every finite value flipped, so no input equals its
    producer's output byte for byte (the metric memo cannot help) while the values, and the
    rows' verdicts, stay the same. Everything else is hard-linked."""
    import numpy as np

    from precision_shell.formats.npu_dump import read_dump_header

    dump_root = workspace / "npu" / "debug_0" / "dump"
    exponent = {2: (np.uint16, 0x7C00), 4: (np.uint32, 0x7F800000)}

    def copy_file(src: Path, dst: Path) -> None:
        if not src.is_relative_to(dump_root) or src.suffix == ".csv":
            os.link(src, dst)
            return
        data = bytearray(src.read_bytes())
        for meta in read_dump_header(src).inputs:
            width = meta.size // max(1, meta.element_count)
            if meta.offset < 0 or width not in exponent:
                continue
            kind, mask = exponent[width]
            words = np.frombuffer(data, kind, meta.element_count, meta.offset)
            finite = (words & kind(mask)) != kind(mask)
            words[finite] ^= kind(1)
        dst.write_bytes(data)

    return _twin(
        workspace, twin_root, lambda partial: _copy_tree(workspace, partial, _not_temp, copy_file)
    )


def _big_tensors():  # noqa: ANN202
    from precision_shell.demo.spec import DemoSpec

    return DemoSpec(size="large", batch=8, spatial=128, channels=64, blocks=3, second_run=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--root", type=Path, help="where the large demo is built once (default: user cache)"
    )
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="threads for both phases"
    )
    parser.add_argument(
        "--phase",
        choices=("floor", "floor-compared", "vc", "vc-threads", "ranks"),
        help=argparse.SUPPRESS,
    )
    parser.add_argument("--workspace", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cold", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        if args.cold:
            evict(args.workspace)
        if args.phase.startswith("floor"):
            result = phase_floor(args.workspace, args.jobs, args.phase == "floor-compared")
        elif args.phase == "ranks":
            result = phase_ranks(args.workspace, args.jobs)
        else:
            backend = "threads" if args.phase == "vc-threads" else "auto"
            result = phase_vc(args.workspace, args.jobs, backend)
        print(json.dumps(result))
        return 0

    from precision_shell.compare.metrics import compiled
    from precision_shell.demo.builder import ensure_demo
    from precision_shell.demo.spec import DemoSpec

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    root = args.root or cache / "precision_shell" / "bench_large"
    t0 = time.perf_counter()
    manifest = ensure_demo(root, DemoSpec(size="large", second_run=False))
    workspace = Path(manifest.workspace)
    distinct = distinct_twin(workspace, root.parent / (root.name + "_distinct"))
    twin = ranks_twin(workspace, root.parent / (root.name + "_8ranks"))
    # few big tensors (8 MB files, median), as a real network's layers dump them
    big = Path(ensure_demo(root.parent / (root.name + "_big"), _big_tensors()).workspace)
    print(
        f"workspace {workspace}: {manifest.total_bytes / 2**20:.0f} MiB, "
        f"{sum(1 for op in manifest.device_ops if op.dump_file)} dumped ops; a distinct-tensor "
        f"twin and an 8-rank twin beside it (ready in {time.perf_counter() - t0:.1f} s); "
        f"metrics: {compiled.path_name()}"
    )

    def phase(
        name: str, where: Path = workspace, jobs: int = args.jobs, cold: bool = False
    ) -> dict:
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--phase",
                name,
                "--workspace",
                str(where),
                "--jobs",
                str(jobs),
                *(["--cold"] if cold else []),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        return json.loads(out.stdout.strip().splitlines()[-1])

    def best(name: str, where: Path, jobs: int = args.jobs, key: str = "seconds") -> dict:
        return min((phase(name, where, jobs) for _ in range(2)), key=lambda r: r[key])

    for label, where in (("demo", workspace), ("distinct tensors", distinct)):
        phase("floor", where)  # warm the page cache and the index cache
        floor = best("floor", where)
        compared = best("floor-compared", where)
        vc = best("vc", where)
        one = best("vc-threads", where, jobs=1)
        threads = best("vc-threads", where)
        mb = vc["mb"]
        print(f"[{label}]")
        print(
            f"  (a) I/O floor: {floor['seconds']:.2f} s ({floor['files']} dump files, "
            f"{floor['decoded_mb']:.0f} MB decoded, {args.jobs} threads); only the tensors vc "
            f"reads: {compared['seconds']:.2f} s ({compared['decoded_mb']:.0f} MB)"
        )
        print(
            f"  (b) vc, all cores: {vc['seconds']:.2f} s end to end (compare "
            f"{vc['compare_seconds']:.2f} s, {vc['compared']}/{vc['rows']} tensors, {mb:.0f} MB "
            f"of dumps, RSS {vc['tree_rss_mb']:.0f} MB over all its processes)  b/a = "
            f"{vc['seconds'] / floor['seconds']:.2f} (target <= 1.5; "
            f"{vc['seconds'] / compared['seconds']:.2f} on what vc reads)"
        )
        print(
            f"  (b') vc, threads backend: {threads['seconds']:.2f} s (b'/a = "
            f"{threads['seconds'] / floor['seconds']:.2f}), peak RSS {threads['peak_rss_mb']:.0f} "
            f"MB (whole compare in one process; target <= 500 MB)"
        )
        per_core = mb / one["compare_seconds"]
        print(
            f"  (c) vc, one worker: {one['seconds']:.2f} s, {per_core:.0f} MB/s per core; all "
            f"cores {mb / vc['compare_seconds']:.0f} MB/s "
            f"(x{one['compare_seconds'] / vc['compare_seconds']:.2f} on {args.jobs} cores)"
        )

    # cold: every file read from the disk, as a dump of hundreds of GB always is; floor and vc
    # alternately, so both see the same disk
    for label, where in (("distinct tensors", distinct), ("big tensors", big)):
        for cold in (False, True) if where == big else (True,):
            floors, compareds, vcs = [], [], []
            for _ in range(3):
                floors.append(phase("floor", where, cold=cold))
                compareds.append(phase("floor-compared", where, cold=cold))
                vcs.append(phase("vc", where, cold=cold))
            floor = min(floors, key=lambda r: r["seconds"])
            compared = min(compareds, key=lambda r: r["seconds"])
            vc = min(vcs, key=lambda r: r["seconds"])
            print(
                f"[{label}, {'cold' if cold else 'warm'} page cache] (a) I/O floor "
                f"{floor['seconds']:.2f} s ({floor['decoded_mb'] / floor['seconds']:.0f} MB/s; "
                f"what vc reads {compared['seconds']:.2f} s), (b) vc {vc['seconds']:.2f} s end "
                f"to end (compare {vc['compare_seconds']:.2f} s, {vc['mb']:.0f} MB of dumps)  "
                f"b/a = {vc['seconds'] / floor['seconds']:.2f} (target <= 1.5; "
                f"{vc['seconds'] / compared['seconds']:.2f} on what vc reads)"
            )

    # one rank and 8 ranks alternately, so both see the same machine load
    singles, eights = [], []
    for _ in range(2):
        eights.append(phase("ranks", twin))
        singles.append(phase("vc"))
    single = min(singles, key=lambda r: r["compare_seconds"])
    ranks = min(eights, key=lambda r: r["compare_seconds"])
    one_rank = single["mb"] / single["compare_seconds"]
    all_ranks = ranks["mb"] / ranks["compare_seconds"]
    print(
        f"[8 ranks] vc --rank all: {ranks['seconds']:.2f} s end to end "
        f"(compare {ranks['compare_seconds']:.2f} s, {ranks['mb']:.0f} MB of dumps, "
        f"{ranks['rows']} rows): {all_ranks:.0f} MB/s vs {one_rank:.0f} MB/s for one rank "
        f"(x{all_ranks / one_rank:.2f}; target >= 1), peak RSS {ranks['peak_rss_mb']:.0f} MB "
        f"(main), {ranks['tree_rss_mb']:.0f} MB over all its processes (each one's peak, shared "
        f"pages counted in each)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
