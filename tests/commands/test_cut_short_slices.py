"""A `vc --rank all --step all` cut short: Ctrl-C keeps the selected (rank, step)s it never
began in summary.json `not_begun`, the rank table and the lines under it; a killed one (its
journal, no summary.json) is read from its journal: its rank x step compares, `--rank/--step`
on them, and a partial label counting the whole run."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from precision_shell.compare.pipeline import engine as engine_module
from precision_shell.compare.pipeline import execute
from precision_shell.compare.pipeline.plan import FileTask
from precision_shell.compare.pipeline.worker import CompareOptions, FileResult, compare_file
from precision_shell.demo.builder import build_demo
from precision_shell.demo.spec import DemoSpec
from tests.commands.shell_fixture import CONV2, DENSE, open_shell, rendered, run_ok
from tests.commands.test_second_dump_dir import _link_copy, _step_dir
from tests.commands.test_vc_resume import Engine

CUT_AT = 20  # of 4 x 14 files: rank 0 step 0 whole, rank 0 step 1 6 of 14, rank 1 not begun


@pytest.fixture(scope="module")
def four_slices_pristine(tmp_path_factory) -> Path:
    """The tiny demo's dump as ranks 0-1 x steps 0-1 (hard links), no second device run."""
    root = tmp_path_factory.mktemp("four_slices")
    build_demo(root, DemoSpec(size="tiny"))
    step = _step_dir(root)
    second = step.parent / str(int(step.name) + 1)
    _link_copy(step, second)
    device = step.parents[2]
    for where in (step, second):
        _link_copy(where, device.parent / "1" / where.relative_to(device))
    shutil.rmtree(root / "precision_data/npu/debug_1")
    return root


@pytest.fixture
def interrupted(four_slices_pristine, tmp_path, monkeypatch) -> tuple[Path, Path, str]:
    """(workspace, result dir, what vc printed) of a vc Ctrl-C'd after CUT_AT files."""
    root = tmp_path / "ws"
    shutil.copytree(four_slices_pristine, root, symlinks=True)
    Engine(monkeypatch, CUT_AT)
    outcome = open_shell(root).execute("vc --rank all --step all")
    monkeypatch.setattr(execute, "run_tasks", engine_module.run_tasks)
    assert outcome.result is not None
    return root, outcome.result.out_dir, rendered(outcome.result, width=1000)


def _killed(out_dir: Path) -> None:
    """As SIGKILL leaves the run: no summary.json, the CSVs of the slices not begun empty."""
    (out_dir / "summary.json").unlink()
    for rank_step in ("rank1_step0", "rank1_step1"):
        (out_dir / f"result_{out_dir.name}_{rank_step}.csv").touch()


def _grid(text: str) -> list[list[str]]:
    return [ln.split("│") for ln in text.splitlines() if ln[:2] in ("0 ", "1 ")]


def _cells(text: str) -> list[list[str]]:
    return [[c.strip() for c in row] for row in _grid(text)]


def test_ctrl_c_keeps_the_slices_never_begun_in_summary_table_and_lines(interrupted):
    _, out_dir, text = interrupted
    saved = json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))
    assert saved["not_begun"] == [
        {"rank": "1", "step": "0", "files_total": 14},
        {"rank": "1", "step": "1", "files_total": 14},
    ]
    assert saved["totals"]["not_begun"] == 2 and saved["totals"]["partial"] is True
    assert saved["totals"]["results"] == 2
    assert [(r["rank"], r["step"], r["partial"]) for r in saved["results"]] == [
        ("0", "0", False),
        ("0", "1", True),
    ]
    assert _cells(text)[1] == ["1", "not begun", "not begun"]
    assert "outputs fail the thresholds in 2 of 2 ranks and steps, 2 more not begun (" in text
    assert (
        "2 selected ranks and steps not begun (rank 1 step 0, rank 1 step 1); "
        f"vc --resume -o {out_dir} compares them"
    ) in text.splitlines()


