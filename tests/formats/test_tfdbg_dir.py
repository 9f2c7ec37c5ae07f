"""Offline tfdbg dumps: run directory order, the missing-TensorFlow error, and (with TF) reading."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from precision_shell.errors import FormatError, PrecisionError
from precision_shell.formats import tfdbg_dir
from precision_shell.formats.tfdbg_dir import iter_tfdbg_run, list_run_dirs, tensorflow_available


def test_run_dirs_in_creation_order(tmp_path: Path) -> None:
    for name in (
        "run_1619492699306100_2",
        "run_1619492699305998_10",
        "run_1619492699305998_9",  # same microsecond: the counter decides, numerically
        "run_999999_0",  # an older clock reading sorts first although its string is larger
        "run_custom",
        "other_dir",
    ):
        (tmp_path / name).mkdir()
    (tmp_path / "run_1_1").write_text("a file, not a run")
    os.utime(tmp_path / "run_custom", (1, 1))

    assert [p.name for p in list_run_dirs(tmp_path)] == [
        "run_999999_0",
        "run_1619492699305998_9",
        "run_1619492699305998_10",
        "run_1619492699306100_2",
        "run_custom",
    ]
    assert list_run_dirs(tmp_path)[0] == tmp_path / "run_999999_0"


def test_run_dirs_of_an_empty_and_a_missing_root(tmp_path: Path) -> None:
    assert list_run_dirs(tmp_path) == []
    with pytest.raises(FormatError, match="cannot list tfdbg dump root") as error:
        list_run_dirs(tmp_path / "absent")
    assert str(tmp_path / "absent") in str(error.value)


def test_tensorflow_available_does_not_import_it() -> None:
    was_loaded = "tensorflow" in sys.modules
    assert tensorflow_available() is (importlib.util.find_spec("tensorflow") is not None)
    assert ("tensorflow" in sys.modules) is was_loaded


def test_reading_a_run_without_tensorflow_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tfdbg_dir, "tensorflow_available", lambda: False)
    with pytest.raises(PrecisionError, match="TensorFlow is not installed"):
        iter_tfdbg_run(tmp_path)


def test_reading_a_real_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tf = pytest.importorskip("tensorflow")
    from tensorflow.python import debug as tf_debug

    monkeypatch.setenv("HOME", str(tmp_path))  # tfdbg writes ~/.tfdbg_config
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, shape=(2, 3), name="x")
        y = tf.multiply(x, 2.0, name="double")
        z = tf.add(y, 1.0, name="plus_one")
    dump_root = tmp_path / "tf_debug"
    values = [np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((2, 3), np.float32)]
    with tf.compat.v1.Session(graph=graph) as session:
        debug_session = tf_debug.DumpingDebugWrapperSession(session, str(dump_root))
        for value in values:
            debug_session.run(z, feed_dict={x: value})

    runs = list_run_dirs(dump_root)
    assert len(runs) == 2
    for run, value in zip(runs, values, strict=True):
        tensors = {t.tensor_name: t for t in iter_tfdbg_run(run)}
        assert np.array_equal(tensors["double:0"].array, value * 2)
        assert np.array_equal(tensors["plus_one:0"].array, value * 2 + 1)
        assert tensors["plus_one:0"].dump_index == 0
        assert tensors["double:0"].timestamp <= tensors["plus_one:0"].timestamp


def test_tensorflows_start_up_lines_are_kept_off_stderr(capfd) -> None:  # noqa: ANN001
    """QA: every fast `tf_dump` printed TF's C++ start-up lines ("All log messages before
    absl::InitializeLog() ...", oneDNN's) on stderr, which TF_CPP_MIN_LOG_LEVEL does not
    silence, twice: a CI job watching stderr saw them."""
    import os

    from precision_shell.formats.tfdbg_dir import _stderr_kept_back

    with _stderr_kept_back() as said:
        os.write(2, b"WARNING: All log messages before absl::InitializeLog()\n")
        assert "absl::InitializeLog" in said()
    os.write(2, b"ours\n")
    assert capfd.readouterr().err == "ours\n"
