"""NPU dump files: writing, reading headers and tensors, layouts, and corrupt input."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from precision_shell.errors import FormatError
from precision_shell.formats import dump_proto, payload
from precision_shell.formats.dtypes import DumpDataType, encode_values
from precision_shell.formats.layouts import DumpFormat, from_origin_layout
from precision_shell.formats.npu_dump import read_dump_header, read_tensor, read_tensor_converted
from precision_shell.formats.npu_dump_writer import TensorSpec, write_dump

DUMP_NAME = "Conv2D.conv1.3.1664178151845623"

SAMPLES = [
    (DumpDataType.FLOAT, np.array([[1.5, -2.0, 3e38]], np.float32)),
    (DumpDataType.FLOAT16, np.array([1.0, -0.5, 65504, np.inf], np.float16)),
    (DumpDataType.DOUBLE, np.array([1e-300, -1.0], np.float64)),
    (DumpDataType.INT8, np.array([-128, 0, 127], np.int8)),
    (DumpDataType.UINT8, np.array([[0, 255], [1, 2]], np.uint8)),
    (DumpDataType.INT16, np.array([-2, 300], np.int16)),
    (DumpDataType.UINT16, np.array([65535], np.uint16)),
    (DumpDataType.INT32, np.array([-1, 2**31 - 1], np.int32)),
    (DumpDataType.UINT32, np.array([2**32 - 1], np.uint32)),
    (DumpDataType.INT64, np.array([-(2**63), 7], np.int64)),
    (DumpDataType.UINT64, np.array([2**64 - 1], np.uint64)),
    (DumpDataType.BOOL, np.array([[True, False], [False, True]])),
    (DumpDataType.COMPLEX64, np.array([1 + 2j, -3j], np.complex64)),
    (DumpDataType.COMPLEX128, np.array([1j, 2], np.complex128)),
    (DumpDataType.BF16, np.array([1.0, -3.0, 0.5], ml_dtypes.bfloat16)),
    (DumpDataType.FP8_E5M2, np.array([1.0, -0.5], ml_dtypes.float8_e5m2)),
    (DumpDataType.FP8_E4M3FN, np.array([1.0, 448.0], ml_dtypes.float8_e4m3fn)),
    (DumpDataType.UINT1, np.array([[1, 0, 1], [1, 0, 0], [0, 0, 1]], np.uint8)),
    (DumpDataType.INT4, np.array([-8, -1, 0, 7, 3], np.int8)),
]


def write_raw(path: Path, message: object, payload: bytes = b"") -> Path:
    header = message.SerializeToString()
    path.write_bytes(struct.pack("<Q", len(header)) + header + payload)
    return path


def one_output(data_type: int, dims: list[int], size: int, **fields: object) -> object:
    message = dump_proto.DumpData(version="2.0", op_name="conv1")
    output = message.output.add(data_type=data_type, size=size, **fields)
    output.shape.dim.extend(dims)
    return message


@pytest.mark.parametrize("inline", [False, True], ids=["v2", "inline"])
@pytest.mark.parametrize(("code", "values"), SAMPLES, ids=lambda v: str(v))
def test_round_trip_every_dtype(
    tmp_path: Path, code: int, values: np.ndarray, inline: bool
) -> None:
    path = tmp_path / DUMP_NAME
    write_dump(
        path,
        "conv1",
        inputs=[TensorSpec(values[::-1].copy(), dtype=code)],
        outputs=[TensorSpec(values, dtype=code)],
        buffers=[b"\x01\x02\x03"],
        dump_time=1664178151845623,
        inline=inline,
    )
    header = read_dump_header(path)
    assert (header.inline, header.op_name, header.version) == (inline, "conv1", "2.0")
    assert header.dump_time == 1664178151845623
    output = header.outputs[0]
    expected = encode_values(values, code)
    assert (output.dtype, output.shape, output.size) == (code, values.shape, len(expected))
    decoded = read_tensor(header, "output", 0)
    assert decoded.shape == values.shape
    np.testing.assert_array_equal(decoded, values)
    np.testing.assert_array_equal(read_tensor(header, "input", 0), values[::-1])
    assert encode_values(decoded, code) == expected
    if inline:
        assert dump_proto.DumpData.FromString(path.read_bytes()).output[0].data == expected
    else:
        assert path.read_bytes()[output.offset : output.offset + output.size] == expected
    assert read_tensor(header, "buffer", 0).tobytes() == b"\x01\x02\x03"


def test_v2_layout_bytes(tmp_path: Path) -> None:
    path = tmp_path / DUMP_NAME
    write_dump(
        path,
        "conv1",
        inputs=[TensorSpec(np.array([1.0, 2.0], np.float32))],
        outputs=[TensorSpec(np.array([-3], np.int8))],
        buffers=[b"xy"],
    )
    data = path.read_bytes()
    (header_len,) = struct.unpack("<Q", data[:8])
    message = dump_proto.DumpData.FromString(data[8 : 8 + header_len])
    assert message.input[0].data == b"" and message.output[0].data == b""
    payloads = np.array([1.0, 2.0], "<f4").tobytes() + b"\xfd" + b"xy"
    assert data[8 + header_len :] == payloads
    header = read_dump_header(path)
    offsets = [header.inputs[0].offset, header.outputs[0].offset, header.buffers[0].offset]
    assert offsets == [8 + header_len, 16 + header_len, 17 + header_len]
    assert (header.file_size, header.trailing_bytes) == (len(data), 0)


def test_header_fields(tmp_path: Path) -> None:
    message = one_output(DumpDataType.FLOAT16, [1, 1, 2, 2, 16], 128, format=3, sub_format=5)
    message.dump_time = 42
    output = message.output[0]
    output.original_shape.dim.extend([1, 3, 2, 2])
    output.original_op.name = "net/conv1"
    output.original_op.output_index = 1
    output.original_op.format = DumpFormat.NHWC
    output.address = 0x12C0000
    message.attr.add(name="model", value="resnet")
    message.space.add(size=4)
    path = write_raw(tmp_path / DUMP_NAME, message, b"\x00" * 128 + b"wxyz")
    header = read_dump_header(path)
    meta = header.tensor("output", 0)
    assert (meta.format_name, meta.dtype_name, meta.sub_format) == ("NC1HWC0", "FLOAT16", 5)
    assert (meta.original_op, meta.original_format, meta.address) == (
        ("net/conv1", 1),
        1,
        0x12C0000,
    )
    assert (meta.original_shape, meta.element_count) == ((1, 3, 2, 2), 64)
    assert header.attrs == {"model": "resnet"}
    assert read_tensor(header, "space", 0).tobytes() == b"wxyz"
    assert header.tensor("space", 0).label == "space 0"


def test_read_tensor_reads_small_payloads_and_maps_large_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    path = tmp_path / DUMP_NAME
    write_dump(path, "conv1", outputs=[TensorSpec(values)])
    read = read_tensor(read_dump_header(path), "output", 0)
    assert not isinstance(read, np.memmap) and not read.flags.writeable
    np.testing.assert_array_equal(read, values)
    monkeypatch.setattr(payload, "READ_LIMIT", 40)  # 48 bytes: mapped, never copied
    mapped = read_tensor(read_dump_header(path), "output", 0)
    assert isinstance(mapped, np.memmap)
    assert not mapped.flags.writeable
    np.testing.assert_array_equal(mapped, values)
    write_dump(path, "conv1", outputs=[TensorSpec(values)], inline=True)
    header = read_dump_header(path)
    viewed = read_tensor(header, "output", 0)
    assert viewed.base is not None
    # Both reads view the one copy of the inline bytes the header holds.
    assert np.shares_memory(viewed, read_tensor(header, "output", 0))
    np.testing.assert_array_equal(viewed, values)


def test_converted_to_the_recorded_origin_layout(tmp_path: Path) -> None:
    nhwc = np.arange(2 * 3 * 3 * 20, dtype=np.float16).reshape(2, 3, 3, 20)
    device = from_origin_layout(nhwc, "NC1HWC0", "NHWC")
    spec = TensorSpec(
        device,
        format=DumpFormat.NC1HWC0,
        original_shape=nhwc.shape,
        original_op=("net/conv1", 0),
        original_format=DumpFormat.NHWC,
    )
    path = tmp_path / DUMP_NAME
    write_dump(
        path, "conv1", inputs=[TensorSpec(device, format=DumpFormat.NC1HWC0)], outputs=[spec]
    )
    header = read_dump_header(path)
    np.testing.assert_array_equal(read_tensor_converted(header, "output", 0), nhwc)
    nchw = read_tensor_converted(header, "output", 0, "NCHW", (2, 20, 3, 3))
    np.testing.assert_array_equal(nchw, nhwc.transpose(0, 3, 1, 2))
    with pytest.raises(FormatError) as err:
        read_tensor_converted(header, "input", 0)
    assert str(err.value) == (
        f"{path}: input 0: the dump does not record the origin format of this NC1HWC0 "
        "tensor; give the origin format"
    )
    with pytest.raises(FormatError) as err:
        read_tensor_converted(header, "output", 0, "NHWC", (2, 3, 3, 40))
    assert str(err.value).startswith(f"{path}: output 0: cannot convert NC1HWC0")
    assert "C=40 is larger than the 2 x 16 = 32 the device tensor holds" in str(err.value)


def test_plain_tensor_converts_to_its_original_shape(tmp_path: Path) -> None:
    path = tmp_path / DUMP_NAME
    values = np.arange(6, dtype=np.float32)
    write_dump(path, "conv1", outputs=[TensorSpec(values, original_shape=(2, 3))])
    converted = read_tensor_converted(read_dump_header(path), "output", 0)
    assert converted.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_trailing_bytes_are_recorded(tmp_path: Path) -> None:
    path = tmp_path / DUMP_NAME
    write_dump(path, "conv1", outputs=[TensorSpec(np.array([7, 8], np.int32))])
    path.write_bytes(path.read_bytes() + b"\x00" * 5)
    header = read_dump_header(path)
    assert header.trailing_bytes == 5
    assert read_tensor(header, "output", 0).tolist() == [7, 8]


def test_empty_shape_and_zero_dims(tmp_path: Path) -> None:
    message = one_output(DumpDataType.FLOAT, [], 12)
    message.output.add(data_type=DumpDataType.FLOAT, size=0).shape.dim.extend([0, 3])
    message.output.add(data_type=DumpDataType.UINT1, size=2)
    payload = np.array([1, 2, 3], "<f4").tobytes() + b"\xa0\x01"
    header = read_dump_header(write_raw(tmp_path / DUMP_NAME, message, payload))
    assert [meta.element_count for meta in header.outputs] == [3, 0, 16]
    assert read_tensor(header, "output", 0).tolist() == [1.0, 2.0, 3.0]
    empty = read_tensor(header, "output", 1)
    assert (empty.shape, empty.dtype) == ((0, 3), np.float32)
    assert read_tensor(header, "output", 2).tolist()[:9] == [1, 0, 1, 0, 0, 0, 0, 0, 0]


def test_padded_bit_packed_payload(tmp_path: Path) -> None:
    message = one_output(DumpDataType.UINT1, [9], 4)
    header = read_dump_header(write_raw(tmp_path / DUMP_NAME, message, b"\xff\x80\x00\x00"))
    assert read_tensor(header, "output", 0).tolist() == [1] * 9


def test_inputs_have_no_original_op(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="only outputs record an original op"):
        write_dump(
            tmp_path / DUMP_NAME, "x", inputs=[TensorSpec(np.zeros(2), original_op=("a", 0))]
        )


def _truncated(path: Path) -> bytes:
    write_dump(path, "conv1", outputs=[TensorSpec(np.zeros(10, np.float32))])
    return path.read_bytes()[:-7]


def _v2_with_inline_data(path: Path) -> bytes:
    message = one_output(DumpDataType.FLOAT, [1], 4, data=b"\x00" * 4)
    return write_raw(path, message, b"\x00" * 4).read_bytes()


CORRUPT_FILES: list[tuple[str, Callable[[Path], bytes], str]] = [
    ("empty", lambda p: b"", "empty file (0 bytes); not an NPU dump"),
    ("five bytes", lambda p: b"12345", "only 5 bytes; an NPU dump needs an 8-byte header length"),
    (
        "header longer than the file",
        lambda p: struct.pack("<Q", 2**63) + b"\x01" * 20,
        "not an NPU dump: the header length 9223372036854775808 in the first 8 bytes exceeds "
        "the 20 bytes after them; read as an old inline dump, the whole file is not a valid "
        "DumpData protobuf",
    ),
    (
        "garbage header",
        lambda p: struct.pack("<Q", 16) + b"\xff" * 16,
        "not an NPU dump: the 16-byte header is not a valid DumpData protobuf",
    ),
    (
        "header of nothing",
        lambda p: struct.pack("<Q", 0) + b"\x00\x00",
        "the 0-byte header parses to an empty DumpData",
    ),
    (
        "payload past the end",
        _truncated,
        "output 0 payload (40 bytes at offset 33) runs 7 bytes past the end of the file "
        "(66 bytes); the dump is truncated",
    ),
    ("v2 header with data", _v2_with_inline_data, "output 0 has inline data inside a v2 header"),
]


@pytest.mark.parametrize(
    ("make", "problem"), [case[1:] for case in CORRUPT_FILES], ids=[c[0] for c in CORRUPT_FILES]
)
def test_corrupt_headers(tmp_path: Path, make: Callable[[Path], bytes], problem: str) -> None:
    path = tmp_path / DUMP_NAME
    path.write_bytes(make(path))
    with pytest.raises(FormatError) as err:
        read_dump_header(path)
    assert str(err.value).startswith(f"{path}: ")
    assert problem in str(err.value)


def test_inline_size_that_disagrees_with_its_data(tmp_path: Path) -> None:
    path = tmp_path / DUMP_NAME
    message = one_output(DumpDataType.FLOAT, [2], 8, data=b"\x00" * 4)
    path.write_bytes(message.SerializeToString())
    with pytest.raises(FormatError) as err:
        read_dump_header(path)
    assert str(err.value) == f"{path}: output 0: size says 8 bytes but the inline data has 4"


def test_unreadable_paths(tmp_path: Path) -> None:
    with pytest.raises(FormatError) as err:
        read_dump_header(tmp_path / "missing")
    assert str(err.value) == f"{tmp_path / 'missing'}: cannot read: No such file or directory"
    with pytest.raises(FormatError, match="cannot read: Is a directory"):
        read_dump_header(tmp_path)


@pytest.mark.parametrize(
    ("data_type", "dims", "size", "problem"),
    [
        (99, [2], 8, "output 0: data type UNKNOWN(99): not a data type code of the dump format"),
        (
            DumpDataType.HIFLOAT8,
            [2],
            2,
            "output 0: data type HIFLOAT8: HiFloat8 has no numpy (or ml_dtypes) type",
        ),
        (
            DumpDataType.FLOAT,
            [2, 3],
            20,
            "output 0: shape [2, 3] of FLOAT needs 24 bytes but the payload has 20",
        ),
        (
            DumpDataType.FLOAT,
            [],
            6,
            "output 0: the shape is empty and the 6-byte payload is not a whole number of "
            "4-byte FLOAT values",
        ),
        (
            DumpDataType.UINT1,
            [20],
            2,
            "output 0: shape [20] of UINT1 needs 3 bytes but the payload has 2",
        ),
    ],
)
def test_tensors_that_cannot_be_read(
    tmp_path: Path, data_type: int, dims: list[int], size: int, problem: str
) -> None:
    path = write_raw(tmp_path / DUMP_NAME, one_output(data_type, dims, size), b"\x00" * size)
    header = read_dump_header(path)
    with pytest.raises(FormatError) as err:
        read_tensor(header, "output", 0)
    assert str(err.value) == f"{path}: {problem}"


def test_missing_tensors(tmp_path: Path) -> None:
    path = tmp_path / DUMP_NAME
    write_dump(path, "conv1", outputs=[TensorSpec(np.zeros(1, np.float32))])
    header = read_dump_header(path)
    with pytest.raises(FormatError) as err:
        header.tensor("output", 3)
    assert str(err.value) == f"{path}: the dump has no output 3 (it has 1 outputs)"
    with pytest.raises(FormatError, match="unknown tensor kind 'weight'"):
        read_tensor(header, "weight", 0)
