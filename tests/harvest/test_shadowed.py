"""A harvest whose tensors the shell would not read (a newer run's files already there) says
so and fails, instead of "saved 160 of 160"."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from precision_shell.harvest.benchmark_writer import BenchmarkDirWriter
from precision_shell.harvest.outcome import HarvestOutcome
from precision_shell.harvest.shadowed import shadowed_tensors


def _harvest(out: Path, timestamps: dict[str, list[int]]) -> list:  # noqa: ANN401
    writer = BenchmarkDirWriter(out, list(timestamps))
    saved = [
        writer.save_array(name, k, ts, np.full(3, ts, np.float32))
        for name, stamps in timestamps.items()
        for k, ts in enumerate(stamps)
    ]
    writer.close()
    return saved


def test_an_older_run_harvested_after_a_newer_one_is_shadowed(tmp_path: Path) -> None:
    out = tmp_path / "tf" / "dump"
    _harvest(out, {"dense/MatMul:0": [2_000], "relu:0": [2_001]})  # run 2 first
    older = _harvest(out, {"dense/MatMul:0": [1_000], "relu:0": [1_001], "new:0": [1_002]})
    assert shadowed_tensors(out, older) == [
        ("dense/MatMul:0", "dense_MatMul.0.2000.npy"),
        ("relu:0", "relu.0.2001.npy"),
    ]
    report = HarvestOutcome("offline", "run_0", str(out), total=3, saved=older)
    report.shadowed = shadowed_tensors(out, older)
    assert report.error_message == (
        f"2 of the tensors saved are shadowed by newer files already in {out} (e.g. "
        "dense/MatMul:0: dense_MatMul.0.2000.npy), and vc, pt and ni read a tensor's newest "
        "file: move those away, or harvest into another dir (--into DIR)"
    )


def test_a_newer_run_and_a_loops_earlier_iterations_are_not_shadowed(tmp_path: Path) -> None:
    out = tmp_path / "dump"
    _harvest(out, {"x:0": [1_000]})
    # three iterations of one loop tensor: the last is read, the earlier two by design not
    newer = _harvest(out, {"x:0": [5_000], "loop/add:0": [5_001, 5_002, 5_003]})
    assert shadowed_tensors(out, newer) == []


def test_a_copy_of_the_same_run_under_a_fresh_name_is_no_shadow(tmp_path: Path) -> None:
    out = tmp_path / "dump"
    _harvest(out, {"x:0": [1_000]})
    _harvest(out, {"x:0": [1_000]})  # the same run again: fresh name x.0.1001.npy
    # --overwrite replaces x.0.1000.npy; the fresh copy is newer but holds the same bytes
    writer = BenchmarkDirWriter(out, ["x:0"], overwrite=True)
    again = [writer.save_array("x:0", 0, 1_000, np.full(3, 1_000, np.float32))]
    writer.close()
    assert again[0].replaced and shadowed_tensors(out, again) == []


def test_a_harvest_cut_short_leaves_a_mark_every_reader_warns_of(tmp_path: Path) -> None:
    """QA: a Ctrl-C'd harvest of run 2 over run 0's left tf/dump a silent mix of both runs."""
    from precision_shell.formats.benchmark import HARVEST_CUT_NAME, scan_benchmark_dir

    out = tmp_path / "dump"
    _harvest(out, {"x:0": [1_000]})
    assert not (out / HARVEST_CUT_NAME).exists() and scan_benchmark_dir(out).warnings == []
    writer = BenchmarkDirWriter(out, ["x:0", "y:0"])
    writer.save_array("x:0", 0, 2_000, np.zeros(3, np.float32))
    writer.close(finished=False)  # Ctrl-C before y:0
    assert scan_benchmark_dir(out).warnings == [
        f"{out}: a harvest into it was cut short ({HARVEST_CUT_NAME}): its tensors may mix "
        "that run's with an earlier one's; harvest the run again whole"
    ]
    _harvest(out, {"x:0": [3_000], "y:0": [3_001]})  # the run again, whole
    assert scan_benchmark_dir(out).warnings == []


def test_the_mark_is_never_written_through_a_link(tmp_path: Path) -> None:
    out = tmp_path / "dump"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    from precision_shell.formats.benchmark import HARVEST_CUT_NAME

    (out / HARVEST_CUT_NAME).symlink_to(victim)
    writer = BenchmarkDirWriter(out, ["x:0"])
    writer.close(finished=False)
    assert victim.read_text() == "keep me"


def test_a_harvest_stopped_before_it_wrote_anything_leaves_no_mark(tmp_path: Path) -> None:
    """tfdbg that never started (a crash, a timeout) changed nothing in the dir."""
    from precision_shell.formats.benchmark import HARVEST_CUT_NAME

    out = tmp_path / "dump"
    BenchmarkDirWriter(out, ["x:0"]).close(finished=False)
    assert not (out / HARVEST_CUT_NAME).exists()
    cut = BenchmarkDirWriter(out, ["x:0", "y:0"])
    cut.save_array("x:0", 0, 1, np.zeros(2, np.float32))
    cut.close(finished=False)
    BenchmarkDirWriter(out, ["x:0"]).close(finished=False)  # stopped at once: the mark stays
    assert (out / HARVEST_CUT_NAME).exists()
