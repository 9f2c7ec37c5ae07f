"""Writer of Opdebug overflow files (both layouts), for the demo builder and the tests.

The layouts are described, and read, in `overflow`."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from precision_shell.formats.npu_dump_writer import TensorSpec, write_dump
from precision_shell.formats.overflow import (
    ACC_CODES,
    AICORE_INFO,
    AICORE_STATUS,
    DHA_INFO,
    DHA_STATUS,
    FILE_HEADER,
    L2_INFO,
    L2_STATUS,
    NEW_LAYOUT_MAGIC,
    OLD_LAYOUT_SIZE,
    RECORD_ATTRIBUTES,
    RECORD_FIELDS,
    RECORD_HEADER,
    OverflowRecord,
    parse_opdebug_name,
)


def _write_opdebug_bytes(path: str | Path, payload: bytes, container: bool) -> None:
    if Path(path).exists():
        raise FileExistsError(f"{path} exists; overflow files are never overwritten")
    if not container:
        with open(path, "xb") as handle:
            handle.write(payload)
        return
    try:
        dump_time = parse_opdebug_name(Path(path).name)[2]
    except ValueError:
        dump_time = 0
    output = TensorSpec(np.frombuffer(payload, dtype=np.uint8))
    write_dump(path, "Node_OpDebug", outputs=[output], dump_time=dump_time)


def write_opdebug_old(
    path: str | Path,
    *,
    model_id: int,
    stream_id: int,
    task_id: int,
    task_type: int = 0,
    status: int,
    dha_status: int = 0,
    l2_status: int = 0,
    pc_start: int = 0,
    para_base: int = 0,
    block_id: int = 0,
    kernel_code: int = 0,
    container: bool = True,
) -> None:
    """Write an old-layout (2048-byte) Opdebug file; never overwrites a file."""
    payload = bytearray(OLD_LAYOUT_SIZE)
    info = struct.pack("<6Q", model_id, stream_id, task_id, task_type, pc_start, para_base)
    for block in (DHA_INFO, L2_INFO, AICORE_INFO):
        payload[block : block + len(info)] = info
    struct.pack_into("<Q", payload, DHA_STATUS, dha_status)
    struct.pack_into("<Q", payload, L2_STATUS, l2_status)
    struct.pack_into("<3Q", payload, AICORE_STATUS, kernel_code, block_id, status)
    _write_opdebug_bytes(path, bytes(payload), container)


def write_opdebug_new(
    path: str | Path, records: Sequence[OverflowRecord], *, container: bool = True
) -> None:
    """Write a new-layout (version 0) Opdebug file; never overwrites a file.

    Fields a record has no attribute for (AICPU cpu_id, SDMA addresses and channel) come
    from `extra`, default 0; None ids are written as 0.
    """
    chunks = [FILE_HEADER.pack(NEW_LAYOUT_MAGIC, 0)]
    for record in records:
        if record.acc_type not in ACC_CODES:
            raise ValueError(f"acc_type {record.acc_type!r} has no new-layout code")
        extra = dict(record.extra)
        values = [
            getattr(record, name) if name in RECORD_ATTRIBUTES else extra.get(name, 0)
            for name in RECORD_FIELDS[record.acc_type]
        ]
        data = struct.pack(f"<{len(values)}Q", *(value or 0 for value in values))
        chunks.append(RECORD_HEADER.pack(1, ACC_CODES[record.acc_type], 0, len(data)))
        chunks.append(data)
    _write_opdebug_bytes(path, b"".join(chunks), container)
