"""Data type codes of NPU dumps (`toolkit.dumpdata.OutputDataType`) and their numpy decoding.

Codes follow the dump protobuf, not GE's own `ge::DataType` numbering (FORMATS.md section 2).
Payloads are little-endian. Two types are bit-packed and have no numpy item type:
UINT1 (8 values a byte, numpy's default big bit order: the first value is the most significant
bit) and INT4 (2 values a byte, low nibble first, two's complement).
"""

from __future__ import annotations

from enum import IntEnum

import ml_dtypes
import numpy as np

from precision_shell.errors import PrecisionError


class DumpDataType(IntEnum):
    """`OutputDataType` of the dump protobuf (the proto's names without the `DT_` prefix)."""

    UNDEFINED = 0
    FLOAT = 1
    FLOAT16 = 2
    INT8 = 3
    UINT8 = 4
    INT16 = 5
    UINT16 = 6
    INT32 = 7
    INT64 = 8
    UINT32 = 9
    UINT64 = 10
    BOOL = 11
    DOUBLE = 12
    STRING = 13
    DUAL_SUB_INT8 = 14
    DUAL_SUB_UINT8 = 15
    COMPLEX64 = 16
    COMPLEX128 = 17
    QINT8 = 18
    QINT16 = 19
    QINT32 = 20
    QUINT8 = 21
    QUINT16 = 22
    RESOURCE = 23
    STRING_REF = 24
    DUAL = 25
    VARIANT = 26
    BF16 = 27
    INT4 = 28
    UINT1 = 29
    INT2 = 30
    UINT2 = 31
    COMPLEX32 = 32
    HIFLOAT8 = 33
    FP8_E5M2 = 34
    FP8_E4M3FN = 35


class UnsupportedDtype(PrecisionError, ValueError):
    """A data type code this reader cannot turn into numbers (a PrecisionError, so one line
    when it reaches the shell; still a ValueError for callers that catch it as one)."""


_NUMPY_DTYPES: dict[int, np.dtype] = {
    DumpDataType.FLOAT: np.dtype("<f4"),
    DumpDataType.FLOAT16: np.dtype("<f2"),
    DumpDataType.DOUBLE: np.dtype("<f8"),
    DumpDataType.INT8: np.dtype("i1"),
    DumpDataType.UINT8: np.dtype("u1"),
    DumpDataType.INT16: np.dtype("<i2"),
    DumpDataType.UINT16: np.dtype("<u2"),
    DumpDataType.INT32: np.dtype("<i4"),
    DumpDataType.UINT32: np.dtype("<u4"),
    DumpDataType.INT64: np.dtype("<i8"),
    DumpDataType.UINT64: np.dtype("<u8"),
    DumpDataType.BOOL: np.dtype(np.bool_),
    DumpDataType.COMPLEX64: np.dtype("<c8"),
    DumpDataType.COMPLEX128: np.dtype("<c16"),
    DumpDataType.BF16: np.dtype(ml_dtypes.bfloat16),
    DumpDataType.FP8_E5M2: np.dtype(ml_dtypes.float8_e5m2),
    DumpDataType.FP8_E4M3FN: np.dtype(ml_dtypes.float8_e4m3fn),
}

# Bit-packed codes: bits per value and the numpy type their values decode to.
_PACKED: dict[int, tuple[int, np.dtype]] = {
    DumpDataType.UINT1: (1, np.dtype("u1")),
    DumpDataType.INT4: (4, np.dtype("i1")),
}

_KNOWN_CODES = frozenset(int(member) for member in DumpDataType)

_WHY_UNSUPPORTED: dict[int, str] = {
    DumpDataType.UNDEFINED: "the dump does not say what the bytes are",
    DumpDataType.STRING: "strings have no fixed item size",
    DumpDataType.STRING_REF: "strings have no fixed item size",
    DumpDataType.HIFLOAT8: "HiFloat8 has no numpy (or ml_dtypes) type",
    DumpDataType.INT2: "2-bit packing is not supported",
    DumpDataType.UINT2: "2-bit packing is not supported",
}


def dtype_name(code: int) -> str:
    """The dump's name for a data type code ("FLOAT16"), or "UNKNOWN(99)"."""
    try:
        return DumpDataType(code).name
    except ValueError:
        return f"UNKNOWN({code})"


def _unsupported(code: int) -> UnsupportedDtype:
    if code in _WHY_UNSUPPORTED:
        reason = _WHY_UNSUPPORTED[code]
    elif code in _KNOWN_CODES:
        reason = "no numpy type is known for it"
    else:
        reason = "not a data type code of the dump format"
    return UnsupportedDtype(f"data type {dtype_name(code)}: {reason}")


