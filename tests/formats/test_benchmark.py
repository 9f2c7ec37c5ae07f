"""Benchmark tensors: name rules, directory index, mapping.csv, safe loading, writing."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from precision_shell.errors import FormatError
from precision_shell.formats import payload
from precision_shell.formats.benchmark import (
    BenchmarkFile,
    benchmark_key,
    load_benchmark,
    parse_benchmark_name,
    scan_benchmark_dir,
    tensor_file_stem,
    write_benchmark,
)

TS = 1619492699305998


@pytest.mark.parametrize(
    ("origin", "index", "key"),
    [
        ("dense/BiasAdd", 0, "dense_BiasAdd.0"),
        ("block1.conv/Relu", 2, "block1_conv_Relu.2"),
        ("scope/a:b", 1, "scope_a_b.1"),
        ("plain", 10, "plain.10"),
    ],
)
def test_benchmark_key(origin: str, index: int, key: str) -> None:
    assert benchmark_key(origin, index) == key


@pytest.mark.parametrize(
    ("tensor", "stem"),
    [
        ("dense/BiasAdd:0", "dense_BiasAdd.0"),
        ("a/b/c:12", "a_b_c.12"),
        ("block1.conv/Relu:1", "block1.conv_Relu.1"),
        ("../evil:0", ".._evil.0"),
    ],
)
def test_tensor_file_stem(tensor: str, stem: str) -> None:
    assert tensor_file_stem(tensor) == stem


@pytest.mark.parametrize("tensor", ["dense/BiasAdd", "dense:x", ":0", ""])
def test_tensor_file_stem_rejects_non_tensor_names(tensor: str) -> None:
    with pytest.raises(ValueError, match="op:slot"):
        tensor_file_stem(tensor)


@pytest.mark.parametrize(
    ("name", "op_name", "index", "timestamp"),
    [
        ("dense_BiasAdd.0.1619492699305998.npy", "dense_BiasAdd", 0, TS),
        ("block1.conv_Relu.3.17.npy", "block1_conv_Relu", 3, 17),  # dot kept by TF
        ("x.01.5.npy", "x", 1, 5),
        ("a:b.2.9.npy", "a_b", 2, 9),
    ],
)
def test_parse_benchmark_name(name: str, op_name: str, index: int, timestamp: int) -> None:
    benchmark = parse_benchmark_name(name, "/d/" + name)
    assert benchmark == BenchmarkFile("/d/" + name, f"{op_name}.{index}", op_name, index, timestamp)


@pytest.mark.parametrize(
    "name",
    ["x.npy", "x.0.npy", "x.a.1.npy", "x.0.1a.npy", ".0.1.npy", "x.\u0663.1.npy", "x.0.-1.npy"],
)
def test_parse_benchmark_name_rejects_odd_npy_names(name: str) -> None:
    with pytest.raises(ValueError, match="does not follow"):
        parse_benchmark_name(name)


@pytest.mark.parametrize("name", ["mapping.csv", "x.0.1.npz", "readme.txt"])
def test_parse_benchmark_name_ignores_other_files(name: str) -> None:
    assert parse_benchmark_name(name) is None


@pytest.mark.parametrize("tensor", ["dense/BiasAdd:0", "block1.conv/Relu:3", "a/b.c/d:11"])
def test_file_name_and_key_rules_agree(tensor: str) -> None:
    op, slot = tensor.rsplit(":", 1)
    benchmark = parse_benchmark_name(f"{tensor_file_stem(tensor)}.{TS}.npy")
    assert benchmark is not None
    assert benchmark.key == benchmark_key(op, int(slot))


def _touch(directory: Path, *names: str) -> None:
    for name in names:
        (directory / name).write_bytes(b"")


def test_scan_newest_timestamp_wins_and_all_is_sorted(tmp_path: Path) -> None:
    _touch(
        tmp_path,
        "dense_BiasAdd.0.300.npy",
        "dense_BiasAdd.0.1000.npy",  # numerically newest, not the last string
        "dense_BiasAdd.0.20.npy",
        "dense_BiasAdd.1.5.npy",
        "block1.conv_Relu.0.7.npy",
        "notes.txt",
    )
    (tmp_path / "sub.0.1.npy").mkdir()  # a directory is not a tensor: skipped, with a warning
    index = scan_benchmark_dir(tmp_path)

    assert sorted(index.newest) == ["block1_conv_Relu.0", "dense_BiasAdd.0", "dense_BiasAdd.1"]
    newest = index.newest["dense_BiasAdd.0"]
    assert newest == BenchmarkFile(
        str(tmp_path / "dense_BiasAdd.0.1000.npy"), "dense_BiasAdd.0", "dense_BiasAdd", 0, 1000
    )
    assert [g.timestamp for g in index.all["dense_BiasAdd.0"]] == [20, 300, 1000]
    assert index.lookup("dense/BiasAdd", 1).timestamp == 5
    assert index.lookup("block1.conv/Relu", 0).path == str(tmp_path / "block1.conv_Relu.0.7.npy")
    assert index.lookup("dense/BiasAdd", 2) is None
    assert "missing.0" not in index.newest
    assert len(index) == 3
    assert index.warnings == [f"{tmp_path / 'sub.0.1.npy'}: a directory, not a file; skipped"]


def test_scan_warns_about_odd_names_and_ties(tmp_path: Path) -> None:
    _touch(tmp_path, "bad.npy", "x.0.abc.npy", "a.b_c.0.5.npy", "a_b.c.0.5.npy", "ok.0.1.npy")
    index = scan_benchmark_dir(tmp_path)

    assert sorted(index.newest) == ["a_b_c.0", "ok.0"]
    odd = sorted(w for w in index.warnings if "not a benchmark tensor name" in w)
    assert odd == [
        f"{tmp_path / 'bad.npy'}: not a benchmark tensor name "
        "'{op}.{output_index}.{timestamp}.npy'; skipped",
        f"{tmp_path / 'x.0.abc.npy'}: not a benchmark tensor name "
        "'{op}.{output_index}.{timestamp}.npy'; skipped",
    ]
    ties = [w for w in index.warnings if "same key" in w]
    assert len(ties) == 1 and "'a_b_c.0'" in ties[0]


def test_scan_resolves_long_names_through_mapping_csv(tmp_path: Path) -> None:
    long_name = "very_" * 60 + "long/scope/MatMul"
    real = f"{tensor_file_stem(long_name + ':0')}.{TS}.npy"
    np.save(tmp_path / "1234567.npy", np.arange(3, dtype=np.float32))
    _touch(tmp_path, "short.0.5.npy", "77.npy", "88.npy", "99.0.9.npy")
    (tmp_path / "mapping.csv").write_text(
        f"1234567.npy,{real}\n\n77.npy\n88.npy,garbage.npy\n99.0.9.npy,garbage name\n",
        encoding="utf-8",
    )
    index = scan_benchmark_dir(tmp_path)

    benchmark = index.lookup(long_name, 0)
    assert benchmark is not None
    assert benchmark.path == str(tmp_path / "1234567.npy")
    assert benchmark.timestamp == TS
    assert benchmark.key == benchmark_key(long_name, 0)
    assert np.array_equal(load_benchmark(benchmark.path), np.arange(3, dtype=np.float32))
    assert (tmp_path / "1234567.npy").exists()  # nothing renamed
    assert index.lookup("short", 0) is not None
    assert f"{tmp_path / 'mapping.csv'}: line 3: expected 'file,real name'" in index.warnings
    assert any("77.npy" in w and "not a benchmark tensor name" in w for w in index.warnings)
    assert any(
        w.startswith(f"{tmp_path / '88.npy'} (mapped to garbage.npy): ") for w in index.warnings
    )
    # QA: a real name that is no benchmark name dropped its file without a word
    assert any(
        w.startswith(f"{tmp_path / '99.0.9.npy'} (mapped to garbage name): ")
        for w in index.warnings
    )


def test_scan_of_missing_dir_is_a_format_error(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="cannot list benchmark directory") as error:
        scan_benchmark_dir(tmp_path / "absent")
    assert str(tmp_path / "absent") in str(error.value)


def test_index_survives_pickling(tmp_path: Path) -> None:
    # The workspace caches the index on disk.
    _touch(tmp_path, "a.0.1.npy", "a.0.2.npy", "b.1.3.npy")
    index = scan_benchmark_dir(tmp_path)
    copy = pickle.loads(pickle.dumps(index))
    assert dict(copy.newest) == dict(index.newest)
    assert dict(copy.all) == dict(index.all)


@pytest.mark.parametrize("mmap", [True, False])
def test_load_round_trip(tmp_path: Path, mmap: bool) -> None:
    values = np.asfortranarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7)
    path = write_benchmark(tmp_path, "dense/BiasAdd:0", values, TS)
    assert path == tmp_path / f"dense_BiasAdd.0.{TS}.npy"
    loaded = load_benchmark(path, mmap=mmap)
    assert loaded.dtype == np.float32 and loaded.shape == (2, 3, 4)
    assert np.array_equal(loaded, values)
    assert loaded.flags.writeable is not mmap  # mmap: read-only, never copied again
    assert loaded.flags.f_contiguous  # a Fortran-order file keeps its element order


def test_large_payloads_are_mapped_small_ones_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = np.arange(1000, dtype=np.float16).reshape(10, 100)
    path = write_benchmark(tmp_path, "big:0", values, TS)
    assert not isinstance(load_benchmark(path), np.memmap)
    monkeypatch.setattr(payload, "READ_LIMIT", 1000)  # 2000 bytes of data: mapped now
    mapped = load_benchmark(path)
    assert isinstance(mapped, np.memmap) and not mapped.flags.writeable
    assert np.array_equal(mapped, values)


def test_a_payload_cut_short_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "x.npy"
    path.write_bytes(b"\0" * 100)
    with pytest.raises(payload.ShortRead, match="ends 28 bytes before"):
        payload.read_payload(path, 72, np.dtype(np.float32), (14,))
    assert np.array_equal(
        payload.read_payload(path, 72, np.dtype(np.float32), (7,)), np.zeros(7, np.float32)
    )


def test_load_empty_and_scalar(tmp_path: Path) -> None:
    empty = load_benchmark(write_benchmark(tmp_path, "e:0", np.zeros((0, 3), np.float16), 1))
    assert empty.shape == (0, 3) and empty.dtype == np.float16
    scalar = load_benchmark(write_benchmark(tmp_path, "s:0", np.float64(2.5), 1))
    assert scalar.shape == () and float(scalar) == 2.5


def test_a_complex_benchmark_is_its_real_part_or_a_one_line_error(tmp_path: Path) -> None:
    real = np.array([[1.5, -2.0], [0.0, 3.25]], np.float32)
    for mmap in (True, False):
        values = load_benchmark(write_benchmark(tmp_path, f"r{mmap}:0", real + 0j, 1), mmap=mmap)
        assert values.dtype == np.float32 and np.array_equal(values, real)
    path = write_benchmark(tmp_path, "c:0", (real + 1j).astype(np.complex64), 1)
    with pytest.raises(FormatError) as error:
        load_benchmark(path)
    assert str(error.value) == (
        f"{path}: complex64 values with a non-zero imaginary part; compares are of real "
        "tensors (save the real part or the magnitude as the benchmark)"
    )


def test_a_structured_benchmark_is_a_one_line_error_naming_its_fields(tmp_path: Path) -> None:
    records = np.zeros((2, 3), dtype=[("re", "<f4"), ("im", "<f4")])
    path = write_benchmark(tmp_path, "s:0", records, 1)
    with pytest.raises(FormatError) as error:
        load_benchmark(path)
    assert str(error.value) == (
        f"{path}: a structured dtype with fields re, im ([('re', '<f4'), ('im', '<f4')]), not a "
        "tensor of numbers; save one field (e.g. array['name']) as the benchmark"
    )


class _Payload:
    """Unpickling this creates a marker directory: proof that a loader ran pickle."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (os.mkdir, (str(self.marker),))


