"""Dump file names and mapping.csv."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from precision_shell.formats.dump_names import (
    DumpName,
    dump_file_name,
    parse_dump_name,
    read_mapping_csv,
    sanitize_dump_name,
    write_mapping_csv,
)

TS = "1664178151845623"


def test_sanitize_replaces_separators_and_spaces() -> None:
    assert sanitize_dump_name("net/conv1.bias\\x y") == "net_conv1_bias_x_y"


@pytest.mark.parametrize(
    ("file_name", "expected"),
    [
        (
            f"Conv2D.conv1.3.{TS}",
            DumpName(f"Conv2D.conv1.3.{TS}", "Conv2D", "conv1", 3, None, int(TS), None, False),
        ),
        (
            f"Conv2D.net_conv1.3.2.{TS}",
            DumpName(
                f"Conv2D.net_conv1.3.2.{TS}", "Conv2D", "net_conv1", 3, 2, int(TS), None, False
            ),
        ),
        (
            f"MatMul.mm_lxslice1.7.{TS}.4.12.3.0",
            DumpName(
                f"MatMul.mm_lxslice1.7.{TS}.4.12.3.0",
                "MatMul",
                "mm_lxslice1",
                7,
                None,
                int(TS),
                (4, 12, 3, 0),
                False,
            ),
        ),
        (
            f"MatMul.mm.7.1.{TS}.0.2.1.5",
            DumpName(
                f"MatMul.mm.7.1.{TS}.0.2.1.5", "MatMul", "mm", 7, 1, int(TS), (0, 2, 1, 5), False
            ),
        ),
        (
            f"Add.add_1.12.0.{TS}.csv",
            DumpName(f"Add.add_1.12.0.{TS}.csv", "Add", "add_1", 12, 0, int(TS), None, True),
        ),
        (
            f"Opdebug.Node_OpDebug.44.3.{TS}",
            DumpName(
                f"Opdebug.Node_OpDebug.44.3.{TS}",
                "Opdebug",
                "Node_OpDebug",
                44,
                3,
                int(TS),
                None,
                False,
            ),
        ),
        (
            # A numeric op name is still the name: type and name are always the first two fields.
            f"Data.123.5.{TS}",
            DumpName(f"Data.123.5.{TS}", "Data", "123", 5, None, int(TS), None, False),
        ),
    ],
)
def test_parse(file_name: str, expected: DumpName) -> None:
    assert parse_dump_name(file_name) == expected


@pytest.mark.parametrize(
    ("file_name", "reason"),
    [
        ("mapping.csv", "it has 1 dot-separated fields, at least 4 are needed"),
        ("12345678", "it has 1 dot-separated fields"),
        (f"Conv2D.conv1.{TS}", "it has 3 dot-separated fields"),
        (f"Conv2D.conv1.x3.{TS}", "'x3' after the op name is not a number"),
        ("Conv2D.conv1.3.123456", "the timestamp '123456' does not have 16 digits"),
        (f"Conv2D.conv1.3.2.1.{TS}", "4 numbers follow the op name; 2, 3, 6 or 7 are possible"),
        (f"Conv2D.conv1.3.{TS}.7.0.0.0", "the FFTS task type 7 is not in 0..4"),
        (f"Conv2D..3.{TS}", "the op type or op name is empty"),
        (f"Conv2D.conv1.3.{TS}.npy", "'npy' after the op name is not a number"),
    ],
)
def test_parse_refuses(file_name: str, reason: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_dump_name(file_name)
    assert f"{file_name!r} is not a dump file name" in str(err.value)
    assert reason in str(err.value)


def test_file_name_round_trips_and_sanitizes() -> None:
    name = dump_file_name("Conv2D", "net/conv 1.w", 3, int(TS), stream_id=2, ffts=(4, 1, 0, 0))
    assert name == f"Conv2D.net_conv_1_w.3.2.{TS}.4.1.0.0"
    parsed = parse_dump_name(name)
    assert (parsed.op_name, parsed.task_id, parsed.stream_id, parsed.ffts) == (
        "net_conv_1_w",
        3,
        2,
        (4, 1, 0, 0),
    )
    assert dump_file_name("Add", "a", 1, 42) == "Add.a.1.0000000000000042"


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"timestamp": 10**16}, "does not fit in 16 digits"),
        ({"op_name": ""}, "non-empty op type and op name"),
        ({"ffts": (5, 0, 0, 0)}, "needs a task type in 0..4"),
        ({"task_id": -1}, "must not be negative"),
    ],
)
def test_file_name_refuses(kwargs: dict, reason: str) -> None:
    args = {"op_type": "Add", "op_name": "a", "task_id": 1, "timestamp": 5} | kwargs
    with pytest.raises(ValueError, match=reason):
        dump_file_name(**args)


def test_missing_mapping_csv(tmp_path: Path) -> None:
    assert read_mapping_csv(tmp_path) == ({}, [])


def test_mapping_csv_write_merge_read(tmp_path: Path) -> None:
    real_one = f"Conv2D.{'x' * 300}.3.{TS}"
    path = write_mapping_csv(tmp_path, {"1001": real_one})
    assert path == tmp_path / "mapping.csv"
    assert path.read_text() == f"1001,{real_one}\n"
    write_mapping_csv(tmp_path, {"1002": f"Add.add.4.{TS}", "1001": f"Add.new.5.{TS}"})
    mapping, warnings = read_mapping_csv(tmp_path)
    assert mapping == {"1001": f"Add.new.5.{TS}", "1002": f"Add.add.4.{TS}"}
    assert warnings == []


def test_mapping_csv_bad_rows_become_warnings(tmp_path: Path) -> None:
    (tmp_path / "mapping.csv").write_text(
        f"1001,Add.a.1.{TS}\n"
        "\n"
        "1002\n"
        f",Add.b.2.{TS}\n"
        "1003,../../etc/passwd\n"
        f"1001,Add.c.3.{TS}\n"
        f"1004,Add.d.4.{TS},extra\n"
    )
    mapping, warnings = read_mapping_csv(tmp_path)
    assert mapping == {"1001": f"Add.a.1.{TS}", "1004": f"Add.d.4.{TS}"}
    where = str(tmp_path / "mapping.csv")
    assert warnings == [
        f"{where}:3: expected 'file_name,real_name', got '1002'",
        f"{where}:4: expected 'file_name,real_name', got ',Add.b.2.{TS}'",
        f"{where}:5: real name '../../etc/passwd' is not a file name",
        f"{where}:6: '1001' already maps to 'Add.a.1.{TS}'; ignoring 'Add.c.3.{TS}'",
    ]


def test_mapping_csv_that_is_not_text(tmp_path: Path) -> None:
    (tmp_path / "mapping.csv").write_bytes(b"\xff\xfe\x00bad")
    mapping, warnings = read_mapping_csv(tmp_path)
    assert mapping == {}
    assert len(warnings) == 1 and "mapping.csv" in warnings[0]


def test_a_mapping_csv_row_that_is_not_utf8_keeps_its_bytes_and_the_other_rows(
    tmp_path: Path,
) -> None:
    """QA Q23 #7: one such row made the whole file unreadable and every name in it unresolved;
    its name is the str Python gives a file name of those bytes (surrogateescape)."""
    (tmp_path / "mapping.csv").write_bytes(
        f"1001,Add.a.1.{TS}\n1002,Add.caf\xe9.2.{TS}\n".encode().replace(b"\xc3\xa9", b"\xe9")
    )
    mapping, warnings = read_mapping_csv(tmp_path)
    assert warnings == []
    assert mapping == {
        "1001": f"Add.a.1.{TS}",
        "1002": f"Add.caf\udce9.2.{TS}",
    }
    assert os.fsencode(mapping["1002"]) == f"Add.caf\xe9.2.{TS}".encode("latin-1")


def test_a_mapping_csv_saved_with_a_bom_maps_its_first_row(tmp_path: Path) -> None:
    """QA Q24 #7: an editor's UTF-8 BOM made the first row's file name '\\ufeff1' and dropped
    the long-named op from the compare with only a puzzling warning."""
    real = f"Muls.{'x' * 300}.9.{TS}"
    (tmp_path / "mapping.csv").write_bytes(b"\xef\xbb\xbf1," + real.encode() + b"\r\n")
    assert read_mapping_csv(tmp_path) == ({"1": real}, [])
