"""The big-result page in a real headless browser: its script decodes the point arrays and
draws every output on the canvas, failing ones included, and the table filters as usual;
hovering a point shows its values, SQNR or (a MegEngine compare) the rule's error.

Skipped when chromium is not installed (as tests/report/test_browser.py)."""

from __future__ import annotations

import numpy as np
import pytest

from precision_shell.compare.results.schema import read_result_csv
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.report.data import gather_report
from precision_shell.report.page import report_html
from tests.foreign.fixtures import PLANTED
from tests.report.page_parser import parse_page
from tests.report.test_big_foreign_report import megengine_compare, panel_y, plot_data
from tests.report.test_big_report import _bench
from tests.report.test_browser import CHROMIUM, _chromium

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian `chromium` not installed")


def test_the_canvas_draws_every_output_point(tmp_path) -> None:
    csv_path = tmp_path / "result_20261123120000.csv"
    _bench().write_result_csv(csv_path, ops=300, rows_per_op=3, failing=7)
    rule = ThresholdRule({"CosineSimilarity": 0.98})
    data = gather_report(csv_path, rule, big_rows=100)
    assert data.big is not None
    page = tmp_path / "report.html"
    page.write_text(report_html(data, None, "now"), encoding="utf-8")
    dom = parse_page(_chromium(tmp_path / "profile", "--dump-dom", f"{page.as_uri()}#filter=op1"))
    (canvas,) = [e for e in dom.elements if e.attrs.get("id") == "plot-canvas"]
    assert canvas.attrs["data-drawn"] == f"{data.point_count} {data.failing_points}"
    shown = [tr for tr, _ in dom.result_rows if "hidden" not in tr.attrs]
    assert 0 < len(shown) < len(dom.result_rows)  # the table's filter still runs


HOVER = """<script>
(function () {
  var canvas = document.getElementById("plot-canvas"), box = canvas.getBoundingClientRect();
  canvas.dispatchEvent(new MouseEvent("mousemove", {clientX: box.left + %f, clientY: box.top + %f}));
  document.body.setAttribute("data-tip", document.getElementById("plot-tip").textContent);
})();
</script></body>"""


def _hover_text(html: str, x: float, y: float, tmp_path) -> str:  # noqa: ANN001
    """The hover text the page's script shows for a mouse at (x, y) on the plot."""
    page = tmp_path / "hover.html"
    page.write_text(html.replace("</body>", HOVER % (x, y), 1), encoding="utf-8")
    dom = parse_page(_chromium(tmp_path / "profile", "--dump-dom", page.as_uri()))
    (body,) = [e for e in dom.elements if e.tag == "body"]
    return body.attrs["data-tip"]


def _point_xy(plot: dict, k: int, value: float) -> tuple[float, float]:
    d0, d1, r0, r1 = plot["config"]["x"]
    x = r0 + (float(plot["x"][k]) - d0) / (d1 - d0) * (r1 - r0)
    return x, panel_y(plot["config"], 1, value)


def test_the_hover_text_names_the_rules_error_on_a_foreign_page(tmp_path) -> None:
    csv_path, _, _ = megengine_compare(tmp_path / "dumps")
    data = gather_report(csv_path, ThresholdRule.default(), big_rows=5)
    html = report_html(data, None, "now")
    plot = plot_data(html)
    lines = {r.line: r for r in read_result_csv(csv_path).rows}
    k = next(i for i, line in enumerate(plot["line"]) if lines[int(line)].op_name == PLANTED)
    tip = _hover_text(html, *_point_xy(plot, k, float(plot["error"][k])), tmp_path)
    assert tip.splitlines()[1:3] == [
        "cosine 0.999959 · MegEngineRelativeError 0.07324",
        "fails the rule",
    ]
    assert tip.startswith(f"{PLANTED}:output:0 · Index ")
    assert "SQNR" not in tip


