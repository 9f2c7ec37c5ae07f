"""The result store as commands see it: every setting is read, one threshold rule everywhere,
a summary whose diagnosis is absent until one ran, partial runs said so, constants apart."""

from __future__ import annotations

import json
import math
import shutil
import tomllib
from pathlib import Path

import pytest

from precision_shell.compare.results.schema import ResultRow, read_result_csv
from precision_shell.compare.results.summary import read_summary
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.settings import Settings
from tests.commands.shell_fixture import open_shell, run_fail, run_ok

DEFAULTS = Path(__file__).resolve().parents[2] / "config" / "default.toml"


def _leaf_keys(table: dict, prefix: str = "") -> set[str]:
    keys = set()
    for key, value in table.items():
        name = f"{prefix}{key}"
        keys |= _leaf_keys(value, name + ".") if isinstance(value, dict) else {name}
    return keys


def test_every_configured_key_is_read_by_some_command(tiny_demo, monkeypatch):
    root, manifest = tiny_demo
    read: set[str] = set()
    real_get = Settings.get

    def recording_get(self, dotted):
        read.add(dotted)
        return real_get(self, dotted)

    monkeypatch.setattr(Settings, "get", recording_get)
    shell = open_shell(root)
    run_ok(shell, "ac -c")
    run_ok(shell, "vcs")
    dump = next(o for o in manifest.device_ops if o.dump_file)
    run_ok(shell, f"pt {root / 'precision_data' / dump.dump_file}:output:0")
    declared = _leaf_keys(tomllib.loads(DEFAULTS.read_text(encoding="utf-8")))
    assert declared - read == set(), "config keys no code reads"


def _row(texts: dict[str, str], kind: str = "output") -> ResultRow:
    return ResultRow(0, "Mul", "op", "gt", f"op:{kind}:0", "[4]", texts)


def test_a_pure_scale_error_fails_the_default_rule():
    rule = ThresholdRule.default()
    scaled = _row(
        {"CosineSimilarity": "0.999900", "RelativeEuclideanDistance": "0.200000"}, "output"
    )
    assert [str(c) for c in rule.crossings(scaled)] == ["RelativeEuclideanDistance 0.200000 > 0.05"]
    healthy = _row({"CosineSimilarity": "0.999900", "RelativeEuclideanDistance": "0.010000"})
    assert rule.crossings(healthy) == []
    # not computed (`NaN`) crosses nothing; nan from the data fails
    assert not rule.fails(_row({"CosineSimilarity": "NaN", "RelativeEuclideanDistance": "NaN"}))
    assert rule.fails(_row({"CosineSimilarity": "nan", "RelativeEuclideanDistance": "nan"}))


def test_a_device_tensor_against_an_all_zero_benchmark_fails(tiny_demo):
    """QA: a conv output of max 5.0 against an all-zero benchmark passed: msaccucmp prints no
    cosine and a relative Euclidean distance of 0 there (its convention), so no limit was
    crossed. The relative error is unbounded: it fails, the cells still msaccucmp's."""
    import numpy as np

    from tests.commands.shell_fixture import CONV2, benchmark_path

    zero = "Cannot compare by Cosine Similarity. All the data is zero in the benchmark tensor."
    rule = ThresholdRule.default()
    row = _row({"CosineSimilarity": "NaN", "RelativeEuclideanDistance": "0.000000"})
    assert not rule.fails(row)
    flagged = ResultRow(0, "Mul", "op", "gt", "op:output:0", "[4]", row.texts, reason=zero)
    assert [str(c) for c in rule.crossings(flagged)] == [
        "CosineSimilarity NaN (the benchmark is all zero, the device's tensor is not) < 0.98"
    ]
    only_distance = ThresholdRule({"RelativeEuclideanDistance": 0.05})
    assert [c.metric for c in only_distance.crossings(flagged)] == ["RelativeEuclideanDistance"]
    # the relative error is unbounded there: a rule of it alone fails it too (its first limit)
    assert [c.metric for c in ThresholdRule({"MaxRelativeError": 0.5}).crossings(flagged)] == [
        "MaxRelativeError"
    ]
    assert ThresholdRule({}).crossings(flagged) == []  # no limit: nothing is judged
    root, _ = tiny_demo
    bench = benchmark_path(root, "relu2/Relu")
    np.save(bench, np.zeros_like(np.load(bench)))
    run = run_ok(open_shell(root), "vc").primary
    (conv2,) = [r for r in run.tally.outputs if r.tensor_index == f"{CONV2}:output:0"]
    assert (conv2.texts["CosineSimilarity"], conv2.texts["RelativeEuclideanDistance"]) == (
        "NaN",
        "0.000000",
    )  # msaccucmp's cells
    assert zero in conv2.reason and conv2 in run.tally.failing
    # and the diagnosis reads it as all noise, not as msaccucmp's distance of 0 (60 dB)
    from precision_shell.compare.diagnosis.root_cause import QUALITY_CAP, tensor_quality

    quality = tensor_quality(conv2, rule)
    assert quality is not None and quality.fails and quality.sqnr == -QUALITY_CAP


