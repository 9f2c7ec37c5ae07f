"""`tf_dump`'s analyzer path against the fake offline analyzer, and run-dir selection."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from precision_shell.errors import PrecisionError
from precision_shell.harvest.offline import (
    OfflineOptions,
    analyzer_argv,
    harvest_run_pexpect,
    select_runs,
)
from precision_shell.harvest.tfdbg_session import Timeouts
from tests.harvest.fake_spec import (
    T0,
    expected_files,
    fake_analyzer,
    make_fake_run_dir,
    npy_files,
    standard_tensors,
)

OPTIONS = OfflineOptions(analyzer=fake_analyzer(), timeouts=Timeouts(10, 10, 10))


def test_analyzer_command_line_is_tfdbgs_offline_analyzer() -> None:
    options = OfflineOptions(python="/opt/py/bin/python3")
    assert analyzer_argv(options, Path("/ws/tf/tf_debug/run_1_0")) == [
        "/opt/py/bin/python3",
        "-m",
        "tensorflow.python.debug.cli.offline_analyzer",
        "--ui_type=readline",
        "--dump_dir=/ws/tf/tf_debug/run_1_0",
        "--validate_graph=false",
    ]


def test_offline_analyzer_harvest_uses_the_run_dirs_timestamps(tmp_path: Path) -> None:
    run_dir = make_fake_run_dir(tmp_path / "tf" / "tf_debug" / "run_1600000000000000_0")
    out = tmp_path / "tf" / "dump"
    transcript = tmp_path / "temp" / "t.log"
    report = harvest_run_pexpect(run_dir, tmp_path, out, OPTIONS, transcript=transcript)

    assert report.error_message is None, report
    assert report.mode == "offline-pexpect" and report.child_status == "exit status 0"
    assert not report.timestamps_estimated
    for (name, index), (timestamp, value) in expected_files(standard_tensors()).items():
        saved = next(s for s in report.saved if (s.tensor_name, s.dump_index) == (name, index))
        assert saved.timestamp == timestamp
        assert np.array_equal(np.load(saved.path), value)
    assert f"loop_mul.0.{T0 + 4001}.npy" in npy_files(out)
    assert "tfdbg offline @ " in transcript.read_text()


def test_offline_analyzer_crash_keeps_the_files_written(tmp_path: Path) -> None:
    run_dir = make_fake_run_dir(tmp_path / "run_1_0", pt_crash_at=1)
    report = harvest_run_pexpect(run_dir, tmp_path, tmp_path / "dump", OPTIONS)
    assert (
        report.aborted == "tfdbg ended while writing dense/BiasAdd:0 (dump 0) (killed by signal 6)"
    )
    assert npy_files(tmp_path / "dump") == [f"dense_MatMul.0.{T0}.npy"]
    assert len(report.missed) == 7


def test_offline_analyzer_that_cannot_start_is_reported(tmp_path: Path) -> None:
    run_dir = tmp_path / "run_1_0"
    run_dir.mkdir()  # no fake_spec.json: the fake dies like an analyzer without TensorFlow
    report = harvest_run_pexpect(run_dir, tmp_path, tmp_path / "dump", OPTIONS)
    assert report.aborted.startswith(
        f"tfdbg ended while opening {run_dir} in tfdbg (exit status 1)"
    )
    assert "FileNotFoundError" in report.notes[0]
    assert not (tmp_path / "dump").exists() or npy_files(tmp_path / "dump") == []


def test_run_selection(tmp_path: Path) -> None:
    for name in ("run_30_0", "run_10_0", "run_20_0"):
        (tmp_path / name).mkdir()
    assert select_runs(tmp_path, None, False) == [tmp_path / "run_30_0"]
    assert select_runs(tmp_path, "0", False) == [tmp_path / "run_10_0"]
    assert select_runs(tmp_path, "-2", False) == [tmp_path / "run_20_0"]
    assert select_runs(tmp_path, "run_20_0", False) == [tmp_path / "run_20_0"]
    assert select_runs(tmp_path, None, True) == [
        tmp_path / n for n in ("run_10_0", "run_20_0", "run_30_0")
    ]
    with pytest.raises(PrecisionError) as error:
        select_runs(tmp_path, "7", False)
    assert str(error.value) == (
        f"no run '7' in {tmp_path}; runs: 0=run_10_0, 1=run_20_0, 2=run_30_0"
    )
    with pytest.raises(PrecisionError, match="no run_\\* dirs to harvest"):
        select_runs(tmp_path / "run_10_0", None, False)
