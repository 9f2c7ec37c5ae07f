"""Benchmark of the GE text parser on a generated dump (not a test; run it by hand).

    .venv/bin/python tests/formats/bench_ge_text.py [--ops 50000] [--path /tmp/...]

Writes the dump once (with protobuf's own printer) under /tmp, then parses it in a
fresh process and prints MB/s (wall and CPU) and the peak RSS of that process.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def write_dump(path: Path, n_ops: int) -> None:
    from ge_fixtures import big_model

    from precision_shell.formats.ge.graph import model_to_text

    started = time.perf_counter()
    text = model_to_text(big_model(n_ops))
    path.write_text(text)
    print(f"wrote {path} ({len(text) / 1e6:.1f} MB) in {time.perf_counter() - started:.1f} s")


def measure(path: Path) -> dict[str, float]:
    from precision_shell.formats.ge.graph import load_ge_graph

    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    wall, cpu = time.perf_counter(), time.process_time()
    model = load_ge_graph(path)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    megabytes = path.stat().st_size / 1e6
    return {
        "MB": megabytes,
        "ops": sum(len(graph.ops) for graph in model.graphs),
        "wall_s": wall,
        "cpu_s": cpu,
        "MB_per_s_wall": megabytes / wall,
        "MB_per_s_cpu": megabytes / cpu,
        "peak_rss_MB": peak / 1024,
        "rss_before_MB": baseline / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=50_000, help="ops in the generated graph")
    parser.add_argument(
        "--path", type=Path, help="dump to parse (default: /tmp/ge_bench_<ops>.txt)"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    path = args.path or Path(f"/tmp/ge_bench_{args.ops}.txt")
    if args.child:
        print(json.dumps(measure(path)))
        return
    if not path.exists():
        write_dump(path, args.ops)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[2]))
    child = [sys.executable, __file__, "--child", "--path", str(path)]
    result = json.loads(subprocess.run(child, check=True, capture_output=True, env=env).stdout)
    for key, value in result.items():
        print(f"{key:>14}: {value:,.2f}")


if __name__ == "__main__":
    main()
