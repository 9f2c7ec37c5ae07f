"""The root-cause walk and the advisor on small hand-built graphs with hand-written compare rows."""

from __future__ import annotations

import math

import pytest

from precision_shell.compare.diagnosis.advisor import (
    ACCUMULATED_DRIFT,
    FP16_OVERFLOW,
    GLOBAL_CONSISTENCY,
    INPUT_INCONSISTENCY,
    SINGLE_POINT,
    Finding,
    OverflowHit,
    SliceCheck,
    with_replay_unfinished,
)
from precision_shell.compare.diagnosis.diagnose import diagnose as _diagnose
from precision_shell.compare.diagnosis.diagnose import with_scope
from precision_shell.compare.diagnosis.root_cause import (
    QUALITY_CAP,
    measured_cause,
    takes_constants,
    tensor_quality,
)
from precision_shell.compare.results.schema import ResultRow
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.formats.ge.graph import GraphDef, ModelDef, OpDef
from precision_shell.workspace.graph_index import GraphIndex


def graph_of(edges: dict[str, list[str]], types: dict[str, str] | None = None) -> GraphIndex:
    """Ops in the dict's order (= execution order); values are their data inputs."""
    ops = [
        OpDef(
            name=name, type=(types or {}).get(name, "Op"), id=i, inputs=[f"{src}:0" for src in srcs]
        )
        for i, (name, srcs) in enumerate(edges.items())
    ]
    return GraphIndex.from_model(ModelDef(name="m", graphs=[GraphDef(name="g", ops=ops)]), "m")


def row(
    op: str,
    kind: str,
    slot: int,
    cos: float | str,
    red: float | str | None = None,
    index: int = 0,
    overflow: str = "",
) -> ResultRow:
    if isinstance(cos, str):  # "nan": propagated from the data
        texts = {"CosineSimilarity": cos, "RelativeEuclideanDistance": cos}
    else:
        if red is None:
            red = math.sqrt(2 * (1 - cos))
        texts = {"CosineSimilarity": f"{cos:.9f}", "RelativeEuclideanDistance": f"{red:.9f}"}
    return ResultRow(index, "Op", op, op, f"{op}:{kind}:{slot}", "[4]", texts, overflow=overflow)


# These unit cases judge by the cosine alone (the walk's logic); the default rule, with its
# relative Euclidean distance limit, is exercised by the scale-error case below.
COSINE_ONLY = ThresholdRule({"CosineSimilarity": 0.98})


def diagnose(graph, rows, overflows=(), rule=COSINE_ONLY):  # noqa: ANN001, ANN201
    return _diagnose(graph, rows, rule, overflows)


def cos_of_sqnr(db: float) -> float:
    """Cosine of a tensor whose error is `db` below its signal (small-error equivalence)."""
    red = 10 ** (-db / 20)
    return 1 - red * red / 2


def chain_rows(cosines: dict[str, float | str], edges: dict[str, list[str]]) -> list[ResultRow]:
    """Each op's output row, and each input row equal to its producer's output."""
    rows = []
    for i, (name, srcs) in enumerate(edges.items()):
        for k, src in enumerate(srcs):
            if src in cosines:
                rows.append(row(name, "input", k, cosines[src], index=i))
        if name in cosines:
            rows.append(row(name, "output", 0, cosines[name], index=i))
    return rows


CHAIN = {"a": [], "b": ["a"], "c": ["b"], "d": ["c"], "e": ["d"]}


def test_quality_is_sqnr_from_relative_euclidean_distance_capped():
    assert tensor_quality(row("x", "output", 0, 0.99, red=0.1), COSINE_ONLY).sqnr == pytest.approx(
        20.0
    )
    assert tensor_quality(row("x", "output", 0, 1.0, red=0.0), COSINE_ONLY).sqnr == QUALITY_CAP
    assert tensor_quality(row("x", "output", 0, 1.0, red=1e-9), COSINE_ONLY).sqnr == QUALITY_CAP
    nan = tensor_quality(row("x", "output", 0, "nan"), COSINE_ONLY)
    assert nan.nonfinite and nan.sqnr == -math.inf


def test_chain_names_the_op_where_the_error_is_born_not_where_it_is_inherited():
    cos = {"a": 0.99999, "b": 0.99998, "c": 0.80, "d": 0.79, "e": 0.78}
    d = diagnose(graph_of(CHAIN), chain_rows(cos, CHAIN))
    assert d.causes[0].op == "c"
    assert d.causes[0].reason.startswith("output crosses the thresholds (CosineSimilarity 0.8")
    assert [c.op for c in d.causes] == ["c"]  # d and e inherit the error
    assert d.baseline == "c"


