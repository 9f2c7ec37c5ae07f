"""Helpers for the user's TensorFlow script: wrap a session or estimator for harvesting.

Use in the CPU/GPU training script (graph mode, TF1 style):

    import precision_shell.tf_config as tf_config
    sess = tf_config.sess_dump(sess)            # live: `tf_run "python train.py"`
    sess = tf_config.sess_dump_offline(sess)    # offline: run the script, then `tf_dump`
    EstimatorSpec(..., training_hooks=[tf_config.estimator_dump()])   # or _offline()

Offline dumps go to `<workspace>/tf/tf_debug/`: the workspace is the `precision_data` dir
named by the `PRECISION_DATA_DIR` variable (set by `tf_run`/`tf_dump` when they start the
script), else `./precision_data`. Importing this module imports nothing heavy and changes
nothing; TensorFlow is imported by the functions that need it.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

WORKSPACE_ENV = "PRECISION_DATA_DIR"
_TF_DEBUG_SUBDIR = ("tf", "tf_debug")


def workspace_dir() -> Path:
    """The `precision_data` dir dumps go to."""
    return Path(os.environ.get(WORKSPACE_ENV) or "precision_data")


def tf_debug_dir() -> Path:
    """Where the offline dump wrappers write their `run_*` dirs."""
    return workspace_dir().joinpath(*_TF_DEBUG_SUBDIR)


def _empty_tf_debug_dir() -> str:
    root = tf_debug_dir()
    # tfdbg refuses a non-empty session root; say so before TF does, with the fix.
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


def sess_dump(sess: Any) -> Any:
    """Wrap `sess` in tfdbg's live CLI (readline UI) for `tf_run`."""
    return _tf_debug().LocalCLIDebugWrapperSession(sess, ui_type="readline")


def sess_dump_offline(sess: Any) -> Any:
    """Wrap `sess` so every `run()` dumps all tensors into `tf/tf_debug/run_*` for `tf_dump`."""
    return _tf_debug().DumpingDebugWrapperSession(sess, _empty_tf_debug_dir())


def estimator_dump() -> Any:
    """An estimator hook opening tfdbg's live CLI (readline UI) for `tf_run`."""
    return _tf_debug().LocalCLIDebugHook(ui_type="readline")


def estimator_dump_offline() -> Any:
    """An estimator hook dumping every `run()` into `tf/tf_debug/run_*` for `tf_dump`."""
    return _tf_debug().DumpingDebugHook(_empty_tf_debug_dir())


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
