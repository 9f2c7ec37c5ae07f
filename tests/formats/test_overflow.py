"""Overflow debug files: names, status texts, both layouts, the dump container, corrupt input."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from precision_shell.errors import FormatError
from precision_shell.formats.npu_dump import read_dump_header, read_tensor
from precision_shell.formats.npu_dump_writer import TensorSpec, write_dump
from precision_shell.formats.opdebug_writer import write_opdebug_new, write_opdebug_old
from precision_shell.formats.overflow import (
    OverflowRecord,
    decode_aicore_status,
    decode_dha_status,
    decode_l2_status,
    parse_opdebug_name,
    read_opdebug,
)

TS = 1673383728094391
NAME = f"Opdebug.Node_OpDebug.12.3.{TS}"

AICORE_TEXTS = {
    0x8: "signed-int minimum negation",
    0x10: "integer add/sub/mul/mac overflow",
    0x20: "floating-point overflow",
    0x80: "negative input to float->unsigned",
    0x100: "overflow converting FP32/INT32 to FP16",
    0x400: "cube accumulation overflow",
}
DHA_TEXTS = {
    0x9: "DHA atomic add overflow",
    0xA: "DHA atomic add underflow",
    0xB: "DHA atomic add src NaN",
    0xC: "DHA atomic add dst NaN",
    0xD: "DHA atomic add both NaN",
}
L2_TEXTS = {
    1: "L2 atomic add overflow",
    2: "L2 atomic add underflow",
    3: "L2 atomic add src NaN",
    4: "L2 atomic add dst NaN",
    5: "L2 atomic add both NaN",
}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (f"Opdebug.Node_OpDebug.12.{TS}", (12, None, TS)),
        (f"Opdebug.Node_OpDebug.12.3.{TS}", (12, 3, TS)),
        (f"Opdebug.Node_OpDebug.0.3.{TS}.4.1.0.0", (0, 3, TS)),  # FFTS+ suffix
        (f"Opdebug.Node_OpDebug.7.{TS}.4.1.0.0", (7, None, TS)),
        (f"OpDebug.Node_OpDebug.5.{TS}", (5, None, TS)),
    ],
)
def test_parse_opdebug_name(name: str, expected: tuple) -> None:
    assert parse_opdebug_name(name) == expected


@pytest.mark.parametrize(
    "name",
    [
        "Opdebug.Node_OpDebug.12",
        f"Add.add_1.12.3.{TS}",
        f"Opdebug.Node_OpDebug.a.{TS}",
        f"Opdebug.Node_OpDebug.1.2.3.{TS}",
        f"Opdebug.Node_OpDebug.12.3.{TS}.output.0.json",
        "Opdebug.Node_OpDebug.",
    ],
)
def test_parse_opdebug_name_rejects(name: str) -> None:
    with pytest.raises(ValueError):
        parse_opdebug_name(name)


@pytest.mark.parametrize(("bit", "text"), sorted(AICORE_TEXTS.items()))
def test_every_aicore_bit_has_its_text(bit: int, text: str) -> None:
    assert decode_aicore_status(bit) == [text]


def test_aicore_status_combinations_and_unknown_bits() -> None:
    assert decode_aicore_status(0) == []
    assert decode_aicore_status(0x1 | 0x20 | 0x400 | 1 << 40) == [
        "unknown status bit 0x1",
        "floating-point overflow",
        "cube accumulation overflow",
        "unknown status bit 0x10000000000",
    ]
    assert decode_aicore_status(0x5B8) == [AICORE_TEXTS[b] for b in (0x8, 0x10, 0x20, 0x80)] + [
        AICORE_TEXTS[0x100],
        AICORE_TEXTS[0x400],
    ]


@pytest.mark.parametrize(("code", "text"), sorted(DHA_TEXTS.items()))
def test_every_dha_code_has_its_text(code: int, text: str) -> None:
    assert decode_dha_status(code << 8) == [text]


@pytest.mark.parametrize(("code", "text"), sorted(L2_TEXTS.items()))
def test_every_l2_code_has_its_text(code: int, text: str) -> None:
    assert decode_l2_status(code << 16) == [text]


def test_atomic_add_unknown_codes_and_bits() -> None:
    assert decode_dha_status(0) == [] and decode_l2_status(0) == []
    assert decode_dha_status(0x3 << 8) == ["unknown DHA atomic add code 0x3"]
    assert decode_dha_status(0x9 << 8 | 0x1) == [DHA_TEXTS[0x9], "unknown status bit 0x1"]
    assert decode_l2_status(6 << 16) == ["unknown L2 atomic add code 0x6"]
    assert decode_l2_status(1 << 16 | 1 << 20) == [L2_TEXTS[1], "unknown status bit 0x100000"]


def _aicore_record(acc_type: str, status: int, **fields: int) -> OverflowRecord:
    values = dict(
        model_id=1, stream_id=3, task_id=12, task_type=0, context_id=2, thread_id=4,
        pc_start=0x12C0_0000, para_base=0x1240_0000, core_id=5, block_id=6,
    )  # fmt: skip
    values.update(fields)
    return OverflowRecord(
        acc_type, status=status, status_texts=tuple(decode_aicore_status(status)), **values
    )


@pytest.mark.parametrize("container", [True, False])
@pytest.mark.parametrize("bit", sorted(AICORE_TEXTS))
def test_old_layout_round_trip(tmp_path: Path, bit: int, container: bool) -> None:
    path = tmp_path / NAME
    write_opdebug_old(
        path, model_id=1, stream_id=3, task_id=12, task_type=2, status=bit,
        dha_status=0xC << 8, l2_status=5 << 16, pc_start=0x100, para_base=0x200, block_id=7,
        kernel_code=0xFFFF, container=container,
    )  # fmt: skip
    opdebug = read_opdebug(path)
    assert opdebug.layout == "old"
    assert (opdebug.task_id, opdebug.stream_id, opdebug.timestamp) == (12, 3, TS)
    assert opdebug.records == (
        OverflowRecord(
            acc_type="AICORE(old)", model_id=1, stream_id=3, task_id=12, task_type=2,
            context_id=None, thread_id=None, pc_start=0x100, para_base=0x200, core_id=None,
            block_id=7, status=bit, status_texts=(AICORE_TEXTS[bit],),
            extra=(("kernel_code", 0xFFFF),),
        ),
    )  # fmt: skip
    assert (opdebug.dha_status, opdebug.l2_status) == (0xC << 8, 5 << 16)
    assert opdebug.texts == (AICORE_TEXTS[bit], DHA_TEXTS[0xC], L2_TEXTS[5])


def test_old_layout_bytes_sit_at_the_documented_offsets(tmp_path: Path) -> None:
    path = tmp_path / NAME
    write_opdebug_old(
        path, model_id=1, stream_id=3, task_id=12, task_type=2, status=0x20,
        dha_status=0x900, l2_status=0x10000, block_id=7, kernel_code=0xAB, container=False,
    )  # fmt: skip
    data = path.read_bytes()
    assert len(data) == 2048

    def u64(offset: int) -> int:
        return struct.unpack_from("<Q", data, offset)[0]

    for info in (0, 128, 256):  # DHA, L2, AI Core info: model, stream, task, task_type
        assert [u64(info + 8 * i) for i in range(4)] == [1, 3, 12, 2]
    assert (u64(512), u64(768)) == (0x900, 0x10000)
    assert (u64(1024), u64(1032), u64(1040)) == (0xAB, 7, 0x20)


def test_old_layout_container_is_a_dump_file_with_one_uint8_output(tmp_path: Path) -> None:
    bare, wrapped = tmp_path / "bare", tmp_path / "wrapped"
    bare.mkdir(), wrapped.mkdir()
    for directory, container in ((bare, False), (wrapped, True)):
        write_opdebug_old(
            directory / NAME, model_id=1, stream_id=3, task_id=12, status=0x20, container=container
        )
    header = read_dump_header(wrapped / NAME)
    assert header.op_name == "Node_OpDebug" and header.dump_time == TS
    payload = read_tensor(header, "output", 0)
    assert payload.dtype == np.uint8 and payload.shape == (2048,)
    assert payload.tobytes() == (bare / NAME).read_bytes()


def test_new_layout_round_trip_every_acc_type(tmp_path: Path) -> None:
    records = (
        _aicore_record("AIC", 0x20 | 0x100),
        _aicore_record("AIV", 0x400, task_id=13, core_id=9),
        OverflowRecord(
            "AICPU", 1, 3, 14, 1, 0, 8, 0, 0, None, None, 0x2,
            ("AICPU status 0x2 (not decoded)",), (("cpu_id", 6),),
        ),
        OverflowRecord(
            "SDMA", 1, 3, 15, 0, 0, 0, 0, 0, None, None, 0x1,
            ("SDMA status 0x1 (not decoded)",),
            (("src_addr", 0x1000), ("dst_addr", 0x2000), ("channel_id", 3)),
        ),
    )  # fmt: skip
    for container in (True, False):
        path = tmp_path / f"Opdebug.Node_OpDebug.12.{TS + container}"
        write_opdebug_new(path, records, container=container)
        opdebug = read_opdebug(path)
        assert opdebug.layout == "new"
        assert (opdebug.task_id, opdebug.stream_id, opdebug.timestamp) == (12, None, TS + container)
        assert opdebug.records == records
        assert (opdebug.dha_status, opdebug.l2_status) == (None, None)
        assert opdebug.texts == (
            AICORE_TEXTS[0x20],
            AICORE_TEXTS[0x100],
            AICORE_TEXTS[0x400],
            "AICPU status 0x2 (not decoded)",
            "SDMA status 0x1 (not decoded)",
        )


def test_new_layout_bytes(tmp_path: Path) -> None:
    path = tmp_path / NAME
    write_opdebug_new(path, [_aicore_record("AIV", 0x20)], container=False)
    data = path.read_bytes()
    assert data[:16] == struct.pack("<4I", 0x5A5A5A5A, 0, 1, 1)  # magic, version, valid, AIV
    assert struct.unpack_from("<2I", data, 16) == (0, 88)  # rsv, data_len
    assert struct.unpack_from("<11Q", data, 24) == (
        1, 3, 12, 0, 2, 4, 0x12C0_0000, 0x1240_0000, 5, 6, 0x20,
    )  # fmt: skip
    assert len(data) == 24 + 88


def _record_bytes(acc_code: int, values: list[int], valid: int = 1) -> bytes:
    data = struct.pack(f"<{len(values)}Q", *values)
    return struct.pack("<4I", valid, acc_code, 0, len(data)) + data


def test_new_layout_version_1_has_four_status_words(tmp_path: Path) -> None:
    path = tmp_path / NAME
    words = [0x20, 0, 0x400, 0]
    path.write_bytes(
        struct.pack("<2I", 0x5A5A5A5A, 1)
        + _record_bytes(0, [1, 3, 12, 0, 2, 4, 0x10, 0x20, 5, 6, *words])
        + _record_bytes(0, [0] * 14, valid=0)  # an unused slot is skipped
        + bytes(16)  # zero padding
    )
    (record,) = read_opdebug(path).records
    assert record.acc_type == "AIC" and record.status == 0x420
    assert record.status_texts == (AICORE_TEXTS[0x20], AICORE_TEXTS[0x400])
    assert record.extra == tuple((f"status_word_{i}", w) for i, w in enumerate(words))


def test_payload_after_inputs_and_inline_variant_are_found(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    write_opdebug_old(bare, model_id=1, stream_id=3, task_id=12, status=0x80, container=False)
    payload = np.frombuffer(bare.read_bytes(), np.uint8)
    (tmp_path / "v2").mkdir(), (tmp_path / "inline").mkdir()
    for directory, inline in ((tmp_path / "v2", False), (tmp_path / "inline", True)):
        write_dump(
            directory / NAME,
            "Node_OpDebug",
            inputs=[TensorSpec(np.arange(5, dtype=np.float32))],
            outputs=[TensorSpec(payload)],
            inline=inline,
        )
        opdebug = read_opdebug(directory / NAME)
        assert opdebug.texts == (AICORE_TEXTS[0x80],)
        assert opdebug.records[0].task_id == 12


def _container(payload: bytes, size: int | None = None) -> bytes:
    """A minimal dump file: DumpData{output{size}} and the payload."""
    size = len(payload) if size is None else size
    output = b"\x30" + _varint(size)  # OpOutput.size (field 6)
    header = b"\x1a" + _varint(len(output)) + output  # DumpData.output (field 3)
    return struct.pack("<Q", len(header)) + header + payload


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes([*out, value])


MAGIC = struct.pack("<2I", 0x5A5A5A5A, 0)
AIC_OK = [1, 3, 12, 0, 2, 4, 0, 0, 5, 6, 0x20]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "not an overflow debug file (0 bytes): not the 2048-byte old layout, not the"),
        (bytes(range(100)), "not an overflow debug file (100 bytes)"),
        (bytes(2047), "0x5A5A5A5A new layout, and as a dump file: "),
        (MAGIC[:6], "payload: truncated new-layout header (6 bytes)"),
        (MAGIC + b"\x01\x00\x00\x00\x00\x00", "payload: record 0 truncated (6 bytes left)"),
        (
            MAGIC + struct.pack("<4I", 1, 0, 0, 400) + bytes(88),
            "payload: record 0 data_len 400 runs past the end (88 bytes left)",
        ),
        (
            MAGIC + _record_bytes(0, AIC_OK[:5]),
            "payload: record 0 (AIC) is truncated: data_len 40, its fields need 88 bytes",
        ),
        (MAGIC + _record_bytes(9, AIC_OK), "payload: record 0 has unknown acc_type 9"),
        (
            _container(bytes(2048), size=4096),
            "as a dump file: output 0 payload (4096 bytes at offset 13) runs 2048 bytes past",
        ),
        (
            _container(bytes(100)),
            "output 0: 100 bytes is neither the 2048-byte old layout nor the 0x5A5A5A5A",
        ),
    ],
)
def test_corrupt_files(tmp_path: Path, content: bytes, problem: str) -> None:
    path = tmp_path / NAME
    path.write_bytes(content)
    with pytest.raises(FormatError) as error:
        read_opdebug(path)
    assert str(error.value).startswith(f"{path}: ")
    assert problem in str(error.value)


def test_a_valid_container_of_a_record_decodes(tmp_path: Path) -> None:
    # The counterpart of the corrupt table: the same helpers build a file that is fine.
    path = tmp_path / NAME
    path.write_bytes(_container(MAGIC + _record_bytes(1, AIC_OK)))
    (record,) = read_opdebug(path).records
    assert (record.acc_type, record.status, record.core_id) == ("AIV", 0x20, 5)


def test_bad_name_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "overflow.bin"
    path.write_bytes(bytes(2048))
    with pytest.raises(FormatError, match="does not start with 'Opdebug.Node_OpDebug.'"):
        read_opdebug(path)
    with pytest.raises(FormatError, match="cannot read"):
        read_opdebug(tmp_path / NAME)


def test_writers_never_overwrite(tmp_path: Path) -> None:
    path = tmp_path / NAME
    path.write_bytes(b"user data")
    with pytest.raises(FileExistsError):
        write_opdebug_old(path, model_id=1, stream_id=3, task_id=12, status=0x20)
    with pytest.raises(FileExistsError):
        write_opdebug_new(path, [_aicore_record("AIC", 0x20)])
    assert path.read_bytes() == b"user data"