def test_settings_limits_are_all_in_the_rule(tmp_path):
    user = tmp_path / "config.toml"
    user.write_text(
        "[thresholds]\ncosine = 0.9\nmax_relative_error = 0.5\nrelative_euclidean_distance = 0.3\n",
        encoding="utf-8",
    )
    rule = ThresholdRule.from_settings(Settings.load(user))
    assert dict(rule.limits) == {
        "CosineSimilarity": 0.9,
        "MaxRelativeError": 0.5,
        "RelativeEuclideanDistance": 0.3,
    }
    row = _row(
        {
            "CosineSimilarity": "0.950000",
            "MaxRelativeError": "0.600000",
            "RelativeEuclideanDistance": "0.100000",
        }
    )
    assert [c.metric for c in rule.crossings(row)] == ["MaxRelativeError"]


def test_vc_summary_has_no_diagnosis_and_report_says_it_did_not_run(tiny_demo):
    root, _ = tiny_demo
    shell = open_shell(root)
    result = run_ok(shell, "vc")
    summary = read_summary(result.summary_path)
    assert summary.diagnosis is None
    payload = json.loads(result.summary_path.read_text(encoding="utf-8"))
    assert "diagnosis" not in payload and "root_causes" not in payload
    report = run_ok(shell, "report")
    assert report.diagnosed is False and report.root_cause is None
    page = report.path.read_text(encoding="utf-8")
    assert "diagnosis did not run" in page
    assert "no op degrades the signal" not in page
    # ac -c records its diagnosis in its own summary
    check = run_ok(shell, "ac -c")
    diagnosed = read_summary(check.compare.summary_path)
    assert diagnosed.diagnosis is not None
    assert diagnosed.diagnosis.root_cause == check.diagnosis.causes[0].op


def test_constant_inputs_are_counted_apart_from_failures(tiny_demo):
    root, _ = tiny_demo
    shell = open_shell(root)
    result = run_ok(shell, "vc")
    table = read_result_csv(result.primary.csv_path)
    constants = sum(1 for r in table.rows if r.constant_input)
    failed = sum(1 for r in table.rows if not r.compared and not r.constant_input)
    payload = json.loads(result.summary_path.read_text(encoding="utf-8"))
    assert payload["not_compared"]["constant_inputs"] == constants
    assert payload["not_compared"]["failed"] == failed
    assert payload["compared"] + constants + failed == payload["rows"] == len(table.rows)
    assert "constant input" not in payload["not_compared"]["by_reason"]
    vcs = run_ok(shell, "vcs")
    assert (vcs.constant_inputs, vcs.not_compared) == (constants, failed)


def test_an_interrupted_compare_is_partial_everywhere_and_ac_concludes_nothing(
    tiny_demo, monkeypatch
):
    root, _ = tiny_demo
    from precision_shell.compare.pipeline import execute

    real = execute.run_tasks

    def stop_after_two(tasks, *args, **kwargs):
        results = real(tasks, *args, **kwargs)
        for n, result in enumerate(results):
            if n == 2:
                raise KeyboardInterrupt
            yield result

    monkeypatch.setattr(execute, "run_tasks", stop_after_two)
    shell = open_shell(root)
    outcome = shell.execute("ac -c")
    assert not outcome.ok
    total = outcome.result.compare.primary.tasks
    assert outcome.error == (
        f"vc: interrupted (partial: 2 of {total} files); the rows written so far are kept"
    )
    assert outcome.result.diagnosis is None
    assert outcome.result.diagnosis_skipped == f"the compare is partial: 2 of {total} files"
    summary = read_summary(outcome.result.compare.summary_path)
    assert summary.partial and summary.diagnosis is None
    assert summary.primary.partial_text == f"partial: 2 of {total} files"
    monkeypatch.setattr(execute, "run_tasks", real)
    vcs = run_ok(shell, "vcs")
    assert vcs.partial == f"partial: 2 of {total} files"
    report = run_ok(shell, "report")
    assert report.partial == f"partial: 2 of {total} files" and not report.diagnosed


def test_thresholds_out_of_range_and_short_metric_names(tiny_demo_shared):
    root, _ = tiny_demo_shared
    shell = open_shell(root)
    run_ok(shell, "vc")
    assert "out of range" in run_fail(shell, "vcs -c 2").error
    assert "out of range" in run_fail(shell, "vcs --metric mae:-1").error
    result = run_ok(shell, "vcs --metric mae:0.001 --metric cos:0.5")
    assert result.rule.limits["MaxAbsoluteError"] == 0.001
    assert result.rule.limits["CosineSimilarity"] == 0.5


