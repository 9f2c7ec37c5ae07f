"""The statistics compare CSV, the suspects ranked from its rows, and the targeted tensor dump
config planned from them (ops, producers to a depth, exact byte estimates)."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from precision_shell.compare.statistics.dump_config import (
    DUMP_MODE,
    acl_json,
    plan_dump_config,
    row_bytes,
    session_options,
    write_dump_config,
)
from precision_shell.compare.statistics.judge import (
    DEVIATES,
    DRIFT,
    NONFINITE,
    NOT_COMPARED,
    PASS,
    judge,
    made_here,
)
from precision_shell.compare.statistics.suspects import LOCAL, NAN_BIRTH, rank_suspects
from precision_shell.compare.statistics.table import (
    STATISTICS_HEADER,
    StatisticsRow,
    read_statistics_csv,
    row_of,
    write_statistics_csv,
)
from precision_shell.compare.statistics.values import statistics_of
from precision_shell.errors import FormatError
from precision_shell.formats.ge.model import GraphDef, ModelDef, OpDef
from precision_shell.formats.stats_dump import StatsRow
from precision_shell.workspace.graph_index import GraphIndex

NAN = math.nan
Triple = tuple[float | None, float | None, float | None]


def srow(
    op: str,
    kind: str,
    slot: int,
    verdict: str,
    deviation: float | None = None,
    *,
    index: int = 0,
    data_size: int | None = 100,
    count: int | None = 50,
    dtype: str = "FLOAT16",
    main: str = "",
    values: dict[str, Triple] | None = None,
    counts: dict[str, tuple[float | None, float | None]] | None = None,
    reason: str = "",
) -> StatisticsRow:
    return StatisticsRow(
        index=index,
        op_type="Op",
        op_name=op,
        ground_truth=f"bench/{op}",
        kind=kind,
        slot=slot,
        dtype=dtype,
        format="ND",
        shape=(count,) if count is not None else None,
        data_size=data_size,
        count=count,
        verdict=verdict,
        deviation=deviation,
        main_statistic=main,
        values=values,
        counts=counts,
        reason=reason,
    )


def graph_of(edges: dict[str, list[str]]) -> GraphIndex:
    """Ops in the dict's order (= execution order); values are their data inputs."""
    ops = [
        OpDef(name=name, type="Op", id=i, inputs=[f"{src}:0" for src in srcs])
        for i, (name, srcs) in enumerate(edges.items())
    ]
    return GraphIndex.from_model(ModelDef(name="m", graphs=[GraphDef(name="g", ops=ops)]), "m")


# --- the CSV -----------------------------------------------------------------------------------


def same_number(a: float | int | None, b: float | int | None) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


def assert_rows_equal(got: StatisticsRow, want: StatisticsRow) -> None:
    for name in (
        "index",
        "op_type",
        "op_name",
        "ground_truth",
        "kind",
        "slot",
        "dtype",
        "format",
        "shape",
        "verdict",
        "main_statistic",
        "pad_count",
        "reason",
    ):
        assert getattr(got, name) == getattr(want, name), name
    for name in ("data_size", "count", "real_count", "deviation"):
        assert same_number(getattr(got, name), getattr(want, name)), name
    for key, triple in (want.values or {}).items():
        assert all(same_number(a, b) for a, b in zip(got.statistic(key), triple, strict=True)), key
    for key, pair in (want.counts or {}).items():
        assert all(same_number(a, b) for a, b in zip((got.counts or {})[key], pair, strict=True)), (
            key
        )


def full_values(**given: Triple) -> dict[str, Triple]:
    return {k: given.get(k, (None, None, None)) for k in ("max", "min", "mean", "l2norm")}


def full_counts(
    **given: tuple[float | None, float | None],
) -> dict[str, tuple[float | None, float | None]]:
    return {k: given.get(k, (None, None)) for k in ("nan_count", "neg_inf_count", "pos_inf_count")}


