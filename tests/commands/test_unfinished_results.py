"""`vcs`, `report` and `ni` on a result dir whose vc is still running, was killed or crashed:
its rows are labelled partial with what the journal knows, never shown as a finished compare,
and the newest result they pick by default is the newest finished one (the skipped dir named
with how to look at it)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from precision_shell.compare.pipeline import engine as engine_module
from precision_shell.compare.pipeline import execute
from precision_shell.compare.pipeline.journal import JOURNAL_NAME
from tests.commands.shell_fixture import CONV2, open_shell, rendered, run_ok
from tests.commands.test_vc_resume import Engine

KILLED_AT = 6  # of the primary compare's 14 dump files (the run has 28 with device vs device)


def _interrupted(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A vc stopped after KILLED_AT files (Ctrl-C: its summary says partial), its journal kept."""
    Engine(monkeypatch, KILLED_AT)
    out_dir = open_shell(root).execute("vc").result.out_dir
    monkeypatch.setattr(execute, "run_tasks", engine_module.run_tasks)
    assert (out_dir / JOURNAL_NAME).is_file()
    return out_dir


def _killed(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A vc killed after KILLED_AT files: its CSV and journal, no summary.json."""
    out_dir = _interrupted(root, monkeypatch)
    (out_dir / "summary.json").unlink()
    return out_dir


@contextmanager
def _running(out_dir: Path) -> Iterator[None]:
    """The journal locked as a running vc holds it (another open file, LOCK_EX)."""
    fd = os.open(out_dir / JOURNAL_NAME, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield
    finally:
        os.close(fd)


def _primary(out_dir: Path) -> Path:
    (path,) = (p for p in out_dir.glob("result_*.csv") if "_vs_" not in p.name)
    return path


def _lines(result: object) -> list[str]:
    return rendered(result, width=1000).splitlines()


def test_vcs_skips_a_killed_compare_for_the_newest_finished_one_and_says_so(tiny_demo, monkeypatch):
    root, _ = tiny_demo
    finished = run_ok(open_shell(root), "vc").out_dir
    killed = _killed(root, monkeypatch)
    result = run_ok(open_shell(root), "vcs")
    assert result.path == _primary(finished) and result.partial is None
    skipped = (
        f"skipped {killed}: its vc was killed or crashed (6 of 28 files); vcs -f {killed} "
        f"shows its rows so far, vc --resume -o {killed} continues it"
    )
    assert result.notes == [skipped]
    assert skipped in _lines(result)
    # the killed dir itself: its rows so far, labelled with the journal's counts
    shown = run_ok(open_shell(root), f"vcs -f {killed}")
    assert shown.path == _primary(killed)
    assert shown.partial == "partial: 6 of 14 files"
    line = f"partial: 6 of 14 files: its vc was killed or crashed; vc --resume -o {killed} continues it"
    assert line in _lines(shown)
    assert run_ok(open_shell(root), f"vcs -f {_primary(killed)}").partial == shown.partial
    # what the label promises: vc --resume continues it, and then it is the newest, complete
    run_ok(open_shell(root), f"vc --resume -o {killed}")
    done = run_ok(open_shell(root), "vcs")
    assert done.path == _primary(killed) and done.partial is None and done.notes == []


def test_vcs_skips_a_compare_still_running_and_labels_its_rows_so_far(tiny_demo, monkeypatch):
    root, _ = tiny_demo
    finished = run_ok(open_shell(root), "vc").out_dir
    running = _killed(root, monkeypatch)
    with _running(running):
        result = run_ok(open_shell(root), "vcs")
        shown = run_ok(open_shell(root), f"vcs -f {running}")
    assert result.path == _primary(finished) and result.partial is None
    assert result.notes == [
        f"skipped {running}: a vc is still comparing it (6 of 28 files so far); vcs -f "
        f"{running} shows its rows so far"
    ]
    assert shown.partial == "partial: 6 of 14 files so far"
    assert (
        "partial: 6 of 14 files so far: a vc is still comparing it (its journal is locked); "
        "run this again for more"
    ) in _lines(shown)


def test_a_running_resume_of_an_interrupted_compare_is_not_its_old_summary(tiny_demo, monkeypatch):
    root, _ = tiny_demo
    out_dir = _interrupted(root, monkeypatch)
    with _running(out_dir):  # `vc --resume` working on it: the summary is the old one
        shown = run_ok(open_shell(root), "vcs")
    assert shown.path == _primary(out_dir)  # nothing finished: the newest unfinished one
    assert shown.partial == "partial: 6 of 14 files so far"
    assert "a vc is still comparing it" in shown.partial_cause


def test_an_interrupted_compare_is_still_shown_as_interrupted(tiny_demo, monkeypatch):
    root, _ = tiny_demo
    run_ok(open_shell(root), "vc")
    out_dir = _interrupted(root, monkeypatch)
    result = run_ok(open_shell(root), "vcs")
    assert result.path == _primary(out_dir) and result.notes == []
    assert (
        f"partial: 6 of 14 files: the compare was interrupted; vc --resume -o {out_dir} "
        "continues it"
    ) in _lines(result)


def test_a_resume_killed_after_its_summary_counts_from_the_journal(tiny_demo, monkeypatch):
    root, _ = tiny_demo
    out_dir = _interrupted(root, monkeypatch)
    journal = out_dir / JOURNAL_NAME
    summary = (out_dir / "summary.json").stat()
    # a resume appended to the journal after the interrupted run's summary, then was killed
    os.utime(journal, ns=(summary.st_atime_ns, summary.st_mtime_ns + 10**9))
    shown = run_ok(open_shell(root), f"vcs -f {out_dir}")
    assert shown.partial == "partial: 6 of 14 files"
    assert shown.partial_cause.startswith("its vc was killed or crashed")


def test_a_killed_compare_alone_is_shown_partial(tiny_demo, monkeypatch):
    root, _ = tiny_demo
    killed = _killed(root, monkeypatch)
    result = run_ok(open_shell(root), "vcs")
    assert result.path == _primary(killed) and result.notes == []
    assert result.partial == "partial: 6 of 14 files"


def test_a_killed_compare_that_cannot_be_resumed_says_why(tiny_demo, monkeypatch):
    root, _ = tiny_demo
    run_ok(open_shell(root), "vc")
    killed = _killed(root, monkeypatch)
    csv_path = _primary(killed)
    data = csv_path.read_bytes()
    csv_path.write_bytes(data[:-40])
    default = run_ok(open_shell(root), "vcs")
    assert default.notes == [
        f"skipped {killed}: its vc was killed or crashed and cannot be resumed; vcs -f {killed} "
        "shows its rows so far"
    ]
    shown = run_ok(open_shell(root), f"vcs -f {killed}")
    # the journal cannot say how far the CSV got: its whole rows are read, the cut one is not
    assert shown.partial == (
        "partial: how far unknown (damaged journal), its half-written last row not shown"
    )
    assert shown.rows == data[:-40].count(b"\n") - 1  # the header is no row
    assert shown.partial_cause == (
        f"its vc was killed or crashed, and vc --resume cannot continue it: {csv_path}: "
        f"{len(data) - 40} bytes, shorter than the {len(data)} the journal says were written; "
        "run vc again"
    )


def test_report_skips_a_killed_compare_and_labels_it_when_asked(tiny_demo, monkeypatch):
    root, _ = tiny_demo
    finished = run_ok(open_shell(root), "vc").out_dir
    killed = _killed(root, monkeypatch)
    written = run_ok(open_shell(root), "report")
    assert written.csv_path == _primary(finished) and written.partial is None
    assert written.notes[0] == (
        f"skipped {killed}: its vc was killed or crashed (6 of 28 files); report -f {killed} "
        f"shows its rows so far, vc --resume -o {killed} continues it"
    )
    shown = run_ok(open_shell(root), f"report -f {killed}")
    assert shown.csv_path == _primary(killed)
    cause = f"its vc was killed or crashed; vc --resume -o {killed} continues it"
    assert (shown.partial, shown.partial_cause) == ("partial: 6 of 14 files", cause)
    assert f"partial: 6 of 14 files: {cause}" in _lines(shown)
    page = shown.path.read_text(encoding="utf-8")
    assert f"not diagnosed: the compare is partial: 6 of 14 files ({cause})" in page


def test_ni_shows_the_newest_finished_compare_and_names_the_killed_one(tiny_demo, monkeypatch):
    root, _ = tiny_demo
    finished = run_ok(open_shell(root), "vc").out_dir
    killed = _killed(root, monkeypatch)
    (info,) = run_ok(open_shell(root), f"ni {CONV2}").nodes
    assert info.compare_file == str(_primary(finished))
    assert info.compare_notes == [
        f"skipped {killed}: its vc was killed or crashed (6 of 28 files); vcs -f {killed} "
        f"shows its rows so far, vc --resume -o {killed} continues it"
    ]
    shutil.rmtree(finished)  # now no compare is finished: the newest one, labelled
    (info,) = run_ok(open_shell(root), f"ni {CONV2}").nodes
    assert info.compare_file == str(_primary(killed))
    assert info.compare_notes == [
        f"partial: 6 of 14 files: its vc was killed or crashed; vc --resume -o {killed} "
        "continues it"
    ]


def _killed_mid_file(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A killed vc whose CSV holds, past its journaled rows, the next 2 rows and the first 40
    bytes of a third (written, never journaled: the kill came mid-file), as a finished run of
    the same compare wrote them (that run then removed)."""
    finished = run_ok(open_shell(root), "vc").out_dir
    full = _primary(finished).read_bytes()
    shutil.rmtree(finished)
    killed = _killed(root, monkeypatch)
    csv_path = _primary(killed)
    journaled = csv_path.read_bytes()
    assert full.startswith(journaled)
    rows = full[len(journaled) :].split(b"\n")
    with open(csv_path, "ab") as fh:
        fh.write(rows[0] + b"\n" + rows[1] + b"\n" + rows[2][:40])
    return killed


# the killed run's journaled rows (6 of the 14 dump files), as `vcs` counts them
JOURNALED_COUNTS = {
    "rows": 19,
    "compared_rows": 13,
    "constant_inputs": 6,
    "not_compared": 0,
    "compared_ops": 6,
    "failing_total": 2,
}
PAST = "3 rows past the last journaled file not shown"


def _counts(result: object) -> dict[str, int]:
    return {name: getattr(result, name) for name in JOURNALED_COUNTS}


def test_vcs_and_report_read_a_killed_compare_only_as_far_as_its_journal(tiny_demo, monkeypatch):
    root, _ = tiny_demo
    killed = _killed_mid_file(root, monkeypatch)
    shown = run_ok(open_shell(root), f"vcs -f {killed}")
    assert _counts(shown) == JOURNALED_COUNTS
    assert shown.partial == f"partial: 6 of 14 files, {PAST}"
    lines = _lines(shown)
    assert "13 of 19 tensors compared; not compared: 6 constant inputs" in lines
    assert not [line for line in lines if "could not be compared" in line]
    report = run_ok(open_shell(root), f"report -f {killed}")
    lines = _lines(report)
    assert lines[1].startswith("19 table rows, ")
    assert not [line for line in lines if "cells, header has" in line]
    assert f"partial: 6 of 14 files, {PAST}: its vc was killed or crashed; " in "\n".join(lines)
    # resumed, the CSV is cut back to its journaled rows and goes on: every row counts again
    run_ok(open_shell(root), f"vc --resume -o {killed}")
    done = run_ok(open_shell(root), f"vcs -f {killed}")
    assert done.partial is None and done.rows > JOURNALED_COUNTS["rows"]


def test_vcs_reads_a_running_compare_only_as_far_as_its_journal(tiny_demo, monkeypatch):
    root, _ = tiny_demo
    running = _killed_mid_file(root, monkeypatch)
    with _running(running):
        shown = run_ok(open_shell(root), f"vcs -f {running}")
        report = run_ok(open_shell(root), f"report -f {running}")
        (info,) = run_ok(open_shell(root), f"ni {CONV2}").nodes
    assert _counts(shown) == JOURNALED_COUNTS
    assert shown.partial == f"partial: 6 of 14 files so far, {PAST}"
    assert not [line for line in _lines(shown) if "could not be compared" in line]
    assert not [line for line in _lines(report) if "cells, header has" in line]
    assert _lines(report)[1].startswith("19 table rows, ")
    assert info.compare_file == str(_primary(running))
    assert info.compare_notes == [
        f"partial: 6 of 14 files so far, {PAST}: a vc is still comparing it (its journal is "
        "locked); run this again for more"
    ]


def test_a_vc_killed_after_its_last_file_is_not_labelled_as_one_slice_done(tiny_demo, monkeypatch):
    """QA: killed once every file was journaled, before its summary: "partial: 2012 of 2012
    files" (the CSV shown), which reads as done."""
    from precision_shell.compare.results.summary import RunSummary

    root, _ = tiny_demo

    def killed(self, path):  # noqa: ANN001, ANN202
        raise KeyboardInterrupt

    monkeypatch.setattr(RunSummary, "write", killed)
    outcome = open_shell(root).execute("vc")
    monkeypatch.undo()
    out_dir = next(d for d in (root / "precision_data/temp/vector_compare").iterdir()
                   if (d / JOURNAL_NAME).is_file())  # fmt: skip
    assert outcome.interrupted and not (out_dir / "summary.json").exists()
    shown = run_ok(open_shell(root), f"vcs -f {out_dir}")
    assert shown.partial == "partial: all 28 files compared, no summary written"


def test_a_killed_run_read_from_its_journal_says_when_its_files_changed_since(
    tiny_demo, monkeypatch
):
    """QA: a run killed at 30%, two of its dump files replaced since: `vcs` showed its rows
    with no stale line (its summary.json, which the stale line read, was never written),
    while `vc --resume` refused it for that very change."""
    root, _ = tiny_demo
    killed = _killed(root, monkeypatch)
    shown = run_ok(open_shell(root), f"vcs -f {killed}")
    assert not any("predates" in n for n in shown.notes)
    journal = (killed / JOURNAL_NAME).read_text().splitlines()
    dump = Path(json.loads(journal[1])["file"])  # the device file of its first task
    data = dump.read_bytes()
    dump.unlink()
    dump.write_bytes(data)  # the same bytes, a new file written after the run
    shown = run_ok(open_shell(root), f"vcs -f {killed}")
    stale = [n for n in shown.notes if "predates" in n]
    assert stale == [
        f"the compare {killed} predates a change to a file it compared "
        f"({dump.relative_to(root / 'precision_data')}): run vc again"
    ]
    # report says so too, on the page's notes
    written = run_ok(open_shell(root), f"report -f {killed}")
    assert stale[0] in written.notes
