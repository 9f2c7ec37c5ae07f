"""Fuzz the CANN statistics dump reader with byte and text mutations of valid files: any input
gives picklable rows or a one-line FormatError naming the file."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from fuzz_inputs import assert_picklable, budget, mutated_bytes, mutated_text
from hypothesis import given
from hypothesis import strategies as st

from precision_shell.errors import FormatError
from precision_shell.formats.stats_dump import StatsDump, read_stats_dump

CURRENT = (
    "Input/Output,Index,Data Size,Data Type,Format,Shape,Max Value,Min Value,Avg Value,"
    "Count,Nan Count,Negative Inf Count,Positive Inf Count,L2Norm Value\n"
    'Input,0,65536,DT_FLOAT16,NC1HWC0,"[4,2,16,16,16]",3.5,-2.25,0.125,32768,0,0,0,12.75\n'
    "Input,1,96,DT_FLOAT,ND,[24],1e+3,-inf,nan,24,1,1,0,N/A\n"
    'Output,0,65536,DT_FLOAT16,NC1HWC0,"[4,2,16,16,16]",7,0,0.5,32768,0,0,2,99.5\n'
)
# an older spelling: numeric codes, other aliases, another column order, BOM and CRLF
OLDER = (
    "\ufeffInput/Output,Index,Data Size,Data Type,Format,Shape,l2norm,NaN Count,Max,Min,Avg,\r\n"
    "input,0,8,1,2,4x2,0.5,0,1,-1,0,\r\n"
    "output,0,4,27,3,(1 2),,3,2,2,2,\r\n"
)
TEXT_SEEDS = [CURRENT, OLDER]
BYTE_SEEDS = [seed.encode() for seed in TEXT_SEEDS]


@pytest.fixture(scope="module")
def fuzz_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("stats_fuzz") / "Add.add.1.2.1700000000000000.csv"


def read(path: Path, data: bytes) -> StatsDump | None:
    path.write_bytes(data)
    try:
        dump = read_stats_dump(path)
    except FormatError as error:  # anything else escapes and fails the test
        message = str(error)
        assert "\n" not in message, message
        assert message.startswith(f"{path}: ") and message != f"{path}: ", message
        return None
    assert_picklable(dump)
    assert dump.path == str(path)
    labels = [(row.kind, row.index) for row in dump.rows]
    assert len(labels) == len(set(labels))
    for row in dump.rows:
        assert row.kind in ("input", "output")
        assert row.index >= 0
        assert row.shape is None or all(d >= 0 for d in row.shape)
        for key in ("count", "nan_count", "neg_inf_count", "pos_inf_count"):
            if key in row.values:
                assert row.values[key] >= 0 and float(row.values[key]).is_integer()
        assert all(isinstance(v, float) for v in row.values.values())
        count = row.element_count
        assert count is None or count >= 0
        assert set(row.values) <= set(dump.columns)
        f"{row.dtype}{row.format}{row.md5}".encode("utf-8", "surrogatepass")
    return dump


def test_the_seeds_read(fuzz_file: Path) -> None:
    current = read(fuzz_file, BYTE_SEEDS[0])
    assert current is not None
    assert [(r.label, r.dtype, r.format, r.element_count) for r in current.rows] == [
        ("input 0", "FLOAT16", "NC1HWC0", 32768),
        ("input 1", "FLOAT", "ND", 24),
        ("output 0", "FLOAT16", "NC1HWC0", 32768),
    ]
    assert current.rows[1].values["min"] == -math.inf
    assert "l2norm" not in current.rows[1].values
    older = read(fuzz_file, BYTE_SEEDS[1])
    assert older is not None
    assert [(r.label, r.dtype, r.format, r.shape) for r in older.rows] == [
        ("input 0", "FLOAT", "ND", (4, 2)),
        ("output 0", "BF16", "NC1HWC0", (1, 2)),
    ]
    assert older.rows[1].values == {"nan_count": 3.0, "max": 2.0, "min": 2.0, "mean": 2.0}


@budget(300)
@given(data=st.one_of(mutated_bytes(BYTE_SEEDS), st.binary(max_size=64)))
def test_mutated_bytes(fuzz_file: Path, data: bytes) -> None:
    read(fuzz_file, data)


@budget(400)
@given(text=mutated_text(TEXT_SEEDS))
def test_mutated_text(fuzz_file: Path, text: str) -> None:
    read(fuzz_file, text.encode("utf-8", "surrogatepass"))


@budget(100)
@given(
    cells=st.lists(
        st.one_of(
            st.sampled_from(["nan", "inf", "-inf", "N/A", "", "1e400", "-0", "²", "0x10"]),
            st.text(alphabet='0123456789.-+eE ,[]()x"', max_size=12),
        ),
        min_size=1,
        max_size=14,
    )
)
def test_random_rows_under_a_valid_header(fuzz_file: Path, cells: list[str]) -> None:
    header = CURRENT.splitlines()[0]
    row = ",".join(["Output", "0", *cells])
    read(fuzz_file, f"{header}\n{row}\n".encode())
