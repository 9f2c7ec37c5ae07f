"""`tf_run` / `tf_dump` through the shell's dispatcher (fake tfdbg), and how results render."""

from __future__ import annotations

import os
import re
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from precision_shell.render.output import Renderer
from tests.commands.shell_fixture import open_shell, run_fail, run_ok
from tests.harvest.fake_spec import (
    FAKE_TFDBG,
    T0,
    make_fake_run_dir,
    npy_files,
    write_spec,
)

REPO = Path(__file__).resolve().parents[2]


def row(text: str, label: str) -> str:
    """The value of the `label` row of a rendered facts table."""
    match = re.search(rf"^{re.escape(label)}\s+(.*?)\s*$", text, re.MULTILINE)
    assert match, f"no {label!r} row in:\n{text}"
    return match[1]


def render(result: object) -> str:
    console = Console(record=True, width=200, color_system=None, highlight=False)
    Renderer(console, console).result(result)
    return console.export_text()


@pytest.fixture
def fake_python(tmp_path: Path) -> Path:
    """An 'interpreter' whose `-m tensorflow...offline_analyzer` is the fake analyzer."""
    path = tmp_path / "fakepy"
    path.write_text(
        f"#!{sys.executable}\n"
        "import runpy, sys\n"
        "if sys.argv[1:3] != ['-m', 'tensorflow.python.debug.cli.offline_analyzer']:\n"
        "    sys.exit(2)\n"
        f"sys.argv = [{FAKE_TFDBG!r}] + sys.argv[3:]\n"
        f"runpy.run_path({FAKE_TFDBG!r}, run_name='__main__')\n"
    )
    path.chmod(0o755)
    return path


def _make_runs_script(tmp_path: Path, runs: int = 1) -> Path:
    """A 'training script' that writes `runs` dump dirs where tf_config says they go."""
    script = tmp_path / "train.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "from precision_shell.tf_config import tf_debug_dir\n"
        "from tests.harvest.fake_spec import make_fake_run_dir\n"
        f"for i in range({runs}):\n"
        "    make_fake_run_dir(tf_debug_dir() / f'run_160000000000000{i}_{i}')\n"
        "print('trained')\n"
    )
    return script


def test_tf_run_creates_the_workspace_and_fills_tf_dump(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    spec = write_spec(tmp_path / "spec.json")
    shell = open_shell(tmp_path / "ws")
    line = f"tf_run --timeout 10 {shlex.quote(sys.executable)} {FAKE_TFDBG} {spec}"
    report = run_ok(shell, line)
    dump = tmp_path / "ws" / "precision_data" / "tf" / "dump"
    assert report.out_dir == str(dump)
    assert len(npy_files(dump)) == 8 and report.total == 8
    assert Path(report.transcript).parent == tmp_path / "ws" / "precision_data" / "temp" / "harvest"
    text = render(report)
    assert "tf_run: live tfdbg session" in text
    assert row(text, "saved") == "8 of 8 tensors"
    assert row(text, "into") == str(dump)
    assert "names that meet in one lookup key, all kept (see mapping.csv): a/b:0, a_b:0" in text
    assert row(text, "tfdbg") == "exit status 1"


def test_tf_run_takes_the_quoted_command_form(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.json", pt_refuse=["dense/Relu:0"])
    shell = open_shell(tmp_path)
    outcome = shell.execute(f'tf_run "{sys.executable} {FAKE_TFDBG} {spec}"')
    assert outcome.error == (
        f"1 tensor not saved; 7 of 8 tensors saved to {tmp_path / 'precision_data' / 'tf' / 'dump'}"
    )
    text = render(outcome.result)
    assert 'dense/Relu:0 (dump 0): tfdbg: Tensor "dense/Relu:0" did not generate any dumps.' in text


_BOUNDS = "must be > 0 seconds and at most 2592000 (30 days)"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("tf_run", 'tf_run: give the command that runs your script, e.g. tf_run "python train.py"'),
        ("tf_run -r 0 python x.py", "tf_run: -r must be >= 1, got 0"),
        ("tf_run --timeout 0 python x.py", f"--timeout {_BOUNDS}, got 0"),
        ("tf_run --timeout nan python x.py", f"--timeout {_BOUNDS}, got nan"),
        ("tf_run --startup-timeout 1e308 true", f"--startup-timeout {_BOUNDS}, got 1e+308"),
        ("tf_run --startup-timeout nan true", f"--startup-timeout {_BOUNDS}, got nan"),
        ("tf_run --run-timeout inf true", f"--run-timeout {_BOUNDS}, got inf"),
        ("tf_dump --timeout -1 --all", f"--timeout {_BOUNDS}, got -1"),
        ("tf_dump --run-timeout nan true", f"--run-timeout {_BOUNDS}, got nan"),
        ("tf_run 'python \"x.py'", "tf_run: cannot split 'python \"x.py': No closing quotation"),
        ("tf_dump --run 0 --all", "tf_dump: give --run N or --all, not both"),
        (
            "tf_dump --all --into step1",
            "tf_dump: --all writes each run into its own dir; --into takes one run",
        ),
        (
            "tf_dump --into run_1",
            "tf_dump: --into takes step<S>, rank<R>, rank<R>/step<S> or step<S>/rank<R> "
            "(numbers), got 'run_1'",
        ),
        (
            "tf_run --into ../x python x.py",
            "tf_run: --into takes step<S>, rank<R>, rank<R>/step<S> or step<S>/rank<R> "
            "(numbers), got '../x'",
        ),
    ],
)
def test_usage_errors_are_one_line(tmp_path: Path, line: str, message: str) -> None:
    assert run_fail(open_shell(tmp_path), line).error == message


