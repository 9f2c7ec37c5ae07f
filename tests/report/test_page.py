"""The HTML report of the tiny demo, written by `ac -c --report` and by `report`: the page
parses, holds every CSV row, plots every compared output where it belongs and marks the
root cause; its subgraph is dot's SVG (or the .gv text without dot)."""

from __future__ import annotations

import csv
import errno
import json
import math
import re
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest
from rich.console import Console

import precision_shell.render.views  # noqa: F401  (registers the views)
from precision_shell.render.output import Renderer
from tests.commands.shell_fixture import CONV2, open_shell, run_fail, run_ok
from tests.report.page_parser import assert_self_contained, parse_page

ROOT = CONV2  # the demo's wrong constant, the first fault to run (Index 4)
ROOT_ROW = f"{CONV2}:output:0"
SUM = "l2_loss/Sum"  # the demo's overflow: NaN/inf born there (Index 8), after it
SUM_ROW = "l2_loss/Sum:output:0"
PRIMARY_CSV = "*/result_" + "[0-9]" * 14 + ".csv"  # not the device-vs-device CSV beside it


def render(result) -> str:
    console = Console(record=True, width=200, color_system=None, highlight=False)
    Renderer(console, console).result(result)
    return console.export_text()


@pytest.fixture(scope="module")
def ac_report(tiny_demo_shared):
    root, _ = tiny_demo_shared
    shell = open_shell(root)
    # the page's geometry and colours are checked by cosine alone (the default rule's
    # distance limit is exercised in tests/commands/test_result_store.py)
    shell.context.settings.override("thresholds.relative_euclidean_distance", math.inf)
    check = run_ok(shell, "ac -c --report")
    path = check.report_path
    html = path.read_text(encoding="utf-8")
    return shell, check, path, html, parse_page(html)


