"""The replay's ranking rule on hand-built causes and replays: proven-wrong kernels first by own
error, an op the estimate missed joins that way, exact kernels keep the estimate's order, and
summary.json says which evidence each cause rests on."""

from __future__ import annotations

import math

import pytest

from precision_shell.compare.diagnosis.diagnose import cause_json
from precision_shell.compare.diagnosis.replay_evidence import (
    ReplayPass,
    replay_reading,
    replay_targets,
    rerank,
)
from precision_shell.compare.diagnosis.root_cause import RootCause, collect_evidence
from precision_shell.replay.measure import OwnError
from precision_shell.replay.session import OutputReplay, ReplayReport
from tests.compare.test_root_cause import COSINE_ONLY, graph_of, row

CHAIN = {"a": [], "b": ["a"], "c": ["b"], "d": ["c"], "e": ["d"]}
EXACT = OwnError(1.0, 1e-4, 1e-4, 0.4)


def _cause(op: str, position: int, drop: float = 20.0, in_q: float = 60.0) -> RootCause:
    return RootCause(op, "Op", position, position, "estimate", drop, in_q, in_q - drop, 1.0, 0.9)


def _output(own: OwnError, overflow: int = 0, inherited_red: float = 0.4) -> OutputReplay:
    inherited = OwnError(0.9, 1.0, inherited_red, 900.0)  # the replay against the benchmark
    return OutputReplay(
        0,
        "DT_FLOAT16",
        "NHWC",
        (1, 4),
        own,
        inherited,
        inherited,
        "b.npy",
        "verdict",
        None,
        overflow,
    )


def _pass(outputs: dict[str, OutputReplay], **kw: object) -> ReplayPass:
    done = ReplayPass("all", 60.0, **kw)  # type: ignore[arg-type]
    for op, out in outputs.items():
        done.reports[op] = ReplayReport(op, "Op", "debug_0", f"{op}.dump", [], {}, [out])
    return done


def _evidence():  # noqa: ANN202
    graph = graph_of(CHAIN)
    cosines = {"a": 0.99999, "b": 0.9999, "c": 0.999, "d": 0.97, "e": 0.96}
    rows = []
    for n, (op, srcs) in enumerate(CHAIN.items()):
        if srcs:
            rows.append(row(op, "input", 0, cosines[srcs[0]], index=n))
        rows.append(row(op, "output", 0, cosines[op], index=n))
    return graph, collect_evidence(graph, rows, COSINE_ONLY)


def test_proven_wrong_kernels_rank_first_in_execution_order_and_exact_ones_keep_their_order():
    graph, evidence = _evidence()
    causes = [_cause("d", 3, 30.0), _cause("e", 4, 25.0), _cause("b", 1, 10.0)]
    done = _pass(
        {
            "d": _output(EXACT),
            "e": _output(OwnError(0.98, 0.2, 0.02, 300.0)),  # wrong: 300 ULP
            "b": _output(OwnError(0.99, 0.1, 0.01, 40.0)),  # wrong, less so, but first
        }
    )
    ranked = rerank(causes, done, graph, evidence)
    assert [c.op for c in ranked] == ["b", "e", "d"]
    assert ranked[2].replay is not None and ranked[2].replay.own.max_ulp == 0.4


def test_an_op_the_estimate_missed_joins_when_its_replay_proves_the_kernel_wrong():
    graph, evidence = _evidence()
    done = _pass({"c": _output(OwnError(0.999, 0.05, 0.005, 21.0)), "b": _output(EXACT)})
    ranked = rerank([_cause("d", 3)], done, graph, evidence)
    assert [c.op for c in ranked] == ["c", "d"]
    joined = ranked[0]
    assert joined.reason.startswith("replay from the device's own inputs")
    assert joined.position == 2 and joined.index == 2
    # its compare numbers come from its rows: input b (0.9999) -> output c (0.999)
    assert joined.output_cosine == 0.999 and joined.input_cosine == 0.9999
    assert joined.drop_db > 0