def test_the_hover_text_of_a_native_page_is_still_sqnr(tmp_path) -> None:
    csv_path = tmp_path / "result_20261123120000.csv"
    _bench().write_result_csv(csv_path, ops=120, rows_per_op=3, failing=3)
    data = gather_report(csv_path, ThresholdRule({"CosineSimilarity": 0.98}), big_rows=100)
    html = report_html(data, None, "now")
    plot = plot_data(html)
    assert plot["config"]["second"]["label"] == "SQNR"
    k = next(i for i in range(len(plot["x"])) if np.isfinite(plot["sqnr"][i]))
    tip = _hover_text(html, *_point_xy(plot, k, float(plot["sqnr"][k])), tmp_path)
    assert tip.splitlines()[1].endswith(f" · SQNR {plot['sqnr'][k]:.1f} dB")


def test_the_hover_text_of_an_sqnr_from_the_datas_inf_and_of_none(tmp_path) -> None:
    """QA Q27: the device's inf against a finite benchmark (distance `inf`) hovered "SQNR
    nan/inf" where summary.json says -inf; an SQNR not computed hovered "not computed dB"."""
    from tests.report.test_points import HEADER, _row

    lines = [HEADER]
    lines += [_row(i, f"op{i}", "output:0", "0.999000", "0.010000") for i in range(1, 4)]
    lines += [
        _row(4, "inf_op", "output:0", "nan", "inf"),
        _row(5, "none_op", "output:0", "0.5", "NaN"),
    ]
    csv_path = tmp_path / "result_20261123120000.csv"
    csv_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = gather_report(csv_path, ThresholdRule({"CosineSimilarity": 0.98}), big_rows=2)
    assert data.big is not None
    html = report_html(data, None, "now")
    plot = plot_data(html)
    x0, x1, r0, r1 = plot["config"]["x"]

    def x_of(k: int) -> float:
        return r0 + (float(plot["x"][k]) - x0) / (x1 - x0) * (r1 - r0)

    k = next(i for i in range(len(plot["x"])) if plot["x"][i] == 4)
    assert plot["sqnr"][k] == -np.inf
    nan_y = plot["config"]["panels"][1][4]
    tip = _hover_text(html, x_of(k), nan_y, tmp_path)
    assert tip.splitlines()[1] == "cosine nan/inf · SQNR -inf dB"
    k = next(i for i in range(len(plot["x"])) if plot["x"][i] == 5)
    cos_y = panel_y(plot["config"], 0, float(plot["cos"][k]))
    tip = _hover_text(html, x_of(k), cos_y, tmp_path)
    assert tip.splitlines()[1] == "cosine 0.500000 · SQNR not computed"


def test_the_hover_text_of_a_zero_benchmark_row_is_minus_inf(tmp_path) -> None:
    """QA Q29 #7: a benchmark of zeros (distance 0, values apart: SQNR -inf) hovered
    "SQNR -Infinity dB" on a big page (`toFixed` of -Infinity)."""
    from tests.report.test_points import HEADER, _row

    lines = [HEADER]
    lines += [_row(i, f"op{i}", "output:0", "0.999000", "0.010000") for i in range(1, 4)]
    lines += [_row(4, "zero_op", "output:0", "NaN", "0.000000")]  # max abs 0.1: apart
    csv_path = tmp_path / "result_20261123120000.csv"
    csv_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = gather_report(csv_path, ThresholdRule({"CosineSimilarity": 0.98}), big_rows=2)
    html = report_html(data, None, "now")
    plot = plot_data(html)
    k = next(i for i in range(len(plot["x"])) if plot["x"][i] == 4)
    assert plot["sqnr"][k] == -np.inf
    d0, d1, r0, r1 = plot["config"]["x"]
    x = r0 + (float(plot["x"][k]) - d0) / (d1 - d0) * (r1 - r0)
    bottom = plot["config"]["panels"][1][2]
    tip = _hover_text(html, x, bottom, tmp_path)
    assert tip.splitlines()[1] == "cosine not computed · SQNR -inf dB"