def test_object_array_is_refused_without_unpickling(tmp_path: Path) -> None:
    marker = tmp_path / "unpickled"
    path = tmp_path / "evil.0.1.npy"
    np.save(path, np.array([_Payload(marker), 1], dtype=object), allow_pickle=True)
    for mmap in (True, False):
        with pytest.raises(FormatError, match="Python objects") as error:
            load_benchmark(path, mmap=mmap)
        assert str(path) in str(error.value)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "not a .npy file"),
        (pickle.dumps([1, 2, 3]), "not a .npy file"),
        (b"PK\x03\x04 rest of a zip", "zip (.npz) archive"),
        (b"\x93NUMPY\x01\x00\x10", "truncated .npy header"),
        (b"\x93NUMPY\x01\x00\x20\x00{'descr'", "truncated .npy header"),
        (b"\x93NUMPY\x09\x00", "unsupported .npy format version 9.0"),
        (b"\x93NUMPY\x01\x00\x0a\x00not a dict", "unreadable .npy header"),
    ],
)
def test_broken_files_give_one_clear_error(tmp_path: Path, content: bytes, problem: str) -> None:
    path = tmp_path / "broken.0.1.npy"
    path.write_bytes(content)
    with pytest.raises(FormatError) as error:
        load_benchmark(path)
    assert str(error.value).startswith(f"{path}: ")
    assert problem in str(error.value)