def test_tf_run_of_a_missing_program_says_so(tmp_path: Path) -> None:
    outcome = run_fail(open_shell(tmp_path), "tf_run no_such_program_xyz train.py")
    assert outcome.error.startswith("cannot start 'no_such_program_xyz': ")


def test_tf_dump_without_runs_says_how_to_make_them(tmp_path: Path) -> None:
    outcome = run_fail(open_shell(tmp_path), "tf_dump")
    tf_debug = tmp_path / "precision_data" / "tf" / "tf_debug"
    assert outcome.error == (
        f"{tf_debug}: no such dir; wrap the session with "
        "precision_shell.tf_config.sess_dump(sess) and run the script (or give CMD)"
    )


def test_tf_dump_cmd_that_writes_no_run_says_it_ran(tmp_path: Path) -> None:
    outcome = run_fail(open_shell(tmp_path), f"tf_dump {sys.executable} -c pass")
    tf_debug = tmp_path / "precision_data" / "tf" / "tf_debug"
    log_dir = tmp_path / "precision_data" / "temp" / "harvest"
    [log] = list(log_dir.iterdir())
    assert outcome.error == (
        f"tf_dump: ran {sys.executable} -c pass: exit status 0 (output: {log}), but it wrote no "
        f"{tf_debug}/: wrap its session with precision_shell.tf_config.sess_dump(sess)"
    )