def test_nan_born_beats_a_small_deviation_and_inherited_nan_is_not_a_cause():
    cos = {"a": 0.99999, "b": 0.97, "c": "nan", "d": "nan", "e": "nan"}
    d = diagnose(graph_of(CHAIN), chain_rows(cos, CHAIN))
    assert d.causes[0].op == "c" and math.isinf(d.causes[0].drop_db)
    assert d.causes[0].reason.startswith("NaN/inf born here")
    assert "d" not in [c.op for c in d.causes] and "e" not in [c.op for c in d.causes]


def test_branch_and_residual_join_use_the_worst_input():
    edges = {"in": [], "left": ["in"], "right": ["in"], "join": ["left", "right"], "out": ["join"]}
    cos = {"in": 0.99999, "left": 0.99999, "right": 0.6, "join": 0.7, "out": 0.7}
    d = diagnose(graph_of(edges), chain_rows(cos, edges))
    assert d.causes[0].op == "right"
    # the join's worst input is already bad: it inherits, it is not a candidate
    assert "join" not in [c.op for c in d.causes]


def test_ops_without_benchmark_are_skipped_through_to_their_producers():
    edges = {"a": [], "cast": ["a"], "trans": ["cast"], "b": ["trans"], "c": ["b"]}
    # cast/trans have no rows at all (GE-inserted); b's input row is missing too
    cos = {"a": 0.5, "b": 0.5, "c": 0.5}
    rows = [
        row("a", "output", 0, 0.5),
        row("b", "output", 0, 0.5),
        row("c", "input", 0, 0.5),
        row("c", "output", 0, 0.5),
    ]
    d = diagnose(graph_of(edges), rows)
    assert d.causes[0].op == "a"  # b's input is resolved through trans and cast to a
    assert [c.op for c in d.causes] == ["a"]
    del cos


def test_a_fused_op_is_one_candidate_with_its_own_rows():
    edges = {"x": [], "conv_bn_relu": ["x"], "pool": ["conv_bn_relu"]}
    rows = chain_rows({"x": 1.0, "conv_bn_relu": 0.9, "pool": 0.92}, edges)
    d = diagnose(graph_of(edges, {"conv_bn_relu": "Conv2D"}), rows)
    assert (d.causes[0].op, d.causes[0].type) == ("conv_bn_relu", "Conv2D")


def test_hidden_local_error_under_drift_is_found_by_its_own_drop():
    # drift brings everything just under 0.98 before the fault: the threshold rule alone would
    # blame the first op that crossed it; the op's own loss of signal points at the fault
    names = [f"op{i}" for i in range(12)]
    edges = {n: ([names[i - 1]] if i else []) for i, n in enumerate(names)}
    # drift: 7 dB lost per op from 60 dB, so op7 is the first below 0.98; then op8 breaks
    cos = {n: cos_of_sqnr(60 - 7 * i) for i, n in enumerate(names)}
    assert cos["op6"] > 0.98 > cos["op7"]
    cos["op8"] = 0.50
    for later in names[9:]:
        cos[later] = 0.49
    d = diagnose(graph_of(edges), chain_rows(cos, edges))
    assert d.causes[0].op == "op8"
    assert d.baseline == "op7"  # first below 0.98: the older tools' answer is wrong here


def test_corrupted_network_input_is_found_at_the_input():
    edges = {"input": [], "conv": ["input"], "relu": ["conv"]}
    rows = [
        row("conv", "input", 0, 0.7),
        row("conv", "output", 0, 0.7),
        row("relu", "input", 0, 0.7),
        row("relu", "output", 0, 0.7),
    ]
    d = diagnose(graph_of(edges, {"input": "Data"}), rows)
    assert d.causes[0].op == "input"
    assert d.causes[0].reason.startswith("network input differs")
    assert [f.detection for f in d.findings if f.op == "input"] == [INPUT_INCONSISTENCY]


def test_global_consistency_when_everything_is_above_threshold():
    d = diagnose(graph_of(CHAIN), chain_rows(dict.fromkeys(CHAIN, 0.9999), CHAIN))
    assert d.causes == [] and d.baseline is None
    assert [f.detection for f in d.findings] == [GLOBAL_CONSISTENCY]