def test_vcs_on_an_interrupted_run_says_it_is_partial_over_every_slice(interrupted):
    root, out_dir, _ = interrupted
    shown = run_ok(open_shell(root), "vcs")
    assert shown.partial == "partial: 20 of 56 files in 4 ranks and steps; rank 0 step 0 complete"
    lines = rendered(shown, width=1000).splitlines()
    assert (
        f"{shown.partial}: the compare was interrupted; vc --resume -o {out_dir} continues it"
    ) in lines
    assert _cells("\n".join(lines))[1] == ["1", "not begun", "not begun"]
    assert (
        "12 outputs fail the thresholds in 2 of 2 ranks and steps, 2 more not begun "
        f"({shown.rule.describe()}); first: rank 0 step 0 at {CONV2} (vcs --rank 0 --step 0 "
        "lists them)"
    ) in lines
    step1 = run_ok(open_shell(root), "vcs --rank 0 --step 1")
    assert step1.partial == (
        "partial: 20 of 56 files in 4 ranks and steps; rank 0 step 1 partial: 6 of 14 files"
    )
    outcome = open_shell(root).execute("vcs --rank 1 --step 0")
    assert outcome.error == (
        "vcs: rank 1 step 0 was not begun: the compare was cut short before it; "
        f"vc --resume -o {out_dir} compares it"
    )


def test_a_killed_run_is_read_from_its_journal(interrupted):
    root, out_dir, _ = interrupted
    _killed(out_dir)
    shown = run_ok(open_shell(root), f"vcs -f {out_dir}")
    assert shown.partial == "partial: 20 of 56 files in 4 ranks and steps; rank 0 step 0 complete"
    assert shown.partial_cause == (
        f"its vc was killed or crashed; vc --resume -o {out_dir} continues it"
    )
    text = rendered(shown, width=1000)
    assert _cells(text) == [
        ["0", f"*10 ({CONV2})", f"2 ({CONV2}) partial"],
        ["1", "not begun", "not begun"],
    ]
    # the count under the table, as after Ctrl-C: the journal's compares counted
    assert (
        "12 outputs fail the thresholds in 2 of 2 ranks and steps, 2 more not begun "
        f"({shown.rule.describe()}); first: rank 0 step 0 at {CONV2} (vcs --rank 0 --step 0 "
        "lists them)"
    ) in text.splitlines()
    step1 = run_ok(open_shell(root), f"vcs -f {out_dir} --rank 0 --step 1")
    assert step1.path.name == f"result_{out_dir.name}_rank0_step1.csv"
    assert step1.partial == (
        "partial: 20 of 56 files in 4 ranks and steps; rank 0 step 1 partial: 6 of 14 files"
    )
    report = open_shell(root).execute(f"report -f {out_dir} --rank 0 --step 0 -o {root / 'r.html'}")
    assert report.error is None
    assert (
        "rank 0 step 0; the page's table has all 4 selected ranks and steps (2 compared, 2 not "
        "begun) (report --rank R --step S reports another)"
    ) in rendered(report.result, width=1000).splitlines()
    page = (root / "r.html").read_text(encoding="utf-8")
    assert "partial: 20 of 56 files in 4 ranks and steps; rank 0 step 0 complete" in page
    assert "not begun" in page
    outcome = open_shell(root).execute(f"vcs -f {out_dir} --rank 1 --step 1")
    assert outcome.error == (
        "vcs: rank 1 step 1 was not begun: the compare was cut short before it; "
        f"vc --resume -o {out_dir} compares it"
    )


def _ni(root: Path, line: str):
    (info,) = run_ok(open_shell(root), line).nodes
    return info


