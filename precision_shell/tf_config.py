"""Helpers for the user's TensorFlow script: wrap a session or estimator for harvesting, and
(on the Ascend machine) turn on the NPU dump. The names and meanings are precision_tool's.

In the CPU/GPU training script (graph mode, TF1 style):

    import precision_shell.tf_config as tf_config
    sess = tf_config.sess_dump(sess)            # offline: run the script, then `tf_dump`
    sess = tf_config.sess_dump_live(sess)       # live: `tf_run python train.py`
    EstimatorSpec(..., training_hooks=[tf_config.estimator_dump()])   # or _live()

In the NPU training script (TF on Ascend, with CANN's npu_bridge):

    config = tf_config.session_dump_config(config, action="dump")     # or "overflow"
    custom_op = tf_config.update_custom_op(custom_op, action="dump")  # a NpuOptimizer of yours
    NPURunConfig(dump_config=tf_config.estimator_dump_config(action="dump"), ...)

Offline dumps go to `<workspace>/tf/tf_debug/`, NPU dumps to `<workspace>/npu/debug_0/dump/`
(overflow dumps to `<workspace>/overflow/dump/`) and GE graphs to `<workspace>/npu/debug_0/graph/`:
the workspace is the `precision_data` dir named by the `PRECISION_DATA_DIR` variable (set by
`tf_run`/`tf_dump` when they start the script), else `./precision_data`. Importing this module
imports nothing heavy and changes nothing; TensorFlow is imported by the functions that need it.
"""

from __future__ import annotations

import contextlib
import os
import random
from pathlib import Path
from typing import Any

WORKSPACE_ENV = "PRECISION_DATA_DIR"
_TF_DEBUG_SUBDIR = ("tf", "tf_debug")
# `run_<ts>_<n>.failed` beside a run dir: that run raised (its dumps stop where it did)
RUN_FAILED_SUFFIX = ".failed"
# in tf_debug/ while a run dumps, listing the run dirs there before it: left behind, the run
# dirs it does not list did not finish (the script was stopped or killed as it ran)
RUN_IN_PROGRESS = ".run_in_progress"


def workspace_dir() -> Path:
    """The `precision_data` dir dumps go to."""
    return Path(os.environ.get(WORKSPACE_ENV) or "precision_data")


def tf_debug_dir() -> Path:
    """Where the offline dump wrappers write their `run_*` dirs."""
    return workspace_dir().joinpath(*_TF_DEBUG_SUBDIR)


def _empty_tf_debug_dir() -> str:
    root = tf_debug_dir()
    # tfdbg refuses a non-empty session root; say so before TF does, with the fix. Our own
    # marks of runs no longer there (harvested and moved away) go.
    if root.is_dir():
        entries = list(root.iterdir())
        if entries and all(_own_mark(e.name) and e.is_file() for e in entries):
            for entry in entries:
                entry.unlink(missing_ok=True)
    if root.is_dir() and any(root.iterdir()):
        raise ValueError(
            f"{root} is not empty: tfdbg writes only into an empty dir. Harvest it with "
            "tf_dump, then move or delete its run_* dirs"
        )
    root.mkdir(parents=True, exist_ok=True)
    return str(root)


def _tf_debug() -> Any:
    from tensorflow.python import debug as tf_debug

    return tf_debug


def _own_mark(name: str) -> bool:
    return name == RUN_IN_PROGRESS or (name.startswith("run_") and name.endswith(RUN_FAILED_SUFFIX))


def _begin_run(root: str) -> set[str]:
    """The entries of `root` before a run; RUN_IN_PROGRESS lists its run dirs until
    `_end_run`."""
    before = set(os.listdir(root))
    _mark_in_progress(root, before)
    return before


def _mark_in_progress(root: str, before: set[str]) -> None:
    runs = sorted(n for n in before if n.startswith("run_") and not _own_mark(n))
    with contextlib.suppress(OSError):  # the run itself says whether the dir is writable
        Path(root, RUN_IN_PROGRESS).write_text("".join(f"{n}\n" for n in runs), encoding="utf-8")


def _end_run(root: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(root, RUN_IN_PROGRESS))


def _mark_failed_runs(root: str, before: set[str], error: BaseException) -> None:
    """Write `<run dir>.failed` (the error's first line) beside each run dir made since
    `before`, so `tf_dump` does not take its partial dumps for a whole run."""
    try:
        made = [n for n in os.listdir(root) if n.startswith("run_") and n not in before]
        text = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        for name in made:
            Path(root, name + RUN_FAILED_SUFFIX).write_text(text[:2000] + "\n", encoding="utf-8")
    except OSError:
        pass  # the error itself still reaches the script


