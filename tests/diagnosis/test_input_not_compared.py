"""A data input with no benchmark tensor is unknown, never perfect.

QA Q12: the device was fed channel-reversed data and the benchmark of the network input was
missing (or named as TF2's tfdbg names a fed placeholder). `ac -c` named conv1 with "while every
input is within them", "inputs 60.0 dB (cosine 1.000000)" and "what differs is ... its
constant inputs": the input no compare measured was counted as perfect."""

from __future__ import annotations

import json
import math

import pytest

from precision_shell.demo.builder import build_demo
from precision_shell.demo.spec import CORRUPT_INPUT, WRONG_CONSTANT, DemoSpec, Fault
from tests.commands.shell_fixture import open_shell, rendered, run_ok

CONV1 = "conv1/Conv2Drelu1/Relu"


@pytest.fixture(scope="module")
def unmeasured_input(tmp_path_factory):
    root = tmp_path_factory.mktemp("unmeasured_input")
    build_demo(root, DemoSpec(size="tiny", seed=1, faults=(Fault(CORRUPT_INPUT, "input"),)))
    for f in (root / "precision_data" / "tf" / "dump").glob("input.0.*.npy"):
        f.unlink()
    return root


@pytest.mark.parametrize("mode", ["", " --replay none"])
def test_an_op_reading_an_input_with_no_benchmark_is_not_said_to_have_good_inputs(
    unmeasured_input, mode
):
    check = run_ok(open_shell(unmeasured_input), f"ac -c{mode}")
    cause = check.diagnosis.causes[0]
    assert cause.op == CONV1 and not cause.input_differs
    assert cause.unknown_inputs == (0,)
    assert math.isnan(cause.input_quality) and math.isnan(cause.input_cosine)
    assert "while every input is within them" not in cause.reason
    assert cause.reason.endswith(
        "; its data input 0 (input:0) could not be compared (no benchmark tensor), so whether "
        "the op or what it was given is wrong is not known"
    )
    text = " ".join(rendered(check, width=400).split())
    assert "inputs not compared (data input 0: no benchmark tensor) -> outputs -0.9 dB" in text
    assert "60.0 dB" not in text and ">= 60 dB" not in text
    saved = json.loads(check.compare.summary_path.read_text(encoding="utf-8"))
    first = saved["diagnosis"]["root_causes"][0]
    assert first["op"] == CONV1
    assert first["measures"]["inputs_not_compared"] == [0]
    assert first["measures"]["input_sqnr_db"] == "nan"  # unknown, as summary.json writes NaN


def test_the_replay_of_such_an_op_points_at_what_it_was_given(unmeasured_input):
    check = run_ok(open_shell(unmeasured_input), "ac -c")
    text = " ".join(rendered(check, width=400).split())
    assert (
        "the kernel computes what it is given (0.5 ULP own error), so what differs is what it "
        "was given: its data input 0 (no benchmark tensor to compare with: harvest it) or its "
        "constant inputs"
    ) in text
    assert "what differs is what the device gave it besides data" not in text


@pytest.fixture(scope="module")
def fed_input(tmp_path_factory):
    """The network input's benchmark named as TensorFlow's tfdbg dumps a fed placeholder."""
    root = tmp_path_factory.mktemp("fed_input")
    build_demo(root, DemoSpec(size="tiny", seed=1, faults=(Fault(CORRUPT_INPUT, "input"),)))
    bench = root / "precision_data" / "tf" / "dump"
    for f in bench.glob("input.0.*.npy"):
        f.rename(bench / f.name.replace("input.0.", "_arg_input_0_0.0.", 1))
    return root


def test_a_fed_placeholder_s_benchmark_makes_the_input_the_root_cause(fed_input):
    check = run_ok(open_shell(fed_input), "ac -c")
    cause = check.diagnosis.causes[0]
    assert cause.op == "input" and cause.input_differs and cause.unknown_inputs == ()
    assert cause.reason.startswith(
        "network input differs from the benchmark: the data fed crosses the thresholds "
        "(CosineSimilarity 0."
    )
    text = " ".join(rendered(check, width=400).split())
    assert "quality the data fed: -1.6 dB (cosine 0.269491)" in text
    # it has no rows of its own: the panel shows the rows that measured it (QA: it was empty)
    shown = [r.tensor_index for r in check.root_cause.rows]
    assert f"{CONV1}:input:0" in shown and all(":input:" in t for t in shown)
    saved = json.loads(check.compare.summary_path.read_text(encoding="utf-8"))
    assert sorted(saved["diagnosis"]["root_causes"][0]["measured_by"]) == sorted(shown)