def test_a_rounding_size_error_is_not_proof_even_at_many_ulp():
    """Cancellation near zero: 30 ULP at one element, 1e-5 overall: not a wrong kernel."""
    graph, evidence = _evidence()
    done = _pass({"c": _output(OwnError(1.0, 1e-6, 1e-5, 30.0))})
    ranked = rerank([_cause("d", 3)], done, graph, evidence)
    assert [c.op for c in ranked] == ["d"]


def test_the_first_wrong_kernel_to_run_ranks_first_a_nan_after_it_second():
    """What goes wrong first is the root cause (QA Q12: one card's root cause was a later
    NaN alone, and the earlier fault when read across cards): a NaN the replay lacks at d
    comes after b's finite error, which runs first."""
    graph, evidence = _evidence()
    done = _pass(
        {
            "d": _output(OwnError(0.9, math.inf, 0.1, math.inf)),
            "b": _output(OwnError(0.9, 1, 1, 9e9)),
        }
    )
    ranked = rerank([_cause("d", 3), _cause("b", 1)], done, graph, evidence)
    assert [c.op for c in ranked] == ["b", "d"]


def test_cause_json_says_replay_or_estimate_with_the_own_error():
    graph, evidence = _evidence()
    done = _pass({"d": _output(EXACT)}, refused={"e": "no replay kernel for op type Op"})
    d, e = rerank([_cause("d", 3), _cause("e", 4, 12.5)], done, graph, evidence)
    replayed, estimated = cause_json(d), cause_json(e)
    assert replayed["evidence"] == "replay"
    assert replayed["own_error"] == {
        "cosine": 1.0,
        "max_abs_error": 1e-4,
        "relative_euclidean_distance": 1e-4,
        "max_ulp": 0.4,
        "elements": 0,
        "left_out": {"device_only": 0, "replay_only": 0, "both_different": 0, "both_same": 0},
    }
    assert replayed["inherited_error"]["relative_euclidean_distance"] == 0.4
    assert replayed["measures"]["drop_db"] == 20.0
    assert estimated["evidence"] == "estimate"
    assert estimated["own_error"] == {"drop_db": 12.5} and estimated["inherited_error"] is None
    assert estimated["replay_skipped"] == "no replay kernel for op type Op"


def test_unreached_ops_say_why():
    graph, evidence = _evidence()
    done = _pass({}, unreached=["d"])
    (d,) = rerank([_cause("d", 3)], done, graph, evidence)
    assert d.replay_skipped == "not reached: the 60 s replay budget ran out"
    done.interrupted = True
    assert done.skipped("d") == "not reached: Ctrl-C"
    assert done.to_json()["not_reached"] == 1


def test_the_reading_names_overflow_constants_or_inheritance():
    overflow = replace_cause(_cause("c", 2), _output(EXACT, overflow=3))
    assert "3 exact values exceed the float16 range" in (replay_reading(overflow) or "")
    clean_inputs = replace_cause(_cause("c", 2, in_q=60.0), _output(EXACT))
    assert "constant inputs (weights, bias, scale) or its attributes" in (
        replay_reading(clean_inputs) or ""
    )
    drifting = replace_cause(_cause("c", 2, in_q=9.0), _output(EXACT))  # 0.4 is 8.0 dB
    assert (replay_reading(drifting) or "").endswith(
        "its deviation is inherited from its inputs (inputs 9.0 dB, its exact output 8.0 dB)"
    )
    # the same loss at an op that takes no constant (softmax): its math amplifies the inputs'
    from dataclasses import replace

    amplifier = replace(clean_inputs, takes_constants=False)
    reading = replay_reading(amplifier) or ""
    assert reading.endswith(
        "it takes no constant inputs, so its own math amplifies its inputs' deviation (as exp "
        "and softmax do): look at why they deviate, or run it in float32"
    )
    assert "weights" not in reading
    assert "constant inputs (weights" in (
        replay_reading(replace(clean_inputs, takes_constants=True)) or ""
    )
    wrong = replace_cause(_cause("c", 2), _output(OwnError(0.9, 1.0, 0.1, 200.0)))
    assert replay_reading(wrong) == "verdict"
    assert replay_reading(_cause("c", 2)) is None


