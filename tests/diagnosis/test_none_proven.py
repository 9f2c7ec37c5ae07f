"""A deep float16 network with no fault: outputs cross the thresholds by drift alone, the
replay finds every kernel exact, and the panel the terminal and the report show says that no
fault is proven instead of heading the op "Root cause"."""

from __future__ import annotations

import json
import re

import pytest
from rich.console import Console

import precision_shell.render.views  # noqa: F401  (registers the views)
from precision_shell.demo.builder import build_demo
from precision_shell.demo.spec import DemoSpec
from precision_shell.render.output import Renderer
from tests.commands.shell_fixture import open_shell, run_ok
from tests.diagnosis.cases import DEEP_BLOCKS

NONE_PROVEN = "Root cause: none proven (the replay finds no fault at this op)"


@pytest.fixture(scope="module")
def drifting(tmp_path_factory):  # noqa: ANN201
    root = tmp_path_factory.mktemp("deep")
    spec = DemoSpec(
        size="tiny",
        faults=(),
        second_run=False,
        blocks=DEEP_BLOCKS,
        branch_gain=4.0,
        fp32_head=True,
    )
    build_demo(root, spec)
    return open_shell(root)


def _text(result) -> str:  # noqa: ANN001
    console = Console(record=True, width=200, color_system=None, highlight=False)
    Renderer(console, console).result(result)
    return console.export_text()


def test_drift_alone_is_shown_as_no_fault_proven(drifting) -> None:  # noqa: ANN001
    check = run_ok(drifting, "ac -c --report")
    assert check.compare.summary.primary.failing_outputs > 0  # drift crosses the thresholds
    summary = json.loads(check.compare.summary_path.read_text(encoding="utf-8"))
    cause = summary["diagnosis"]["root_causes"][0]
    assert cause["evidence"] == "replay" and cause["replay"]["finds_no_fault"] is True
    text = _text(check)
    assert f"─ {NONE_PROVEN} ─" in text and "─ Root cause ─" not in text
    html = check.report_path.read_text(encoding="utf-8")
    assert re.search(rf'<section id="root-cause"><h2>{re.escape(NONE_PROVEN)}</h2>', html)
    # no other view calls that op the root cause (QA Q27 #1): the page's header, its plot,
    # `report`'s line, vcs --plot and ni all said it plainly
    op = cause["op"]
    said = f"none proven: the deviation shows first at {op}, where the replay finds no fault"
    assert f"<dt>Root cause</dt><dd>{said}</dd>" in html
    assert "root cause: " not in html.split('<section id="root-cause">')[0]
    written = run_ok(drifting, "report")
    assert written.root_cause is None and written.elsewhere == said
    assert f"root cause: {said}" in _text(written)
    looked = run_ok(drifting, "vcs --plot")
    assert looked.root_cause is None and "root cause" not in _text(looked)
    (info,) = run_ok(drifting, f"ni {op}").nodes
    assert not info.is_root_cause


def test_without_a_replay_the_estimate_keeps_the_plain_heading(drifting) -> None:  # noqa: ANN001
    check = run_ok(drifting, "ac -c --replay none")
    text = _text(check)
    assert "─ Root cause ─" in text and NONE_PROVEN not in text
