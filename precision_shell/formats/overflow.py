"""Overflow debug files `Opdebug.Node_OpDebug.{task_id}[.{stream_id}].{ts}` (FORMATS.md section 8).

Owns the file-name rule, both record layouts and the status-bit texts; `opdebug_writer`
writes such files for the demo and the tests.

On disk an Opdebug file is a dump file like any other (msaccucmp's `convert` reads it with
its dump parser and decodes every `output[k].data`): `[u64 header_len][DumpData header]`
then the payload. The payload is one of
- old layout, exactly 2048 bytes: DHA info (128 B), L2 info (128), AI Core info (256),
  each starting with u64 model_id, stream_id, task_id, task_type, pc_start, para_base;
  DHA status (256, u64 at 0), L2 status (256, u64 at 0), AI Core status (1024: u64
  kernel_code, block_idx, status);
- new layout: u32 magic 0x5A5A5A5A, u32 version, then records of u32 valid, acc_type,
  rsv, data_len and data_len bytes of u64 fields. With version 1, AIC/AIV records carry
  four status words instead of one (data_len 112 instead of 88).
A bare payload (no dump header) is read too; the writers write the dump-file form (one
UINT8 output) unless `container=False`. The dump file itself is read by `npu_dump`.
"""

from __future__ import annotations

import functools
import operator
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from precision_shell.errors import FormatError
from precision_shell.formats.npu_dump import read_dump_header, read_tensor

OPDEBUG_PREFIX = "Opdebug.Node_OpDebug."
OLD_LAYOUT_SIZE = 2048
NEW_LAYOUT_MAGIC = 0x5A5A5A5A
_MAGIC_BYTES = NEW_LAYOUT_MAGIC.to_bytes(4, "little")
# An overflow payload is 2048 bytes, or a few hundred bytes per reporting core: 16 MiB is far
# past any real one, and bounds what reading a big file named like an Opdebug file costs.
MAX_PAYLOAD_BYTES = 16 << 20

# The texts of FORMATS.md section 8, written once.
AICORE_STATUS_TEXTS: dict[int, str] = {
    0x8: "signed-int minimum negation",
    0x10: "integer add/sub/mul/mac overflow",
    0x20: "floating-point overflow",
    0x80: "negative input to float->unsigned",
    0x100: "overflow converting FP32/INT32 to FP16",
    0x400: "cube accumulation overflow",
}
DHA_STATUS_TEXTS: dict[int, str] = {  # code in bits 8-15
    0x9: "DHA atomic add overflow",
    0xA: "DHA atomic add underflow",
    0xB: "DHA atomic add src NaN",
    0xC: "DHA atomic add dst NaN",
    0xD: "DHA atomic add both NaN",
}
L2_STATUS_TEXTS: dict[int, str] = {  # code in bits 16-18
    1: "L2 atomic add overflow",
    2: "L2 atomic add underflow",
    3: "L2 atomic add src NaN",
    4: "L2 atomic add dst NaN",
    5: "L2 atomic add both NaN",
}

# Old layout: block offsets inside the 2048 bytes.
DHA_INFO, L2_INFO, AICORE_INFO = 0, 128, 256
DHA_STATUS, L2_STATUS, AICORE_STATUS = 512, 768, 1024
_INFO_FIELDS = ("model_id", "stream_id", "task_id", "task_type", "pc_start", "para_base")

# New layout.
_ACC_TYPES = {0: "AIC", 1: "AIV", 2: "AICPU", 3: "SDMA"}
ACC_CODES = {name: code for code, name in _ACC_TYPES.items()}
_AICORE_FIELDS = (
    "model_id", "stream_id", "task_id", "task_type", "context_id", "thread_id",
    "pc_start", "para_base", "core_id", "block_id", "status",
)  # fmt: skip
RECORD_FIELDS: dict[str, tuple[str, ...]] = {
    "AIC": _AICORE_FIELDS,
    "AIV": _AICORE_FIELDS,
    "AICPU": (
        "model_id", "stream_id", "task_id", "task_type", "context_id", "cpu_id",
        "thread_id", "status",
    ),
    "SDMA": (
        "model_id", "stream_id", "task_id", "task_type", "context_id", "thread_id",
        "src_addr", "dst_addr", "channel_id", "status",
    ),
}  # fmt: skip
_STATUS_WORDS_V1 = 4
RECORD_HEADER = struct.Struct("<4I")
FILE_HEADER = struct.Struct("<2I")
# The AI Core record fields are exactly OverflowRecord's attributes; other fields go to `extra`.
RECORD_ATTRIBUTES = frozenset(_AICORE_FIELDS)


