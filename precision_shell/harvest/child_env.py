"""The environment a harvesting child process runs with.

TensorFlow's own noise and oneDNN's op renaming (`_MklMatMul`) are switched off unless the
user set those variables; `TERM=dumb` keeps readline from sending escape sequences;
the workspace is announced so `precision_shell.tf_config` in the user's script dumps into it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from precision_shell.tf_config import WORKSPACE_ENV

_TF_DEFAULTS = {"TF_CPP_MIN_LOG_LEVEL": "3", "TF_ENABLE_ONEDNN_OPTS": "0"}


def child_env(
    workspace_root: Path,
    temp_dir: Path | None = None,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """`base` (default: our environment) plus what a tfdbg child needs.

    `temp_dir`: the child's TMPDIR, so a live tfdbg dump root lands where we can see it.
    """
    env = dict(os.environ if base is None else base)
    for name, value in _TF_DEFAULTS.items():
        env.setdefault(name, value)
    env["TERM"] = "dumb"
    env["PYTHONUNBUFFERED"] = "1"
    env[WORKSPACE_ENV] = str(workspace_root)
    if temp_dir is not None:
        env["TMPDIR"] = str(temp_dir)
    return env
