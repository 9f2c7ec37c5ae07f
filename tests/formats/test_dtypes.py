"""Data type codes of NPU dumps and their numpy encoding / decoding."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from precision_shell.formats.dtypes import (
    DumpDataType,
    UnsupportedDtype,
    bits_per_value,
    code_for_numpy,
    decode_values,
    dtype_name,
    encode_values,
    numpy_dtype,
    payload_nbytes,
    value_dtype,
)

# (code, values, the little-endian bytes of the first value)
BYTE_ALIGNED = [
    (DumpDataType.FLOAT, np.array([1.0, -2.5, 3e38], np.float32), b"\x00\x00\x80\x3f"),
    (DumpDataType.FLOAT16, np.array([1.0, -0.5, 65504], np.float16), b"\x00\x3c"),
    (DumpDataType.DOUBLE, np.array([1.0, 1e-300], np.float64), b"\x00" * 6 + b"\xf0\x3f"),
    (DumpDataType.INT8, np.array([-128, 0, 127], np.int8), b"\x80"),
    (DumpDataType.UINT8, np.array([0, 255], np.uint8), b"\x00"),
    (DumpDataType.INT16, np.array([-2, 300], np.int16), b"\xfe\xff"),
    (DumpDataType.UINT16, np.array([65535, 1], np.uint16), b"\xff\xff"),
    (DumpDataType.INT32, np.array([-1, 2**31 - 1], np.int32), b"\xff\xff\xff\xff"),
    (DumpDataType.UINT32, np.array([1, 2**32 - 1], np.uint32), b"\x01\x00\x00\x00"),
    (DumpDataType.INT64, np.array([-(2**63), 5], np.int64), b"\x00" * 7 + b"\x80"),
    (DumpDataType.UINT64, np.array([2**64 - 1], np.uint64), b"\xff" * 8),
    (DumpDataType.BOOL, np.array([True, False, True]), b"\x01"),
    (DumpDataType.COMPLEX64, np.array([1 + 2j], np.complex64), b"\x00\x00\x80\x3f\x00\x00\x00\x40"),
    (
        DumpDataType.COMPLEX128,
        np.array([1j, 2], np.complex128),
        b"\x00" * 8 + b"\x00" * 6 + b"\xf0\x3f",
    ),
    (DumpDataType.BF16, np.array([1.0, -3.0], ml_dtypes.bfloat16), b"\x80\x3f"),
    (DumpDataType.FP8_E5M2, np.array([1.0, -0.5], ml_dtypes.float8_e5m2), b"\x3c"),
    (DumpDataType.FP8_E4M3FN, np.array([1.0, 448.0], ml_dtypes.float8_e4m3fn), b"\x38"),
]


def test_codes_match_the_dump_schema() -> None:
    expected = {
        "UNDEFINED": 0, "FLOAT": 1, "FLOAT16": 2, "INT8": 3, "UINT8": 4, "INT16": 5,
        "UINT16": 6, "INT32": 7, "INT64": 8, "UINT32": 9, "UINT64": 10, "BOOL": 11,
        "DOUBLE": 12, "STRING": 13, "COMPLEX64": 16, "COMPLEX128": 17, "BF16": 27, "INT4": 28,
        "UINT1": 29, "HIFLOAT8": 33, "FP8_E5M2": 34, "FP8_E4M3FN": 35,
    }  # fmt: skip
    assert {name: int(DumpDataType[name]) for name in expected} == expected


@pytest.mark.parametrize(("code", "values", "first_bytes"), BYTE_ALIGNED, ids=lambda v: str(v))
def test_byte_aligned_round_trip(code: int, values: np.ndarray, first_bytes: bytes) -> None:
    payload = encode_values(values, code)
    assert payload[: len(first_bytes)] == first_bytes
    assert payload == values.astype(values.dtype.newbyteorder("<")).tobytes()
    decoded = decode_values(payload, code)
    assert decoded.dtype == numpy_dtype(code) == values.dtype
    np.testing.assert_array_equal(decoded, values)
    assert encode_values(decoded, code) == payload


def test_uint1_packs_big_bit_order_and_cuts_to_count() -> None:
    values = np.array([1, 0, 1, 1, 0, 0, 0, 0, 1], np.uint8)
    payload = encode_values(values, DumpDataType.UINT1)
    assert payload == b"\xb0\x80"
    np.testing.assert_array_equal(decode_values(payload, DumpDataType.UINT1, 9), values)
    unpacked = decode_values(payload, DumpDataType.UINT1)
    assert unpacked.tolist() == [1, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]
    assert encode_values(values.astype(bool), DumpDataType.UINT1) == payload


def test_int4_packs_low_nibble_first_and_sign_extends() -> None:
    values = np.array([-8, -1, 0, 7, 3], np.int8)
    payload = encode_values(values, DumpDataType.INT4)
    assert payload == bytes([0xF8, 0x70, 0x03])
    decoded = decode_values(payload, DumpDataType.INT4, 5)
    assert decoded.dtype == np.int8
    assert decoded.tolist() == [-8, -1, 0, 7, 3]
    assert decode_values(payload, DumpDataType.INT4).tolist() == [-8, -1, 0, 7, 3, 0]


def test_every_int4_nibble_decodes() -> None:
    payload = bytes((high << 4) | low for high in range(16) for low in range(16))
    decoded = decode_values(payload, DumpDataType.INT4).reshape(16, 16, 2)
    nibble = np.arange(16)
    signed = np.where(nibble > 7, nibble - 16, nibble)
    np.testing.assert_array_equal(decoded[:, :, 0], np.tile(signed, (16, 1)))
    np.testing.assert_array_equal(decoded[:, :, 1], np.tile(signed[:, None], (1, 16)))


def test_decode_is_zero_copy_for_byte_aligned_types() -> None:
    raw = np.frombuffer(encode_values(np.arange(6, dtype=np.float32), 1), np.uint8).copy()
    decoded = decode_values(raw, DumpDataType.FLOAT, 4)
    assert np.shares_memory(decoded, raw)
    assert decoded.tolist() == [0.0, 1.0, 2.0, 3.0]
    from_bytes = decode_values(memoryview(raw.tobytes()), DumpDataType.FLOAT)
    assert from_bytes.base is not None


def test_payload_not_a_multiple_of_the_itemsize() -> None:
    with pytest.raises(
        ValueError, match="payload of 6 bytes is not a multiple of the 4-byte FLOAT"
    ):
        decode_values(b"\x00" * 6, DumpDataType.FLOAT)


def test_count_larger_than_the_payload() -> None:
    with pytest.raises(ValueError, match="asked for 17 UINT1 values but the payload holds 16"):
        decode_values(b"\x00\x00", DumpDataType.UINT1, 17)
    with pytest.raises(ValueError, match="asked for 3 FLOAT16 values but the payload holds 2"):
        decode_values(b"\x00" * 4, DumpDataType.FLOAT16, 3)


@pytest.mark.parametrize(
    ("code", "fragment"),
    [
        (99, "UNKNOWN(99): not a data type code"),
        (DumpDataType.STRING, "STRING: strings have no fixed item size"),
        (DumpDataType.HIFLOAT8, "HIFLOAT8: HiFloat8 has no numpy"),
        (DumpDataType.UINT1, "UINT1 is bit-packed"),
        (DumpDataType.INT4, "INT4 is bit-packed"),
        (DumpDataType.UNDEFINED, "UNDEFINED: the dump does not say"),
        (DumpDataType.QINT8, "QINT8: no numpy type is known"),
    ],
)
def test_numpy_dtype_refuses(code: int, fragment: str) -> None:
    with pytest.raises(UnsupportedDtype) as err:
        numpy_dtype(code)
    assert fragment in str(err.value)


def test_decode_refuses_unknown_codes() -> None:
    with pytest.raises(UnsupportedDtype, match="UNKNOWN\\(99\\)"):
        decode_values(b"\x00", 99)


def test_names() -> None:
    assert dtype_name(2) == "FLOAT16"
    assert dtype_name(DumpDataType.FP8_E4M3FN) == "FP8_E4M3FN"
    assert dtype_name(99) == "UNKNOWN(99)"


@pytest.mark.parametrize(
    ("dtype", "code"),
    [
        (np.float16, 2),
        (np.float32, 1),
        (np.dtype(">f4"), 1),
        (np.float64, 12),
        (np.int8, 3),
        (np.uint8, 4),
        (np.int16, 5),
        (np.uint16, 6),
        (np.int32, 7),
        (np.int64, 8),
        (np.uint32, 9),
        (np.uint64, 10),
        (np.bool_, 11),
        (np.complex64, 16),
        (np.complex128, 17),
        (ml_dtypes.bfloat16, 27),
        (ml_dtypes.float8_e5m2, 34),
        (ml_dtypes.float8_e4m3fn, 35),
    ],
)
def test_code_for_numpy(dtype: np.dtype, code: int) -> None:
    assert code_for_numpy(dtype) == code


def test_code_for_numpy_refuses_strings() -> None:
    with pytest.raises(UnsupportedDtype, match="numpy dtype <U3 has no NPU dump data type code"):
        code_for_numpy(np.dtype("U3"))


def test_sizes_of_packed_and_plain_types() -> None:
    assert bits_per_value(DumpDataType.UINT1) == 1
    assert bits_per_value(DumpDataType.INT4) == 4
    assert bits_per_value(DumpDataType.DOUBLE) == 64
    assert payload_nbytes(DumpDataType.UINT1, 9) == 2
    assert payload_nbytes(DumpDataType.INT4, 5) == 3
    assert payload_nbytes(DumpDataType.FLOAT16, 5) == 10
    assert value_dtype(DumpDataType.UINT1) == np.uint8
    assert value_dtype(DumpDataType.INT4) == np.int8


def test_encode_refuses_values_outside_packed_ranges() -> None:
    with pytest.raises(ValueError, match="UINT1 values must be 0 or 1"):
        encode_values(np.array([0, 2]), DumpDataType.UINT1)
    with pytest.raises(ValueError, match="INT4 values must lie in -8..7"):
        encode_values(np.array([8]), DumpDataType.INT4)


def test_encode_casts_to_the_dump_type() -> None:
    assert encode_values(np.array([1.0, 2.0]), DumpDataType.FLOAT16) == b"\x00\x3c\x00\x40"