@dataclass(frozen=True)
class OverflowRecord:
    """One overflow report of one accelerator unit."""

    acc_type: str  # "AIC" / "AIV" / "AICPU" / "SDMA" / "AICORE(old)"
    model_id: int
    stream_id: int
    task_id: int
    task_type: int
    context_id: int | None
    thread_id: int | None
    pc_start: int
    para_base: int
    core_id: int | None
    block_id: int | None
    status: int
    status_texts: tuple[str, ...]
    # Fields with no attribute above, by name: AICPU cpu_id; SDMA src_addr, dst_addr,
    # channel_id; old-layout kernel_code; the four status words of a version-1 record.
    extra: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class OpdebugFile:
    """A decoded Opdebug file."""

    path: str
    task_id: int
    stream_id: int | None
    timestamp: int
    layout: str  # "old" | "new"
    records: tuple[OverflowRecord, ...]
    dha_status: int | None  # old layout only
    l2_status: int | None  # old layout only
    texts: tuple[str, ...]  # every decoded status text, de-duplicated, in record order


def parse_opdebug_name(file_name: str) -> tuple[int, int | None, int]:
    """`Opdebug.Node_OpDebug.{task_id}[.{stream_id}].{ts}` -> (task_id, stream_id, ts).

    FFTS+ names append `.{task_type}.{context_id}.{thread_id}.{n}`; those are accepted and
    ignored. Raises ValueError for any other name.
    """
    if not file_name.lower().startswith(OPDEBUG_PREFIX.lower()):
        raise ValueError(f"{file_name!r} does not start with {OPDEBUG_PREFIX!r}")
    fields = file_name[len(OPDEBUG_PREFIX) :].split(".")
    if not all(field.isascii() and field.isdigit() for field in fields):
        raise ValueError(f"{file_name!r}: expected only numbers after {OPDEBUG_PREFIX!r}")
    numbers = [int(field) for field in fields]
    if len(numbers) in (2, 6):  # task, ts [, ffts+ suffix]
        return numbers[0], None, numbers[1]
    if len(numbers) in (3, 7):  # task, stream, ts [, ffts+ suffix]
        return numbers[0], numbers[1], numbers[2]
    raise ValueError(
        f"{file_name!r} does not follow "
        "'Opdebug.Node_OpDebug.{task_id}[.{stream_id}].{timestamp}'"
    )


def _set_bits(value: int) -> Iterator[int]:
    while value:
        bit = value & -value
        yield bit
        value ^= bit


def decode_aicore_status(status: int) -> list[str]:
    """The texts of the set AI Core status bits, lowest bit first."""
    return [
        AICORE_STATUS_TEXTS.get(bit, f"unknown status bit 0x{bit:x}") for bit in _set_bits(status)
    ]


def _decode_code_field(
    status: int, shift: int, mask: int, texts: dict[int, str], unit: str
) -> list[str]:
    code = (status >> shift) & mask
    decoded = []
    if code:
        decoded.append(texts.get(code, f"unknown {unit} atomic add code 0x{code:x}"))
    decoded.extend(f"unknown status bit 0x{bit:x}" for bit in _set_bits(status & ~(mask << shift)))
    return decoded


def decode_dha_status(status: int) -> list[str]:
    """The texts of a DHA atomic-add status (code in bits 8-15)."""
    return _decode_code_field(status, 8, 0xFF, DHA_STATUS_TEXTS, "DHA")


def decode_l2_status(status: int) -> list[str]:
    """The texts of an L2 atomic-add status (code in bits 16-18)."""
    return _decode_code_field(status, 16, 0x7, L2_STATUS_TEXTS, "L2")


def _status_texts(acc_type: str, status: int) -> tuple[str, ...]:
    if acc_type in ("AIC", "AIV", "AICORE(old)"):
        return tuple(decode_aicore_status(status))
    # No public source documents AICPU/SDMA status bits: show the number, honestly.
    return (f"{acc_type} status 0x{status:x} (not decoded)",) if status else ()


