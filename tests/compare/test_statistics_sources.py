"""Deviations born at the graph's sources (`compare.statistics.sources`): a constant or the
network's input data that deviates fails the op reading it; what ops compute stays judged at
its producer, dumped or not. And the suspects `ac -c` names from those verdicts."""

from __future__ import annotations

from precision_shell.compare.statistics.judge import (
    CONSTANT_INPUT,
    CONSTANT_NONFINITE,
    DEVIATES,
    DRIFT,
    INPUT_DATA,
    INPUT_DATA_NONFINITE,
    NONFINITE,
    NOT_COMPARED,
    PASS,
)
from precision_shell.compare.statistics.sources import (
    Source,
    blame_sources,
    nonfinite_on_both_sides,
    source_verdict,
)
from precision_shell.compare.statistics.suspects import (
    CONSTANT,
    LOCAL,
    NAN_BIRTH,
    NONFINITE_CONSTANT,
    NONFINITE_INPUT_DATA,
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


NAN_ON_DEVICE = "nan on the device that the benchmark does not have"


def _nan(device: float, bench: float | None) -> dict[str, tuple[float | None, float | None]]:
    return {"nan_count": (device, bench), "neg_inf_count": (0.0, 0.0), "pos_inf_count": (0.0, 0.0)}


def test_nan_in_a_source_is_born_there_not_at_the_op_reading_it() -> None:
    """The network input holds a NaN only on the device: the Cast reading it fails with
    `input data nonfinite` (not `nonfinite`, which says NaN came in from a producer, nor a
    NaN birth of the Cast); so does conv for its NaN constant, outranking the deviation of its
    other constant; a constant the benchmark does not dump (not compared) is blamed when it
    holds NaN and its reader's output is nonfinite. NaN that a dumped op made stays its own."""
    rows = [
        srow("cast", "input", 0, NONFINITE, 0.5, index=0, counts=_nan(1, 0), reason=NAN_ON_DEVICE),
        srow("cast", "output", 0, NONFINITE, 0.5, index=0, counts=_nan(1, 0), reason=NAN_ON_DEVICE),
        srow("conv", "input", 0, NONFINITE, 0.5, index=1, counts=_nan(1, 0)),  # made by cast
        srow("conv", "input", 1, NONFINITE, 0.1, index=1, counts=_nan(2, 0), reason=NAN_ON_DEVICE),
        srow("conv", "output", 0, NONFINITE, 3.0, index=1, counts=_nan(9, 0)),
        # mul reads conv's NaN (inherited) and a deviating constant: no NaN of its own
        srow("mul", "input", 0, NONFINITE, 3.0, index=2, counts=_nan(9, 0)),
        srow("mul", "input", 1, DRIFT, 5.0, index=2),
        srow("mul", "output", 0, NONFINITE, 3.0, index=2, counts=_nan(9, 0)),
        # big: its constant is not dumped by the benchmark and holds NaN; big's output is
        # NaN where the benchmark's is finite: the constant is where it was born
        srow("big", "input", 0, PASS, 0.1, index=4),
        srow(
            "big",
            "input",
            1,
            NOT_COMPARED,
            index=4,
            counts={"nan_count": (1.0, None)},
            reason="constant input: no benchmark big.npy (weights are not dumped)",
        ),
        srow("big", "output", 0, NONFINITE, 2.0, index=4, counts=_nan(4, 0), reason=NAN_ON_DEVICE),
    ]
    blamed = blame_sources(rows, GRAPH)
    assert [(r.tensor_index, r.verdict) for r in blamed] == [
        ("cast:input:0", INPUT_DATA_NONFINITE),
        ("cast:output:0", INPUT_DATA_NONFINITE),
        ("conv:input:0", NONFINITE),
        ("conv:input:1", CONSTANT_NONFINITE),
        ("conv:output:0", CONSTANT_NONFINITE),
        ("mul:input:0", NONFINITE),
        ("mul:input:1", CONSTANT_INPUT),
        ("mul:output:0", NONFINITE),
        ("big:input:0", PASS),
        ("big:input:1", CONSTANT_NONFINITE),
        ("big:output:0", CONSTANT_NONFINITE),
    ]
    assert blamed[9].reason == (
        "1 nan on the device; no benchmark of it, but the benchmark's output of the op "
        "reading it is finite"
    )
    # every failing output still counts (a CI gate reads them), the sources' too
    assert [r.tensor_index for r in blamed if r.kind == "output" and r.deviates] == [
        "cast:output:0",
        "conv:output:0",
        "mul:output:0",
        "big:output:0",
    ]
    suspects = rank_suspects(blamed, GRAPH)
    assert [(s.op, s.kind, s.source, s.output.tensor_index) for s in suspects] == [
        ("cast", NONFINITE_INPUT_DATA, "data", "cast:input:0"),
        ("conv", NONFINITE_CONSTANT, "w", "conv:input:1"),
        ("big", NONFINITE_CONSTANT, "w", "big:input:1"),
    ]
    assert suspects[0].reason == (
        "reads cast:input:0: nan on the device that the benchmark does not have; that is the "
        "network's input data (data), which no op computes: it was fed to the device so"
    )
    assert suspects[0].to_json()["source"] == "data"
    # without the source verdicts the same rows named nothing for the Cast (its input is
    # nonfinite: "inherited") and a NaN birth at big, whose constant holds the NaN
    before = [(s.op, s.kind) for s in rank_suspects(rows, GRAPH)]
    assert before == [("big", NAN_BIRTH)]


def test_a_source_nonfinite_on_both_sides_fails_nothing_and_is_named() -> None:
    """The same NaN in the input data of both runs is no difference between them: no verdict
    changes, no suspect; `nonfinite_on_both_sides` names the source once for the diagnosis."""
    rows = [
        srow("cast", "input", 0, PASS, 0.0, index=0, counts=_nan(1, 1)),
        srow("cast", "output", 0, PASS, 0.0, index=0, counts=_nan(1, 1)),
        srow("add", "input", 0, PASS, 0.0, index=3, counts=_nan(1, 1)),  # made by hidden
        srow("add", "input", 1, PASS, 0.0, index=3),
        srow("add", "output", 0, PASS, 0.0, index=3, counts=_nan(1, 1)),
    ]
    assert blame_sources(rows, GRAPH) == rows
    assert rank_suspects(rows, GRAPH) == []
    assert nonfinite_on_both_sides(rows, GRAPH) == [(Source("data", INPUT_DATA), rows[0])]
    assert nonfinite_on_both_sides(rows, None) == []
    # finite sources: nothing to say
    finite = [srow("cast", "input", 0, PASS, 0.0, counts=_nan(0, 0))]
    assert nonfinite_on_both_sides(finite, GRAPH) == []
