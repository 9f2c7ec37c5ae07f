#!/usr/bin/env python3
"""Index benchmark: a 50k-op GE graph (~100 MB of text) with 100k dump files, then a
multi-rank run: one 5k-op graph dumped by 8 ranks x 3 steps (120k dump files).

Prints the cold index build, the warm load from the cache and lookups per second, each
with its target and with a baseline measured in the same run (these machines are noisy):
- cold build vs protobuf's own `text_format.Parse` (measured on a slice, scaled up),
- warm load vs the cold build,
- lookups vs a linear scan over the op names,
- the multi-rank run's cold and warm times vs the single-rank case's.

Usage: scripts/bench_index.py [--ops N] [--files N] [--ranks N] [--steps N] [--rank-ops N]
                              [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from precision_shell.formats.dump_names import dump_file_name  # noqa: E402

GRAPH_NAME = "ge_default_20261122063000_NPU_1"


def _attr_s(key: str, value: str, ind: str) -> str:
    return f'{ind}attr {{\n{ind}  key: "{key}"\n{ind}  value {{\n{ind}    s: "{value}"\n{ind}  }}\n{ind}}}\n'


def _attr_i(key: str, value: int, ind: str) -> str:
    return f'{ind}attr {{\n{ind}  key: "{key}"\n{ind}  value {{\n{ind}    i: {value}\n{ind}  }}\n{ind}}}\n'


def _attr_list_s(key: str, values: list[str], ind: str) -> str:
    items = "".join(f'{ind}      s: "{v}"\n' for v in values)
    return (
        f'{ind}attr {{\n{ind}  key: "{key}"\n{ind}  value {{\n{ind}    list {{\n{items}'
        f"{ind}      val_type: VT_LIST_STRING\n{ind}    }}\n{ind}  }}\n{ind}}}\n"
    )


def _attr_list_i(key: str, values: list[int], ind: str) -> str:
    items = "".join(f"{ind}      i: {v}\n" for v in values)
    return (
        f'{ind}attr {{\n{ind}  key: "{key}"\n{ind}  value {{\n{ind}    list {{\n{items}'
        f"{ind}      val_type: VT_LIST_INT\n{ind}    }}\n{ind}  }}\n{ind}}}\n"
    )


def _desc(origin: str, shape: list[int], ind: str, layout: str = "NC1HWC0") -> str:
    dims = "".join(f"{ind}    dim: {d}\n" for d in shape)
    if layout == "FRACTAL_Z":  # weights: GE keeps only the origin format on them
        attrs = _attr_s("origin_format", "HWCN", ind + "  ")
        return f'{ind}  dtype: DT_FLOAT16\n{ind}  shape {{\n{dims}{ind}  }}\n{ind}  layout: "{layout}"\n{attrs}'
    attrs = (
        _attr_s("_datadump_origin_format", "NHWC", ind + "  ")
        + _attr_s("_datadump_origin_name", origin, ind + "  ")
        + _attr_i("_datadump_origin_output_index", 0, ind + "  ")
        + _attr_list_i("origin_shape", shape, ind + "  ")
    )
    return (
        f"{ind}  dtype: DT_FLOAT16\n{ind}  shape {{\n{dims}{ind}  }}\n"
        f'{ind}  layout: "{layout}"\n{attrs}'
    )


def op_name(i: int) -> str:
    return f"model/stage{i // 1000}/block{i % 1000 // 10}/conv{i % 10}/Conv2D"


def op_text(i: int) -> str:
    name = op_name(i)
    prev = op_name(i - 1) if i else "input"
    bn = name.replace("Conv2D", "FusedBatchNormV3")
    relu = name.replace("Conv2D", "Relu")
    ind = "    "
    attrs = (
        _attr_list_s("_datadump_original_op_names", [name, bn, relu], ind)
        + _attr_s("_ge_attr_op_kernel_lib_name", "AIcoreEngine", ind)
        + _attr_s("pass_name", "ConvBatchnormFusionPass", ind)
        + _attr_s(f"{name}_kernelname", f"te_conv2d_{i:08x}_kernel0", ind)
    )
    return (
        f'  op {{\n{ind}name: "{name}"\n{ind}type: "Conv2D"\n{ind}input: "{prev}:0"\n'
        f'{ind}input: "{name}/weights:0"\n{attrs}{ind}id: {i + 1}\n{ind}stream_id: {i % 3}\n'
        f"{ind}input_desc {{\n{_desc(prev, [8, 56, 56, 64], ind)}{ind}}}\n"
        f"{ind}input_desc {{\n{_desc(name + '/weights', [3, 3, 64, 64], ind, 'FRACTAL_Z')}{ind}}}\n"
        f'{ind}output_desc {{\n{ind}  name: "y"\n{_desc(relu, [8, 56, 56, 64], ind)}{ind}}}\n'
        f'{ind}dst_name: "{op_name(i + 1)}"\n{ind}dst_index: 0\n  }}\n'
    )


def write_graph(path: Path, n_ops: int) -> int:
    with open(path, "w") as fh:
        fh.write(f'name: "bench"\ngraph {{\n  name: "{GRAPH_NAME}"\n')
        for i in range(n_ops):
            fh.write(op_text(i))
        fh.write(
            '  attr {\n    key: "_session_graph_id"\n    value {\n      s: "0_1"\n    }\n  }\n}\n'
        )
    return path.stat().st_size


def write_dump_names(directory: Path, n_ops: int, n_files: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    base = 1763793000000000
    for j in range(n_files):
        i = j % n_ops
        name = dump_file_name("Conv2D", op_name(i), i + 1, base + j, stream_id=i % 3)
        os.close(os.open(directory / name, os.O_CREAT | os.O_WRONLY, 0o644))


def write_multi_rank(ws_root: Path, n_ops: int, ranks: int, steps: int) -> int:
    """One graph of `n_ops` ops, each op dumped once per (rank, step): hard links of one
    step dir's empty files (the index reads names only). Returns the dump file count."""
    graph_dir = ws_root / "npu" / "debug_0" / "graph"
    graph_dir.mkdir(parents=True, exist_ok=True)
    write_graph(graph_dir / "ge_proto_00000001_Build.txt", n_ops)
    model_dirs = ws_root / "npu" / "debug_0" / "dump" / "20261122063000"
    first: Path | None = None
    for rank in range(ranks):
        for k in range(steps):
            step_dir = model_dirs / str(rank) / GRAPH_NAME / "1" / str(5 * k)
            if first is None:
                write_dump_names(step_dir, n_ops, n_ops)
                first = step_dir
                continue
            step_dir.mkdir(parents=True, exist_ok=True)
            for name in os.listdir(first):
                os.link(first / name, step_dir / name)
    return n_ops * ranks * steps