def test_no_benchmark_compares_the_device_runs_and_ac_keeps_its_panels(tiny_demo):
    root, _ = tiny_demo
    shutil.rmtree(root / "precision_data" / "tf")
    shell = open_shell(root)
    result = run_ok(shell, "vc")
    assert result.primary.plan_mode == "device"
    assert result.primary.tally.compared > 0
    check = run_ok(shell, "ac -c")
    assert check.compare is not None and check.diagnosis is None
    assert check.diagnosis_skipped and "no benchmark" in check.diagnosis_skipped
    assert check.fusion  # the static panels are still there
    # run names work as -lt/-rt
    named = run_ok(shell, "vc -lt debug_0 -rt debug_1")
    assert named.primary.plan_mode == "device"
    assert (named.primary.left, named.primary.right) == ("debug_0", "debug_1")


def test_vc_output_dir_is_the_result_dir(tiny_demo_shared, tmp_path):
    root, _ = tiny_demo_shared
    shell = open_shell(root)
    out = tmp_path / "mine"
    result = run_ok(shell, f"vc -o {out}")
    assert result.out_dir == out and (out / "summary.json").is_file()
    assert result.primary.csv_path.parent == out
    # a second run into the same dir never overwrites the first
    assert "already holds a summary.json" in run_fail(shell, f"vc -o {out}").error


def test_nan_born_from_small_values_is_not_a_float16_overflow():
    import numpy as np

    from precision_shell.compare.pipeline.worker import _overflow_flag

    values = np.array([1.6, np.nan, -0.5], dtype=np.float16)
    assert _overflow_flag(values, 65504.0) == "NO"
    assert _overflow_flag(np.array([1.0, np.inf], dtype=np.float16), 65504.0) == "YES"
    assert _overflow_flag(np.array([65504.0], dtype=np.float16), 65504.0) == "YES"
    assert math.isinf(float(np.float16(np.inf)))


@pytest.mark.parametrize(
    ("src", "dst", "note"),
    [
        ("DT_FLOAT", "DT_FLOAT16", True),
        ("DT_FLOAT", "DT_INT32", False),
        ("DT_FLOAT16", "DT_FLOAT", None),
    ],
)
def test_float_narrowing_casts_are_notes(src, dst, note):
    from precision_shell.compare.diagnosis.graph_checks import _FLOAT_BITS, _float_narrows

    if note is None:
        assert not _float_narrows(src, dst)
    elif note:
        assert src in _FLOAT_BITS and _float_narrows(src, dst)


def test_device_vs_device_needs_no_graph(tiny_demo, tmp_path):
    root, _ = tiny_demo
    data = root / "precision_data"
    left = next(p for p in (data / "npu" / "debug_0" / "dump").rglob("*") if p.is_file()).parent
    right = next(p for p in (data / "npu" / "debug_1" / "dump").rglob("*") if p.is_file()).parent
    for graph_dir in (data / "npu").glob("debug_*/graph"):
        shutil.rmtree(graph_dir)
    shutil.rmtree(data / "tf")
    shell = open_shell(root)
    result = run_ok(shell, f"vc -lt {left} -rt {right} -o {tmp_path / 'out'}")
    assert result.primary.plan_mode == "device"
    table = read_result_csv(result.primary.csv_path)
    assert table.rows and all(r.compared for r in table.rows if r.kind == "output")
    named = run_ok(shell, f"vc -lt debug_0 -rt debug_1 -o {tmp_path / 'named'}")
    assert named.primary.tally.rows == result.primary.tally.rows


def test_vcs_counts_an_all_zero_benchmark_as_failing_as_vc_does(tiny_demo):
    """vcs, from the columns cache vc wrote, said "0 of 14 ops fail" when the softmax's
    benchmark was all zero (QA Q12): the vectorised rule lacked the all-zero clause."""
    import numpy as np

    from tests.commands.shell_fixture import benchmark_path, rendered

    root, _ = tiny_demo
    shell = open_shell(root, use_cache=True)  # vcs reads the columns cache vc writes
    softmax = benchmark_path(root, "softmax/Softmax")
    np.save(softmax, np.zeros_like(np.load(softmax)))
    tally = run_ok(shell, "vc").primary.tally
    failing = {r.op_name for r in tally.failing if r.kind == "output"}
    assert "softmax/Softmax" in failing
    view = run_ok(shell, "vcs")
    assert view.failing_total == len(failing)
    assert "softmax/Softmax" in rendered(view)
