"""A proven fault heads the panel while an earlier candidate could not be replayed (its dump
truncated): the panel, summary.json and the report say the earlier op is not cleared (QA
Q23 #6: the later fault was named as if nothing ran wrong before it)."""

from __future__ import annotations

import json

from rich.console import Console

import precision_shell.render.views  # noqa: F401  (registers the views)
from precision_shell.render.output import Renderer
from tests.commands.shell_fixture import CONV2, open_shell, run_ok
from tests.workspace.test_rank_step_checks import _step_dir


def _text(result) -> str:  # noqa: ANN001
    console = Console(record=True, width=300, color_system=None, highlight=False)
    Renderer(console, console).result(result)
    return " ".join(console.export_text().replace("│", " ").split())


def test_an_earlier_candidate_whose_dump_is_truncated_is_said_not_proven(tiny_demo) -> None:  # noqa: ANN001
    root, _ = tiny_demo
    (dump,) = _step_dir(root).glob("Conv2D.conv2_*")
    data = dump.read_bytes()
    dump.unlink()  # a hard link of the pristine demo: never written through
    dump.write_bytes(data[:-100])
    check = run_ok(open_shell(root), "ac -c --report")
    causes = check.diagnosis.causes
    assert causes[0].op == "l2_loss/Sum"  # the fp16 overflow the replay proves
    earlier = next(c for c in causes if c.op == CONV2)
    assert earlier.replay is None and "the dump is truncated" in (earlier.replay_skipped or "")
    assert earlier.input_quality == 60.0  # the cap: its loss is a bound (QA Q29 #6)
    expected = (
        f"{CONV2} runs before it (at least {earlier.drop_db:.1f} dB lost) and could not be replayed "
        f"({earlier.replay_skipped}): it may be the first fault"
    )
    assert f"not proven {expected}" in _text(check)
    summary = json.loads(check.compare.summary_path.read_text(encoding="utf-8"))
    assert summary["diagnosis"]["lines"]["not_proven"] == [expected]
    html = check.report_path.read_text(encoding="utf-8")
    assert "<dt>Not proven</dt>" in html and f"{CONV2} runs before it (" in html


def test_with_every_candidate_replayed_nothing_is_said_not_proven(tiny_demo) -> None:  # noqa: ANN001
    root, _ = tiny_demo
    check = run_ok(open_shell(root), "ac -c")
    assert check.diagnosis.causes[0].op == CONV2
    assert "not proven" not in _text(check)
    summary = json.loads(check.compare.summary_path.read_text(encoding="utf-8"))
    assert "not_proven" not in (summary["diagnosis"].get("lines") or {})
