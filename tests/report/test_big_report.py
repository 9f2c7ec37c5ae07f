"""The report of a result with more rows than a page should hold (`big_rows`, small here):
every output is still plotted, from arrays the page decodes; the table carries the failing
ops' rows and their neighbours', and the page says where the full table is."""

from __future__ import annotations

import base64
import importlib.util
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from precision_shell.compare.results.schema import read_result_csv
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.report.big_plot import FAILS, HAS_COS, HAS_SECOND, ROOT
from precision_shell.report.data import gather_report
from precision_shell.report.page import report_html
from precision_shell.report.plot_svg import threshold_sqnr
from precision_shell.report.points import output_points, x_positions
from tests.report.page_parser import parse_page

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_results.py"
RULE = ThresholdRule({"CosineSimilarity": 0.98, "RelativeEuclideanDistance": 0.05})


def _bench():
    spec = importlib.util.spec_from_file_location("bench_results", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def result_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("big_report") / "result_20261123120000.csv"
    assert _bench().write_result_csv(path, ops=200, rows_per_op=3, failing=6) == 600
    return path


def _page(data) -> tuple[str, object]:  # noqa: ANN001
    html = report_html(data, None, "now")
    return html, parse_page(html)


def _plot_arrays(html: str) -> dict:
    payload = re.search(r'<script type="application/json" id="plot-data">(.*?)</script>', html)
    assert payload is not None
    config = json.loads(payload.group(1))
    types = {"x": "<f4", "cos": "<f4", "sqnr": "<f4", "flags": "u1", "line": "<i4"}
    arrays = {k: np.frombuffer(base64.b64decode(v), types[k]) for k, v in config["arrays"].items()}
    return {"config": config, **arrays}


def test_a_big_result_plots_every_output_and_carries_the_failing_ops(result_csv) -> None:
    table = read_result_csv(result_csv)
    points = output_points(table.rows, RULE, None)
    failing_ops = {p.op for p in points if p.fails}
    assert 6 <= len(failing_ops) < 20  # the generator's failing ops (and its NaN/inf ones)
    data = gather_report(result_csv, RULE, big_rows=100)
    assert data.big is not None and data.big.total_rows == 600
    assert data.point_count == len(points) == 200
    assert data.failing_points == sum(p.fails for p in points)
    html, page = _page(data)
    assert len(html) < 600 * 400  # no SVG circle per point, no row per CSV row
    assert not any("pt" in e.classes for _, e in page.plot_circles)  # the legend alone
    # the plot: every output point, decoded as the page's script decodes it
    plot = _plot_arrays(html)
    assert plot["config"]["count"] == len(points)
    assert plot["line"].tolist() == [p.line for p in points]
    assert plot["x"].tolist() == [float(p.x) for p in points]
    assert ((plot["flags"] & FAILS) > 0).tolist() == [p.fails for p in points]
    assert ((plot["flags"] & HAS_COS) > 0).tolist() == [p.cosine is not None for p in points]
    finite = [i for i, p in enumerate(points) if p.cosine is not None and not p.cosine_nonfinite]
    assert plot["cos"][finite] == pytest.approx([points[i].cosine for i in finite], abs=1e-6)
    # the second panel is SQNR, in dB, its line the SQNR the cosine threshold stands for
    second = {"key": "sqnr", "label": "SQNR", "unit": " dB", "log": False}
    assert plot["config"]["second"] == second and "error" not in plot["config"]["arrays"]
    assert ((plot["flags"] & HAS_SECOND) > 0).tolist() == [p.sqnr_db is not None for p in points]
    db = [i for i, p in enumerate(points) if p.sqnr_db is not None and math.isfinite(p.sqnr_db)]
    assert len(db) > 100
    assert plot["sqnr"][db] == pytest.approx([points[i].sqnr_db for i in db], rel=1e-6)
    labels = [e.text for e in page.by_class("threshold-label")]
    assert labels == ["cosine threshold 0.98", f"≈ cosine 0.98 ({threshold_sqnr(0.98):.1f} dB)"]
    titles = " ".join(e.text for e in page.elements if e.tag == "text")
    assert "SQNR per op, dB = -20·log10(RelativeEuclideanDistance)" in titles
    assert "below threshold" in titles and "fails the rule" not in titles
    assert not [e for e in page.elements if e.attrs.get("id") == "plot-metrics"]
    # the table: every row of every failing op, and of the ops just before and after it
    xs = x_positions(table.rows)
    order = sorted(xs, key=lambda op: xs[op])
    wanted = set(failing_ops)
    for op in failing_ops:
        at = order.index(op)
        wanted |= {order[k] for k in (at - 1, at + 1) if 0 <= k < len(order)}
    carried_lines = [int(tr.attrs["data-line"]) for tr, _ in page.result_rows]
    assert carried_lines == sorted(r.line for r in table.rows if r.op_name in wanted)
    failing_lines = {p.line for p in points if p.fails}
    assert failing_lines <= set(carried_lines)
    assert {int(tr.attrs["data-line"]) for tr, _ in page.result_rows if "fail" in tr.classes} == (
        failing_lines
    )
    # cell for cell what the CSV holds
    by_line = {r.line: r for r in table.rows}
    tensor = table.header.index("TensorIndex")
    assert all(cells[tensor] == by_line[int(tr.attrs["data-line"])].tensor_index
               for tr, cells in page.result_rows)  # fmt: skip
    # where the full table is
    note = next(e for e in page.elements if e.attrs.get("id") == "full-table")
    assert str(result_csv) in note.text and "600 rows" in note.text
    assert f"Results ({len(carried_lines)} of 600 rows)" in html
    assert "execution order" in note.text


def test_the_table_follows_the_graph_and_stays_within_its_row_budget(result_csv) -> None:
    table = read_result_csv(result_csv)
    points = output_points(table.rows, RULE, None)
    failing_ops = sorted(
        {p.op for p in points if p.fails}, key=lambda op: x_positions(table.rows)[op]
    )
    bench = _bench()
    graph_neighbour = {op: bench.op_name(150) for op in failing_ops}  # one far-away consumer
    data = gather_report(
        result_csv, RULE, big_rows=100, neighbours=lambda op: [graph_neighbour[op], "not/an/op"]
    )
    assert data.big is not None and data.big.neighbours == "graph"
    carried = {r.op_name for r in data.rows}
    assert carried == set(failing_ops) | {bench.op_name(150)}
    _, page = _page(data)
    note = next(e for e in page.elements if e.attrs.get("id") == "full-table")
    assert "(graph)" in note.text
    # a budget of rows: the failing ops come first, what does not fit is counted
    small = gather_report(result_csv, RULE, big_rows=100, max_carried_rows=3 * 4)
    assert small.big is not None
    assert {r.op_name for r in small.rows} == set(failing_ops[:4])  # in file order
    assert small.big.dropped_ops > 0
    _, page = _page(small)
    note = next(e for e in page.elements if e.attrs.get("id") == "full-table")
    assert f"{small.big.dropped_ops} more ops did not fit" in note.text


def test_the_root_cause_is_carried_and_marked(result_csv, tmp_path) -> None:
    bench = _bench()
    root = bench.op_name(42)  # a passing op
    summary = {
        "thresholds": {"cosine": 0.98, "relative_euclidean_distance": 0.05},
        "diagnosis": {"root_causes": [{"op": root, "index": 42, "reason": "test"}]},
    }
    csv_path = tmp_path / result_csv.name
    csv_path.write_bytes(result_csv.read_bytes())
    (tmp_path / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    data = gather_report(csv_path, RULE, big_rows=100)
    assert data.root_cause == root
    assert root in {r.op_name for r in data.rows}
    html, page = _page(data)
    plot = _plot_arrays(html)
    assert int(np.count_nonzero(plot["flags"] & ROOT)) == 1
    assert any("rc" in tr.classes for tr, _ in page.result_rows)


def test_a_result_at_or_under_the_limit_keeps_the_full_page(result_csv) -> None:
    data = gather_report(result_csv, RULE, big_rows=600)
    assert data.big is None and len(data.rows) == 600
    html, page = _page(data)
    assert len(page.result_rows) == 600 and "plot-data" not in html
    assert sum("pt" in e.classes for _, e in page.plot_circles) == 2 * len(data.points)