def test_single_point_deviation_when_the_error_does_not_propagate():
    cos = {"a": 0.99999, "b": 0.5, "c": 0.9999, "d": 0.9999, "e": 0.9999}
    d = diagnose(graph_of(CHAIN), chain_rows(cos, CHAIN))
    assert d.causes[0].op == "b"
    assert [f.detection for f in d.findings] == [SINGLE_POINT]
    # and not when it does propagate
    cos["c"] = 0.6
    d = diagnose(graph_of(CHAIN), chain_rows(cos, CHAIN))
    assert SINGLE_POINT not in [f.detection for f in d.findings]


def test_accumulated_drift_when_no_op_loses_much_on_its_own():
    names = [f"op{i}" for i in range(30)]
    edges = {n: ([names[i - 1]] if i else []) for i, n in enumerate(names)}
    cos = {n: cos_of_sqnr(60 - 2.0 * i) for i, n in enumerate(names)}  # 60 dB -> 2 dB
    first_below = next(n for n in names if cos[n] < 0.98)
    d = diagnose(graph_of(edges), chain_rows(cos, edges))
    drift = [f for f in d.findings if f.detection == ACCUMULATED_DRIFT]
    assert len(drift) == 1 and drift[0].op == first_below == "op24"
    assert all(c.drop_db < 10 for c in d.causes)
    # not drift when one op clearly breaks
    cos["op20"] = 0.5
    d = diagnose(graph_of(edges), chain_rows(cos, edges))
    assert ACCUMULATED_DRIFT not in [f.detection for f in d.findings]


def test_fp16_overflow_by_opdebug_and_by_value_but_not_when_inherited():
    cos = {"a": 0.99999, "b": "nan", "c": "nan", "d": "nan", "e": "nan"}
    rows = chain_rows(cos, CHAIN)
    rows = [
        r
        if r.kind != "output" or r.op_name not in ("b", "c")
        else row(r.op_name, "output", 0, "nan", overflow="YES")
        for r in rows
    ]
    d = diagnose(graph_of(CHAIN), rows, [OverflowHit("b", ("floating-point overflow",))])
    overflow = [f for f in d.findings if f.detection == FP16_OVERFLOW]
    assert [(f.op, f.evidence["source"]) for f in overflow] == [("b", "Opdebug")]
    d = diagnose(graph_of(CHAIN), rows)
    overflow = [f for f in d.findings if f.detection == FP16_OVERFLOW]
    assert [(f.op, f.evidence["source"]) for f in overflow] == [("b", "value")]  # c inherits


def test_diagnosis_record_holds_root_causes_and_advice():
    cos = {"a": 0.99999, "b": 0.99998, "c": 0.80, "d": 0.79, "e": 0.78}
    record = diagnose(graph_of(CHAIN), chain_rows(cos, CHAIN)).record()
    data = record.to_json()
    (cause,) = data["root_causes"]
    assert (cause["op"], cause["type"], cause["index"]) == ("c", "Op", 2)
    assert cause["measures"]["output_cosine"] == pytest.approx(0.8)
    assert cause["measures"]["drop_db"] > 10
    # no replay ran: the own error is the compare's estimate, the drop in dB
    assert cause["evidence"] == "estimate" and cause["inherited_error"] is None
    assert cause["own_error"] == {"drop_db": cause["measures"]["drop_db"]}
    assert "replay" not in data
    assert data["baseline_first_below"] == "c"
    assert record.root_cause == "c"


def test_a_pure_scale_error_is_named_and_not_called_benign():
    """cosine 0.9999 everywhere from c on, but c scales by 1.2 (RED 0.2) and carries it on."""
    rows = []
    for i, name in enumerate(CHAIN):
        red = 0.001 if name in ("a", "b") else 0.2
        src = list(CHAIN[name])
        if src:
            src_red = 0.001 if src[0] in ("a", "b") else 0.2
            rows.append(row(name, "input", 0, 0.9999, red=src_red, index=i))
        rows.append(row(name, "output", 0, 0.9999, red=red, index=i))
    d = _diagnose(graph_of(CHAIN), rows, ThresholdRule.default())
    assert d.causes[0].op == "c"
    assert "RelativeEuclideanDistance 0.200000000 > 0.05" in d.causes[0].reason
    detections = {f.detection for f in d.findings}
    assert "single-point deviation" not in detections
    assert "global consistency" not in detections
    # judged by the cosine alone (the older tools), nothing fails and nothing is named first
    assert d.baseline is None


