"""`vc --resume`: a compare interrupted (Ctrl-C) or killed (SIGKILL) halfway continues where
its journal says it stopped, and ends with the CSVs and summary an uninterrupted run writes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from precision_shell.compare.pipeline import engine as engine_module
from precision_shell.compare.pipeline import execute
from precision_shell.compare.pipeline.journal import JOURNAL_NAME, RunJournal
from tests.commands.shell_fixture import CONV2, open_shell, run_fail, run_ok
from tests.commands.test_vc_across_ranks import _add_ranks
from tests.slow_vc import SLOW_ENGINE
from tests.strict_json import strict_json

REPO = Path(__file__).resolve().parents[2]
VOLATILE = {"created", "started_ns", "elapsed_s", "resumed_from_files"}
SECOND = "debug_0 vs debug_1"  # the tiny demo's device-vs-device compare


class Engine:
    """execute.run_tasks, counted: Ctrl-C after `stop_at` results over all engine runs (None:
    never), and the tasks each run was given."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, stop_at: int | None = None) -> None:
        self.real = engine_module.run_tasks
        self.stop_at = stop_at
        self.yielded = 0
        self.given: list[int] = []
        monkeypatch.setattr(execute, "run_tasks", self.run_tasks)

    def run_tasks(self, tasks: Any, *args: Any, **kwargs: Any) -> Any:
        self.given.append(len(tasks))
        for result in self.real(tasks, *args, **kwargs):
            if self.yielded == self.stop_at:
                raise KeyboardInterrupt
            self.yielded += 1
            yield result


def _csvs(out_dir: Path) -> dict[str, bytes]:
    """The result CSVs by name with the stamp taken out."""
    stamp = out_dir.name.split("_")[0]
    return {p.name.replace(stamp, "TS"): p.read_bytes() for p in sorted(out_dir.glob("*.csv"))}


def _stable(value: Any, out_dir: Path) -> Any:
    """A summary without what differs between two runs of the same compare (when, how long,
    the result dir's name), and without `resumed_from_files`."""
    if isinstance(value, dict):
        return {k: _stable(v, out_dir) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v, out_dir) for v in value]
    if isinstance(value, str):
        return value.replace(str(out_dir), "OUT").replace(out_dir.name.split("_")[0], "TS")
    return value


def _summary(out_dir: Path) -> dict[str, Any]:
    return json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))


def _same_result(resumed: Path, reference: Path) -> None:
    assert _csvs(resumed) == _csvs(reference)
    assert _stable(_summary(resumed), resumed) == _stable(_summary(reference), reference)
    assert not (resumed / JOURNAL_NAME).exists()


@pytest.mark.parametrize("stop_at", [0, 5, 13, 14 + 6])
def test_resume_after_ctrl_c_writes_what_an_uninterrupted_run_writes(
    tiny_demo, monkeypatch, stop_at
):
    root, _ = tiny_demo
    reference = run_ok(open_shell(root), "vc")
    n = reference.primary.tasks
    assert (n, reference.secondary.tasks) == (14, 14)
    Engine(monkeypatch, stop_at)
    cut = open_shell(root).execute("vc")
    # the benchmark compare cut short, or the device-vs-device one after it
    where = (
        f"partial: {stop_at}"
        if stop_at < n
        else f"device vs device {SECOND} partial: {stop_at - n}"
    )
    assert cut.error == f"vc: interrupted ({where} of {n} files); the rows written so far are kept"
    assert (cut.result.out_dir / JOURNAL_NAME).is_file()
    engine = Engine(monkeypatch)
    resumed = run_ok(open_shell(root), "vc --resume")
    assert resumed.out_dir == cut.result.out_dir
    # only what was not done ran: the primary's rest, then the whole device-vs-device compare
    done_primary, done_second = min(stop_at, n), max(0, stop_at - n)
    assert engine.given == [n - done_primary, n - done_second]
    _same_result(resumed.out_dir, reference.out_dir)
    payload = _summary(resumed.out_dir)
    assert payload["resumed_from_files"] == done_primary
    assert payload["device_compare"]["resumed_from_files"] == done_second
    assert payload["results"][0]["resumed_from_files"] == done_primary
    assert not payload["partial"] and payload["files_done"] == n
    assert resumed.primary.tally.rows == reference.primary.tally.rows
    # vcs reads the resumed run, complete, with the uninterrupted run's numbers
    vcs = run_ok(open_shell(root), "vcs")
    assert vcs.path == resumed.primary.csv_path and vcs.partial is None
    assert vcs.rows == reference.primary.tally.rows
    message = run_fail(open_shell(root), "vc --resume").error
    assert message.startswith("vc --resume: nothing to resume: no partial compare in ")


