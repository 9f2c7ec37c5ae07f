"""Deviations born at the graph's sources (`compare.statistics.sources`): a constant or the
network's input data that deviates fails the op reading it; what ops compute stays judged at
its producer, dumped or not. And the suspects `ac -c` names from those verdicts."""

from __future__ import annotations

from precision_shell.compare.statistics.judge import (
    CONSTANT_INPUT,
    DEVIATES,
    DRIFT,
    INPUT_DATA,
    PASS,
)
from precision_shell.compare.statistics.sources import blame_sources, source_verdict
from precision_shell.compare.statistics.suspects import (
    CONSTANT,
    LOCAL,
    UNDUMPED,
    rank_suspects,
)
from precision_shell.compare.statistics.suspects import INPUT_DATA as INPUT_DATA_KIND
from precision_shell.formats.ge.model import GraphDef, ModelDef, OpDef
from precision_shell.workspace.graph_index import GraphIndex
from tests.compare.test_statistics_table_and_config import srow


def typed_graph(ops: list[tuple[str, str, list[str]]]) -> GraphIndex:
    """(name, type, data inputs) in execution order."""
    defs = [
        OpDef(name=name, type=kind, id=i, inputs=[f"{src}:0" for src in srcs])
        for i, (name, kind, srcs) in enumerate(ops)
    ]
    return GraphIndex.from_model(ModelDef(name="m", graphs=[GraphDef(name="g", ops=defs)]), "m")


GRAPH = typed_graph(
    [
        ("data", "Data", []),
        ("w", "Const", []),
        ("w2", "Const", []),
        ("cast", "Cast", ["data"]),  # dumped: what it makes is judged at it
        ("conv", "Conv2D", ["cast", "w"]),
        ("w2_cast", "Cast", ["w2"]),  # GE's Cast of a constant, not dumped
        ("mul", "Mul", ["conv", "w2_cast"]),
        ("hidden", "Relu", ["data"]),  # computes, not dumped
        ("add", "Add", ["hidden", "w"]),
        ("big", "Mul", ["conv", "w"]),
    ]
)
DUMPED = {"cast", "conv", "mul", "add", "big"}


def test_source_verdict_walks_to_a_source_through_undumped_casts_only() -> None:
    assert source_verdict(GRAPH, "cast", 0, DUMPED) == INPUT_DATA
    assert source_verdict(GRAPH, "conv", 1, DUMPED) == CONSTANT_INPUT
    assert source_verdict(GRAPH, "mul", 1, DUMPED) == CONSTANT_INPUT
    # made by a dumped op, or by an undumped one that computes: not a source
    assert source_verdict(GRAPH, "conv", 0, DUMPED) is None
    assert source_verdict(GRAPH, "add", 0, DUMPED) is None
    # a slot the op does not have, an op the graph does not have
    assert source_verdict(GRAPH, "conv", 5, DUMPED) is None
    assert source_verdict(GRAPH, "nope", 0, DUMPED) is None


def test_a_deviating_source_fails_the_op_reading_it_and_nothing_else() -> None:
    rows = [
        # the network input deviates: the Cast reading it fails, its output drift before
        srow("cast", "input", 0, DRIFT, 500.0, index=0),
        srow("cast", "output", 0, DRIFT, 100.0, index=0),
        # conv reads the Cast (drift, judged there) and a constant beyond rounding
        srow("conv", "input", 0, DRIFT, 100.0, index=1),
        srow("conv", "input", 1, DRIFT, 3.0, index=1),
        srow("conv", "output", 0, DRIFT, 90.0, index=1),
        # mul's constant (through an undumped Cast) within rounding: nothing changes
        srow("mul", "input", 0, DRIFT, 90.0, index=2),
        srow("mul", "input", 1, PASS, 0.5, index=2),
        srow("mul", "output", 0, DRIFT, 80.0, index=2),
        # add reads what an undumped op computed: judged there, not a source
        srow("add", "input", 0, DRIFT, 40.0, index=3),
        srow("add", "input", 1, PASS, 0.0, index=3),
        srow("add", "output", 0, DRIFT, 40.0, index=3),
        # big deviates on its own: it keeps that verdict, its constant is marked
        srow("big", "input", 0, DRIFT, 2.0, index=4),
        srow("big", "input", 1, DRIFT, 2.0, index=4),
        srow("big", "output", 0, DEVIATES, 900.0, index=4),
    ]
    verdicts = [(r.tensor_index, r.verdict) for r in blame_sources(rows, GRAPH)]
    assert verdicts == [
        ("cast:input:0", INPUT_DATA),
        ("cast:output:0", INPUT_DATA),
        ("conv:input:0", DRIFT),
        ("conv:input:1", CONSTANT_INPUT),
        ("conv:output:0", CONSTANT_INPUT),
        ("mul:input:0", DRIFT),
        ("mul:input:1", PASS),
        ("mul:output:0", DRIFT),
        ("add:input:0", DRIFT),
        ("add:input:1", PASS),
        ("add:output:0", DRIFT),
        ("big:input:0", DRIFT),
        ("big:input:1", CONSTANT_INPUT),
        ("big:output:0", DEVIATES),
    ]
    blamed = blame_sources(rows, GRAPH)
    assert [r.tensor_index for r in blamed if r.kind == "output" and r.deviates] == [
        "cast:output:0",
        "conv:output:0",
        "big:output:0",
    ]
    # without the graph nothing tells a source from an op's output
    assert blame_sources(rows, None) == rows
    # the suspects: big's own jump first, then the sources in execution order; add's input
    # made by an undumped op with no dumped op upstream: dump it
    suspects = rank_suspects(blamed, GRAPH)
    assert [(s.op, s.kind) for s in suspects] == [
        ("big", LOCAL),
        ("cast", INPUT_DATA_KIND),
        ("conv", CONSTANT),
        ("add", UNDUMPED),
    ]
    conv = suspects[2]
    assert conv.output.tensor_index == "conv:input:1"
    assert conv.reason == (
        "reads conv:input:1 (bench/conv), 3x the allowed deviation: a constant (weights, "
        "bias, scale), which no op computes; the two sides were given different values"
    )
    assert suspects[3].reason == (
        "reads add:input:0 (bench/add), 40x the allowed deviation, made upstream by ops this "
        "dump does not hold: dump those"
    )