def replace_cause(cause: RootCause, out: OutputReplay) -> RootCause:
    from dataclasses import replace

    return replace(cause, replay=out)


def test_targets_candidates_then_ops_by_own_drop():
    graph, evidence = _evidence()
    causes = [_cause("e", 4)]
    candidates = replay_targets(graph, evidence, causes, "candidates")
    # the named cause, then the ops that lose quality by themselves, largest drop first:
    # d 27 -> 12 dB, a (a source: a perfect input) 60 -> 47, then b and c 10 dB each, in
    # execution order
    assert candidates == ["e", "d", "a", "b", "c"]
    everything = replay_targets(graph, evidence, causes, "all")
    assert everything == candidates  # every op of the graph, in the same order
    assert replay_targets(graph, evidence, causes, "none") == []


# (worst data input dB, rel euclid of the replay from the device's inputs vs the benchmark):
# the numbers of the deep drift demos (DemoSpec(size="tiny", blocks=60, branch_gain=6,
# fp32_head=True)) at block44/conv2 (drift only) and block50/conv2 (weights scaled by 1.3
# and by 1.1 under the same drift)
DRIFT_ONLY = (26.8, 0.0571)
WEIGHTS_X1_3 = (24.1, 0.444)
WEIGHTS_X1_1 = (24.1, 0.166)


@pytest.mark.parametrize(
    ("measured", "says"),
    [
        (DRIFT_ONLY, "its deviation is inherited from its inputs (inputs 26.8 dB, "),
        (WEIGHTS_X1_3, "its exact output loses 17.0 dB more than they carry"),
        (WEIGHTS_X1_1, "its deviation is inherited from its inputs (inputs 24.1 dB, "),
    ],
    ids=["drift_only", "weights_x1.3", "weights_x1.1"],
)
def test_under_drift_the_reading_weighs_the_replay_against_its_inputs_deviation(measured, says):
    """An exact kernel whose exact output is far worse than its drifting inputs has a wrong
    constant (x1.3: 24.1 -> 7.0 dB); one that carries its inputs' drift on inherits it. x1.1
    (8.4 dB lost) stays under the 10 dB margin, above the 5.9 dB drift alone adds."""
    in_q, red = measured
    reading = replay_reading(
        replace_cause(_cause("c", 2, in_q=in_q), _output(EXACT, inherited_red=red))
    )
    assert says in (reading or "")
    constants = "its constant inputs (weights, bias, scale) or its attributes"
    assert (constants in (reading or "")) == (measured == WEIGHTS_X1_3)


def _isolated(out: OutputReplay, red: float) -> OutputReplay:
    """`out` with a replay from the benchmark's inputs off by `red` (float16 allows 0.002)."""
    from dataclasses import replace

    return replace(out, isolated=OwnError(1.0 - red * red / 2, red, red, 10.0))


def test_proven_constant_differences_and_overflows_rank_in_execution_order():
    graph, evidence = _evidence()
    causes = [_cause("e", 4, 30.0), _cause("d", 3, 25.0), _cause("b", 1, 12.0)]
    done = _pass(
        {
            "e": _output(EXACT),  # exact, nothing proven: stays behind the proven ones
            "d": _isolated(_output(EXACT, overflow=2), 1e-4),  # an overflow born here
            "b": _isolated(_output(EXACT), 0.05),  # constants differ
            "c": _isolated(_output(EXACT), 0.2),  # the estimate missed it: joins
            "a": _isolated(_output(EXACT), 1e-4),  # exact from the benchmark's inputs
        }
    )
    assert done.differing == ["b", "c"]
    assert done.to_json()["constants_differ"] == ["b", "c"]
    ranked = rerank(causes, done, graph, evidence)
    assert [c.op for c in ranked] == ["b", "c", "d", "e"]  # proven faults, the first first
    joined = ranked[1]
    assert joined.reason.startswith("replay: from the benchmark's own inputs its output is still")
    assert "0.2 off (rel. Euclidean; rounding allows 0.002)" in joined.reason
    # a proven-wrong kernel before them comes first
    done.reports["a"] = _pass({"a": _output(OwnError(0.9, 1.0, 0.1, 200.0))}).reports["a"]
    assert [c.op for c in rerank(causes, done, graph, evidence)][:2] == ["a", "b"]