def bench_multi_rank(tmp: Path, n_ops: int, ranks: int, steps: int) -> tuple[float, float]:
    """Cold and warm index times of the multi-rank workspace (built under `tmp`)."""
    from precision_shell.workspace.workspace import Workspace

    ws_root = tmp / "multi_rank" / "precision_data"
    t0 = time.perf_counter()
    n_files = write_multi_rank(ws_root, n_ops, ranks, steps)
    print(
        f"generated {ranks} ranks x {steps} steps x {n_ops} ops ({n_files} dump files) "
        f"in {time.perf_counter() - t0:.1f} s"
    )
    t_cold, ws = timed(lambda: Workspace.open(ws_root))
    assert not ws.warnings, ws.warnings[:3]
    run = ws.run()
    assert len(run.ranks()) == ranks and len(run.steps()) == steps
    assert len(run.dumps) == n_ops and len(run.slices) == ranks * steps
    t_warm, ws2 = timed(lambda: Workspace.open(ws_root), repeat=3)
    assert ws2.cache.hits >= ranks * steps and ws2.summary().runs[0][3] == n_files
    return t_cold, t_warm


def timed(fn, repeat: int = 1) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=50_000, help="ops in the generated graph")
    parser.add_argument("--files", type=int, default=100_000, help="dump file names")
    parser.add_argument("--ranks", type=int, default=8, help="ranks of the multi-rank run")
    parser.add_argument("--steps", type=int, default=3, help="steps per rank")
    parser.add_argument("--rank-ops", type=int, default=5_000, help="ops of the multi-rank run")
    parser.add_argument("--keep", type=Path, help="build the workspace here and keep it")
    args = parser.parse_args()

    from precision_shell.workspace.workspace import Workspace

    tmp = args.keep or Path(tempfile.mkdtemp(prefix="bench_index_"))
    os.environ.setdefault("XDG_CACHE_HOME", str(tmp / "xdg_cache"))
    ws_root = tmp / "precision_data"
    graph_dir = ws_root / "npu" / "debug_0" / "graph"
    dump_dir = (
        ws_root / "npu" / "debug_0" / "dump" / "20261122063000" / "0" / GRAPH_NAME / "1" / "0"
    )
    graph_dir.mkdir(parents=True, exist_ok=True)
    graph_path = graph_dir / "ge_proto_00000001_Build.txt"
    t0 = time.perf_counter()
    size = write_graph(graph_path, args.ops)
    write_dump_names(dump_dir, args.ops, args.files)
    print(
        f"generated {args.ops} ops ({size / 1e6:.1f} MB of graph text) and {args.files} dump "
        f"files in {time.perf_counter() - t0:.1f} s"
    )

    # Baseline 1: protobuf's own text parser on a slice, scaled to the whole file.
    from google.protobuf import text_format

    from precision_shell.formats.ge.proto import ModelDef

    slice_ops = min(args.ops, 2000)
    slice_text = (
        f'graph {{\n  name: "{GRAPH_NAME}"\n'
        + "".join(op_text(i) for i in range(slice_ops))
        + "}\n"
    )
    t_slice, _ = timed(lambda: text_format.Parse(slice_text, ModelDef()))
    t_protobuf = t_slice * args.ops / slice_ops

    shutil.rmtree(ws_root / "temp", ignore_errors=True)
    t_cold, ws = timed(lambda: Workspace.open(tmp))
    assert not ws.warnings, ws.warnings[:3]
    run = ws.run()
    assert run.op_count() == args.ops and len(run.dumps) == args.files
    t_warm, ws2 = timed(lambda: Workspace.open(tmp), repeat=3)
    assert ws2.cache.hits >= 2 and ws2.run().op_count() == args.ops

    graph = ws2.run().dump_graph()
    names = [op_name(i) for i in range(0, args.ops, max(1, args.ops // 1000))]

    def lookup_all() -> int:
        found = 0
        for name in names:
            rec = graph.get(name)
            files = ws2.dump_files(ws2.run(), rec.name)
            benchmark = ws2.output_benchmark(rec, 0)
            found += bool(files) + (benchmark is None)
        return found

    t_lookup, _ = timed(lookup_all, repeat=3)
    per_lookup = t_lookup / len(names)
    all_names = graph.names()
    sample = names[:: max(1, len(names) // 50)]
    t_scan, _ = timed(lambda: [next(n for n in all_names if n == name) for name in sample])
    per_scan = t_scan / len(sample)
    t_substring, hits = timed(lambda: graph.search(name="block42/conv3"), repeat=3)
    t_ni_full, _ = timed(lambda: graph.op(op_name(args.ops // 2)))

    print(
        f"cold index build      {t_cold:7.2f} s   target <= 20 s   "
        f"protobuf text_format alone ~{t_protobuf:.1f} s (x{t_protobuf / t_cold:.1f} slower)"
    )
    print(
        f"warm load from cache  {t_warm:7.3f} s   target <= 1 s    ({t_cold / t_warm:.0f}x faster than cold)"
    )
    print(
        f"lookup by name (ni)   {per_lookup * 1e3:7.3f} ms  target <= 1 ms   "
        f"linear scan {per_scan * 1e3:.2f} ms (x{per_scan / per_lookup:.0f}); "
        f"{1 / per_lookup:,.0f} lookups/s"
    )
    print(
        f"substring search (ls) {t_substring * 1e3:7.2f} ms  ({len(hits)} hits over {args.ops} ops)"
    )
    print(f"full op unpickle (ni) {t_ni_full * 1e3:7.3f} ms")
    m_cold, m_warm = bench_multi_rank(tmp, args.rank_ops, args.ranks, args.steps)
    print(
        f"multi-rank cold build {m_cold:7.2f} s   target <= 20 s   "
        f"(x{m_cold / t_cold:.2f} the single-rank cold build)"
    )
    print(
        f"multi-rank warm load  {m_warm:7.3f} s   target <= 1 s    "
        f"(x{m_warm / t_warm:.2f} the single-rank warm load; {m_cold / m_warm:.0f}x faster than cold)"
    )
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