def test_tf_dump_runs_cmd_into_an_empty_dir_then_harvests_the_last_run(
    tmp_path: Path, fake_python: Path
) -> None:
    script = _make_runs_script(tmp_path, runs=2)
    shell = open_shell(tmp_path)
    batch = run_ok(shell, f"tf_dump --python {fake_python} {sys.executable} {script}")
    root = tmp_path / "precision_data"
    assert batch.notes[0].startswith(f"ran {sys.executable} {script}: exit status 0 (output: ")
    log = Path(batch.notes[0].split("(output: ")[1].rstrip(")"))
    assert log.read_text() == "trained\n"
    [report] = batch.reports
    assert report.source == str(root / "tf" / "tf_debug" / "run_1600000000000001_1")
    assert report.mode == "offline-pexpect"
    assert len(npy_files(root / "tf" / "dump")) == 8
    assert np.array_equal(
        np.load(root / "tf" / "dump" / f"dense_Relu.0.{T0 + 2000}.npy"), [[2.5, 0.0], [1.25, 5.0]]
    )
    text = render(batch)
    assert "tf_dump: tfdbg offline analyzer" in text
    assert row(text, "saved") == "8 of 8 tensors"
    assert row(text, "fresh names").startswith(
        "1 taken (by an earlier harvest or a colliding name)"
    )

    # Runs exist now: CMD is not run again, and --all puts each run in its own folder.
    batch = run_ok(shell, f"tf_dump --all --python {fake_python} {sys.executable} {script}")
    assert batch.notes == [
        f"{root / 'tf' / 'tf_debug'} already holds runs: harvested them; CMD was not run "
        "(harvest and clear tf/tf_debug/ to run it again)",
        f"each run is in its own dir under {root / 'tf' / 'dump'}/; the workspace's benchmark "
        "is tf/dump/ itself: compare against one run with "
        f"vc -rt {root / 'tf' / 'dump' / 'run_1600000000000000_0'}",
    ]
    for run in ("run_1600000000000000_0", "run_1600000000000001_1"):
        assert len(npy_files(root / "tf" / "dump" / run)) == 8
    assert len(npy_files(root / "tf" / "dump")) == 8  # the earlier harvest, untouched


def test_tf_dump_selects_a_run_by_index(tmp_path: Path, fake_python: Path) -> None:
    make_fake_run_dir(tmp_path / "precision_data" / "tf" / "tf_debug" / "run_5_0")
    make_fake_run_dir(tmp_path / "precision_data" / "tf" / "tf_debug" / "run_9_0", pt_crash_at=0)
    shell = open_shell(tmp_path)
    batch = run_ok(shell, f"tf_dump --run 0 --python {fake_python}")
    assert [r.source.rsplit("/", 1)[1] for r in batch.reports] == ["run_5_0"]
    outcome = run_fail(shell, f"tf_dump --python {fake_python}")  # the last run crashes
    assert outcome.error.startswith("tfdbg ended while writing dense/MatMul:0 (dump 0)")


def test_tf_dump_into_a_step_dir_fills_the_benchmark_of_that_step(
    tmp_path: Path, fake_python: Path
) -> None:
    make_fake_run_dir(tmp_path / "precision_data" / "tf" / "tf_debug" / "run_5_0")
    make_fake_run_dir(tmp_path / "precision_data" / "tf" / "tf_debug" / "run_9_0")
    shell = open_shell(tmp_path)
    batch = run_ok(shell, f"tf_dump --run 1 --into rank0/step1 --python {fake_python}")
    dump = tmp_path / "precision_data" / "tf" / "dump"
    [report] = batch.reports
    assert report.out_dir == str(dump / "rank0" / "step1")
    assert len(npy_files(dump / "rank0" / "step1")) == 8
    assert not npy_files(dump)
    ws = shell.context.workspace
    assert ws.benchmark_for("0", "1") is ws.scoped_benchmarks[("0", "1")]


def test_tf_dump_cmd_that_runs_too_long_is_stopped(tmp_path: Path) -> None:
    shell = open_shell(tmp_path)
    script = tmp_path / "slow.py"
    script.write_text("import time\ntime.sleep(30)\n")
    outcome = run_fail(shell, f"tf_dump --run-timeout 0.5 {sys.executable} {script}")
    log_dir = tmp_path / "precision_data" / "temp" / "harvest"
    [log] = list(log_dir.iterdir())
    assert (
        outcome.error
        == f"{sys.executable} {script}: still running after 0.5 s; stopped (output: {log})"
    )