def test_the_reading_with_a_replay_from_the_benchmarks_inputs():
    differs = replace_cause(_cause("c", 2, in_q=9.0), _isolated(_output(EXACT), 0.05))
    reading = replay_reading(differs) or ""
    assert reading.startswith(
        "the kernel computes what it is given (0.4 ULP own error), but from the benchmark's own "
        "inputs its output is still 0.05 off"
    )
    assert "inherited" not in reading
    # exact from the benchmark's inputs, and loses much from the device's: amplification,
    # whatever constants it takes
    from dataclasses import replace

    loud = replace(
        replace_cause(_cause("c", 2, in_q=60.0), _isolated(_output(EXACT), 1e-4)),
        takes_constants=True,
    )
    assert (replay_reading(loud) or "").endswith(
        "from the benchmark's own inputs it matches the benchmark within rounding (0.0001 rel. "
        "Euclidean, rounding allows 0.002), so what it adds comes from its own math amplifying "
        "its inputs' deviation: look at why they deviate, or run it in float32"
    )
    quiet = replace_cause(_cause("c", 2, in_q=9.0), _isolated(_output(EXACT), 1e-4))
    assert (replay_reading(quiet) or "").endswith(
        "its deviation is inherited from its inputs (inputs 9.0 dB, its exact output 8.0 dB); "
        "from the benchmark's own inputs it matches the benchmark within rounding (0.0001 rel. "
        "Euclidean, rounding allows 0.002)"
    )


def test_a_cause_the_replay_proves_is_never_called_benign():
    """b deviates and nothing after it fails: "single-point deviation ... can be ignored",
    unless its replay proves it faulty (a wrong kernel, or its constants differ)."""
    from dataclasses import replace

    from precision_shell.compare.diagnosis.advisor import SINGLE_POINT, advise
    from tests.compare.test_root_cause import chain_rows

    cos = {"a": 0.99999, "b": 0.5, "c": 0.9999, "d": 0.9999, "e": 0.9999}
    graph = graph_of(CHAIN)
    rows = chain_rows(cos, CHAIN)
    evidence = collect_evidence(graph, rows, COSINE_ONLY)
    cause = _cause("b", 1)
    estimate = advise(graph, rows, evidence, [cause], COSINE_ONLY)
    (single,) = [f for f in estimate if f.detection == SINGLE_POINT]
    assert single.advice.startswith("This op deviates, but no op after it fails the thresholds")
    wrong = OwnError(0.9, 1.0, 0.3, 191.0)  # 191 ULP, 0.3 rel. Euclidean: a wrong kernel
    differ = replace(_output(EXACT), isolated=OwnError(0.99, 0.1, 0.02, 50.0))
    for out in (_output(wrong), differ):
        proven = advise(graph, rows, evidence, [replace(cause, replay=out)], COSINE_ONLY)
        assert SINGLE_POINT not in [f.detection for f in proven]
    assert "unless a replay proves it wrong (ac -c --replay all)" in single.advice
    # its replay ran and cleared it: no "unless a replay proves it wrong" (QA Q28 #6)
    cleared = advise(graph, rows, evidence, [replace(cause, replay=_output(EXACT))], COSINE_ONLY)
    (single,) = [f for f in cleared if f.detection == SINGLE_POINT]
    assert single.advice == (
        "This op deviates, but no op after it fails the thresholds: its replay finds no fault "
        "in it (the kernel computes what it is given). Check it with cp; if the network's final "
        "accuracy is fine, it can be ignored."
    )