def test_a_resume_interrupted_again_resumes_again(tiny_demo, monkeypatch):
    root, _ = tiny_demo
    reference = run_ok(open_shell(root), "vc")
    Engine(monkeypatch, 3)
    assert not open_shell(root).execute("vc").ok
    Engine(monkeypatch, 4)
    again = open_shell(root).execute("vc --resume")
    assert (
        again.error == "vc: interrupted (partial: 7 of 14 files); the rows written so far are kept"
    )
    engine = Engine(monkeypatch)
    resumed = run_ok(open_shell(root), "vc --resume")
    assert engine.given == [7, 14]
    _same_result(resumed.out_dir, reference.out_dir)
    assert _summary(resumed.out_dir)["resumed_from_files"] == 7


def test_ranks_and_steps_resume_each_csv_from_its_own_progress(tiny_demo, monkeypatch):
    root, manifest = tiny_demo
    _add_ranks(root, manifest, ["1", "2"])
    reference = run_ok(open_shell(root), "vc")
    assert len(reference.slices) == 2  # three CSVs of 14 files, then device vs device
    Engine(monkeypatch, 14 + 9)  # inside rank 1's compare; rank 2's never started
    cut = open_shell(root).execute("vc")
    assert [r["partial"] for r in cut.result.summary.results] == [False, True]
    engine = Engine(monkeypatch)
    resumed = run_ok(open_shell(root), "vc --resume")
    assert engine.given == [5 + 14, 14]
    _same_result(resumed.out_dir, reference.out_dir)
    results = _summary(resumed.out_dir)["results"]
    assert [r["resumed_from_files"] for r in results] == [14, 9, 0]


def test_across_ranks_resumes_with_the_same_divergence(tiny_demo, monkeypatch):
    root, manifest = tiny_demo
    _add_ranks(root, manifest, ["1", "2"])
    reference = run_ok(open_shell(root), "vc --across ranks")
    Engine(monkeypatch, 14 + 2)
    assert not open_shell(root).execute("vc --across ranks").ok
    engine = Engine(monkeypatch)
    resumed = run_ok(open_shell(root), "vc --resume")
    assert engine.given == [12]
    _same_result(resumed.out_dir, reference.out_dir)
    assert [d.rank for d in resumed.divergence] == [d.rank for d in reference.divergence]


def _interrupted(root: Path, monkeypatch, stop_at: int = 6) -> Path:
    Engine(monkeypatch, stop_at)
    out_dir = open_shell(root).execute("vc").result.out_dir
    monkeypatch.setattr(execute, "run_tasks", engine_module.run_tasks)
    return out_dir


def test_a_half_written_row_and_a_torn_journal_line_are_dropped(tiny_demo, monkeypatch):
    root, _ = tiny_demo
    reference = run_ok(open_shell(root), "vc")
    out_dir = _interrupted(root, monkeypatch)
    csv_path = next(out_dir.glob("result_*[0-9].csv"))
    # killed mid-task: part of the next rows written, its journal line torn
    with open(csv_path, "ab") as fh:
        fh.write(b"7,Conv2D,conv3/Conv2D,DT_FLOAT16,NaN,conv3")
    with open(out_dir / JOURNAL_NAME, "ab") as fh:
        fh.write(b'{"k":0,"n":6,"seq":6,"file":"x","off')
    resumed = run_ok(open_shell(root), "vc --resume")
    _same_result(resumed.out_dir, reference.out_dir)


def _journal_lines(out_dir: Path) -> list[str]:
    return (out_dir / JOURNAL_NAME).read_text(encoding="utf-8").splitlines(keepends=True)


