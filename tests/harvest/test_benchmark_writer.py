"""Publishing into the benchmark dir: exclusive names, fresh names, --overwrite, mapping.csv."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from precision_shell.formats.benchmark import load_benchmark, scan_benchmark_dir
from precision_shell.harvest.benchmark_writer import BenchmarkDirWriter, NoValues, TensorNotSaved

TS = 1600000000000000


def _hidden(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.startswith(".")]


def test_arrays_are_written_under_canonical_names_and_staging_is_removed(tmp_path: Path) -> None:
    out = tmp_path / "dump"
    writer = BenchmarkDirWriter(out, ["dense/MatMul:0"])
    saved = writer.save_array("dense/MatMul:0", 0, TS, np.arange(6, dtype=np.float16).reshape(2, 3))
    assert writer.close() is None
    assert saved.path == str(out / f"dense_MatMul.0.{TS}.npy")
    assert not saved.fresh_name and not saved.replaced
    value = load_benchmark(saved.path)
    assert value.dtype == np.float16 and np.array_equal(value, np.arange(6).reshape(2, 3))
    assert _hidden(out) == []
    assert scan_benchmark_dir(out).lookup("dense/MatMul", 0).timestamp == TS


def test_a_taken_name_goes_to_the_next_free_timestamp_and_the_old_file_is_kept(
    tmp_path: Path,
) -> None:
    out = tmp_path / "dump"
    out.mkdir()
    (out / f"x.0.{TS}.npy").write_bytes(b"old")
    (out / f"x.0.{TS + 1}.npy").write_bytes(b"older")
    writer = BenchmarkDirWriter(out, ["x:0"])
    saved = writer.save_array("x:0", 0, TS, np.array([1.0], dtype=np.float32))
    writer.close()
    assert saved.path == str(out / f"x.0.{TS + 2}.npy") and saved.fresh_name
    assert saved.timestamp == TS
    assert (out / f"x.0.{TS}.npy").read_bytes() == b"old"
    assert (out / f"x.0.{TS + 1}.npy").read_bytes() == b"older"
    assert np.array_equal(np.load(saved.path), [1.0])
    assert scan_benchmark_dir(out).lookup("x", 0).path == saved.path  # the re-harvest is newest


def test_overwrite_replaces_an_earlier_file_but_not_one_of_this_harvest(tmp_path: Path) -> None:
    out = tmp_path / "dump"
    out.mkdir()
    (out / f"a_b.0.{TS}.npy").write_bytes(b"old")
    writer = BenchmarkDirWriter(out, ["a/b:0", "a_b:0"], overwrite=True)
    first = writer.save_array("a/b:0", 0, TS, np.array([1], dtype=np.int32))
    second = writer.save_array("a_b:0", 0, TS, np.array([2], dtype=np.int32))
    mapping = writer.close()
    assert first.replaced and first.path == str(out / f"a_b.0.{TS}.npy")
    assert not second.replaced and second.fresh_name
    assert second.path == str(out / f"a_b.0.{TS + 1}.npy")
    assert sorted(p.name for p in out.iterdir()) == [
        f"a_b.0.{TS}.npy",
        f"a_b.0.{TS + 1}.npy",
        "mapping.csv",
    ]
    assert np.array_equal(np.load(first.path), [1]) and np.array_equal(np.load(second.path), [2])
    assert mapping == out / "mapping.csv"
    assert mapping.read_text() == (
        f"a_b.0.{TS}.npy,a/b.0.{TS}.npy\na_b.0.{TS + 1}.npy,a_b.0.{TS + 1}.npy\n"
    )


def test_mapping_rows_are_appended_to_an_existing_mapping_csv(tmp_path: Path) -> None:
    out = tmp_path / "dump"
    out.mkdir()
    (out / "mapping.csv").write_text("old.npy,old/op.0.1.npy")  # no final newline
    long_name = "very_" * 50 + "long/op:0"
    writer = BenchmarkDirWriter(out, [long_name])
    saved = writer.save_array(long_name, 0, TS, np.zeros(2, dtype=np.float32))
    writer.close()
    disk = Path(saved.path).name
    real = f"{'very_' * 50}long_op.0.{TS}.npy"
    assert (out / "mapping.csv").read_text() == f"old.npy,old/op.0.1.npy\n{disk},{real}\n"
    index = scan_benchmark_dir(out)
    assert index.lookup("very_" * 50 + "long/op", 0).path == saved.path


def test_staged_file_with_pickled_objects_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "dump"
    writer = BenchmarkDirWriter(out, ["s:0"])
    staged = writer.staging_path()
    np.save(staged, np.array([b"x", None], dtype=object), allow_pickle=True)
    # no numbers to compare (strings, a resource handle): not written, no failure
    with pytest.raises(NoValues, match="Python objects, not numbers"):
        writer.publish_file("s:0", 0, TS, staged)
    assert not staged.exists()  # never unpickled, and gone
    with pytest.raises(NoValues, match="need pickling"):
        writer.save_array("s:0", 0, TS, np.array(["a"], dtype=object))
    writer.close()
    assert list(out.iterdir()) == []


def test_staged_file_is_published_and_unsafe_names_refused(tmp_path: Path) -> None:
    out = tmp_path / "dump"
    writer = BenchmarkDirWriter(out, ["../x:0"])
    staged = writer.staging_path()
    np.save(staged, np.array([3.0]))
    saved = writer.publish_file("../x:0", 0, TS, staged)
    assert saved.path == str(out / f".._x.0.{TS}.npy")
    assert not staged.exists()
    with pytest.raises(TensorNotSaved, match="control characters"):
        writer.save_array("x\n:0", 0, TS, np.array([1.0]))
    writer.close()
    assert sorted(p.name for p in out.iterdir()) == [f".._x.0.{TS}.npy"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dump"]
