"""CANN statistics dump files: every column found by its header name, the cell spellings CANN
versions write, and one-line FormatErrors naming the file and the line for malformed files."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from precision_shell.errors import FormatError
from precision_shell.formats.stats_dump import (
    MAX_STATS_FILE_BYTES,
    StatsRow,
    dtype_of,
    parse_stats_text,
    read_stats_dump,
    write_stats_dump,
)

FIXED = "Input/Output,Index,Data Size,Data Type,Format,Shape"
ALL_COLUMNS = (
    "Count",
    "Max Value",
    "Min Value",
    "Avg Value",
    "L2Norm Value",
    "Nan Count",
    "Negative Inf Count",
    "Positive Inf Count",
)
# the values of one row under each statistic header
ROW_VALUES = {
    "Count": "32",
    "Max Value": "3.5",
    "Min Value": "-2.25",
    "Avg Value": "0.125",
    "L2Norm Value": "12.75",
    "Nan Count": "1",
    "Negative Inf Count": "2",
    "Positive Inf Count": "0",
}
KEY_OF = {
    "Count": "count",
    "Max Value": "max",
    "Min Value": "min",
    "Avg Value": "mean",
    "L2Norm Value": "l2norm",
    "Nan Count": "nan_count",
    "Negative Inf Count": "neg_inf_count",
    "Positive Inf Count": "pos_inf_count",
}


def one_row(tmp_path: Path, header: str, row: str, raw: bytes | None = None) -> StatsRow:
    path = tmp_path / "Add.add.1.2.1700000000000000.csv"
    path.write_bytes(raw if raw is not None else f"{header}\n{row}\n".encode())
    dump = read_stats_dump(path)
    assert len(dump.rows) == 1
    return dump.rows[0]


def fixed_row(
    dtype: str = "DT_FLOAT", fmt: str = "ND", shape: str = "[4,8]", size: str = "128"
) -> str:
    return f"Output,0,{size},{dtype},{fmt},{_quoted(shape)}"


def _quoted(cell: str) -> str:
    return f'"{cell}"' if "," in cell else cell


# --- round trip --------------------------------------------------------------------------------


def test_values_read_equal_values_written(tmp_path: Path) -> None:
    rows = [
        StatsRow(
            "input",
            0,
            "FLOAT16",
            "NC1HWC0",
            (4, 2, 16, 16, 16),
            data_size=65536,
            values={
                "count": 32768.0,
                "max": 65504.0,
                "min": -0.1000000000000000055511151231257827,
                "mean": 1.0 / 3.0,
                "l2norm": 1234.5678901234567,
                "nan_count": 3.0,
                "neg_inf_count": 0.0,
                "pos_inf_count": 7.0,
            },
        ),
        StatsRow("input", 1, "BF16", "ND", (3,), data_size=6, values={"max": 1e-300}),
        StatsRow("output", 0, "FLOAT", "NHWC", (), data_size=4, values={"l2norm": 2.0**-149}),
        StatsRow(
            "output",
            1,
            "INT32",
            "ND",
            (2, 5),
            data_size=None,
            values={"max": math.inf, "min": -math.inf, "mean": math.nan, "count": 10.0},
        ),
    ]
    path = tmp_path / "Conv2D.conv.3.4.1700000000000000.csv"
    write_stats_dump(path, rows)
    dump = read_stats_dump(path)
    assert dump.path == str(path)
    assert dump.columns == (
        "count",
        "max",
        "min",
        "mean",
        "l2norm",
        "nan_count",
        "neg_inf_count",
        "pos_inf_count",
    )
    assert len(dump.rows) == 4
    for written, read in zip(rows, dump.rows, strict=True):
        assert (read.kind, read.index, read.dtype, read.format, read.shape, read.data_size) == (
            written.kind,
            written.index,
            written.dtype,
            written.format,
            written.shape,
            written.data_size,
        )
        assert read.values.keys() == written.values.keys()
        for key, value in written.values.items():
            if math.isnan(value):
                assert math.isnan(read.values[key])
            else:
                assert read.values[key] == value  # exact: repr round trip
    assert [r.label for r in dump.inputs] == ["input 0", "input 1"]
    assert [r.label for r in dump.outputs] == ["output 0", "output 1"]
    assert dump.row("output", 1) is dump.rows[3]
    assert dump.row("output", 7) is None


def test_written_columns_subset_in_the_given_order(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    row = StatsRow("output", 0, "FLOAT", "ND", (2,), 8, {"l2norm": 5.0, "max": 4.0, "min": 3.0})
    write_stats_dump(path, [row], columns=("l2norm", "max"))
    assert path.read_text().splitlines()[0] == f"{FIXED},L2Norm Value,Max Value"
    dump = read_stats_dump(path)
    assert dump.columns == ("l2norm", "max")
    assert dump.rows[0].values == {"l2norm": 5.0, "max": 4.0}


def test_unknown_shape_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    write_stats_dump(path, [StatsRow("output", 0, "FLOAT", "ND", None, None, {"max": 1.0})])
    row = read_stats_dump(path).rows[0]
    assert row.shape is None
    assert row.element_count is None


# --- columns by name ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_shuffled_header_reads_the_same_values_by_name(tmp_path: Path, seed: int) -> None:
    columns = list(ALL_COLUMNS)
    fixed = FIXED.split(",")
    rng = random.Random(seed)
    rng.shuffle(columns)
    header = fixed + columns
    rng.shuffle(header)  # even the fixed columns may move
    cells = {
        "Input/Output": "Input",
        "Index": "2",
        "Data Size": "64",
        "Data Type": "DT_FLOAT16",
        "Format": "ND",
        "Shape": "[4,8]",
        **ROW_VALUES,
    }
    row = one_row(tmp_path, ",".join(header), ",".join(_quoted(cells[name]) for name in header))
    assert (row.kind, row.index, row.data_size, row.dtype, row.format, row.shape) == (
        "input",
        2,
        64,
        "FLOAT16",
        "ND",
        (4, 8),
    )
    assert row.values == {KEY_OF[name]: float(ROW_VALUES[name]) for name in ALL_COLUMNS}
    dump = read_stats_dump(tmp_path / "Add.add.1.2.1700000000000000.csv")
    assert dump.columns == tuple(KEY_OF[name] for name in header if name in KEY_OF)


def test_subset_of_statistics(tmp_path: Path) -> None:
    row = one_row(tmp_path, f"{FIXED},Max Value,l2norm", f"{fixed_row()},7.5,0.25")
    assert row.values == {"max": 7.5, "l2norm": 0.25}
    assert row.get("min") is None and row.get("mean") is None


@pytest.mark.parametrize(
    ("header", "key"),
    [
        ("l2norm", "l2norm"),
        ("L2Norm Value", "l2norm"),
        ("L2 Norm", "l2norm"),
        ("NaN Count", "nan_count"),
        ("Nan Count", "nan_count"),
        ("  nan   COUNT ", "nan_count"),
        ("Avg Value", "mean"),
        ("Mean", "mean"),
        ("Max", "max"),
        ("Min Value", "min"),
        ("Negative Inf Count", "neg_inf_count"),
        ("Positive Inf Count", "pos_inf_count"),
    ],
)
def test_header_aliases(tmp_path: Path, header: str, key: str) -> None:
    row = one_row(tmp_path, f"{FIXED},{header}", f"{fixed_row()},6")
    assert row.values == {key: 6.0}


def test_two_aliases_of_one_statistic_in_one_header(tmp_path: Path) -> None:
    path = tmp_path / "dup.csv"
    path.write_text(f"{FIXED},NaN Count,Nan Count\n{fixed_row()},1,1\n")
    with pytest.raises(FormatError) as info:
        read_stats_dump(path)
    assert_one_line(info.value, path, "'Nan Count' appears twice")


def test_unknown_header_columns_are_ignored(tmp_path: Path) -> None:
    row = one_row(tmp_path, f"{FIXED},Op Name,Max Value,", f"{fixed_row()},conv1,2.5,")
    assert row.values == {"max": 2.5}


def test_md5_column(tmp_path: Path) -> None:
    row = one_row(tmp_path, f"{FIXED},MD5 Value,Max Value", f"{fixed_row()},0a1b2c,2")
    assert row.md5 == "0a1b2c"
    assert row.values == {"max": 2.0}


# --- cell spellings ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cell", "dtype"),
    [
        ("DT_FLOAT16", "FLOAT16"),
        ("float16", "FLOAT16"),
        ("FLOAT16", "FLOAT16"),
        ("fp16", "FLOAT16"),
        ("half", "FLOAT16"),
        ("1", "FLOAT"),
        ("2", "FLOAT16"),
        ("27", "BF16"),
        ("DT_BF16", "BF16"),
        ("bfloat16", "BF16"),
        ("DT_FLOAT", "FLOAT"),
        ("float32", "FLOAT"),
        ("DT_INT32", "INT32"),
        (" dt_double ", "DOUBLE"),
        ("mystery8", "MYSTERY8"),
        ("999", "999"),
    ],
)
def test_data_type_forms(tmp_path: Path, cell: str, dtype: str) -> None:
    assert dtype_of(cell) == dtype
    assert one_row(tmp_path, FIXED, fixed_row(dtype=cell.strip())).dtype == dtype


@pytest.mark.parametrize(
    ("cell", "fmt"),
    [
        ("NC1HWC0", "NC1HWC0"),
        ("FORMAT_NC1HWC0", "NC1HWC0"),
        ("nc1hwc0", "NC1HWC0"),
        ("3", "NC1HWC0"),
        ("2", "ND"),
        ("FRACTAL_NZ", "FRACTAL_NZ"),
        ("", "ND"),
    ],
)
def test_format_forms(tmp_path: Path, cell: str, fmt: str) -> None:
    assert one_row(tmp_path, FIXED, fixed_row(fmt=cell)).format == fmt


@pytest.mark.parametrize(
    ("cell", "shape", "count"),
    [
        ("[4,2,16,16,16]", (4, 2, 16, 16, 16), 4 * 2 * 16 * 16 * 16),
        ("(4, 2)", (4, 2), 8),
        ("4x2", (4, 2), 8),
        ("4 2", (4, 2), 8),
        ("[4; 2]", (4, 2), 8),
        ("", (), 1),
        ("[]", (), 1),
        ("[0,3]", (0, 3), 0),
    ],
)
def test_shape_forms_and_element_count_from_shape(
    tmp_path: Path, cell: str, shape: tuple[int, ...], count: int
) -> None:
    row = one_row(tmp_path, FIXED, fixed_row(shape=cell))
    assert row.shape == shape
    assert row.element_count == count  # no Count column: the product of Shape


def test_element_count_prefers_count(tmp_path: Path) -> None:
    # NC1HWC0 as stored: Count includes the pads, Shape may be the stored or the origin shape
    row = one_row(tmp_path, f"{FIXED},Count", f"{fixed_row(shape='[1,24,4,4]')},512")
    assert row.element_count == 512
    no_shape = one_row(tmp_path, "Input/Output,Index,Count", "output,0,6")
    assert no_shape.shape is None
    assert no_shape.element_count == 6
    nothing = one_row(tmp_path, "Input/Output,Index,Max Value", "output,0,6")
    assert nothing.shape is None and nothing.element_count is None
    # a Count cell that is missing: the shape decides
    missing = one_row(tmp_path, f"{FIXED},Count", f"{fixed_row(shape='[3,5]')},N/A")
    assert "count" not in missing.values
    assert missing.element_count == 15


@pytest.mark.parametrize("missing", ["", "N/A", "n/a", "NA", "null", "None", "-", "  "])
def test_missing_cells_are_absent(tmp_path: Path, missing: str) -> None:
    row = one_row(
        tmp_path,
        f"{FIXED},Max Value,Min Value,Nan Count",
        f"{fixed_row(size=missing)},{missing},-1.5,{missing}",
    )
    assert row.values == {"min": -1.5}
    assert row.data_size is None


def test_nan_and_inf_cells(tmp_path: Path) -> None:
    row = one_row(
        tmp_path,
        f"{FIXED},Max Value,Min Value,Avg Value,L2Norm Value",
        f"{fixed_row()},inf,-inf,nan,Infinity",
    )
    assert row.values["max"] == math.inf
    assert row.values["min"] == -math.inf
    assert math.isnan(row.values["mean"])
    assert row.values["l2norm"] == math.inf


def test_utf8_bom_and_crlf(tmp_path: Path) -> None:
    text = f"{FIXED},Max Value,Count\r\n{fixed_row()},2.5,32\r\n\r\n"
    row = one_row(tmp_path, "", "", raw=b"\xef\xbb\xbf" + text.encode())
    assert (row.kind, row.index, row.shape) == ("output", 0, (4, 8))
    assert row.values == {"max": 2.5, "count": 32.0}


def test_blank_lines_are_skipped_and_lines_counted(tmp_path: Path) -> None:
    path = tmp_path / "blank.csv"
    path.write_text(f"{FIXED},Count\n\nInput,0,4,DT_FLOAT,ND,[1],1\n,,,,,,\nInput,1,4,x,ND,[1],2\n")
    dump = read_stats_dump(path)
    assert [(r.index, r.values["count"]) for r in dump.rows] == [(0, 1.0), (1, 2.0)]
    path.write_text(f"{FIXED},Count\n\nInput,0,4,DT_FLOAT,ND,[1],1\n\nInput,1,4,x,ND,[1],-2\n")
    with pytest.raises(FormatError) as info:
        read_stats_dump(path)
    assert_one_line(info.value, path, "line 5: Count '-2' is not a count")


def test_parse_stats_text_names_the_given_path() -> None:
    dump = parse_stats_text(f"{FIXED},Max Value\n{fixed_row()},1\n", "some/where.csv")
    assert dump.path == "some/where.csv"
    assert dump.rows[0].values == {"max": 1.0}
    with pytest.raises(FormatError) as info:
        parse_stats_text("", "some/where.csv")
    assert str(info.value) == "some/where.csv: empty file (expected a statistics header)"


# --- malformed files ---------------------------------------------------------------------------


def assert_one_line(error: FormatError, path: Path | str, expected: str) -> None:
    message = str(error)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    assert expected in message, message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Index,Data Type,Max Value\n0,DT_FLOAT,1\n",
            "the header has no Input/Output column",
        ),
        ("Input/Output,Data Type\ninput,DT_FLOAT\n", "the header has no Index column"),
        (f"{FIXED}\n{fixed_row(fmt='NOPE')}\n", "line 2: unknown Format 'NOPE'"),
        (f"{FIXED},Max Value\n{fixed_row()},abc\n", "line 2: Max Value 'abc' is not a number"),
        (
            f"{FIXED},Max Value\n{fixed_row()},1\n{fixed_row()},2\n",
            "line 3: output 0 is listed twice",
        ),
        (f"{FIXED},Count\n{fixed_row()},-1\n", "line 2: Count '-1' is not a count"),
        (f"{FIXED},Count\n{fixed_row()},1.5\n", "line 2: Count '1.5' is not a count"),
        (f"{FIXED},NaN Count\n{fixed_row()},nan\n", "line 2: NaN Count 'nan' is not a count"),
        (
            f"{FIXED},Positive Inf Count\n{fixed_row()},0.5\n",
            "line 2: Positive Inf Count '0.5' is not a count",
        ),
        (f"{FIXED},Max Value\n{fixed_row()}\n", "line 2: 6 cells for 7 columns"),
        (f"{FIXED},Max Value\n{fixed_row()},1,2\n", "line 2: 8 cells for 7 columns"),
        (f"{FIXED}\n{fixed_row(shape='[4,a]')}\n", "line 2: Shape '[4,a]' is not a list of dims"),
        (f"{FIXED}\n{fixed_row(shape='[-4]')}\n", "line 2: Shape '[-4]' is not a list of dims"),
        (f"{FIXED}\nSide,0,4,DT_FLOAT,ND,[1]\n", "line 2: Input/Output is 'Side'"),
        (f"{FIXED}\nInput,-1,4,DT_FLOAT,ND,[1]\n", "line 2: Index '-1' is not a slot number"),
        ("", "empty file"),
    ],
)
def test_malformed_files_name_the_file_and_line(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "Bad.bad.1.1.1700000000000000.csv"
    path.write_text(text)
    with pytest.raises(FormatError) as info:
        read_stats_dump(path)
    assert_one_line(info.value, path, expected)
    assert info.value.path == str(path)


def test_binary_bytes(tmp_path: Path) -> None:
    path = tmp_path / "bin.csv"
    path.write_bytes(f"{FIXED}\n".encode() + b"\x00\x01\x02\xff")
    with pytest.raises(FormatError) as info:
        read_stats_dump(path)
    assert_one_line(info.value, path, "binary data")


def test_invalid_utf8_is_replaced_not_fatal(tmp_path: Path) -> None:
    row = one_row(tmp_path, "", "", raw=f"{FIXED}\n".encode() + b"Output,0,4,\xff\xfe,ND,[1]\n")
    assert row.dtype == "\ufffd\ufffd"  # an unknown dtype spelling is kept


def test_oversized_file(tmp_path: Path) -> None:
    path = tmp_path / "huge.csv"
    with open(path, "wb") as fh:  # sparse: no 16 MiB written
        fh.seek(MAX_STATS_FILE_BYTES)
        fh.write(b"\n")
    assert path.stat().st_size == MAX_STATS_FILE_BYTES + 1
    with pytest.raises(FormatError) as info:
        read_stats_dump(path)
    assert_one_line(info.value, path, f"{MAX_STATS_FILE_BYTES + 1} bytes is too large")


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.csv"
    with pytest.raises(FormatError) as info:
        read_stats_dump(path)
    assert_one_line(info.value, path, "cannot read the file")


def test_oversized_field(tmp_path: Path) -> None:
    path = tmp_path / "field.csv"
    path.write_text(f"{FIXED},Max Value\n{fixed_row()},{'1' * 200_000}\n")
    with pytest.raises(FormatError) as info:
        read_stats_dump(path)
    assert_one_line(info.value, path, "not a CSV file")


@pytest.mark.parametrize(
    "row",
    [
        "Output,\u00b2,4,DT_FLOAT,ND,[1]",  # Index
        "Output,0,\u00b2,DT_FLOAT,ND,[1]",  # Data Size
        "Output,0,4,DT_FLOAT,\u00b2,[1]",  # Format
        "Output,0,4,DT_FLOAT,ND,[\u00b2]",  # Shape
        "Output,0," + "9" * 4301 + ",DT_FLOAT,ND,[1]",  # Data Size
    ],
)
def test_digit_like_cells_name_the_line(tmp_path: Path, row: str) -> None:
    path = tmp_path / "digits.csv"
    path.write_text(f"{FIXED}\n{row}\n", encoding="utf-8")
    with pytest.raises(FormatError) as info:
        read_stats_dump(path)
    assert_one_line(info.value, path, "line 2:")
    assert "int()" not in str(info.value)


def test_unknown_numeric_format(tmp_path: Path) -> None:
    path = tmp_path / "fmt.csv"
    path.write_text(f"{FIXED}\n{fixed_row(fmt='999')}\n")
    with pytest.raises(FormatError) as info:
        read_stats_dump(path)
    assert_one_line(info.value, path, "line 2: unknown Format '999'")