def test_tf_dump_cmd_that_fails_fails_the_harvest(tmp_path: Path, fake_python: Path) -> None:
    """QA: a script whose run raised exited 0 (tfdbg's wrapper swallowed the error) or 1, and
    tf_dump said "saved 7 of 7" of the run it cut short, exit 0."""
    script = _make_runs_script(tmp_path)
    script.write_text(script.read_text() + "sys.exit(1)\n")
    outcome = run_fail(
        open_shell(tmp_path), f"tf_dump --python {fake_python} {sys.executable} {script}"
    )
    [log] = (tmp_path / "precision_data" / "temp" / "harvest").glob("tf_dump_cmd*")
    assert outcome.error.startswith(
        f"the debugged run failed ({sys.executable} {script} ended with exit status 1; its "
        f"output: {log}); 8 of 8 tensors saved to "
    )


def test_a_run_marked_failed_is_no_whole_harvest(tmp_path: Path, fake_python: Path) -> None:
    run = tmp_path / "precision_data" / "tf" / "tf_debug" / "run_5_0"
    make_fake_run_dir(run)
    run.with_name("run_5_0.failed").write_text("InvalidArgumentError: boom : Tensor had NaN\n")
    outcome = run_fail(open_shell(tmp_path), f"tf_dump --python {fake_python}")
    assert outcome.error.startswith(
        "the debugged run failed (the run raised InvalidArgumentError: boom : Tensor had NaN "
        "(run_5_0.failed)); 8 of 8 tensors saved to "
    )


def test_a_launcher_script_stopped_at_its_timeout_leaves_no_process(tmp_path: Path) -> None:
    """QA: `tf_dump --run-timeout 10 ./wrapper.sh` stopped the shell script and left the
    python it started running (ppid 1), free to write run dirs later."""
    pid_file = tmp_path / "child.pid"
    child = tmp_path / "train.py"
    child.write_text(
        f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n"
    )
    launcher = tmp_path / "wrapper.sh"
    launcher.write_text(f"#!/bin/sh\n{sys.executable} {child} &\nwait\n")
    launcher.chmod(0o755)
    run_fail(open_shell(tmp_path), f"tf_dump --run-timeout 2 {launcher}")
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        for _ in range(100):  # reaped by init at its pace; gone, or a zombie about to be
            os.kill(pid, 0)
            if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
                raise ProcessLookupError
            time.sleep(0.05)


def test_tf_dump_without_tensorflow_asks_for_an_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import precision_shell.commands.harvest as harvest_commands

    monkeypatch.setattr(harvest_commands, "tensorflow_available", lambda: False)
    make_fake_run_dir(tmp_path / "precision_data" / "tf" / "tf_debug" / "run_5_0")
    outcome = run_fail(open_shell(tmp_path), "tf_dump")
    assert outcome.error == (
        "tf_dump: TensorFlow is not importable here; give --python PY, an interpreter that has "
        "it, to run tfdbg's offline analyzer"
    )


def test_a_stopped_harvest_renders_every_fact_and_caps_the_missed_list() -> None:
    from precision_shell.harvest.outcome import HarvestOutcome, MissedTensor, SavedTensor

    report = HarvestOutcome(
        "live",
        "python train.py",
        "/ws/precision_data/tf/dump",
        total=30,
        saved=[
            SavedTensor("a:0", 0, 5, "/ws/a.0.6.npy", fresh_name=True),
            SavedTensor("b:0", 0, 7, "/ws/b.0.7.npy", replaced=True),
        ],
        missed=[MissedTensor(f"t{i}:0", 0, "not harvested: interrupted") for i in range(28)],
        run_error="InvalidArgumentError at op 'bad'",
        aborted="interrupted",
        child_status="stopped",
        elapsed=3.0,
        notes=["last output: boom"],
    )
    text = render(report)
    assert row(text, "saved") == "2 of 30 tensors"
    assert row(text, "time") == "3.00 s (100.0 ms per tensor)"
    assert row(text, "fresh names").startswith("1 taken (by an earlier harvest")
    assert row(text, "replaced") == "1 files (--overwrite)"
    assert row(text, "run failed") == "InvalidArgumentError at op 'bad'"
    assert row(text, "stopped") == "interrupted"
    assert row(text, "tfdbg") == "stopped"
    assert "not saved (28):" in text
    assert "  t19:0 (dump 0): not harvested: interrupted" in text
    assert "t20:0" not in text and "  ... 8 more" in text
    assert "note: last output: boom" in text
    assert report.error_message == (
        "interrupted; 2 of 30 tensors saved to /ws/precision_data/tf/dump, 28 not saved"
    )


