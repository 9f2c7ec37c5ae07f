"""`report` on MegEngine and SigmaStar compares (`ac -c -lt A -rt B`): the page holds every CSV
row, marks as failing the rows the recorded rule (that tool's own) fails, names the planted op
as the root cause, plots the cosine and the rule's error metric, and needs no Ascend
workspace nor anything from outside the file."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from precision_shell.shell.dispatcher import Dispatcher
from tests.commands.shell_fixture import open_shell, run_ok
from tests.foreign.fixtures import PLANTED, SIGMA_BAD, write_megengine, write_sigmastar_pair
from tests.report.page_parser import assert_self_contained, parse_page


def _meg_fails(record: dict[str, str]) -> bool:
    # compare_binary_iodump.py -e 1e-3
    return float(record["MegEngineRelativeError"]) > 1e-3


def _sigma_fails(record: dict[str, str]) -> bool:
    # DumpDebug: cosine under 0.99 or RMSE over 0.1
    return float(record["CosineSimilarity"]) < 0.99 or float(record["SigmaStarRMSE"]) > 0.1


# family -> (planted op, summary.json "thresholds", the rule on a CSV record, plotted error)
FAMILIES = {
    "megengine": (
        PLANTED,
        # the bound of a var a text dump printed in part has the same limit
        {"MegEngineRelativeError": 1e-3, "MegEngineRelativeErrorAtLeast": 1e-3},
        _meg_fails,
        "MegEngineRelativeError",
    ),
    "sigmastar": (
        SIGMA_BAD,
        {"cosine": 0.99, "SigmaStarRMSE": 0.1},
        _sigma_fails,
        "SigmaStarRMSE",
    ),
}


def _dumps(family: str, tmp_path: Path) -> tuple[Path, Path]:
    if family == "megengine":
        a, _ = write_megengine(tmp_path / "runA", planted=True)
        b, _ = write_megengine(tmp_path / "runB")
        return a, b
    fixed, real, _, _ = write_sigmastar_pair(tmp_path)
    return fixed, real


def _shell(tmp_path: Path) -> Dispatcher:
    (tmp_path / "ws" / "precision_data").mkdir(parents=True)
    return open_shell(tmp_path / "ws")


def _csv(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="", encoding="utf-8") as fh:
        records = list(csv.reader(fh))
    return records[0], records[1:]


@pytest.fixture(params=sorted(FAMILIES))
def reported(request, tmp_path: Path):  # noqa: ANN001, ANN201
    family = request.param
    shell = _shell(tmp_path)
    a, b = _dumps(family, tmp_path)
    check = run_ok(shell, f"ac -c -lt {a} -rt {b}")
    result_dir = check.csv_path.parent
    written = run_ok(shell, f"report -f {result_dir}")
    html = written.path.read_text(encoding="utf-8")
    return family, tmp_path, check, written, html, parse_page(html)


def test_the_table_holds_every_csv_row_cell_for_cell(reported) -> None:
    _, _, check, written, _, page = reported
    header, records = _csv(check.csv_path)
    assert written.csv_path == check.csv_path
    assert [h.text for h in page.result_heads] == header
    assert len(page.result_rows) == len(records) == written.rows
    for (_, cells), record in zip(page.result_rows, records, strict=True):
        assert cells == [c.strip() for c in record]


def test_failing_rows_are_the_ones_the_recorded_rule_fails(reported) -> None:
    family, _, check, written, _, page = reported
    _, limits, fails, _ = FAMILIES[family]
    summary = json.loads((check.csv_path.parent / "summary.json").read_text(encoding="utf-8"))
    assert summary["mode"] == family and summary["thresholds"] == limits
    header, records = _csv(check.csv_path)
    want = [fails(dict(zip(header, r, strict=False))) for r in records]
    assert any(want) and not all(want)
    got = [("fail" in row.classes) for row, _ in page.result_rows]
    assert got == want
    assert written.failing_outputs == sum(want)
    # the plot colours the same outputs red
    failing_circles = {
        c.attrs["data-line"] for panel, c in page.plot_circles if "fail" in c.classes
    }
    failing_lines = {row.attrs["data-line"] for row, _ in page.result_rows if "fail" in row.classes}
    assert failing_circles == failing_lines


def test_root_cause_is_the_planted_op(reported) -> None:
    family, _, _, written, html, page = reported
    planted = FAMILIES[family][0]
    assert written.root_cause == planted and written.diagnosed
    assert page.facts["Root cause"] == planted
    rc_rows = [cells for row, cells in page.result_rows if "rc" in row.classes]
    assert rc_rows and all(planted in " ".join(cells) for cells in rc_rows)
    panel = next(e for e in page.elements if e.attrs.get("id") == "root-cause")
    assert planted in panel.text and "Crossed" in panel.text
    # no graph to draw: the panel says so instead
    assert written.subgraph is None
    note = next(e for e in page.elements if e.attrs.get("id") == "no-subgraph")
    assert "no graph in this workspace" in note.text


def test_plot_shows_the_cosine_and_the_rules_error_metric(reported) -> None:
    family, _, check, _, _, page = reported
    _, limits, _, column = FAMILIES[family]
    points = [(panel, c) for panel, c in page.plot_circles if "pt" in c.classes]
    assert {panel for panel, _ in points} == {"cosine", "error"}
    header, records = _csv(check.csv_path)
    assert sum(1 for panel, _ in points if panel == "error") == len(records)
    note = next(e for e in page.elements if e.attrs.get("id") == "plot-metrics")
    assert column in note.text and "recorded in summary.json" in note.text
    if family == "megengine":
        assert "log10" in note.text
        assert "does not limit the cosine" in note.text
    thresholds = [e.text for e in page.by_class("threshold-label")]
    assert any(column in t for t in thresholds)
    assert any("cosine threshold" in t for t in thresholds) == ("cosine" in limits)
    assert "recorded in summary.json" in page.facts["Thresholds"]
    assert not math.isnan(float(records[0][header.index(column)]))


def test_page_goes_under_the_results_precision_data_and_needs_nothing_from_outside(
    reported,
) -> None:
    _, tmp_path, _, written, html, page = reported
    assert written.path.parent.parent == tmp_path / "ws/precision_data/temp/report"
    assert_self_contained(html, page)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_no_workspace_needed_report_goes_beside_the_result(family: str, tmp_path: Path) -> None:
    # a shell on a dir that is no workspace; vc -o puts the result outside any precision_data
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    shell = open_shell(nowhere)
    a, b = _dumps(family, tmp_path)
    out = tmp_path / "results" / "cmp"
    check = run_ok(shell, f"ac -c -lt {a} -rt {b} -o {out}")
    assert not (nowhere / "precision_data").exists()
    written = run_ok(shell, f"report -f {check.csv_path}")
    assert written.path.parent.parent == tmp_path / "results" / "report"
    assert written.root_cause == FAMILIES[family][0]
    assert not (nowhere / "precision_data").exists()
    page = parse_page(written.path.read_text(encoding="utf-8"))
    assert len(page.result_rows) == written.rows
    explicit = tmp_path / "mine.html"
    again = run_ok(shell, f"report -f {out} -o {explicit}")
    assert again.path == explicit and explicit.is_file()
