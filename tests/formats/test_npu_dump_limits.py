"""What dump and Opdebug headers may declare: shapes numpy cannot make, and big junk files read
only as far as their header goes (the reads are counted, not timed or measured in RSS)."""

from __future__ import annotations

import io
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from precision_shell.errors import FormatError, PrecisionError
from precision_shell.formats import dump_proto, npu_dump, overflow
from precision_shell.formats.dtypes import DumpDataType, UnsupportedDtype, numpy_dtype
from precision_shell.formats.layouts import DumpFormat, LayoutError, to_origin_layout
from precision_shell.formats.npu_dump import read_dump_header, read_tensor, read_tensor_converted
from precision_shell.formats.overflow import read_opdebug
from precision_shell.formats.shapes import MAX_DIMS, shape_problem

DUMP_NAME = "Conv2D.conv1.3.1664178151845623"
OPDEBUG_NAME = "Opdebug.Node_OpDebug.12.3.1673383728094391"
THREE_GIB = 3 * 2**30


def dump_bytes(shape: list[int], original_shape: list[int] = (), inline: bool = False) -> bytes:
    """A dump with one zero-byte FLOAT output of `shape`."""
    message = dump_proto.DumpData(version="2.0", op_name="conv1")
    output = message.output.add(data_type=DumpDataType.FLOAT, format=DumpFormat.ND, size=0)
    output.shape.dim.extend(shape)
    output.original_shape.dim.extend(original_shape)
    header = message.SerializeToString()
    return header if inline else struct.pack("<Q", len(header)) + header


@pytest.mark.parametrize("inline", [False, True], ids=["v2", "inline"])
@pytest.mark.parametrize(
    ("shape", "problem"),
    [
        ([0] * 65, "output 0: shape has 65 dims; at most 32 are supported"),
        ([1] * 32 + [0], "output 0: shape has 33 dims; at most 32 are supported"),
        ([0, 2**64 - 1], "output 0: shape [0, 18446744073709551615] is larger than any array"),
        ([0, 2**62, 2], "output 0: shape [0, 4611686018427387904, 2] is larger than any array"),
    ],
    ids=["65 dims", "33 dims", "2**64-1 dim of a zero-size tensor", "dims product"],
)
def test_shapes_numpy_cannot_make_are_format_errors(
    tmp_path: Path, inline: bool, shape: list[int], problem: str
) -> None:
    path = tmp_path / DUMP_NAME
    path.write_bytes(dump_bytes(shape, inline=inline))
    header = read_dump_header(path)  # the header itself is fine: `ni` can show it
    assert header.outputs[0].shape == tuple(shape)
    with pytest.raises(FormatError) as err:
        read_tensor(header, "output", 0)
    assert str(err.value).startswith(f"{path}: {problem}")


@pytest.mark.parametrize("shape", [[0] * 65, [0, 2**64 - 1]], ids=["65 dims", "2**64-1 dim"])
def test_opdebug_containers_with_such_shapes_are_format_errors(tmp_path: Path, shape: list) -> None:
    message = dump_proto.DumpData(version="2.0", op_name="Node_OpDebug")
    output = message.output.add(data_type=DumpDataType.UINT8, size=0, data=b"")
    output.shape.dim.extend(shape)
    path = tmp_path / OPDEBUG_NAME
    path.write_bytes(message.SerializeToString())  # the inline layout
    with pytest.raises(FormatError) as err:
        read_opdebug(path)
    assert str(err.value).startswith(f"{path}: not an overflow debug file (")
    assert "as a dump file: output 0: shape " in str(err.value)


def test_zero_size_tensors_with_legal_shapes_still_read(tmp_path: Path) -> None:
    path = tmp_path / DUMP_NAME
    path.write_bytes(dump_bytes([1] * 31 + [0]))
    values = read_tensor(read_dump_header(path), "output", 0)
    assert values.shape == (1,) * 31 + (0,)
    assert values.dtype == np.float32