def test_into_a_dir_that_is_a_link_is_refused(tmp_path: Path, fake_python: Path) -> None:
    """QA: `tf_dump --into step1`, step1 a link to tf/dump itself, wrote run 2 over the
    workspace's benchmark (the shell skips such a dir); a link out of the workspace too."""
    make_fake_run_dir(tmp_path / "precision_data" / "tf" / "tf_debug" / "run_5_0")
    dump = tmp_path / "precision_data" / "tf" / "dump"
    dump.mkdir(parents=True)
    (dump / "step1").symlink_to(dump)
    (dump / "rank2").symlink_to(tmp_path)
    shell = open_shell(tmp_path)
    for into, link in (("step1", dump / "step1"), ("rank2/step0", dump / "rank2")):
        outcome = run_fail(shell, f"tf_dump --into {into} --python {fake_python}")
        assert outcome.error == (
            f"tf_dump: {link} is a symbolic link; a harvest is never written through one (where "
            "it points may be tf/dump itself, or another workspace's): remove it, or give "
            "--into another dir"
        )
    assert not npy_files(dump) and not (tmp_path / "step0").exists()


def test_tf_dump_cmd_that_fails_before_any_run_says_so(tmp_path: Path) -> None:
    """QA: a script that failed (or did not exist) was told to wrap its session."""
    outcome = run_fail(open_shell(tmp_path), f"tf_dump {sys.executable} -c 'raise SystemExit(3)'")
    assert outcome.error.startswith(f"tf_dump: ran {sys.executable} -c 'raise SystemExit(3)': ")
    assert outcome.error.endswith("): it failed before it dumped a run")
    assert "exit status 3" in outcome.error


def test_a_run_a_stopped_script_left_is_no_whole_harvest(tmp_path: Path, fake_python: Path) -> None:
    """QA: `tf_dump --run-timeout 8 CMD` stopped the script mid-run; a later plain tf_dump
    harvested that run dir as whole ("saved 5 of 5", exit 0)."""
    tf_debug = tmp_path / "precision_data" / "tf" / "tf_debug"
    make_fake_run_dir(tf_debug / "run_5_0")
    make_fake_run_dir(tf_debug / "run_9_1")
    (tf_debug / ".run_in_progress").write_text("run_5_0\n")  # run_9_1 was dumping
    shell = open_shell(tmp_path)
    run_ok(shell, f"tf_dump --run 0 --python {fake_python}")
    outcome = run_fail(shell, f"tf_dump --run 1 --into step1 --python {fake_python}")
    assert outcome.error.startswith(
        "the debugged run failed (the run did not finish: the script was stopped or killed as "
        "it dumped, or runs still (.run_in_progress is left)); "
    )


def test_the_default_run_is_the_last_that_finished(tmp_path: Path, fake_python: Path) -> None:
    """A TF1 input loop ends on OutOfRangeError: its last run raised, and `sess_dump` marks
    it; plain tf_dump harvests the last run that finished, and says which it passed over."""
    tf_debug = tmp_path / "precision_data" / "tf" / "tf_debug"
    make_fake_run_dir(tf_debug / "run_5_0")
    make_fake_run_dir(tf_debug / "run_9_1")
    (tf_debug / "run_9_1.failed").write_text("OutOfRangeError: End of sequence\n")
    batch = run_ok(open_shell(tmp_path), f"tf_dump --python {fake_python}")
    [report] = batch.reports
    assert report.source.endswith("run_5_0") and report.error_message is None
    assert batch.notes[-1] == (
        "harvested run_5_0, the last run that finished; passed over run_9_1: the run raised "
        "OutOfRangeError: End of sequence (run_9_1.failed) (--run N takes one)"
    )
