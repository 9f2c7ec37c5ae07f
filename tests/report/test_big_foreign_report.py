"""The big-result page of a MegEngine compare (`big_rows` lowered so ten rows take that path):
its second panel is the rule's error metric (log10 of MegEngineRelativeError), not SQNR,
with the rule's limit as its reference line, and the script's hover text names the column."""

from __future__ import annotations

import base64
import csv
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from precision_shell.compare.results.columns import load_result_columns
from precision_shell.compare.results.schema import read_result_csv
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.foreign.run import foreign_header, run_foreign_compare
from precision_shell.foreign.verdict import megengine_rule
from precision_shell.report.big_plot import FAILS, HAS_SECOND, SECOND_NONFINITE
from precision_shell.report.data import gather_report
from precision_shell.report.page import report_html
from precision_shell.report.point_arrays import point_arrays
from precision_shell.report.points import ErrorPanel, output_points
from tests.foreign.fixtures import OPS, PLANTED, write_megengine
from tests.foreign.oracles import expected
from tests.report.page_parser import parse_page

REL = "MegEngineRelativeError"
POISONED = 7  # split1:1: a NaN in the left run's values
TYPES = {"x": "<f4", "cos": "<f4", "sqnr": "<f4", "error": "<f4", "flags": "u1", "line": "<i4"}


def plot_data(html: str) -> dict:
    """The big plot's config and its arrays, decoded as the page's script decodes them."""
    payload = re.search(r'<script type="application/json" id="plot-data">(.*?)</script>', html)
    assert payload is not None
    config = json.loads(payload.group(1))
    arrays = {k: np.frombuffer(base64.b64decode(v), TYPES[k]) for k, v in config["arrays"].items()}
    return {"config": config, **arrays}


def panel_y(config: dict, panel: int, value: float) -> float:
    """Where the script puts `value` in a panel (its `py`)."""
    lo, hi, bottom, top, _ = config["panels"][panel]
    return bottom + (value - lo) / (hi - lo) * (top - bottom)


def megengine_compare(root: Path) -> tuple[Path, dict, dict]:
    """vc of the planted MegEngine pair, split1:1 poisoned on the left: (CSV, left values,
    right values)."""
    a, bad = write_megengine(root / "runA", planted=True, poison=POISONED)
    b, good = write_megengine(root / "runB")
    (root / "ws").mkdir(parents=True)
    result = run_foreign_compare(root / "ws", str(a), str(b), output=root / "out")
    return result.csv_path, bad, good


@pytest.fixture(scope="module")
def megengine_result(tmp_path_factory) -> tuple[Path, dict, dict]:
    return megengine_compare(tmp_path_factory.mktemp("big_foreign"))


def _var_of(op: str, slot: int) -> int:
    return next(v for v, (o, s) in OPS.items() if (o.name, s) == (op, slot))