def test_the_journal_writes_a_non_finite_extra_as_strict_json_and_resumes_it(
    tiny_demo, monkeypatch
):
    root, _ = tiny_demo
    reference = run_ok(open_shell(root), "vc")
    out_dir = _interrupted(root, monkeypatch, stop_at=14)  # every benchmark file journaled
    entries = [strict_json(line) for line in _journal_lines(out_dir)[1:]]
    (overflowed,) = [e for e in entries if "l2_loss_Sum" in e["file"]]
    # its output is inf on the device: an SQNR of -inf, written as the word
    assert "-inf" in [extras.get("sqnr_db") for extras in overflowed["extras"]]
    resumed = run_ok(open_shell(root), "vc --resume")
    _same_result(resumed.out_dir, reference.out_dir)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("edit_csv", "changed since the compare wrote it"),
        ("shorten_csv", "shorter than the"),
        ("remove_csv", "missing, but the journal says 6 files"),
        ("garbage_line", f"{JOURNAL_NAME}:4: damaged line (not a JSON object)"),
        ("skip_line", f"{JOURNAL_NAME}:4: task 3 of plan 0 is out of order"),
        ("bad_header", f"{JOURNAL_NAME}:1: not a vc journal header"),
        ("empty_journal", "no header line"),
        ("bad_extras", f"{JOURNAL_NAME}:3: damaged extras"),
        ("escape_csv", f"{JOURNAL_NAME}:1: damaged header (its plans)"),
    ],
)
def test_a_damaged_journal_or_csv_is_a_one_line_error_and_nothing_is_written(
    tiny_demo, monkeypatch, damage, message
):
    root, _ = tiny_demo
    out_dir = _interrupted(root, monkeypatch)
    csv_path = next(out_dir.glob("result_*[0-9].csv"))
    journal = out_dir / JOURNAL_NAME
    lines = _journal_lines(out_dir)
    if damage == "edit_csv":
        data = csv_path.read_bytes()
        csv_path.write_bytes(data.replace(b"Relu", b"ReLU", 1))
    elif damage == "shorten_csv":
        csv_path.write_bytes(csv_path.read_bytes()[:-40])
    elif damage == "remove_csv":
        csv_path.unlink()
    elif damage == "garbage_line":
        journal.write_text("".join([*lines[:3], "]]not json\n", *lines[4:]]), encoding="utf-8")
    elif damage == "skip_line":
        journal.write_text("".join([*lines[:3], *lines[4:]]), encoding="utf-8")
    elif damage == "bad_header":
        journal.write_text("".join(['{"journal": 99}\n', *lines[1:]]), encoding="utf-8")
    elif damage == "empty_journal":
        journal.write_bytes(b"")
    elif damage == "bad_extras":
        entry = json.loads(lines[2])
        entry["extras"][0] = {"sqnr_db": "high"}
        journal.write_text("".join([*lines[:2], json.dumps(entry) + "\n", *lines[3:]]))
    elif damage == "escape_csv":
        header = json.loads(lines[0])
        header["plans"][0]["csv"] = "../../../elsewhere.csv"
        journal.write_text("".join([json.dumps(header) + "\n", *lines[1:]]), encoding="utf-8")
    before = {p.name: p.read_bytes() for p in out_dir.iterdir()}
    error = run_fail(open_shell(root), "vc --resume").error
    assert message in error
    assert {p.name: p.read_bytes() for p in out_dir.iterdir()} == before


