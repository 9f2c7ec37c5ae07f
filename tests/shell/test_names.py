"""Completion names of the opened workspace: op names and the original TF names they hold."""

from __future__ import annotations

from precision_shell.settings import Settings
from precision_shell.shell.context import ShellContext
from precision_shell.shell.names import NameSources
from tests.commands.shell_fixture import CONV2


def test_op_completion_offers_original_tf_names_of_fused_ops(tiny_demo_shared):
    root, manifest = tiny_demo_shared
    ctx = ShellContext(root, Settings.load(), use_cache=False)
    names = NameSources(ctx)
    assert names.ops() is None  # nothing to offer before the workspace is open
    assert ctx.try_open() is not None
    ops = names.ops()
    assert ops is not None
    assert ops.matching("bn2/") == ["bn2/FusedBatchNormV3"]
    assert CONV2 in ops.matching("conv2/")
    originals = {n for op in manifest.device_ops for n in op.original_op_names}
    device = {op.name for op in manifest.device_ops}
    assert set(ops.names) == originals | device