def sess_dump(sess: Any) -> Any:
    """Wrap `sess` so every `run()` dumps all tensors into `tf/tf_debug/run_*` for `tf_dump`
    (precision_tool's `sess_dump`: a `DumpingDebugWrapperSession`). A run that fails raises
    as it would unwrapped (tfdbg's wrapper returns the error instead, and a script went on
    with a partial dump that tf_dump then called whole), and its run dir is marked failed."""
    tf_debug = _tf_debug()
    root = _empty_tf_debug_dir()

    class _FailureMarking(tf_debug.DumpingDebugWrapperSession):  # type: ignore[misc, name-defined]
        def run(self, *args: Any, **kwargs: Any) -> Any:
            before = _begin_run(root)
            try:
                result = super().run(*args, **kwargs)
            except Exception as error:
                _mark_failed_runs(root, before, error)
                _end_run(root)
                raise
            _end_run(root)
            return result

    return _FailureMarking(sess, root, pass_through_operrors=True)


def sess_dump_live(sess: Any) -> Any:
    """Wrap `sess` in tfdbg's live CLI (readline UI), which `tf_run` drives."""
    return _tf_debug().LocalCLIDebugWrapperSession(sess, ui_type="readline")


def estimator_dump() -> Any:
    """An estimator hook dumping every `run()` into `tf/tf_debug/run_*` for `tf_dump`
    (precision_tool's `estimator_dump`: a `DumpingDebugHook`). A run that raises never
    reaches `after_run`: its RUN_IN_PROGRESS mark stays, and tf_dump does not call its
    partial dumps whole (QA)."""
    tf_debug = _tf_debug()
    root = _empty_tf_debug_dir()

    class _UnfinishedMarking(tf_debug.DumpingDebugHook):  # type: ignore[misc, name-defined]
        def before_run(self, run_context: Any) -> Any:
            before = set(os.listdir(root))
            # after tfdbg's own: its first call checks that the dir is empty
            result = super().before_run(run_context)
            _mark_in_progress(root, before)
            return result

        def after_run(self, run_context: Any, run_values: Any) -> Any:
            result = super().after_run(run_context, run_values)
            _end_run(root)
            return result

    return _UnfinishedMarking(root)


def estimator_dump_live() -> Any:
    """An estimator hook opening tfdbg's live CLI (readline UI), which `tf_run` drives."""
    return _tf_debug().LocalCLIDebugHook(ui_type="readline")


# the names sessions 1-18 gave the offline wrappers
sess_dump_offline = sess_dump
estimator_dump_offline = estimator_dump

# --- the NPU side: CANN's dump switches (read by GE through TF's NpuOptimizer) ------------
NPU_OPTIMIZER = "NpuOptimizer"
DUMP_STEP = "0"  # the steps to dump, `0|5|10` style; one step is what a compare needs
_NPU_DUMP_SUBDIR = ("npu", "debug_0", "dump")
_NPU_GRAPH_SUBDIR = ("npu", "debug_0", "graph")
_OVERFLOW_SUBDIR = ("overflow", "dump")
# GE's graph dump: without constants' data (2), the last graph built (3), as ge_proto_*.txt
_GE_GRAPH_ENV = {"DUMP_GE_GRAPH": "2", "DUMP_GRAPH_LEVEL": "3"}


def _dump_action(action: str) -> str:
    """`dump` or `overflow` (precision_tool's other actions switch fusion passes off with
    files of its own, which this tool does not ship)."""
    if action in ("dump", "overflow"):
        return action
    raise ValueError(
        f"action {action!r}: give 'dump' (every op's tensors) or 'overflow' (the ops that "
        "overflow, with their Opdebug files)"
    )


def _npu_dirs(action: str) -> str:
    """Make the dirs the NPU run writes into and point GE's graph dump at the workspace;
    return the dump path of `action`."""
    graphs = workspace_dir().joinpath(*_NPU_GRAPH_SUBDIR)
    dumps = workspace_dir().joinpath(
        *(_OVERFLOW_SUBDIR if action == "overflow" else _NPU_DUMP_SUBDIR)
    )
    for path in (graphs, dumps):
        path.mkdir(parents=True, exist_ok=True)
    os.environ.update(_GE_GRAPH_ENV, DUMP_GRAPH_PATH=str(graphs.resolve()))
    return str(dumps.resolve())