def _record(acc_type: str, fields: dict[str, int]) -> OverflowRecord:
    return OverflowRecord(
        acc_type=acc_type,
        model_id=fields["model_id"],
        stream_id=fields["stream_id"],
        task_id=fields["task_id"],
        task_type=fields["task_type"],
        context_id=fields.get("context_id"),
        thread_id=fields.get("thread_id"),
        pc_start=fields.get("pc_start", 0),
        para_base=fields.get("para_base", 0),
        core_id=fields.get("core_id"),
        block_id=fields.get("block_id"),
        status=fields["status"],
        status_texts=_status_texts(acc_type, fields["status"]),
        extra=tuple(
            (name, value) for name, value in fields.items() if name not in RECORD_ATTRIBUTES
        ),
    )


# --- payload decoding -------------------------------------------------------------------


def _u64(payload: bytes, offset: int) -> int:
    return int.from_bytes(payload[offset : offset + 8], "little")


def _decode_old(payload: bytes) -> tuple[OverflowRecord, int, int]:
    info = {name: _u64(payload, AICORE_INFO + 8 * i) for i, name in enumerate(_INFO_FIELDS)}
    kernel_code, block_idx, status = (_u64(payload, AICORE_STATUS + 8 * i) for i in range(3))
    fields = {**info, "block_id": block_idx, "status": status, "kernel_code": kernel_code}
    record = _record("AICORE(old)", fields)
    return record, _u64(payload, DHA_STATUS), _u64(payload, L2_STATUS)


def _decode_new(path: str | Path, payload: bytes, where: str) -> list[OverflowRecord]:
    if len(payload) < FILE_HEADER.size:
        raise FormatError(path, f"{where}: truncated new-layout header ({len(payload)} bytes)")
    _, version = FILE_HEADER.unpack_from(payload)
    records: list[OverflowRecord] = []
    offset = FILE_HEADER.size
    while offset < len(payload):
        number = len(records)
        left = len(payload) - offset
        if left < RECORD_HEADER.size:
            if not any(payload[offset:]):
                break  # zero padding after the last record
            raise FormatError(path, f"{where}: record {number} truncated ({left} bytes left)")
        valid, acc_code, _, data_len = RECORD_HEADER.unpack_from(payload, offset)
        offset += RECORD_HEADER.size
        if valid == 0 and data_len == 0 and not any(payload[offset:]):
            break  # unused, zero-filled slots
        if data_len > len(payload) - offset:
            raise FormatError(
                path,
                f"{where}: record {number} data_len {data_len} runs past the end "
                f"({len(payload) - offset} bytes left)",
            )
        data = payload[offset : offset + data_len]
        offset += data_len
        if valid == 0:
            continue
        acc_type = _ACC_TYPES.get(acc_code)
        if acc_type is None:
            raise FormatError(path, f"{where}: record {number} has unknown acc_type {acc_code}")
        names = RECORD_FIELDS[acc_type]
        status_words = _STATUS_WORDS_V1 if acc_type in ("AIC", "AIV") and version == 1 else 1
        needed = 8 * (len(names) - 1 + status_words)
        if data_len < needed:
            raise FormatError(
                path,
                f"{where}: record {number} ({acc_type}) is truncated: data_len {data_len}, "
                f"its fields need {needed} bytes",
            )
        values = struct.unpack_from(f"<{len(names) - 1 + status_words}Q", data)
        fields = dict(zip(names[:-1], values, strict=False))
        words = values[len(names) - 1 :]
        fields["status"] = functools.reduce(operator.or_, words)
        if status_words > 1:
            fields.update((f"status_word_{i}", word) for i, word in enumerate(words))
        records.append(_record(acc_type, fields))
    return records


# --- the dump-file container --------------------------------------------------------------


