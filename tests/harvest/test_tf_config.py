"""`precision_shell.tf_config`: importing it is free of side effects; where dumps go."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from precision_shell import tf_config


def test_importing_it_loads_no_tensorflow_and_changes_nothing() -> None:
    code = (
        "import os, sys; before = dict(os.environ); import precision_shell.tf_config; "
        "print('tensorflow' in sys.modules, dict(os.environ) == before, os.getcwd())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=os.getcwd()
    ).stdout
    assert out == f"False True {os.getcwd()}\n"


def test_dump_dirs_follow_the_workspace_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(tf_config.WORKSPACE_ENV, raising=False)
    assert tf_config.tf_debug_dir() == Path("precision_data/tf/tf_debug")
    monkeypatch.setenv(tf_config.WORKSPACE_ENV, str(tmp_path / "ws"))
    assert tf_config.workspace_dir() == tmp_path / "ws"
    assert tf_config.tf_debug_dir() == tmp_path / "ws" / "tf" / "tf_debug"


def test_a_non_empty_tf_debug_dir_is_refused_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(tf_config.WORKSPACE_ENV, str(tmp_path))
    assert tf_config._empty_tf_debug_dir() == str(tmp_path / "tf" / "tf_debug")  # created
    (tmp_path / "tf" / "tf_debug" / "run_1_0").mkdir()
    with pytest.raises(ValueError) as error:
        tf_config.sess_dump(object())
    assert str(error.value) == (
        f"{tmp_path / 'tf' / 'tf_debug'} is not empty: tfdbg writes only into an empty dir. "
        "Harvest it with tf_dump, then move or delete its run_* dirs"
    )