@pytest.mark.parametrize("mmap", [True, False])
def test_truncated_data_names_the_sizes(tmp_path: Path, mmap: bool) -> None:
    path = write_benchmark(tmp_path, "t:0", np.ones((4, 4), np.float32), 1)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 34])  # 64 data bytes -> 30
    with pytest.raises(FormatError) as error:
        load_benchmark(path, mmap=mmap)
    assert str(error.value) == (
        f"{path}: truncated: shape [4, 4] float32 needs 64 data bytes, file has 30"
    )


def test_write_never_overwrites(tmp_path: Path) -> None:
    path = write_benchmark(tmp_path, "x:0", np.array([1.0]), 5)
    before = path.read_bytes()
    with pytest.raises(FileExistsError):
        write_benchmark(tmp_path, "x:0", np.array([2.0]), 5)
    assert path.read_bytes() == before
    with pytest.raises(ValueError, match="object arrays"):
        write_benchmark(tmp_path, "y:0", np.array([None], dtype=object), 5)
    assert not (tmp_path / "y.0.5.npy").exists()


def test_written_files_are_indexed_under_their_origin(tmp_path: Path) -> None:
    write_benchmark(tmp_path, "model/dense.1/MatMul:0", np.ones(2, np.float32), 10)
    write_benchmark(tmp_path, "model/dense.1/MatMul:0", np.zeros(2, np.float32), 20)
    benchmark = scan_benchmark_dir(tmp_path).lookup("model/dense.1/MatMul", 0)
    assert benchmark is not None and benchmark.timestamp == 20
    assert np.array_equal(load_benchmark(benchmark.path), np.zeros(2, np.float32))