def test_the_advisor_never_says_the_network_matches_next_to_a_root_cause():
    # outputs within every limit, but b alone loses far more than the outlier drop
    cos = {"a": 0.9999999, "b": 0.9995, "c": 0.9995, "d": 0.9995, "e": 0.9995}
    d = diagnose(graph_of(CHAIN), chain_rows(cos, CHAIN))
    assert d.causes and d.causes[0].op == "b"
    assert "global consistency" not in {f.detection for f in d.findings}


def test_drift_is_not_claimed_for_the_cards_where_an_op_loses_much_on_its_own():
    """One card drifts; another compared card has an op that loses 20+ dB: the drift
    finding says on which cards no op does, and names the other card's op."""
    names = [f"op{i}" for i in range(30)]
    edges = {n: ([names[i - 1]] if i else []) for i, n in enumerate(names)}
    cos = {n: cos_of_sqnr(60 - 2.0 * i) for i, n in enumerate(names)}
    graph = graph_of(edges)
    drifting = diagnose(graph, chain_rows(cos, edges))
    cos["op20"] = 0.5
    broken = diagnose(graph, chain_rows(cos, edges)).causes[0]
    assert broken.op == "op20" and broken.drop_db > 10
    rows = chain_rows({n: cos_of_sqnr(60 - 2.0 * i) for i, n in enumerate(names)}, edges)
    scope = SliceCheck(("0", "0"), (("2", "0"), ("3", "0")), ((("1", "0"), broken),))
    scoped = with_scope(drifting, graph, rows, COSINE_ONLY, (), scope)
    (drift,) = [f for f in scoped.findings if f.detection == ACCUMULATED_DRIFT]
    assert drift.advice.startswith(
        "On ranks 0, 2, 3 step 0 no single op loses more than 10 dB: there the error grows"
    )
    assert (
        f"Not on every card: on rank 1 step 0, op20 (index {broken.index}) alone loses "
        f"{broken.drop_db:.1f} dB (ac -c --rank 1 --step 0): look for a fault there."
    ) in drift.advice
    assert "rather than hunting one faulty op" not in drift.advice
    assert drift.evidence["not_on"] == [
        {
            "rank": "1",
            "step": "0",
            "op": "op20",
            "index": broken.index,
            "drop_db": round(broken.drop_db, 6),
        }
    ]
    assert drift.evidence["checked_on"][0] == {"rank": "0", "step": "0"}
    # every card checked and none loses much: the claim covers them all
    clean = SliceCheck(("0", "0"), (("1", "0"),), ())
    (drift,) = [
        f
        for f in with_scope(drifting, graph, rows, COSINE_ONLY, (), clean).findings
        if f.detection == ACCUMULATED_DRIFT
    ]
    assert drift.advice.startswith(
        "No single op loses more than 10 dB on any compared card or step (ranks 0, 1 step 0)"
    )


def test_a_cause_knows_whether_its_op_takes_constants():
    graph = graph_of(
        {"x": [], "w": [], "conv": ["x", "w"], "soft": ["conv"]},
        {"x": "Data", "w": "Const", "conv": "Conv2D", "soft": "SoftmaxV2"},
    )
    assert takes_constants(graph, "conv") is True
    assert takes_constants(graph, "soft") is False
    assert takes_constants(graph, "missing") is None
    cause = measured_cause(graph, {}, "soft", "SoftmaxV2", "replay")
    assert cause is not None and cause.takes_constants is False


def test_an_unfinished_replay_under_drift_says_what_would_finish_it():
    """More time helps a budget that ran out; a replay stopped by Ctrl-C is run again."""
    drift = Finding(ACCUMULATED_DRIFT, None, None, "Drift.")
    stopped = with_replay_unfinished(drift, ["rank 1 step 0"], "Ctrl-C", True)
    assert stopped.advice == (
        "Drift. The replay, which finds faults drift hides, did not finish on rank 1 step 0 "
        "(Ctrl-C): a fault there is not ruled out (ac -c again lets it finish)."
    )
    cut = with_replay_unfinished(drift, [], "the 5 s budget ran out", False)
    assert cut.advice == (
        "Drift. The replay, which finds faults drift hides, did not finish (the 5 s budget "
        "ran out): a fault there is not ruled out (ac -c --replay-budget S gives it more time)."
    )