def _csv_records(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def test_ac_report_writes_the_page_under_temp_report_and_prints_its_path(ac_report) -> None:
    _, check, path, html, _ = ac_report
    assert path.name == "report.html"
    assert path.parent.parent.name == "report" and path.parent.parent.parent.name == "temp"
    assert re.fullmatch(r"\d{14}", path.parent.name)
    assert html.startswith("<!DOCTYPE html>")
    assert f"report: {path}" in render(check)


def test_the_table_holds_every_csv_row_cell_for_cell(ac_report) -> None:
    _, check, _, _, page = ac_report
    header, *records = _csv_records(check.compare.primary.csv_path)
    assert len(records) == 37
    assert [h.text for h in page.result_heads] == header
    assert [cells for _, cells in page.result_rows] == records
    assert [int(tr.attrs["data-line"]) for tr, _ in page.result_rows] == list(range(2, 39))
    cos = page.result_heads[header.index("CosineSimilarity")].attrs
    assert (cos["data-col"], cos["data-type"], cos["data-better"]) == (
        "CosineSimilarity",
        "num",
        "high",
    )
    assert page.result_heads[6].attrs["data-col"] == "DataType.2"  # the benchmark's DataType
    # failing outputs: conv2 (0.892658) and the two NaN outputs
    failing = [cells[7] for tr, cells in page.result_rows if "fail" in tr.classes]
    assert failing[0] == f"{CONV2}:output:0" and failing[1] == SUM_ROW and len(failing) == 3
    root_rows = [cells[7] for tr, cells in page.result_rows if "rc" in tr.classes]
    assert root_rows == [f"{CONV2}:input:{k}" for k in range(3)] + [ROOT_ROW]


def test_header_states_the_compare(ac_report) -> None:
    _, check, _, _, page = ac_report
    summary = json.loads(check.compare.summary_path.read_text(encoding="utf-8"))
    assert page.facts["Workspace"] == summary["workspace"]
    assert page.facts["Compared at"] == summary["created"]
    assert page.facts["Tensors compared"] == "29 of 37 rows"
    assert page.facts["Not compared"] == "8 constant inputs (no benchmark by design)"
    assert page.facts["Could not be compared"] == "0"
    assert page.facts["Thresholds"] == "CosineSimilarity < 0.98 fails"
    assert page.facts["Outputs failing the thresholds"] == "3 of 14 plotted"
    assert page.facts["First failing op"] == CONV2
    assert page.facts["Root cause"] == ROOT
    assert page.facts["First op below threshold"] == CONV2


# Geometry of the plot (report/plot_svg.py): Index 0..13 spread over x 80..860 (60 px each);
# cosine panel: domain [0.85, 1.0] onto y 240..40, the NaN/inf lane at y 262; SQNR panel:
# [0, 80] dB onto y 480..340, its NaN/inf lane at y 502.
def _cos_y(cos: float) -> str:
    return f"{40 + (1.0 - cos) / 0.15 * 200:.2f}"


EXPECTED_COSINE = {  # TensorIndex -> (cx, cy)
    "trans_Cast_0:output:0": ("80.00", "40.00"),
    f"{CONV2}:output:0": ("320.00", "183.12"),  # 40 + 0.107342 / 0.15 * 200 = 183.1227
    "l2_loss/Square:output:0": ("500.00", "51.94"),  # 40 + 0.008957 / 0.15 * 200 = 51.9427
    SUM_ROW: ("560.00", "262.00"),  # nan: the lane under the axis
    "softmax/Softmax:output:0": ("860.00", "44.53"),  # 40 + 0.003394 / 0.15 * 200
}
EXPECTED_SQNR = {
    "trans_Cast_0:output:0": "350.38",  # -20 log10(0.000198) = 74.0667 dB -> 480 - 129.6167
    f"{CONV2}:output:0": "469.26",  # -20 log10(0.493194) = 6.1396 dB -> 480 - 10.7444
    SUM_ROW: "502.00",
}


def test_one_point_per_compared_output_at_its_index_and_cosine(ac_report) -> None:
    _, check, _, _, page = ac_report
    _, *records = _csv_records(check.compare.primary.csv_path)
    outputs = [r for r in records if r[7].rsplit(":", 2)[1] == "output"]
    cosine_pts = [c for panel, c in page.plot_circles if panel == "cosine" and "pt" in c.classes]
    cosine = {c.attrs["data-tensor"]: c for c in cosine_pts}
    assert len(cosine_pts) == len(cosine) == len(outputs) == 14
    for record in outputs:  # every output, by the CSV's own Index and cosine cells
        circle = cosine[record[7]]
        assert circle.attrs["cx"] == f"{80 + 60 * int(record[0]):.2f}"
        cos = record[10]
        assert circle.attrs["cy"] == ("262.00" if cos == "nan" else _cos_y(float(cos)))
    for tensor, (cx, cy) in EXPECTED_COSINE.items():
        assert (cosine[tensor].attrs["cx"], cosine[tensor].attrs["cy"]) == (cx, cy)
    assert "fail" in cosine[f"{CONV2}:output:0"].classes
    assert "pass" in cosine["l2_loss/Square:output:0"].classes
    assert {"fail", "nonfinite"} <= cosine[SUM_ROW].classes
    assert cosine[f"{CONV2}:output:0"].attrs["fill"] == "#c62828"
    sqnr_pts = [c for panel, c in page.plot_circles if panel == "sqnr" and "pt" in c.classes]
    sqnr = {c.attrs["data-tensor"]: c for c in sqnr_pts}
    assert len(sqnr_pts) == len(sqnr) == 14
    for tensor, cy in EXPECTED_SQNR.items():
        assert sqnr[tensor].attrs["cy"] == cy
    thresholds = page.by_class("threshold")
    assert [t.attrs["y1"] for t in thresholds] == ["66.67", "455.54"]  # 0.98; 13.98 dB
    assert [t.text for t in page.by_class("threshold-label")] == [
        "cosine threshold 0.98",
        "≈ cosine 0.98 (14.0 dB)",
    ]


def test_every_point_has_a_title_with_the_op_and_its_values(ac_report) -> None:
    _, _, _, _, page = ac_report
    conv2 = next(
        c for panel, c in page.plot_circles if c.attrs.get("data-tensor") == f"{CONV2}:output:0"
    )
    assert conv2.text == (
        f"{CONV2}\nIndex 4 · Conv2D · {CONV2}:output:0\n"
        "cosine 0.892658 · rel. Euclidean 0.493194 · SQNR 6.1 dB\nbelow threshold 0.98\n"
        "root cause"
    )
    titled = [c for _, c in page.plot_circles if "pt" in c.classes]
    assert all(c.text.startswith(c.attrs["data-op"] + "\n") for c in titled)


def test_the_root_cause_is_marked_in_both_panels_and_labelled(ac_report) -> None:
    _, _, _, _, page = ac_report
    marked = [(panel, c) for panel, c in page.plot_circles if "root" in c.classes]
    assert [(p, c.attrs["data-tensor"]) for p, c in marked] == [
        ("cosine", ROOT_ROW),
        ("sqnr", ROOT_ROW),
    ]
    assert marked[0][1].text.endswith("\nroot cause")
    rings = [(c.attrs["cx"], c.attrs["cy"]) for c in page.by_class("root-ring")]
    assert rings == [("320.00", "183.12"), ("320.00", "469.26")]  # the points plotted above
    (line,) = page.by_class("root-line")
    assert line.attrs["x1"] == line.attrs["x2"] == "320.00"
    (label,) = page.by_class("root-label")
    assert label.text == f"root cause: {ROOT} [4]"


def test_root_cause_panel_advisor_and_dot_subgraph(ac_report) -> None:
    """The demo's two faults: the wrong constant at conv2 runs first and is the root cause
    (its replay proves the constants differ); the overflow at l2_loss/Sum after it is the
    other candidate, and the advisor's float16 overflow."""
    _, check, _, html, page = ac_report
    section = next(e for e in page.elements if e.attrs.get("id") == "root-cause")
    text = section.text
    assert (
        "output crosses the thresholds (CosineSimilarity 0.892658 < 0.98) while every input "
        "is within them"
    ) in text
    assert "Other candidates[8] l2_loss/Sum: NaN/inf born" in text
    summary = json.loads(check.compare.summary_path.read_text(encoding="utf-8"))
    cause = summary["diagnosis"]["root_causes"][0]
    assert cause["op"] == ROOT and cause["replay"]["constants_differ"] is True
    # a fault the replay proves keeps the plain heading, on the page and in the terminal
    assert cause["replay"]["finds_no_fault"] is False
    assert re.search(r'<section id="root-cause"><h2>Root cause</h2>', html)
    assert "─ Root cause ─" in render(check)
    assert "Evidencereplay from the device's own inputs" in text
    assert (
        "Replay saysthe kernel computes what it is given (0.49 ULP own error), but from the "
        "benchmark's own inputs its output is still 0.49 off"
    ) in text
    assert "its constant inputs (weights, bias, scale) or its attributes" in text
    advisor = next(e for e in page.elements if e.attrs.get("id") == "advisor")
    assert "float16 overflow" in advisor.text and f"[8] {SUM}" in advisor.text
    if shutil.which("dot") is None:
        pytest.skip("graphviz `dot` not installed: the .gv fallback is tested below")
    # dot's SVG inlined, nodes filled by output cosine as `ni -s` fills them
    assert page.subgraph_nodes[ROOT] == "#ef9a9a"  # 0.892658 < 0.98
    assert page.subgraph_nodes["pool1/MaxPool"] == "#c8e6c9"
    assert page.subgraph_nodes["conv2/Conv2D/folded_filter"] == "#eeeeee"  # not compared
    assert len(page.subgraph_nodes) == 10  # depth 2 around the root cause
    assert "<?xml" not in html and "<!DOCTYPE svg" not in html


@pytest.fixture(scope="module")
def overflow_report(tmp_path_factory):
    """The demo with its overflow alone: the root cause is where it is born."""
    from precision_shell.demo.builder import build_demo
    from precision_shell.demo.spec import FP16_OVERFLOW, DemoSpec, Fault

    root = tmp_path_factory.mktemp("overflow_only")
    build_demo(root, DemoSpec(size="tiny", faults=(Fault(FP16_OVERFLOW, SUM, 4.0),)))
    shell = open_shell(root)
    shell.context.settings.override("thresholds.relative_euclidean_distance", math.inf)
    check = run_ok(shell, "ac -c --report")
    html = check.report_path.read_text(encoding="utf-8")
    return check, html, parse_page(html)


def test_an_overflow_root_cause_panel_reads_its_replay(overflow_report) -> None:
    check, _, page = overflow_report
    section = next(e for e in page.elements if e.attrs.get("id") == "root-cause")
    assert f"Op{SUM}Type" in section.text
    assert "NaN/inf born here: finite data inputs, non-finite output" in section.text
    # own vs inherited, from the replay ac -c ran on the candidates: the reduce is exact
    # (0 ULP own) and its exact sum exceeds float16; the inherited part is its input's drift
    summary = json.loads(check.compare.summary_path.read_text(encoding="utf-8"))
    cause = summary["diagnosis"]["root_causes"][0]
    inherited = cause["inherited_error"]
    text = section.text
    assert "Evidencereplay from the device's own inputs" in text
    assert "Own errorcosine 1.0, rel. Euclidean 0.0, max abs 0.0, ULP 0.0" in text
    assert (
        f"Inheritedcosine {inherited['cosine']}, rel. Euclidean "
        f"{inherited['relative_euclidean_distance']}, max abs {inherited['max_abs_error']}, "
        f"ULP {inherited['max_ulp']}"
    ) in text
    assert "Replay saysthe kernel computes what it is given" in text
    assert "the overflow happens here" in text
    if shutil.which("dot") is None:
        pytest.skip("graphviz `dot` not installed")
    assert page.subgraph_nodes[SUM] == "#ef9a9a"  # NaN output
    assert page.subgraph_nodes["l2_loss/Square"] == "#c8e6c9"
    assert page.subgraph_nodes["global_pool/Mean"] == "#c8e6c9"
    assert len(page.subgraph_nodes) == 7  # depth 2 around the root cause


def test_the_page_needs_nothing_from_outside(ac_report) -> None:
    _, _, _, html, page = ac_report
    assert_self_contained(html, page)


def test_without_dot_the_subgraph_is_the_gv_text(tiny_demo_shared, monkeypatch, tmp_path) -> None:
    import precision_shell.workspace.subgraph_files as graphviz_out

    monkeypatch.setattr(graphviz_out.shutil, "which", lambda name: None)
    root, _ = tiny_demo_shared
    out = tmp_path / "no_dot.html"
    written = run_ok(open_shell(root), f"report -o {out}")
    assert (written.path, written.subgraph, written.root_cause) == (out, "gv", ROOT)
    page = parse_page(out.read_text(encoding="utf-8"))
    (pre,) = [e for e in page.elements if "gv" in e.classes]
    gv_files = sorted(
        (root / "precision_data" / "temp" / "report").glob("*/debug_0_conv2_Conv2Drelu2_Relu_d2.gv")
    )
    assert pre.text == gv_files[-1].read_text(encoding="utf-8")
    assert (
        f'"{ROOT}" [label="Conv2D\\n{ROOT}\\n[ConvBatchnormFusionPass,AutomaticUbFusion]"'
        in pre.text
    )
    assert 'fillcolor="#ef9a9a"' in pre.text and 'xlabel="root cause"' in pre.text
    assert not page.subgraph_nodes
    assert any("graphviz `dot` not installed" in e.text for e in page.by_class("note"))


def test_report_never_overwrites_and_reads_a_csv_without_summary(
    tiny_demo_shared, tmp_path
) -> None:
    root, _ = tiny_demo_shared
    shell = open_shell(root)
    shell.context.settings.override("thresholds.relative_euclidean_distance", math.inf)
    taken = tmp_path / "taken.html"
    taken.write_text("mine", encoding="utf-8")
    outcome = run_fail(shell, f"report -o {taken}")
    assert outcome.error == f"{taken}: already exists; give another -o name"
    assert taken.read_text(encoding="utf-8") == "mine"
    # an msaccucmp-style CSV alone: counts from the CSV, no diagnosis
    csv_dir = root / "precision_data" / "temp" / "vector_compare"
    source = sorted(csv_dir.glob(PRIMARY_CSV))[-1]
    lone = tmp_path / "msaccucmp" / "result_20260101000000.csv"
    lone.parent.mkdir()
    shutil.copy(source, lone)
    written = run_ok(shell, f"report -f {lone.parent} -o {tmp_path}")
    assert written.path == tmp_path / "report.html"
    # no summary beside it: judged by the settings' rule (the shell's, cosine alone here)
    assert (written.rows, written.points, written.failing_outputs) == (37, 14, 3)
    assert (written.root_cause, written.diagnosed, written.subgraph) == (None, False, None)
    page = parse_page(written.path.read_text(encoding="utf-8"))
    assert page.facts["Tensors compared"] == "29 of 37 rows"
    assert page.facts["Could not be compared"] == "0"
    assert page.facts["Not compared"] == "8 constant inputs (no benchmark by design)"
    assert page.facts["Root cause"].startswith("diagnosis did not run (ac -c --report")
    assert not page.by_class("root-ring") and not page.by_class("root")
    text = render(written)
    assert f"report: {written.path}" in text
    assert (
        "37 table rows, 14 outputs plotted, 3 failing the thresholds; diagnosis did not run" in text
    )


def test_a_broken_summary_is_one_error_naming_it(tiny_demo_shared, tmp_path) -> None:
    root, _ = tiny_demo_shared
    csv_dir = root / "precision_data" / "temp" / "vector_compare"
    source = sorted(csv_dir.glob(PRIMARY_CSV))[-1]
    shutil.copy(source, tmp_path / source.name)
    (tmp_path / "summary.json").write_text("{not json", encoding="utf-8")
    outcome = run_fail(open_shell(root), f"report -f {tmp_path} -o {tmp_path / 'r.html'}")
    assert outcome.error.startswith(f"{tmp_path / 'summary.json'}: not valid JSON: ")
    assert not (tmp_path / "r.html").exists()


def test_ac_report_alone_implies_the_compare(tiny_demo) -> None:
    root, _ = tiny_demo
    shell = open_shell(root)
    outcome = run_fail(shell, "report")
    assert outcome.error.endswith("vector_compare: no result_*.csv here; run vc first")
    assert run_fail(shell, "report -s -1").error == "report: -s must not be negative"
    check = run_ok(shell, "ac --report")
    assert check.compare is not None and check.root_cause.cause.op == ROOT
    page = parse_page(check.report_path.read_text(encoding="utf-8"))
    assert page.facts["Root cause"] == ROOT and len(page.result_rows) == 37


def test_names_are_escaped_not_interpreted(tmp_path) -> None:
    from precision_shell.compare.results.thresholds import ThresholdRule
    from precision_shell.report.data import gather_report
    from precision_shell.report.page import report_html
    from tests.report.test_points import HEADER

    op = 'x</td><script>alert("&")</script>'
    row = (
        f'0,Add,"{op.replace(chr(34), chr(34) * 2)}",DT_FLOAT16,NaN,y,DT_FLOAT,'
        f'"{op.replace(chr(34), chr(34) * 2)}:output:0",[2],0.5,1,1,1,0,"(0;1),(0;1)",1,1,1,1,'
    )
    path = tmp_path / "result_20260101000000.csv"
    path.write_text(HEADER + "\n" + row + "\n", encoding="utf-8")
    page = parse_page(
        report_html(gather_report(path, ThresholdRule({"CosineSimilarity": 0.98})), None, "now")
    )
    assert not [e for e in page.elements if e.tag == "script" and "alert" in e.text]
    ((tr, cells),) = page.result_rows
    assert cells[2] == op and cells[7] == f"{op}:output:0" and "fail" in tr.classes
    (point,) = [c for p, c in page.plot_circles if p == "cosine" and "pt" in c.classes]
    assert point.attrs["data-op"] == op and point.text.startswith(op + "\n")


class _FullDisk:
    """A page file on a full disk: its write fails as the kernel's does."""

    def __init__(self, fh) -> None:  # noqa: ANN001
        self.fh = fh

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_report_on_a_full_disk_leaves_no_dir_behind(tiny_demo, monkeypatch) -> None:
    """QA Q7 F5: the error was right, but an empty `temp/report/<ts>/` stayed."""
    from precision_shell.report import writer

    root, _ = tiny_demo
    shell = open_shell(root)
    run_ok(shell, "ac -c")  # a root cause: its subgraph is written into the report's dir
    real = writer.create_output_file

    @contextmanager
    def full(path, **kwargs):  # noqa: ANN001, ANN003, ANN202
        with real(path, **kwargs) as fh:
            yield _FullDisk(fh)

    monkeypatch.setattr(writer, "create_output_file", full)
    reports = root / "precision_data" / "temp" / "report"
    outcome = run_fail(shell, "report")
    made = outcome.error.removeprefix("no space left on ").removesuffix("/report.html")
    assert Path(made).parent == reports and not Path(made).exists()
    assert list(reports.iterdir()) == []