def _npy_with_header(path: Path, descr: object, shape: object) -> Path:
    header = repr({"descr": descr, "fortran_order": False, "shape": shape}).encode("latin1")
    header += b" " * (-(len(header) + 11) % 64) + b"\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header)
    return path


@pytest.mark.parametrize(
    ("descr", "shape", "problem"),
    [
        ("<f4", (0, 2**64 - 1), "shape [0, 18446744073709551615] is larger than any array"),
        ("<f4", (0,) * 65, "unreadable .npy header: shape has 65 dims; at most 32 are supported"),
        ("|V0", (2**62,), "dtype |V0 has zero-byte items; not a tensor"),
        ("<U0", (3,), "dtype <U0 has zero-byte items; not a tensor"),
        ("<f4", (True, 2), "unreadable .npy header: bad shape (True, 2)"),
        ("<f8", (2**32, 2**32), "shape [4294967296, 4294967296] is larger than any array"),
        ("<f8", (2**20, 2**20), "needs 8796093022208 data bytes, file has 0"),
    ],
    ids=["2**64-1 dim", "65 dims", "V0", "U0", "bool dim", "int64 wrap", "huge"],
)
def test_headers_numpy_cannot_load_are_format_errors(
    tmp_path: Path, descr: str, shape: tuple, problem: str
) -> None:
    path = _npy_with_header(tmp_path / "a.0.1.npy", descr, shape)
    for mmap in (True, False):
        with pytest.raises(FormatError) as err:
            load_benchmark(path, mmap=mmap)
        assert str(err.value).startswith(f"{path}: ")
        assert problem in str(err.value)


def test_a_fed_placeholder_s_arg_file_answers_for_the_placeholder(tmp_path: Path) -> None:
    """TensorFlow feeds placeholder `x` through a node `_arg_x_0_0`, and tfdbg dumps the fed
    value under that name: it is the benchmark of `x` (QA: every input row was "not found").
    A file of the placeholder's own name wins; the alias adds no tensor to the count."""
    values = np.arange(6, dtype=np.float32)
    np.save(tmp_path / "_arg_x_0_0.0.1700000000000001.npy", values)
    np.save(tmp_path / "_arg_inputs_image_1_0.0.1700000000000002.npy", values * 2)
    np.save(tmp_path / "_arg_y_0_0.0.1700000000000003.npy", values * 3)
    np.save(tmp_path / "y.0.1700000000000004.npy", values * 4)
    index = scan_benchmark_dir(tmp_path)
    assert len(index) == 4 and index.warnings == []
    x = index.lookup("x", 0)
    assert x is not None and x.path == str(tmp_path / "_arg_x_0_0.0.1700000000000001.npy")
    image = index.lookup("inputs/image", 1)  # a scoped placeholder's output 1
    assert image is not None and image.path.endswith("_arg_inputs_image_1_0.0.1700000000000002.npy")
    y = index.lookup("y", 0)
    assert y is not None and y.path.endswith("y.0.1700000000000004.npy")
    assert index.lookup("_arg_x_0_0", 0) is not None
    assert "x.0" in index.newest and "x.0" not in list(index.newest)
    restored = pickle.loads(pickle.dumps(index))
    assert restored.lookup("x", 0) == x


def test_a_benchmark_mapping_csv_saved_with_a_bom_maps_its_first_row(tmp_path: Path) -> None:
    from precision_shell.formats.benchmark import read_mapping_csv

    (tmp_path / "mapping.csv").write_bytes(b"\xef\xbb\xbf77.npy,a_b.0.5.npy\n")
    assert read_mapping_csv(tmp_path / "mapping.csv") == ({"77.npy": "a_b.0.5.npy"}, [])