def test_the_report_of_an_input_root_cause_shows_the_rows_that_measured_it(fed_input, tmp_path):
    from tests.report.page_parser import parse_page

    check = run_ok(open_shell(fed_input), "ac -c --report")
    page = parse_page(check.report_path.read_text(encoding="utf-8"))
    section = next(e for e in page.elements if e.attrs.get("id") == "root-cause")
    assert "Its compare rows" in section.text and f"{CONV1}:input:0" in section.text


@pytest.fixture(scope="module")
def unmeasured_mid(tmp_path_factory):
    """A wrong constant at conv3, whose output's benchmark is missing: conv3 has no compared
    output, and the op reading it has an input no compare measured."""
    root = tmp_path_factory.mktemp("unmeasured_mid")
    faults = (Fault("wrong_constant", "conv3/Conv2D", 0.3),)
    build_demo(root, DemoSpec(size="small", blocks=3, seed=32, faults=faults, second_run=False))
    for f in (root / "precision_data" / "tf" / "dump").glob("relu3_Relu.0.*.npy"):
        f.unlink()
    return root


@pytest.mark.parametrize("mode", ["", " --replay all"])
def test_a_missing_mid_network_benchmark_is_not_read_through_its_kernel(unmeasured_mid, mode):
    """QA Q13: the consumer of conv3 borrowed conv3's inputs' quality through its kernel:
    it was named with "every input is within them", "inputs 60.0 dB" and its constants blamed,
    and conv3 appeared nowhere. Now its input is unknown and the reason names what it reads;
    an op its replay clears comes after it."""
    check = run_ok(open_shell(unmeasured_mid), f"ac -c{mode}")
    cause = check.diagnosis.causes[0]
    assert cause.op == "block1/conv2/Conv2Dblock1/relu2/Relu" and cause.unknown_inputs == (0,)
    assert "its data input 0 (conv3/Conv2Dres/addrelu3/Relu:0) could not be compared" in (
        cause.reason
    )
    text = " ".join(rendered(check, width=400).split())
    assert "what differs is what it was given: its data input 0" in text
    assert "every input is within them" not in cause.reason
    assert "dense/MatMul (its replay clears it: deviation inherited)" in text


def test_a_quality_at_the_cap_is_shown_as_a_bound_not_a_measure(tmp_path):
    """QA Q27 #6: qualities are clamped at QUALITY_CAP (60 dB), and the panel said "inputs
    60.0 dB" of an input its own row measures at 70.5 dB; the page's measures too."""
    from precision_shell.compare.diagnosis.root_cause import QUALITY_CAP, loss_text, quality_text
    from precision_shell.report.cause_section import _evidence

    assert quality_text(QUALITY_CAP) == ">= 60 dB" and quality_text(59.94) == "59.9 dB"
    # and a loss from a clamped input is a bound (QA Q29 #6: "loses 20.0 dB", truly 30.5)
    assert loss_text(20.0, QUALITY_CAP) == "at least 20.0 dB" and loss_text(20.0, 50) == "20.0 dB"
    assert _evidence({"input_sqnr_db": 60.0, "output_sqnr_db": 6.14, "drop_db": 60.0}) == (
        "input_sqnr_db >= 60; output_sqnr_db 6.14; drop_db 60.0"
    )
    root = tmp_path / "ws"
    build_demo(
        root, DemoSpec(size="tiny", faults=(Fault(WRONG_CONSTANT, "bn2/FusedBatchNormV3", 0.5),))
    )
    check = run_ok(open_shell(root), "ac -c --replay none")
    cause = check.diagnosis.causes[0]
    assert cause.input_quality == QUALITY_CAP  # the input measures ~70 dB: clamped
    text = " ".join(rendered(check, width=400).split())
    assert "quality inputs >= 60 dB (cosine 1.000000) -> outputs " in text