def update_custom_op(custom_op: Any, action: str = "dump", dump_step: str = DUMP_STEP) -> Any:
    """Turn on the NPU dump in a `NpuOptimizer` custom optimizer of the session config:
    `dump` dumps every op's tensors of `dump_step` into the workspace's `npu/debug_0/dump/`,
    `overflow` the ops that overflow into `overflow/dump/`. Returns `custom_op`."""
    import tensorflow as tf

    chosen = _dump_action(action)
    params = custom_op.parameter_map
    params["dump_path"].s = tf.compat.as_bytes(_npu_dirs(chosen))
    if chosen == "overflow":
        params["enable_dump_debug"].b = True
        params["dump_debug_mode"].s = tf.compat.as_bytes("all")
    else:
        params["enable_dump"].b = True
        params["dump_mode"].s = tf.compat.as_bytes("all")
        params["dump_step"].s = tf.compat.as_bytes(dump_step)
    return custom_op


def session_dump_config(
    config: Any = None, action: str = "dump", dump_step: str = DUMP_STEP
) -> Any:
    """A `ConfigProto` (`config` itself when given) whose `NpuOptimizer` (its own, else a new
    one, run offline) dumps as `update_custom_op` says; TF's remapping pass is turned off, so
    the graph keeps the ops the benchmark has."""
    import tensorflow as tf
    from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

    if not isinstance(config, tf.compat.v1.ConfigProto):
        config = tf.compat.v1.ConfigProto()
    rewrite = config.graph_options.rewrite_options
    custom_op = next((op for op in rewrite.custom_optimizers if op.name == NPU_OPTIMIZER), None)
    if custom_op is None:
        custom_op = rewrite.custom_optimizers.add()
        custom_op.name = NPU_OPTIMIZER
        custom_op.parameter_map["use_off_line"].b = True
    update_custom_op(custom_op, action, dump_step)
    rewrite.remapping = RewriterConfig.OFF
    return config


def estimator_dump_config(action: str = "dump", dump_step: str = DUMP_STEP) -> Any:
    """npu_bridge's `DumpConfig` for `NPURunConfig(dump_config=...)`, dumping as
    `update_custom_op` says. Needs CANN's TF adapter (npu_bridge): the Ascend machine's."""
    chosen = _dump_action(action)
    try:
        from npu_bridge.npu_init import DumpConfig  # type: ignore[import-not-found]
    except ImportError:
        raise ImportError(
            "estimator_dump_config builds npu_bridge's DumpConfig for NPURunConfig: run it on "
            "the Ascend machine, where CANN's TF adapter (npu_bridge) is installed"
        ) from None
    path = _npu_dirs(chosen)
    if chosen == "overflow":
        return DumpConfig(enable_dump_debug=True, dump_path=path, dump_debug_mode="all")
    return DumpConfig(enable_dump=True, dump_path=path, dump_step=dump_step, dump_mode="all")


def benchmark_session_config(config: Any = None) -> Any:
    """A `ConfigProto` (a copy of `config`) that keeps every op of the graph as written.

    Grappler fuses ops (MatMul+BiasAdd+Relu -> `_FusedMatMul` named after the Relu) and
    folds constants, so the fused-away ops would have no dump to compare the device with.
    """
    import tensorflow as tf

    proto = tf.compat.v1.ConfigProto()
    if config is not None:
        proto.CopyFrom(config)
    proto.graph_options.rewrite_options.disable_meta_optimizer = True
    proto.graph_options.optimizer_options.opt_level = tf.compat.v1.OptimizerOptions.L0
    return proto


def seed_everything(seed: int = 0) -> None:
    """Seed Python, numpy and TensorFlow, and ask TF for deterministic kernels.

    The TF1 graph seed belongs to the default graph: call this inside
    `with graph.as_default():` when the script builds its own graph.
    """
    os.environ["PYTHONHASHSEED"] = str(seed)
    os.environ["TF_DETERMINISTIC_OPS"] = "1"
    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed)
    except ImportError:
        pass
    import tensorflow as tf

    tf.compat.v1.set_random_seed(seed)
    tf.random.set_seed(seed)
    enable_determinism = getattr(tf.config.experimental, "enable_op_determinism", None)
    if enable_determinism is not None:
        enable_determinism()
