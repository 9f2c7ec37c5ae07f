#!/usr/bin/env python3
"""Harvest benchmark: a TF1 graph with ~500 dumped tensors through the real tfdbg.

Prints, for the same graph:
- `tf_run`: the live session, total and per harvested tensor (the `pt -w` loop),
- `tf_dump` fast path: the run dir read with `DebugDumpDir` in this process,
- `tf_dump --pexpect`: the same run dir through tfdbg's offline analyzer,
and the per-tensor ratio pexpect / fast (target: >= 10x). Needs TensorFlow.

Usage: scripts/bench_harvest.py [--blocks N] [--keep DIR]   (5 tensors per block)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from precision_shell.formats.tfdbg_dir import list_run_dirs, tensorflow_available  # noqa: E402
from precision_shell.harvest.live import LiveOptions, harvest_live  # noqa: E402
from precision_shell.harvest.offline import (  # noqa: E402
    OfflineOptions,
    harvest_run_fast,
    harvest_run_pexpect,
    run_user_script,
)
from precision_shell.harvest.outcome import HarvestOutcome  # noqa: E402
from precision_shell.progress import ProgressSink  # noqa: E402

MODEL = r"""
import sys
sys.path.insert(0, REPO)
import numpy as np
import tensorflow as tf
from precision_shell import tf_config

mode, blocks = sys.argv[1], int(sys.argv[2])
tf.compat.v1.disable_eager_execution()
graph = tf.Graph()
rng = np.random.default_rng(0)
with graph.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [8, 64], name="x")
    h = x
    for i in range(blocks):  # 5 dumped tensors per block: 2 consts, matmul, bias, relu
        w = tf.constant(rng.standard_normal((64, 64), np.float32) / 8, name=f"b{i}/kernel")
        b = tf.constant(rng.standard_normal(64, np.float32) / 8, name=f"b{i}/bias")
        h = tf.nn.relu(tf.nn.bias_add(tf.matmul(h, w, name=f"b{i}/MatMul"), b, name=f"b{i}/BiasAdd"), name=f"b{i}/Relu")
sess = tf.compat.v1.Session(graph=graph, config=tf_config.benchmark_session_config())
wrapped = tf_config.sess_dump_live(sess) if mode == "live" else tf_config.sess_dump(sess)
wrapped.run(h, {x: rng.standard_normal((8, 64), np.float32)})
"""


class LoopTimer:
    """A progress sink measuring the per-tensor loop (from the first tensor to the last)."""

    def __init__(self) -> None:
        self.started = self.stopped = 0.0
        self.sink = ProgressSink(start=self._start, stop=self._stop)

    def _start(self, total: int, total_bytes: int) -> None:
        self.started = time.perf_counter()

    def _stop(self) -> None:
        self.stopped = time.perf_counter()

    @property
    def seconds(self) -> float:
        return self.stopped - self.started


def _line(label: str, report: HarvestOutcome, loop: LoopTimer) -> float:
    per_tensor_ms = loop.seconds / max(len(report.saved), 1) * 1000
    problems = f"  PROBLEM: {report.error_message}" if report.error_message else ""
    print(
        f"{label:<28} {len(report.saved):>4}/{report.total:<4} tensors  total {report.elapsed:7.2f} s"
        f"  loop {loop.seconds:7.3f} s  {per_tensor_ms:8.3f} ms/tensor{problems}"
    )
    return per_tensor_ms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=100, help="graph blocks (5 tensors each)")
    parser.add_argument("--keep", type=Path, help="work in this dir and keep it")
    args = parser.parse_args()
    if not tensorflow_available():
        print("bench_harvest: TensorFlow is not installed (pip install tensorflow-cpu)")
        return 2

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench_harvest_"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "home").mkdir(exist_ok=True)
    os.environ["HOME"] = str(work / "home")  # tfdbg writes ~/.tfdbg_config
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    model = work / "model.py"
    model.write_text(MODEL.replace("REPO", repr(str(REPO)), 1), encoding="utf-8")
    try:
        print(f"graph: {args.blocks} blocks, {5 * args.blocks} dumped tensors; work dir {work}")

        live_root = work / "live" / "precision_data"
        loop = LoopTimer()
        live = harvest_live(
            [sys.executable, str(model), "live", str(args.blocks)],
            live_root,
            live_root / "tf" / "dump",
            LiveOptions(),
            progress=loop.sink,
        )
        _line("tf_run (live session)", live, loop)

        offline_root = work / "offline" / "precision_data"
        started = time.perf_counter()
        status = run_user_script(
            [sys.executable, str(model), "offline", str(args.blocks)],
            offline_root,
            600,
            work / "offline_script.log",
        )
        print(f"{'offline script run':<28} {status}, {time.perf_counter() - started:.2f} s")
        run_dir = list_run_dirs(offline_root / "tf" / "tf_debug")[-1]

        started = time.perf_counter()
        import tensorflow.python.debug.lib.debug_data  # noqa: F401

        print(f"{'TensorFlow import (once)':<28} {time.perf_counter() - started:.2f} s")
        loop = LoopTimer()
        fast = harvest_run_fast(run_dir, offline_root / "tf" / "dump", progress=loop.sink)
        fast_ms = _line("tf_dump fast path", fast, loop)

        loop = LoopTimer()
        slow = harvest_run_pexpect(
            run_dir,
            offline_root,
            offline_root / "tf" / "dump_pexpect",
            OfflineOptions(),
            progress=loop.sink,
        )
        slow_ms = _line("tf_dump --pexpect", slow, loop)
        print(
            f"per tensor: pexpect / fast = {slow_ms / fast_ms:.1f}x (target >= 10x); "
            f"whole harvest: {slow.elapsed / fast.elapsed:.1f}x"
        )
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