def test_a_workspace_changed_since_is_not_resumed(tiny_demo, monkeypatch):
    root, manifest = tiny_demo
    out_dir = _interrupted(root, monkeypatch)
    dump = next(
        root / "precision_data" / o.dump_file for o in manifest.device_ops if o.name == CONV2
    )
    stat = dump.stat()
    os.utime(dump, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    error = run_fail(open_shell(root), "vc --resume").error
    assert error.startswith(f"{out_dir / JOURNAL_NAME}: the dump or benchmark files of result_")
    assert "changed since the compare ran" in error


def test_two_shells_cannot_resume_one_run_at_once(tiny_demo, monkeypatch):
    root, _ = tiny_demo
    out_dir = _interrupted(root, monkeypatch)
    with RunJournal.open_existing(out_dir):  # another shell resuming it
        error = run_fail(open_shell(root), "vc --resume").error
    assert error == (
        f"{out_dir}: another vc is comparing or resuming this run right now "
        f"(its journal {JOURNAL_NAME} is locked)"
    )
    run_ok(open_shell(root), "vc --resume")  # the lock went with the other one


def test_a_second_vc_into_a_dir_a_run_holds_says_why_and_what_to_do(tiny_demo, tmp_path):
    """QA: two `vc -o SAME` at once: the loser was told only "vc.journal: already exists"."""
    root, _ = tiny_demo
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / JOURNAL_NAME).write_text("")  # the other vc, just begun
    error = run_fail(open_shell(root), f"vc -o {mine}").error
    assert error.endswith(
        f"{mine / JOURNAL_NAME}: already exists: another vc is writing into {mine}, or one "
        f"stopped there (vc --resume -o {mine} continues it); give -o another dir"
    )


def test_resume_takes_no_selection_and_a_given_dir(tiny_demo, monkeypatch, tmp_path):
    root, _ = tiny_demo
    shell = open_shell(root)
    error = run_fail(shell, "vc --resume -lt a -rt b --max 3").error
    assert error == "vc: --resume continues a compare as it was asked; drop -lt, -rt, --max"
    assert "nothing to resume" in run_fail(shell, "vc --resume").error
    Engine(monkeypatch, 4)
    assert not shell.execute(f"vc -o {tmp_path / 'mine'}").ok
    again = run_fail(shell, f"vc -o {tmp_path / 'mine'}").error
    assert again.endswith(
        f"already holds a summary.json; give an empty or new dir for -o (its run was cut short: "
        f"vc --resume -o {tmp_path / 'mine'} completes it)"
    )
    Engine(monkeypatch, 2)
    assert not shell.execute("vc").ok  # a newer partial run, in temp/
    engine = Engine(monkeypatch)
    resumed = run_ok(shell, f"vc --resume -o {tmp_path / 'mine'} -j 2")
    assert resumed.out_dir == tmp_path / "mine" and engine.given == [10, 14]
    complete = run_fail(shell, f"vc --resume -o {tmp_path / 'mine'}").error
    assert (
        complete == f"vc --resume: {tmp_path / 'mine'}: its compare is complete; nothing to resume"
    )
    assert "no vc.journal here" in run_fail(shell, f"vc --resume -o {tmp_path}").error
    assert run_ok(shell, "vc --resume").primary.resumed_from == 2


def test_help_vc_documents_resume(tiny_demo_shared):
    root, _ = tiny_demo_shared
    text = run_ok(open_shell(root), "help vc").text
    assert "--resume" in text and "continue the last interrupted or killed vc" in text


# a vc in its own process whose engine takes 0.2 s per dump file, so it can be killed mid-run
_SLOW_VC = SLOW_ENGINE + (
    "from precision_shell.cli import main\n"
    'raise SystemExit(main([sys.argv[1], "--no-cache", "-e", "vc"]))\n'
)


def test_a_compare_killed_with_sigkill_resumes_to_the_same_csvs(tiny_demo):
    root, _ = tiny_demo
    reference = run_ok(open_shell(root), "vc")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_VC, str(root)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = root / "precision_data" / "temp" / "vector_compare"
    try:
        deadline = time.monotonic() + 60
        journal = None
        while time.monotonic() < deadline and proc.poll() is None:
            found = [
                d / JOURNAL_NAME
                for d in base.iterdir()
                if d.is_dir() and d != reference.out_dir  # not `.latest`
            ]
            if found and found[0].is_file() and found[0].read_bytes().count(b"\n") >= 5:
                journal = found[0]
                break
            time.sleep(0.02)
        assert journal is not None, "the compare did not start"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    out_dir = journal.parent
    assert not (out_dir / "summary.json").exists()
    done = journal.read_bytes().count(b"\n") - 1  # a line per file after the header
    resumed = run_ok(open_shell(root), "vc --resume")
    assert resumed.out_dir == out_dir
    assert _summary(out_dir)["resumed_from_files"] == done >= 4
    _same_result(out_dir, reference.out_dir)