def numpy_dtype(code: int) -> np.dtype:
    """The little-endian numpy dtype of a byte-addressable data type code.

    Raises UnsupportedDtype for unknown codes, types without a numpy type, and the bit-packed
    UINT1 / INT4 (decode those with `decode_values`).
    """
    if code in _NUMPY_DTYPES:
        return _NUMPY_DTYPES[code]
    if code in _PACKED:
        raise UnsupportedDtype(
            f"data type {dtype_name(code)} is bit-packed and has no numpy item type; "
            "decode it with decode_values"
        )
    raise _unsupported(code)


def value_dtype(code: int) -> np.dtype:
    """The numpy dtype `decode_values` returns for a code (uint8 for UINT1, int8 for INT4)."""
    if code in _PACKED:
        return _PACKED[code][1]
    return numpy_dtype(code)


def bits_per_value(code: int) -> int:
    """Bits one value occupies in a payload (1 for UINT1, 4 for INT4, 8 * itemsize otherwise)."""
    if code in _PACKED:
        return _PACKED[code][0]
    return numpy_dtype(code).itemsize * 8


def payload_nbytes(code: int, count: int) -> int:
    """Bytes a payload of `count` values of this type needs (bit-packed ones round up)."""
    return -(-count * bits_per_value(code) // 8)


def code_for_numpy(dtype: np.dtype | type) -> int:
    """The data type code for a numpy dtype (float16 -> 2, float32 -> 1, bfloat16 -> 27...)."""
    wanted = np.dtype(dtype)
    if wanted.byteorder == ">":
        wanted = wanted.newbyteorder("<")
    for code, known in _NUMPY_DTYPES.items():
        if known == wanted:
            return int(code)
    raise UnsupportedDtype(f"numpy dtype {wanted} has no NPU dump data type code")


def _as_bytes_array(payload: np.ndarray | memoryview | bytes | bytearray) -> np.ndarray:
    """A flat uint8 view of the payload, without copying when it is contiguous."""
    if isinstance(payload, np.ndarray):
        flat = payload if payload.flags.c_contiguous else np.ascontiguousarray(payload)
        return flat.reshape(-1).view(np.uint8)
    return np.frombuffer(payload, dtype=np.uint8)


def _check_count(count: int | None, available: int, code: int) -> int:
    if count is None:
        return available
    if count < 0 or count > available:
        raise ValueError(
            f"asked for {count} {dtype_name(code)} values but the payload holds {available}"
        )
    return count


def decode_values(
    payload: np.ndarray | memoryview | bytes | bytearray, code: int, count: int | None = None
) -> np.ndarray:
    """The values of a payload as a flat array, cut to `count` values when given.

    Byte-aligned types are a zero-copy view of the payload. UINT1 unpacks bits with numpy's
    default big bit order (the first value is the most significant bit of the first byte) into
    uint8 0/1; INT4 takes the low nibble first and sign-extends to int8. Both copy.
    """
    raw = _as_bytes_array(payload)
    if code == DumpDataType.UINT1:
        count = _check_count(count, raw.size * 8, code)
        return np.unpackbits(raw, bitorder="big", count=count)
    if code == DumpDataType.INT4:
        count = _check_count(count, raw.size * 2, code)
        signed = raw.view(np.int8)
        # Arithmetic shifts on int8 sign-extend each nibble.
        low = np.left_shift(signed, 4) >> 4
        high = signed >> 4
        return np.stack((low, high), axis=-1).reshape(-1)[:count]
    dtype = numpy_dtype(code)
    if raw.size % dtype.itemsize:
        raise ValueError(
            f"payload of {raw.size} bytes is not a multiple of the {dtype.itemsize}-byte "
            f"{dtype_name(code)} item size"
        )
    values = raw.view(dtype)
    count = _check_count(count, values.size, code)
    return values if count == values.size else values[:count]


def encode_values(arr: np.ndarray, code: int) -> bytes:
    """The payload bytes of `arr` as data type `code` (values are cast to that type).

    UINT1 takes values 0/1 (or bools) and packs them big bit order first; INT4 takes values in
    -8..7 and packs two a byte, low nibble first. Inverse of `decode_values`.
    """
    values = np.asarray(arr).reshape(-1)
    if code == DumpDataType.UINT1:
        if values.size and not np.isin(values, (0, 1)).all():
            raise ValueError("UINT1 values must be 0 or 1")
        return np.packbits(values.astype(np.uint8), bitorder="big").tobytes()
    if code == DumpDataType.INT4:
        if values.size and (values.min() < -8 or values.max() > 7):
            raise ValueError("INT4 values must lie in -8..7")
        nibbles = values.astype(np.int64) & 0x0F
        if nibbles.size % 2:
            nibbles = np.append(nibbles, 0)
        return (nibbles[0::2] | (nibbles[1::2] << 4)).astype(np.uint8).tobytes()
    return np.ascontiguousarray(values.astype(numpy_dtype(code), copy=False)).tobytes()
