"""`tf_config`'s NPU side, as precision_tool's users call it: the session config, a custom op
of their own, and the estimator's DumpConfig (npu_bridge faked: it needs CANN)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
import tensorflow as tf
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

from precision_shell import tf_config


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The workspace the script's dumps go to; GE's graph variables restored after."""
    monkeypatch.setenv(tf_config.WORKSPACE_ENV, str(tmp_path / "precision_data"))
    for name in ("DUMP_GE_GRAPH", "DUMP_GRAPH_LEVEL", "DUMP_GRAPH_PATH"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "precision_data"


def _params(custom_op: object) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in custom_op.parameter_map.items():  # type: ignore[attr-defined]
        out[key] = getattr(value, value.WhichOneof("value"))
    return out


def test_session_dump_config_turns_on_the_dump_into_the_workspace(workspace: Path) -> None:
    config = tf_config.session_dump_config(action="dump")
    assert isinstance(config, tf.compat.v1.ConfigProto)
    rewrite = config.graph_options.rewrite_options
    (custom_op,) = rewrite.custom_optimizers
    assert custom_op.name == "NpuOptimizer"
    dumps = workspace / "npu" / "debug_0" / "dump"
    assert _params(custom_op) == {
        "use_off_line": True,
        "dump_path": str(dumps.resolve()).encode(),
        "enable_dump": True,
        "dump_mode": b"all",
        "dump_step": b"0",
    }
    assert rewrite.remapping == RewriterConfig.OFF
    graphs = workspace / "npu" / "debug_0" / "graph"
    assert dumps.is_dir() and graphs.is_dir()
    assert (
        tf_config.os.environ["DUMP_GE_GRAPH"],
        tf_config.os.environ["DUMP_GRAPH_LEVEL"],
        tf_config.os.environ["DUMP_GRAPH_PATH"],
    ) == ("2", "3", str(graphs.resolve()))


def test_a_config_with_its_own_npu_optimizer_keeps_it_and_its_options(workspace: Path) -> None:
    config = tf.compat.v1.ConfigProto()
    own = config.graph_options.rewrite_options.custom_optimizers.add()
    own.name = "NpuOptimizer"
    own.parameter_map["precision_mode"].s = b"allow_mix_precision"
    same = tf_config.session_dump_config(config, action="overflow", dump_step="3")
    assert same is config
    (custom_op,) = config.graph_options.rewrite_options.custom_optimizers
    assert _params(custom_op) == {
        "precision_mode": b"allow_mix_precision",
        "dump_path": str((workspace / "overflow" / "dump").resolve()).encode(),
        "enable_dump_debug": True,
        "dump_debug_mode": b"all",
    }


def test_update_custom_op_as_the_seed_workflow_writes_it(workspace: Path) -> None:
    session_config = tf.compat.v1.ConfigProto()
    custom_op = session_config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    assert tf_config.update_custom_op(custom_op, action="dump", dump_step="0|5") is custom_op
    assert _params(custom_op)["dump_step"] == b"0|5"
    assert _params(custom_op)["enable_dump"] is True


def test_an_action_it_does_not_know_is_refused_with_the_two_it_does(workspace: Path) -> None:
    with pytest.raises(ValueError) as error:
        tf_config.session_dump_config(action="fusion_off")
    assert str(error.value) == (
        "action 'fusion_off': give 'dump' (every op's tensors) or 'overflow' (the ops that "
        "overflow, with their Opdebug files)"
    )
    assert not workspace.exists()  # refused before any dir is made


def test_estimator_dump_config_needs_npu_bridge_and_says_so(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "npu_bridge", None)  # not installed: import fails
    with pytest.raises(ImportError) as error:
        tf_config.estimator_dump_config()
    assert "run it on the Ascend machine, where CANN's TF adapter (npu_bridge)" in str(error.value)


def test_estimator_dump_config_builds_npu_bridges_dump_config(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[dict[str, object]] = []
    npu_init = types.ModuleType("npu_bridge.npu_init")
    npu_init.DumpConfig = lambda **kwargs: made.append(kwargs) or "dump-config"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "npu_bridge", types.ModuleType("npu_bridge"))
    monkeypatch.setitem(sys.modules, "npu_bridge.npu_init", npu_init)
    assert tf_config.estimator_dump_config(action="dump") == "dump-config"
    assert tf_config.estimator_dump_config(action="overflow") == "dump-config"
    assert made == [
        {
            "enable_dump": True,
            "dump_path": str((workspace / "npu" / "debug_0" / "dump").resolve()),
            "dump_step": "0",
            "dump_mode": "all",
        },
        {
            "enable_dump_debug": True,
            "dump_path": str((workspace / "overflow" / "dump").resolve()),
            "dump_debug_mode": "all",
        },
    ]
