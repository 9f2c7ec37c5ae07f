"""Reading tfdbg's screens back: `lt` rows, failed-run intro, ERROR lines; dump-root names."""

from __future__ import annotations

from pathlib import Path

import pytest

from precision_shell.harvest.dump_root import (
    find_live_dump_root,
    first_timestamp,
    indexed_tensor_dumps,
    scan_dump_root,
)
from precision_shell.harvest.tfdbg_text import (
    ListingError,
    error_lines,
    parse_run_error,
    parse_tensor_list,
)

# As the real tfdbg (TF 2.21) printed it for a small graph, terminal line ends included.
REAL_LT = (
    "lt > /tmp/x.txt\r\n"
    "4 dumped tensor(s):\r\n\r\n"
    "t (ms)    Size (B) Op type       Tensor name\r\n"
    "[0.000]   240      Const         dense/kernel:0\r\n"
    "[83.951]  224      MatMul        dense/MatMul:0\r\n"
    "[88.402]  1.17k    Mul           loop/mul:0\r\n"
    "[1093.543] 216     Mul           loop/mul:0\r\n"
    "Wrote output to /tmp/x.txt\r\n"
)


def test_lt_rows_give_exact_microseconds_and_dump_indices() -> None:
    rows = parse_tensor_list(REAL_LT)
    assert [(r.rel_us, r.op_type, r.tensor_name, r.dump_index) for r in rows] == [
        (0, "Const", "dense/kernel:0", 0),
        (83_951, "MatMul", "dense/MatMul:0", 0),
        (88_402, "Mul", "loop/mul:0", 0),
        (1_093_543, "Mul", "loop/mul:0", 1),
    ]


def test_lt_with_missing_rows_is_an_error() -> None:
    with pytest.raises(ListingError, match="listed 5 dumped tensors but 4 rows"):
        parse_tensor_list(REAL_LT.replace("4 dumped", "5 dumped"))
    with pytest.raises(ListingError, match="no 'N dumped tensor"):
        parse_tensor_list("ERROR: something\n")


def test_failed_run_intro_names_the_op_and_error_type() -> None:
    screen = (
        "run-end: run #1: 1 fetch (bad:0); 1 feed (x:0)\r\n"
        "--------------------------------------\r\n"
        "!!! An error occurred during the run !!!\r\n\r\n"
        "Op name:    bad\r\n"
        "Error type: <class 'tensorflow.python.framework.errors_impl.InvalidArgumentError'>\r\n"
    )
    assert parse_run_error(screen) == "InvalidArgumentError at op 'bad'"
    assert (
        parse_run_error("!!! An error occurred during the run !!!\nOp name:    None\n") == "error"
    )
    assert parse_run_error(REAL_LT) is None


def test_error_lines_drop_the_prefix_and_escape_sequences() -> None:
    text = 'pt x:0\r\n\x1b[31mERROR: Tensor "x:0" did not generate any dumps.\x1b[0m\r\nother\r\n'
    assert error_lines(text) == ['Tensor "x:0" did not generate any dumps.']


def _touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")


def test_dump_root_names_give_nodes_slots_timestamps_in_tfdbg_order(tmp_path: Path) -> None:
    device = tmp_path / "_tfdbg_device_,job_localhost,replica_0,task_0,device_CPU_0"
    _touch(device / "dense" / "MatMul_0_DebugIdentity_1600000000000300")
    _touch(device / "loop" / "mul_0_DebugIdentity_1600000000000500")
    _touch(device / "loop" / "mul_0_DebugIdentity_1600000000000500-1")  # same-us suffix
    _touch(device / "loop" / "mul_0_DebugNumericSummary_1600000000000100")
    _touch(device / "_arg_x_0_0_0_DebugIdentity_1600000000000200")
    _touch(device / "_tfdbg_graph_hash123_1500000000000000")
    _touch(device / "odd")
    _touch(tmp_path / "_tfdbg_core_metadata_sessionrun1_1400000000000000")
    dumps = scan_dump_root(tmp_path)
    assert [(d.tensor_name, d.debug_op, d.timestamp) for d in dumps] == [
        ("loop/mul:0", "DebugNumericSummary", 1600000000000100),
        ("_arg_x_0_0:0", "DebugIdentity", 1600000000000200),
        ("dense/MatMul:0", "DebugIdentity", 1600000000000300),
        ("loop/mul:0", "DebugIdentity", 1600000000000500),
        ("loop/mul:0", "DebugIdentity", 1600000000000500),
    ]
    assert first_timestamp(dumps) == 1600000000000100
    assert [(d.tensor_name, d.dump_index) for d in indexed_tensor_dumps(dumps)] == [
        ("_arg_x_0_0:0", 0),
        ("dense/MatMul:0", 0),
        ("loop/mul:0", 0),
        ("loop/mul:0", 1),
    ]
    assert first_timestamp([]) is None
    assert scan_dump_root(tmp_path / "absent") == []


def test_live_dump_root_is_the_tfdbg_dir_holding_dumps(tmp_path: Path) -> None:
    assert find_live_dump_root(tmp_path) is None
    (tmp_path / "tfdbg_empty").mkdir()
    _touch(tmp_path / "tfdbg_abc" / "_tfdbg_device_,cpu" / "x_0_DebugIdentity_7")
    assert find_live_dump_root(tmp_path) == tmp_path / "tfdbg_abc"
