#!/usr/bin/env python3
"""Shell benchmark: start-to-prompt time on the demo workspace, and `ls`/`ni` on a 50k-op index.

Figures come with a baseline measured in the same run (these machines are noisy):
- start to prompt vs starting Python and importing numpy + rich + prompt_toolkit,
- `ls`/`ni` (dispatch + render) vs a dictionary lookup over the same index.

Usage: scripts/bench_shell.py [--ops N] [--files N]
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))


def time_to_prompt(workspace: Path, env: dict[str, str]) -> float:
    import pexpect

    t0 = time.perf_counter()
    child = pexpect.spawn(
        sys.executable,
        ["-m", "precision_shell", str(workspace)],
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 120),
    )
    child.expect("PrecisionTool >")
    elapsed = time.perf_counter() - t0
    child.sendline("exit")
    child.expect(pexpect.EOF)
    child.close()
    return elapsed


def time_imports(env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", "import numpy, rich, prompt_toolkit"], env=env, check=True
    )
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=50_000)
    parser.add_argument("--files", type=int, default=100_000)
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench_shell_"))
    env = dict(
        os.environ,
        XDG_CACHE_HOME=str(tmp / "cache"),
        XDG_STATE_HOME=str(tmp / "state"),
        XDG_CONFIG_HOME=str(tmp / "config"),
        PROMPT_TOOLKIT_NO_CPR="1",
        TERM="xterm",
    )
    os.environ.update({k: env[k] for k in ("XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME")})

    from precision_shell.demo.builder import ensure_demo

    demo = Path(ensure_demo(tmp / "demo").workspace)
    time_to_prompt(demo, env)  # cold: builds the index cache
    warm = min(time_to_prompt(demo, env) for _ in range(3))
    imports = min(time_imports(env) for _ in range(3))
    print(
        f"start to prompt (demo, warm)  {warm:6.3f} s   target <= 1 s   "
        f"python + numpy/rich/prompt_toolkit imports {imports:.3f} s (x{warm / imports:.1f})"
    )

    from bench_index import GRAPH_NAME, op_name, write_dump_names, write_graph

    ws_root = tmp / "big" / "precision_data"
    graph_dir = ws_root / "npu" / "debug_0" / "graph"
    graph_dir.mkdir(parents=True)
    write_graph(graph_dir / "ge_proto_00000001_Build.txt", args.ops)
    write_dump_names(
        ws_root / "npu" / "debug_0" / "dump" / "20261122063000" / "0" / GRAPH_NAME / "1" / "0",
        args.ops,
        args.files,
    )

    import precision_shell.commands  # noqa: F401
    from precision_shell.render.output import Renderer, make_console
    from precision_shell.settings import Settings
    from precision_shell.shell.context import ShellContext
    from precision_shell.shell.dispatcher import Dispatcher

    ctx = ShellContext(ws_root, Settings.load())
    dispatcher = Dispatcher(ctx)
    sink = make_console(False)
    sink.file = io.StringIO()
    renderer = Renderer(sink, sink)
    t0 = time.perf_counter()
    graph = ctx.workspace.run().dump_graph()
    print(f"index open (cold, {args.ops} ops)   {time.perf_counter() - t0:6.2f} s")

    def timed(line: str, repeat: int = 5) -> float:
        best = float("inf")
        for _ in range(repeat):
            t = time.perf_counter()
            outcome = dispatcher.execute(line)
            renderer.outcome(outcome)
            best = min(best, time.perf_counter() - t)
            assert outcome.ok, outcome.error
        return best

    name = op_name(args.ops // 2)
    t_dict = min(_lookup(graph, name) for _ in range(5))
    for line in (
        f"ls -n {name}",
        "ls -n block42/conv3",
        "ls -t Conv2D -n stage3/block7",
        f"ni {name}",
        "ls",
    ):
        t = timed(line)
        print(
            f"{line[:40]:40s} {t * 1e3:8.2f} ms  target < 50 ms   (dict lookup {t_dict * 1e6:.1f} us)"
        )
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


def _lookup(graph, name: str) -> float:  # noqa: ANN001
    t = time.perf_counter()
    graph.get(name)
    return time.perf_counter() - t


if __name__ == "__main__":
    raise SystemExit(main())