def _container_payloads(path: str | Path) -> tuple[list[bytes] | None, str]:
    """The output payloads of a dump file -> (payloads, ""), or (None, why not).

    Reads the dump header and then only the output payloads, each at most MAX_PAYLOAD_BYTES.
    """
    try:
        header = read_dump_header(path)
        if not header.outputs:
            return None, "a dump file without outputs"
        for meta in header.outputs:
            if meta.size > MAX_PAYLOAD_BYTES:
                return None, (
                    f"output {meta.index} holds {meta.size} bytes, more than an overflow "
                    f"payload can be ({MAX_PAYLOAD_BYTES})"
                )
        payloads = []
        with open(path, "rb") as stream:
            for meta in header.outputs:
                if meta.offset < 0:  # inline data
                    payload = np.asarray(read_tensor(header, "output", meta.index)).tobytes()
                else:
                    stream.seek(meta.offset)
                    payload = stream.read(meta.size)
                payloads.append(payload)
    except FormatError as error:
        return None, error.problem
    except OSError as error:
        raise FormatError(path, f"cannot read: {error.strerror}") from None
    return payloads, ""


def _bare_payload(path: str | Path) -> bytes | None:
    """The whole file when it may be a bare payload (the new layout's magic first, or exactly
    the old layout's size), else None; a bare payload is never larger than MAX_PAYLOAD_BYTES."""
    try:
        with open(path, "rb") as stream:
            file_size = os.fstat(stream.fileno()).st_size
            if stream.read(4) != _MAGIC_BYTES and file_size != OLD_LAYOUT_SIZE:
                return None
            if file_size > MAX_PAYLOAD_BYTES:
                raise FormatError(
                    path,
                    f"starts like a bare new-layout payload but has {file_size} bytes, more "
                    f"than an overflow payload can be ({MAX_PAYLOAD_BYTES})",
                )
            stream.seek(0)
            return stream.read()
    except OSError as error:
        raise FormatError(path, f"cannot read: {error.strerror}") from None


def read_opdebug(path: str | Path) -> OpdebugFile:
    """Read and decode one Opdebug file; reads the payloads, never a whole large file."""
    name = Path(path).name
    try:
        task_id, stream_id, timestamp = parse_opdebug_name(name)
    except ValueError as error:
        raise FormatError(path, str(error)) from None

    bare = _bare_payload(path)
    payloads: list[bytes] | None
    if bare is not None and bare[:4] == _MAGIC_BYTES:
        payloads = [bare]
    else:
        payloads, problem = _container_payloads(path)
        # A bare old-layout payload can look like a tiny dump header by accident; a real
        # dump file of exactly 2048 bytes can only carry a (short) new-layout payload.
        if bare is not None and not (
            payloads and all(payload[:4] == _MAGIC_BYTES for payload in payloads)
        ):
            payloads = [bare]
        elif payloads is None:
            raise FormatError(
                path,
                f"not an overflow debug file ({os.path.getsize(path)} bytes): not the "
                f"{OLD_LAYOUT_SIZE}-byte old layout, not the 0x{NEW_LAYOUT_MAGIC:08X} new "
                f"layout, and as a dump file: {problem}",
            )

    records: list[OverflowRecord] = []
    dha_status = l2_status = None
    layouts = set()
    for index, payload in enumerate(payloads):
        where = "payload" if payload is bare else f"output {index}"
        if payload[:4] == _MAGIC_BYTES:
            layouts.add("new")
            records.extend(_decode_new(path, payload, where))
        elif len(payload) == OLD_LAYOUT_SIZE:
            layouts.add("old")
            record, dha, l2 = _decode_old(payload)
            records.append(record)
            dha_status = dha if dha_status is None else dha_status | dha
            l2_status = l2 if l2_status is None else l2_status | l2
        else:
            raise FormatError(
                path,
                f"{where}: {len(payload)} bytes is neither the {OLD_LAYOUT_SIZE}-byte old "
                f"layout nor the 0x{NEW_LAYOUT_MAGIC:08X} new layout",
            )
    if len(layouts) > 1:
        raise FormatError(path, "mixes old- and new-layout overflow payloads")

    texts = [text for record in records for text in record.status_texts]
    texts += decode_dha_status(dha_status or 0) + decode_l2_status(l2_status or 0)
    return OpdebugFile(
        path=str(path),
        task_id=task_id,
        stream_id=stream_id,
        timestamp=timestamp,
        layout=layouts.pop(),
        records=tuple(records),
        dha_status=dha_status,
        l2_status=l2_status,
        texts=tuple(dict.fromkeys(texts)),
    )