def test_ni_on_an_interrupted_run_says_not_begun_and_not_reached(interrupted):
    """`ni --rank/--step` reads the run's slices as vcs does: a (rank, step) never begun is
    said so (vc --resume compares it), and an op the partial compare did not reach yet too."""
    root, out_dir, _ = interrupted
    resume = f"vc --resume -o {out_dir}"
    never = _ni(root, f"ni {CONV2} --rank 1 --step 0")
    assert never.compare_rows == [] and never.compare_file is None
    assert never.compare_missing == (
        f"the latest compare ({out_dir}) did not begin rank 1 step 0: it was cut short before "
        f"it; {resume} compares it"
    )
    reached = _ni(root, f"ni {CONV2} --rank 0 --step 1")
    assert [r.index for r in reached.compare_rows][:1] == [4]
    assert reached.compare_missing is None
    assert reached.compare_notes == [
        "partial: 20 of 56 files in 4 ranks and steps; rank 0 step 1 partial: 6 of 14 files: "
        f"the compare was interrupted; {resume} continues it"
    ]
    later = _ni(root, f"ni {DENSE} --rank 0 --step 1")
    assert later.compare_rows == []
    assert later.compare_missing == (
        "rank 0 step 1's compare is partial (6 of 14 files) and did not reach this op yet: "
        f"the compare was interrupted; {resume} continues it"
    )
    lines = rendered(run_ok(open_shell(root), f"ni {DENSE} --rank 0 --step 1"), width=1000)
    assert f"compare: {later.compare_missing}" in lines
    # a complete (rank, step) of the run: its rows, no claim of an op not reached
    whole = _ni(root, f"ni {DENSE} --rank 0 --step 0")
    assert whole.compare_rows and whole.compare_missing is None


def test_ni_on_a_killed_run_reads_its_journal(interrupted):
    root, out_dir, _ = interrupted
    _killed(out_dir)
    cause = f"its vc was killed or crashed; vc --resume -o {out_dir} continues it"
    done = _ni(root, f"ni {CONV2} --rank 0 --step 0")
    assert Path(done.compare_file).name == f"result_{out_dir.name}.csv"
    assert done.compare_slice == "rank 0 step 0"
    assert [r.kind for r in done.compare_rows].count("output") == 1
    assert done.compare_notes == [
        f"partial: 20 of 56 files in 4 ranks and steps; rank 0 step 0 complete: {cause}"
    ]
    later = _ni(root, f"ni {DENSE} --rank 0 --step 1")
    assert later.compare_slice == "rank 0 step 1" and later.compare_rows == []
    assert later.compare_missing == (
        f"rank 0 step 1's compare is partial (6 of 14 files) and did not reach this op yet: {cause}"
    )
    never = _ni(root, f"ni {CONV2} --rank 1 --step 1")
    assert never.compare_missing == (
        f"the latest compare ({out_dir}) did not begin rank 1 step 1: it was cut short before "
        f"it; vc --resume -o {out_dir} compares it"
    )


def test_a_killed_compare_of_one_rank_and_step_is_read_from_its_journal(
    four_slices_pristine, tmp_path, monkeypatch
):
    """`vc --rank 1 --step 1` killed after 6 of its 14 files: its journal names that one
    (rank, step); `ni` and `vcs --rank 1 --step 1` read its rows, not "no (rank, step)"."""
    root = tmp_path / "ws"
    shutil.copytree(four_slices_pristine, root, symlinks=True)
    Engine(monkeypatch, 6)
    outcome = open_shell(root).execute("vc --rank 1 --step 1")
    monkeypatch.setattr(execute, "run_tasks", engine_module.run_tasks)
    out_dir = outcome.result.out_dir
    (out_dir / "summary.json").unlink()
    cause = f"its vc was killed or crashed; vc --resume -o {out_dir} continues it"
    info = _ni(root, f"ni {CONV2} --rank 1 --step 1")
    assert Path(info.compare_file).name == f"result_{out_dir.name}.csv"
    assert info.compare_missing is None and info.compare_slice == ""
    assert [r.index for r in info.compare_rows][:1] == [4]
    assert info.compare_notes == [f"partial: 6 of 14 files: {cause}"]
    later = _ni(root, f"ni {DENSE} --rank 1 --step 1")
    assert later.compare_missing == (
        f"rank 1 step 1's compare is partial (6 of 14 files) and did not reach this op yet: {cause}"
    )
    shown = run_ok(open_shell(root), f"vcs -f {out_dir} --rank 1 --step 1")
    assert shown.path.name == f"result_{out_dir.name}.csv"
    assert shown.partial == "partial: 6 of 14 files"