def hand_rows() -> list[StatisticsRow]:
    return [
        StatisticsRow(
            index=0,
            op_type="Conv2D",
            op_name='net/conv:1, "odd"',  # a colon, a comma and quotes in the name
            ground_truth="bench/conv.0.npy",
            kind="output",
            slot=0,
            dtype="FLOAT16",
            format="NC1HWC0",
            shape=(4, 2, 16, 16, 16),
            data_size=65536,
            count=32768,
            verdict=DEVIATES,
            deviation=12.812345678901234,
            main_statistic="l2norm",
            real_count=24576,
            pad_count=8192,
            values=full_values(
                max=(65504.0, 62000.5, 123.456789),
                min=(-0.1, -0.1000001, 1e-30),
                mean=(1.0 / 3.0, 0.3333, 2.0**-20),
                l2norm=(1234.5678901234567, 1175.8, 0.4),
            ),
            counts=full_counts(
                nan_count=(0.0, 0.0), neg_inf_count=(0.0, 0.0), pos_inf_count=(1.0, 0.0)
            ),
            reason="device max 0 is the padding's; a second note",
        ),
        StatisticsRow(
            index=1,
            op_type="Mul",
            op_name="mul",
            ground_truth="",
            kind="input",
            slot=1,
            dtype="FLOAT",
            format="ND",
            shape=None,
            data_size=None,
            count=None,
            verdict=NONFINITE,
            deviation=math.inf,
            main_statistic="",
            real_count=None,
            pad_count=0,
            values=full_values(
                max=(math.inf, 3.0, None), min=(-math.inf, None, None), mean=(NAN, 1.0, 0.5)
            ),
            counts=full_counts(nan_count=(5.0, 0.0), pos_inf_count=(2.0, None)),
            reason="nan on the device\nthat the benchmark does not have",
        ),
        StatisticsRow(
            index=2,
            op_type="Cast",
            op_name="cast",
            ground_truth="bench/cast.npy",
            kind="output",
            slot=0,
            dtype="INT32",
            format="ND",
            shape=(),
            data_size=4,
            count=1,
            verdict=NOT_COMPARED,
            deviation=None,
            values=full_values(),
            counts=full_counts(),
            reason="no benchmark tensor",
        ),
    ]


def test_csv_round_trip(tmp_path: Path) -> None:
    rows = hand_rows()
    path = tmp_path / "statistics_20240101.csv"
    write_statistics_csv(path, rows)
    header = path.read_text().splitlines()[0]
    assert header == ",".join(STATISTICS_HEADER)
    read = read_statistics_csv(path)
    assert len(read) == len(rows)
    for got, want in zip(read, rows, strict=True):
        assert_rows_equal(got, want)
    assert read[0].tensor_index == 'net/conv:1, "odd":output:0'
    npu_mean = read[1].statistic("mean")[0]
    assert npu_mean is not None and math.isnan(npu_mean)
    assert read[1].deviation == math.inf
    assert read[2].shape == () and read[1].shape is None
    assert read[0].deviates and read[1].deviates and not read[2].compared