@pytest.mark.parametrize(
    ("original_shape", "problem"),
    [
        ([0] * 65, "the origin shape has 65 dims; at most 32 are supported"),
        ([0, 2**64 - 1], "the origin shape [0, 18446744073709551615] is larger than any array"),
    ],
)
def test_original_shapes_numpy_cannot_make_are_format_errors(
    tmp_path: Path, original_shape: list[int], problem: str
) -> None:
    path = tmp_path / DUMP_NAME
    path.write_bytes(dump_bytes([0], original_shape))
    with pytest.raises(FormatError) as err:
        read_tensor_converted(read_dump_header(path), "output", 0)
    assert problem in str(err.value)
    assert str(err.value).startswith(f"{path}: output 0: cannot convert ND (0) to ND ")


def test_layout_and_dtype_errors_are_precision_errors() -> None:
    with pytest.raises(LayoutError) as err:
        to_origin_layout(np.zeros(0, np.float32), "ND", "ND", [0, 2**64 - 1])
    assert isinstance(err.value, PrecisionError) and isinstance(err.value, ValueError)
    with pytest.raises(UnsupportedDtype) as err:
        numpy_dtype(DumpDataType.STRING)
    assert isinstance(err.value, PrecisionError) and isinstance(err.value, ValueError)


def test_shape_problem() -> None:
    assert shape_problem([2, 3], 4) is None
    assert shape_problem([0] * MAX_DIMS) is None
    assert shape_problem([2**61], 2) is None
    assert (
        shape_problem([2**61], 4) == "shape [2305843009213693952] is larger than any array can be"
    )
    assert shape_problem([3, -1]) == "shape [3, -1] has a negative dim"
    assert shape_problem([1] * 40) == "shape has 40 dims; at most 32 are supported"


@pytest.mark.parametrize(
    "dims", [(2**61,), (2**60, 2), (2**59, 3), (2**63 - 1,), (2**62, 2), (2**64 - 1,)]
)
@pytest.mark.parametrize("dtype", ["f2", "f8", "u1"])
def test_shape_problem_agrees_with_numpy_on_zero_size_arrays(dims: tuple, dtype: str) -> None:
    shape = (0, *dims)
    problem = shape_problem(shape, np.dtype(dtype).itemsize)
    try:
        np.empty(shape, dtype)
    except ValueError:
        assert problem is not None
    else:
        assert problem is None


# --- bounded reads -----------------------------------------------------------------------------


class CountingFile(io.BufferedReader):
    """A file whose reads are added up in `counter` (reads of the underlying raw file, so
    buffering does not hide any)."""

    def __init__(self, path: Any, counter: list[int]) -> None:
        super().__init__(_CountingRaw(path, counter))


class _CountingRaw(io.FileIO):
    def __init__(self, path: Any, counter: list[int]) -> None:
        super().__init__(path, "r")
        self.counter = counter

    def readinto(self, buffer: Any) -> int | None:
        count = super().readinto(buffer)
        self.counter[0] += count or 0
        return count

    def readall(self) -> bytes:
        data = super().readall()
        self.counter[0] += len(data)
        return data