def dies_in_rank1_step0(task: FileTask, options: CompareOptions) -> FileResult:
    """A worker process that ends abruptly (as one the OOM killer picked) on rank 1 step 0's
    fifth file (`<device>/<graph>/<model>/<step>/<file>`)."""
    device, *_, step = Path(task.device_file).parts[-5:-1]
    if (device, step, task.seq) == ("1", "0", 4):
        os._exit(137)
    return compare_file(task, options)


def test_a_dead_worker_counts_the_whole_run_as_vcs_does(
    four_slices_pristine, tmp_path, monkeypatch
):
    root = tmp_path / "ws"
    shutil.copytree(four_slices_pristine, root, symlinks=True)

    def run_tasks(tasks: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs.update(work=dies_in_rank1_step0, backend="processes")
        return engine_module.run_tasks(tasks, *args, **kwargs)

    monkeypatch.setattr(execute, "run_tasks", run_tasks)
    outcome = open_shell(root).execute("vc --rank all --step all -j 1")
    out_dir = max((root / "precision_data/temp/vector_compare").iterdir())
    saved = json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))
    # -j 1: batches of 8 of the 56 files in order; the fifth batch (files 32-39) holds the
    # file that kills its worker, so the first four batches' 32 files are done
    assert [(r["rank"], r["step"], r["files_done"]) for r in saved["results"]] == [
        ("0", "0", 14),
        ("0", "1", 14),
        ("1", "0", 4),
    ]
    assert saved["not_begun"] == [{"rank": "1", "step": "1", "files_total": 14}]
    assert outcome.error == (
        "vc: a compare worker died (killed, or out of memory?) (partial: 32 of 56 files in 4 "
        f"ranks and steps); the rows written so far and summary.json are in {out_dir}; "
        "vc --resume continues"
    )
    monkeypatch.setattr(execute, "run_tasks", engine_module.run_tasks)
    shown = run_ok(open_shell(root), "vcs")
    assert shown.partial.startswith("partial: 32 of 56 files in 4 ranks and steps; ")


def test_a_stop_between_two_slices_is_resumed(four_slices_pristine, tmp_path, monkeypatch):
    """QA: Ctrl-C right after a (rank, step) compare ended left it whole and the others
    `not_begun`; vc said `vc --resume -o DIR compares them`, and vc --resume answered "its
    compare is complete; nothing to resume"."""
    root = tmp_path / "ws"
    shutil.copytree(four_slices_pristine, root, symlinks=True)
    engine = Engine(monkeypatch, 14)  # rank 0 step 0 whole, the rest not begun
    shell = open_shell(root)
    outcome = shell.execute("vc --rank all --step all")
    out_dir = outcome.result.out_dir
    summary = json.loads((out_dir / "summary.json").read_text())
    assert summary["totals"]["partial"] and len(summary["not_begun"]) == 3
    engine.stop_at = None
    resumed = run_ok(shell, f"vc --resume -o {out_dir}")
    assert resumed.out_dir == out_dir
    done = json.loads((out_dir / "summary.json").read_text())
    assert not done["totals"]["partial"] and "not_begun" not in done
    assert len(done["results"]) == 4
    assert engine.given[-1] == 3 * 14  # only the slices not begun were compared again
    # the primary (rank 0 step 0) was whole before: no "0.00 s, 0 MB/s" for it
    assert "all 14 dump files compared before the resume" in rendered(resumed, width=1000)
