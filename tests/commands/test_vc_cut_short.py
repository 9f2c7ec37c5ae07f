"""A `vc` cut short says so in one line, and its summary.json says which compare is partial:
Ctrl-C in the device-vs-device compare (after the benchmark one), or a process worker killed
mid-compare (as the OOM killer would), which the journal lets `vc --resume` finish."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from precision_shell.compare.pipeline import engine as engine_module
from precision_shell.compare.pipeline import execute
from precision_shell.compare.pipeline.journal import JOURNAL_NAME
from precision_shell.compare.pipeline.plan import FileTask
from precision_shell.compare.pipeline.worker import CompareOptions, FileResult, compare_file
from precision_shell.render.output import Renderer, make_console
from precision_shell.shell.script import run_lines
from tests.commands.shell_fixture import open_shell, run_fail, run_ok
from tests.commands.test_vc_resume import Engine, _same_result, _summary

DIES_AT = 4  # the task whose worker dies (-j 1: batches of 3, so the first batch comes back)


def dies_at_fifth_file(task: FileTask, options: CompareOptions) -> FileResult:
    """A worker process that ends abruptly on one file, as one the OOM killer picked."""
    if task.seq == DIES_AT:
        os._exit(137)
    return compare_file(task, options)


def _script(shell: Any, line: str, *more: str) -> tuple[int, str]:
    """`line` (and `more` lines) run as a script (-e): its exit status and what it printed on
    stderr."""
    err = io.StringIO()
    renderer = Renderer(make_console(False, file=io.StringIO()), make_console(False, file=err))
    report = run_lines([line, *more], shell, renderer)
    return report.exit_status, err.getvalue()


def test_ctrl_c_in_the_device_vs_device_compare_is_an_interrupted_vc(tiny_demo, monkeypatch):
    root, _ = tiny_demo
    Engine(monkeypatch, 14 + 6)  # the benchmark compare (14 files) is done; 6 of debug_1's
    shell = open_shell(root)
    # a Ctrl-C stops the script there, as outside a compare: the next line never runs
    status, err = _script(shell, "vc", "pt no_such_op_xyz")
    message = (
        "vc: interrupted (device vs device debug_0 vs debug_1 partial: 6 of 14 files); "
        "the rows written so far are kept"
    )
    assert (status, err) == (1, f"error: line 1: {message}\n")
    out_dir = max((root / "precision_data/temp/vector_compare").iterdir())
    saved = _summary(out_dir)
    assert saved["partial"] is False and saved["files_done"] == 14  # the primary is whole
    assert saved["device_compare"]["partial"] is True
    assert saved["device_compare"]["files_done"] == 6
    assert saved["totals"]["partial"] is True
    # interactive: the same line
    Engine(monkeypatch, 14 + 6)
    assert run_fail(open_shell(root), "vc").error == message


def test_ac_diagnoses_nothing_when_the_device_vs_device_compare_was_cut(tiny_demo, monkeypatch):
    root, _ = tiny_demo
    Engine(monkeypatch, 14 + 6)
    outcome = run_fail(open_shell(root), "ac -c")
    cut = "device vs device debug_0 vs debug_1 partial: 6 of 14 files"
    assert outcome.error == f"vc: interrupted ({cut}); the rows written so far are kept"
    assert outcome.result.diagnosis is None
    assert outcome.result.diagnosis_skipped == f"the compare is {cut}"


def test_ctrl_c_in_a_later_rank_names_it(tiny_demo, monkeypatch):
    from tests.commands.test_vc_across_ranks import _add_ranks

    root, manifest = tiny_demo
    _add_ranks(root, manifest, ["1"])
    Engine(monkeypatch, 14 + 9)  # the primary (rank 0) is done; 9 of rank 1's files
    outcome = run_fail(open_shell(root), "vc")
    assert outcome.error == (
        "vc: interrupted (rank 1 step 0 partial: 9 of 14 files); the rows written so far are kept"
    )
    saved = _summary(outcome.result.out_dir)
    assert saved["partial"] is False and saved["totals"]["partial"] is True
    assert [(r["partial"], r["files_done"]) for r in saved["results"]] == [(False, 14), (True, 9)]


@pytest.fixture
def dying_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """vc's engine runs `dies_at_fifth_file` on a process pool."""

    def run_tasks(tasks: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs.update(work=dies_at_fifth_file, backend="processes")
        return engine_module.run_tasks(tasks, *args, **kwargs)

    monkeypatch.setattr(execute, "run_tasks", run_tasks)


def test_a_worker_killed_mid_compare_is_one_line_and_a_partial_summary(
    tiny_demo, dying_worker, monkeypatch
):
    root, _ = tiny_demo
    status, err = _script(open_shell(root), "vc -j 1")
    out_dir = max((root / "precision_data/temp/vector_compare").iterdir())
    assert (status, err) == (
        1,
        "error: line 1: vc: a compare worker died (killed, or out of memory?) (partial: 3 of 14 "
        f"files); the rows written so far and summary.json are in {out_dir}; "
        "vc --resume continues\n",
    )
    saved = _summary(out_dir)
    assert (saved["partial"], saved["files_done"], saved["files_total"]) == (True, 3, 14)
    assert saved["totals"]["partial"] is True
    assert "device_compare" not in saved  # never started
    assert len(Path(out_dir, Path(saved["csv"]).name).read_text().splitlines()) - 1 == saved["rows"]
    assert (out_dir / JOURNAL_NAME).is_file()
    # the journal lets --resume finish it, to what an uninterrupted run writes
    monkeypatch.setattr(execute, "run_tasks", engine_module.run_tasks)
    resumed = run_ok(open_shell(root), "vc --resume")
    assert resumed.out_dir == out_dir
    reference = run_ok(open_shell(root), "vc")
    _same_result(out_dir, reference.out_dir)
    assert json.loads((out_dir / "summary.json").read_text())["resumed_from_files"] == 3