def test_csv_cells_are_exact_and_derived_columns_written(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    write_statistics_csv(path, hand_rows()[:1])
    with open(path, newline="") as fh:
        named = list(csv.DictReader(fh))[0]
    assert named["NPUL2Norm"] == "1234.5678901234567"
    assert float(named["AbsDiffL2Norm"]) == abs(1234.5678901234567 - 1175.8)
    assert float(named["RelDiffL2Norm"]) == abs(1234.5678901234567 - 1175.8) / 1175.8
    assert named["Shape"] == "[4,2,16,16,16]"
    assert named["PadCount"] == "8192" and named["RealCount"] == "24576"
    assert named["NPUMax"] == "65504"
    assert named["Verdict"] == DEVIATES and named["MainStatistic"] == "l2norm"


def test_csv_round_trip_of_judged_rows(tmp_path: Path) -> None:
    bench = np.random.default_rng(0).standard_normal(500).astype(np.float32)
    device_array = (bench * 1.05).astype(np.float16)
    device_array[3] = np.nan
    device = StatsRow("output", 0, "FLOAT16", "ND", (500,), 1000, statistics_of(device_array))
    judged = row_of(
        3, "Add", "add", "bench/add.npy", "output", 0, device, judge(device, statistics_of(bench))
    )
    scaled = StatsRow(
        "output", 1, "FLOAT16", "ND", (500,), 1000, statistics_of((bench * 1.05).astype(np.float16))
    )
    deviating = row_of(
        3, "Add", "add", "bench/add.npy", "output", 1, scaled, judge(scaled, statistics_of(bench))
    )
    unjudged = row_of(3, "Add", "add", "", "input", 0, device, None, reason="no benchmark")
    assert judged.verdict == NONFINITE
    assert deviating.verdict == DEVIATES and deviating.main_statistic == "l2norm"
    assert unjudged.verdict == NOT_COMPARED and unjudged.statistic("max")[1] is None
    path = tmp_path / "s.csv"
    write_statistics_csv(path, [judged, deviating, unjudged])
    for got, want in zip(read_statistics_csv(path), [judged, deviating, unjudged], strict=True):
        assert_rows_equal(got, want)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Index,OpType,NPUDump\n0,Add,add\n", "not a statistics compare CSV"),
        ("", "not a statistics compare CSV"),
        (",".join(STATISTICS_HEADER[::-1]) + "\n", "not a statistics compare CSV"),
        (",".join(STATISTICS_HEADER) + "\n1,2,3\n", "line 2: 3 cells, expected"),
    ],
)
def test_csv_with_another_header_raises(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "other.csv"
    path.write_text(text)
    with pytest.raises(FormatError) as info:
        read_statistics_csv(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and expected in message and "\n" not in message


def test_csv_with_a_bad_number_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    write_statistics_csv(path, hand_rows())
    text = path.read_text()
    assert "\n2,Cast," in text
    path.write_text(text.replace("\n2,Cast,", "\ntwo,Cast,", 1))
    with pytest.raises(FormatError) as info:
        read_statistics_csv(path)
    # the Reason cell of row 2 holds a newline: the line is the record's (1 header + 3 rows)
    assert str(info.value).startswith(f"{path}: line 4: ")
    assert "\n" not in str(info.value)


def test_csv_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_bytes(b"\xff\xfe\x00Index")
    with pytest.raises(FormatError) as info:
        read_statistics_csv(path)
    assert str(info.value).startswith(f"{path}: not a statistics compare CSV")


def test_csv_round_trip_of_a_name_that_is_not_utf8(tmp_path: Path) -> None:
    """An op named from a dump file name with Latin-1 bytes (file_name_text's policy)."""
    row = dataclasses.replace(hand_rows()[0], op_name=os.fsdecode(b"net/caf\xe9"))
    path = tmp_path / "s.csv"
    write_statistics_csv(path, [row])
    assert b"\n0,Conv2D,net/caf\xe9,bench/conv.0.npy,net/caf\xe9:output:0," in path.read_bytes()
    assert_rows_equal(read_statistics_csv(path)[0], row)


def test_csv_oversized_cell_raises_format_error(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    cells = ["x" * 200_000] * len(STATISTICS_HEADER)
    path.write_text(",".join(STATISTICS_HEADER) + "\n" + ",".join(cells) + "\n")
    with pytest.raises(FormatError):
        read_statistics_csv(path)


# --- suspects ----------------------------------------------------------------------------------


NAN_NOTE = "nan on the device that the benchmark does not have"


def l2(device: float, bench: float, allowed: float) -> dict[str, Triple]:
    return full_values(l2norm=(device, bench, allowed))


def test_rank_suspects() -> None:
    # the verdicts as the compare gives them: an output beyond rounding that its inputs
    # explain is drift, only one made here deviates
    assert made_here(5.0, 0.1) and made_here(40.0, 0.9)
    assert not made_here(6.0, 5.0)
    rows = [
        # A: inputs pass, output deviates 5x: a local deviation (jump 5 / 0.25 = 20)
        srow("A", "input", 0, PASS, 0.1, index=0),
        srow("A", "output", 0, DEVIATES, 5.0, index=0, main="l2norm", values=l2(1.05, 1.0, 0.01)),
        # B: its input deviates about as much as its output: carried, not made here
        srow("B", "input", 0, DRIFT, 5.0, index=1),
        srow("B", "output", 0, DRIFT, 6.0, index=1, main="l2norm"),
        # C: NaN born (output nonfinite, inputs pass), later than A but ranked first
        srow("C", "input", 0, PASS, 0.2, index=2),
        srow("C", "input", 1, PASS, 0.0, index=2),
        srow("C", "output", 0, NONFINITE, 3.0, index=2, reason=NAN_NOTE),
        # D: NaN inherited (an input nonfinite): not a suspect
        srow("D", "input", 0, NONFINITE, 3.0, index=3),
        srow("D", "output", 0, NONFINITE, 9.0, index=3),
        # E: a larger local jump than A's (40 / 0.9 = 44), so before A
        srow("E", "input", 0, PASS, 0.9, index=4),
        srow("E", "output", 0, DEVIATES, 40.0, index=4, main="l2norm"),
        # G: every output passes
        srow("G", "input", 0, PASS, 0.3, index=6),
        srow("G", "output", 0, PASS, 0.5, index=6),
        # H: outputs not compared
        srow("H", "output", 0, NOT_COMPARED, None, index=7),
    ]
    suspects = rank_suspects(rows)
    assert [(s.op, s.kind) for s in suspects] == [("C", NAN_BIRTH), ("E", LOCAL), ("A", LOCAL)]
    birth, e, a = suspects
    assert birth.input_deviation == 0.2 and birth.output.tensor_index == "C:output:0"
    assert birth.reason == f"{NAN_NOTE}; its inputs have none"
    assert e.input_deviation == 0.9 and e.output.deviation == 40.0
    assert a.reason == (
        "output 0 is 5x the allowed deviation (l2norm 1.05 vs 1, 5.00% off); "
        "its inputs' statistics match the benchmark's"
    )
    assert a.to_json()["evidence"] == "statistics"
    evidence = a.to_json()["measures"]
    assert (evidence["device"], evidence["benchmark"], evidence["allowed_abs_diff"]) == (
        1.05,
        1.0,
        0.01,
    )
    assert evidence["tensor"] == "A:output:0" and evidence["deviation"] == 5.0
    assert a.to_json()["kind"] == LOCAL and a.to_json()["op"] == "A"


def test_nan_births_in_execution_order() -> None:
    rows = [
        srow("late", "output", 0, NONFINITE, None, index=9),
        srow("early", "output", 0, NONFINITE, None, index=2),
        srow("local", "output", 0, DEVIATES, 1e6, index=0),
    ]
    assert [s.op for s in rank_suspects(rows)] == ["early", "late", "local"]


def test_producers_stand_for_missing_input_rows() -> None:
    # dump_mode output: no input rows; Y's producer X already deviates almost as much as Y
    rows = [
        srow("X", "output", 0, DEVIATES, 5.0, index=0),
        srow("Y", "output", 0, DEVIATES, 6.0, index=1),
        srow("Z", "output", 0, NONFINITE, None, index=2),
        srow("W", "output", 0, NONFINITE, None, index=3),
    ]
    graph = graph_of({"X": [], "Y": ["X"], "Z": ["Y"], "W": ["Z"]})
    with_graph = rank_suspects(rows, graph)
    # W's NaN comes from Z: inherited; Y's jump over X is 6/5, X's over nothing 5/0.25
    assert [(s.op, s.kind) for s in with_graph] == [("Z", NAN_BIRTH), ("X", LOCAL), ("Y", LOCAL)]
    assert with_graph[0].input_deviation == 6.0
    assert with_graph[2].input_deviation == 5.0
    # without the graph every op looks on its own
    assert [(s.op, s.kind) for s in rank_suspects(rows)] == [
        ("Z", NAN_BIRTH),
        ("W", NAN_BIRTH),
        ("Y", LOCAL),
        ("X", LOCAL),
    ]


# --- the dump config ---------------------------------------------------------------------------


def config_rows() -> list[StatisticsRow]:
    return [
        srow("A", "input", 0, PASS, index=0, data_size=1000),
        srow("A", "output", 0, PASS, index=0, data_size=2000),
        srow("B", "input", 0, PASS, index=1, data_size=2000),
        srow("B", "output", 0, PASS, index=1, data_size=300),
        # C: one size from the element count (FLOAT16 x 50 = 100 bytes), one unknown
        srow("C", "input", 0, PASS, index=2, data_size=None, count=50),
        srow("C", "output", 0, DEVIATES, 9.0, index=2, data_size=None, count=None),
        srow("D", "output", 0, PASS, index=3, data_size=70),
        srow("E", "output", 0, PASS, index=4, data_size=5),
    ]


def config_graph() -> GraphIndex:
    # R (a Reshape run without a task) sits between B and C and has no statistics rows
    return graph_of(
        {"data": [], "A": ["data"], "B": ["A"], "R": ["B"], "C": ["R"], "D": ["C"], "E": ["D"]}
    )


FULL = 1000 + 2000 + 2000 + 300 + 100 + 0 + 70 + 5


def test_row_bytes() -> None:
    rows = config_rows()
    assert row_bytes(rows[0]) == 1000
    assert row_bytes(rows[4]) == 100  # 50 float16
    assert row_bytes(rows[5]) is None
    assert row_bytes(srow("x", "output", 0, PASS, data_size=None, count=10, dtype="FLOAT")) == 40
    assert row_bytes(srow("x", "output", 0, PASS, data_size=None, count=10, dtype="ODD")) is None


@pytest.mark.parametrize(
    ("depth", "ops", "estimate"),
    [
        (0, ["C"], 100),
        (1, ["B", "C"], 2300 + 100),
        (2, ["A", "B", "C"], 3000 + 2300 + 100),
        (9, ["A", "B", "C"], 3000 + 2300 + 100),
    ],
)
def test_plan_dump_config(depth: int, ops: list[str], estimate: int) -> None:
    plan = plan_dump_config(config_rows(), ["C"], config_graph(), depth=depth, step="7")
    assert plan.suspects == ["C"]
    assert plan.ops == ops
    assert plan.depth == depth
    assert plan.tensor_bytes == estimate
    assert plan.full_bytes == FULL
    assert plan.ratio == FULL / estimate
    assert plan.unknown_size == ["C:output:0"]
    assert plan.model_name == "g"
    summary = plan.to_json()
    assert summary["estimate_bytes"] == estimate and summary["full_dump_bytes"] == FULL
    assert summary["smaller_by"] == round(FULL / estimate, 1)
    assert summary["dump_data"] == "tensor" and summary["dump_step"] == "7"


def test_plan_in_execution_order_with_two_suspects_and_no_graph() -> None:
    plan = plan_dump_config(config_rows(), ["E", "A"], None, depth=3, model_name="net")
    assert plan.ops == ["A", "E"]  # no graph: no producers
    assert plan.tensor_bytes == 3000 + 5
    assert plan.unknown_size == []
    assert plan.model_name == "net"
    empty = plan_dump_config([], [], None)
    assert (
        empty.tensor_bytes == 0
        and math.isinf(empty.ratio)
        and empty.to_json()["smaller_by"] is None
    )


def test_acl_json_and_session_options(tmp_path: Path) -> None:
    plan = plan_dump_config(
        config_rows(), ["C"], config_graph(), depth=1, step="3|5", dump_path="/tmp/dump here"
    )
    config = acl_json(plan)
    assert config["dump"]["dump_list"][0]["layer"] == ["B", "C"]
    assert config["dump"]["dump_list"][0]["model_name"] == "g"
    assert config["dump"]["dump_data"] == "tensor"
    assert config["dump"]["dump_mode"] == DUMP_MODE == "all"
    assert config["dump"]["dump_step"] == "3|5"
    assert config["dump"]["dump_path"] == "/tmp/dump here"
    text = session_options(plan)
    assert "custom_op.parameter_map[\"dump_layer\"].s = tf.compat.as_bytes('B C')" in text
    assert "custom_op.parameter_map[\"dump_step\"].s = tf.compat.as_bytes('3|5')" in text
    assert 'custom_op.parameter_map["dump_data"].s = tf.compat.as_bytes("tensor")' in text
    assert 'custom_op.parameter_map["enable_dump"].b = True' in text
    assert f"~{2400:,} bytes, {FULL / 2400:.1f}x less than a full dump" in text
    compile(text, "tf_session_dump.py", "exec")  # pasteable Python
    files = write_dump_config(plan, tmp_path / "cfg")
    assert json.loads(files.acl_json.read_text()) == config
    assert files.session_options.read_text() == text
    assert json.loads(files.summary.read_text()) == plan.to_json()


def test_session_options_warns_about_spaced_names() -> None:
    rows = [srow("a b", "output", 0, DEVIATES, 2.0, data_size=8)]
    text = session_options(plan_dump_config(rows, ["a b"], None))
    assert "tf.compat.as_bytes('a b')" in text
    assert "# dump_layer separates names by spaces; these hold one: ['a b']" in text
