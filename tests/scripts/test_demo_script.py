"""`scripts/demo` as the README gives it: piped commands run against the built-in demo."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_scripts_demo_runs_piped_commands_on_the_demo(tmp_path):
    env = dict(
        os.environ,
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        PRECISION_SHELL_VENV=sys.prefix,
    )
    proc = subprocess.run(
        [str(ROOT / "scripts" / "demo")],
        input="ls -t Conv2D\nni nope_xyz\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr  # the second command fails: no such op
    assert proc.stdout.startswith("PrecisionTool > ls -t Conv2D\n")
    assert (
        "[Conv2D][ConvBatchnormFusionPass,AutomaticUbFusion] conv2/Conv2Drelu2/Relu" in proc.stdout
    )
    assert "line 2: ni: no op named or containing 'nope_xyz'" in proc.stderr
    demo = tmp_path / "cache" / "precision_shell" / "demo" / "precision_data"
    assert (demo / "npu" / "debug_0" / "graph").is_dir()  # built once, in the user's cache