@pytest.fixture
def bytes_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """[bytes the dump and Opdebug readers read from files so far]."""
    counter = [0]

    def counting_open(path: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        assert mode == "rb"
        return CountingFile(path, counter)

    monkeypatch.setattr(npu_dump, "open", counting_open, raising=False)
    monkeypatch.setattr(overflow, "open", counting_open, raising=False)
    return counter


def sparse_file(path: Path, head: bytes, size: int = THREE_GIB) -> Path:
    """`head`, then zeros up to `size` bytes: a hole, so it costs no disk."""
    with open(path, "wb") as stream:
        stream.write(head)
        stream.truncate(size)
    return path


# Each a 3 GiB file: junk, a header length past the header cap, a v2 header length the file
# cannot hold, and a plausible first field of an inline dump followed by zeros.
JUNK_HEADS = {
    "junk": (b"\x07junk\x00\x01\x02" * 4, "byte 0 holds field 0 of wire type 7"),
    "1 GiB header length": (
        struct.pack("<Q", 2**30) + b"junk",
        "the header length 1073741824 in the first 8 bytes is more than a dump header can be",
    ),
    "header length past the end": (struct.pack("<Q", 2**63), "exceeds the 3221225464 bytes"),
    "one field then zeros": (b"\x0a\x03abc", "byte 5 holds field 0 of wire type 0"),
}


@pytest.mark.parametrize(("head", "problem"), JUNK_HEADS.values(), ids=JUNK_HEADS)
def test_a_3_gib_junk_file_named_like_a_dump_is_refused_after_a_few_bytes(
    tmp_path: Path, bytes_read: list[int], head: bytes, problem: str
) -> None:
    path = sparse_file(tmp_path / DUMP_NAME, head)
    with pytest.raises(FormatError) as err:
        read_dump_header(path)
    assert str(err.value).startswith(f"{path}: not an NPU dump: ")
    assert problem in str(err.value)
    assert 0 < bytes_read[0] <= 64 * 1024  # a few buffer fills, never the file


def test_a_3_gib_junk_file_named_like_an_opdebug_file_is_refused_after_a_few_bytes(
    tmp_path: Path, bytes_read: list[int]
) -> None:
    path = sparse_file(tmp_path / OPDEBUG_NAME, b"\x07junk")
    with pytest.raises(FormatError) as err:
        read_opdebug(path)
    assert str(err.value).startswith(f"{path}: not an overflow debug file (3221225472 bytes)")
    assert 0 < bytes_read[0] <= 64 * 1024


def test_a_3_gib_file_starting_with_the_new_layout_magic_is_refused_unread(
    tmp_path: Path, bytes_read: list[int]
) -> None:
    path = sparse_file(tmp_path / OPDEBUG_NAME, struct.pack("<2I", 0x5A5A5A5A, 0))
    with pytest.raises(FormatError) as err:
        read_opdebug(path)
    assert str(err.value) == (
        f"{path}: starts like a bare new-layout payload but has 3221225472 bytes, more than an "
        "overflow payload can be (16777216)"
    )
    assert 0 < bytes_read[0] <= 64 * 1024


def test_an_opdebug_dump_declaring_a_3_gib_payload_is_refused_unread(
    tmp_path: Path, bytes_read: list[int]
) -> None:
    message = dump_proto.DumpData(version="2.0", op_name="Node_OpDebug")
    message.output.add(data_type=DumpDataType.UINT8, size=THREE_GIB - 64).shape.dim.append(
        THREE_GIB - 64
    )
    header = message.SerializeToString()
    path = sparse_file(tmp_path / OPDEBUG_NAME, struct.pack("<Q", len(header)) + header)
    with pytest.raises(FormatError) as err:
        read_opdebug(path)
    assert str(err.value).endswith(
        f"as a dump file: output 0 holds {THREE_GIB - 64} bytes, more than an overflow "
        "payload can be (16777216)"
    )
    assert 0 < bytes_read[0] <= 64 * 1024


def test_a_big_inline_dump_is_still_read_whole(tmp_path: Path, bytes_read: list[int]) -> None:
    """The inline layout has no length prefix: a real one is read, all of it, once."""
    values = np.arange(300_000, dtype=np.float32)
    message = dump_proto.DumpData(version="2.0", op_name="conv1")
    output = message.output.add(data_type=DumpDataType.FLOAT, size=values.nbytes)
    output.shape.dim.append(values.size)
    output.data = values.tobytes()
    path = tmp_path / DUMP_NAME
    path.write_bytes(message.SerializeToString())
    header = read_dump_header(path)
    assert header.inline
    np.testing.assert_array_equal(read_tensor(header, "output", 0), values)
    assert path.stat().st_size <= bytes_read[0] <= 2 * path.stat().st_size