def test_the_second_panel_is_the_rules_error_on_a_log_scale(megengine_result) -> None:
    csv_path, bad, good = megengine_result
    data = gather_report(csv_path, ThresholdRule.default(), big_rows=5)
    assert data.big is not None and data.foreign == "MegEngine"
    assert data.error_panel == ErrorPanel(REL, 1e-3, True)
    html = report_html(data, None, "now")
    plot = plot_data(html)
    config = plot["config"]
    assert config["second"] == {"key": "error", "label": REL, "unit": "", "log": True}
    assert config["failText"] == "fails the rule"
    assert "sqnr" not in config["arrays"]
    by_line = {r.line: r for r in read_result_csv(csv_path).rows}
    points = [by_line[int(line)] for line in plot["line"]]
    assert len(points) == len(OPS)  # every var is an output with a cosine and an error
    want = {}
    for k, row in enumerate(points):
        var = _var_of(row.op_name, row.slot)
        want[var] = k
        assert plot["flags"][k] & HAS_SECOND
        error = float(plot["error"][k])
        if var == POISONED:  # NaN in the data: the nan/inf lane, flagged
            assert math.isnan(error) and plot["flags"][k] & SECOND_NONFINITE
            continue
        assert not plot["flags"][k] & SECOND_NONFINITE
        oracle = expected(bad[var], good[var])[REL]
        if oracle == 0.0:
            assert error == -math.inf  # identical: the bottom edge of a log panel
        else:
            assert error == pytest.approx(math.log10(oracle), rel=1e-6)
    # known rows: the planted op and the reduce that inherits its error, the untouched input
    assert float(plot["error"][want[8]]) == pytest.approx(math.log10(0.0732421875), rel=1e-6)
    assert float(plot["error"][want[10]]) == pytest.approx(math.log10(0.0484893146647), rel=1e-6)
    assert float(plot["error"][want[1]]) == -math.inf
    failing = {row.op_name for k, row in enumerate(points) if plot["flags"][k] & FAILS}
    assert failing == {PLANTED, "cast2", "reduce1", "split1"}  # split1:1 holds a NaN
    # the frame: the panel's title and log ticks, the limit line at log10(1e-3) = -3
    page = parse_page(html)
    labels = [e.text for e in page.by_class("threshold-label")]
    assert labels == [f"{REL} limit 0.001"]  # the rule does not limit the cosine: no line
    (limit,) = [e for e in page.elements if e.tag == "line" and "threshold" in e.classes]
    assert float(limit.attrs["y1"]) == pytest.approx(panel_y(config, 1, -3.0), abs=0.01)
    assert config["panels"][1][0] <= -4.0  # zero errors sit a decade below everything else
    svg_text = " ".join(e.text for e in page.elements if e.tag == "text")
    assert data.error_panel.title in svg_text and "1e-3" in svg_text
    assert "SQNR" not in svg_text and "fails the rule" in svg_text
    assert f"and {REL} per op" in html
    note = next(e for e in page.elements if e.attrs.get("id") == "plot-metrics")
    assert REL in note.text and "log10" in note.text and "does not limit the cosine" in note.text


def test_the_arrays_hold_what_the_error_panel_gives_each_row(tmp_path: Path) -> None:
    """`point_arrays` with an error panel is `output_points` over arrays: nan where not
    computed, -inf for zero, the nonfinite flag for NaN/inf from the data."""
    csv_path = tmp_path / "result_20260101000000.csv"
    cells = {  # MegEngineRelativeError cell, cosine cell
        "a": ("0.5", "0.9"),
        "b": ("0.0", "1.0"),
        "c": ("nan", "0.8"),
        "d": ("inf", "0.7"),
        "e": ("NaN", "0.95"),  # not computed: still a point, for its cosine
        "f": ("NaN", "NaN"),  # nothing computed: no point
        "g": ("2e-05", "NaN"),  # a point for its error alone
    }
    header = foreign_header()
    with open(csv_path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        for index, (op, (error, cosine)) in enumerate(cells.items(), start=1):
            record = dict.fromkeys(header, "NaN")
            record.update(Index=str(index), OpType="Elemwise", TensorIndex=f"{op}:output:0")
            record.update({REL: error, "CosineSimilarity": cosine, "CompareFailReason": ""})
            writer.writerow([record.get(h, "NaN") for h in header])
    panel = ErrorPanel(REL, 1e-3, True)
    rule = megengine_rule()
    table = load_result_columns(csv_path)
    arrays = point_arrays(table, rule, None, panel)
    points = output_points(read_result_csv(csv_path).rows, rule, None, panel)
    assert [p.op for p in points] == ["a", "b", "c", "d", "e", "g"]
    assert len(arrays) == len(points)
    got = arrays.error.tolist()
    assert got[0] == pytest.approx(math.log10(0.5)) and got[5] == pytest.approx(math.log10(2e-5))
    assert got[1] == -math.inf
    assert [math.isnan(v) for v in got] == [False, False, True, True, True, False]
    assert arrays.error_nonfinite.tolist() == [False, False, True, True, False, False]
    assert arrays.has_error.tolist() == [True, True, True, True, False, True]
    assert arrays.has_error.tolist() == [p.error is not None for p in points]
    for value, p in zip(got, points, strict=True):
        assert (p.error is None or math.isnan(p.error)) == math.isnan(value)
        if p.error is not None and not math.isnan(p.error):
            assert value == p.error
    # a linear panel (SigmaStarRMSE) keeps the values themselves
    linear = point_arrays(table, rule, None, ErrorPanel(REL, 0.1, False))
    assert linear.error.tolist()[:2] == [0.5, 0.0]
