"""The big-result page in a real headless browser: its script decodes the point arrays and
draws every output on the canvas, failing ones included, and the table filters as usual.

Skipped when chromium is not installed (as tests/report/test_browser.py)."""

from __future__ import annotations

import pytest

from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.report.data import gather_report
from precision_shell.report.page import report_html
from tests.report.page_parser import parse_page
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
