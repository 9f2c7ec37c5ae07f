"""`tf_run`'s driver against the fake tfdbg: every branch of a live session, fast.

The fake (fake_tfdbg.py) prints what TensorFlow 2.21's tfdbg prints; see its docstring.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

from precision_shell.harvest.live import LiveOptions, harvest_live, run_command
from precision_shell.harvest.outcome import HarvestOutcome
from precision_shell.harvest.tfdbg_session import Timeouts
from precision_shell.progress import ProgressSink
from tests.harvest.fake_spec import (
    T0,
    expected_files,
    fake_script_argv,
    npy_files,
    standard_tensors,
    write_spec,
)

QUICK = Timeouts(startup=10, run=10, command=10)


@pytest.fixture(autouse=True)
def _private_tempdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Our temp dirs (the child's TMPDIR) go under tmp_path, so leftovers can be checked."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


def _harvest(tmp_path: Path, options: LiveOptions | None = None, progress=None, **behaviour):
    spec = write_spec(tmp_path / "spec.json", **behaviour)
    out = tmp_path / "ws" / "tf" / "dump"
    report = harvest_live(
        fake_script_argv(spec),
        tmp_path / "ws",
        out,
        options or LiveOptions(timeouts=QUICK),
        progress=progress,
        transcript=tmp_path / "ws" / "temp" / "harvest" / "t.log",
    )
    return report, out


def _assert_saved_exactly(report: HarvestOutcome, out: Path, skip: set[str] = frozenset()) -> None:
    expected = {k: v for k, v in expected_files(standard_tensors()).items() if k[0] not in skip}
    got = {(s.tensor_name, s.dump_index): s for s in report.saved}
    assert set(got) == set(expected)
    for key, (timestamp, value) in expected.items():
        saved = got[key]
        assert saved.timestamp == timestamp
        assert Path(saved.path).parent == out
        loaded = np.load(saved.path, allow_pickle=False)
        assert loaded.dtype == value.dtype and np.array_equal(loaded, value), key


def test_normal_run_writes_every_dump_with_its_real_timestamp(tmp_path: Path) -> None:
    ticks: list = []
    progress = ProgressSink(start=lambda n, b: ticks.append(("start", n)), advance=ticks.append)
    report, out = _harvest(tmp_path, progress=progress)

    assert report.error_message is None and report.aborted is None and report.run_error is None
    assert report.total == 8 and len(report.saved) == 8 and report.missed == []
    _assert_saved_exactly(report, out)
    assert npy_files(out) == sorted(
        [
            f"dense_MatMul.0.{T0}.npy",
            f"dense_BiasAdd.0.{T0 + 1234}.npy",
            f"dense_Relu.0.{T0 + 2000}.npy",
            f"loop_mul.0.{T0 + 3000}.npy",
            f"loop_mul.0.{T0 + 4001}.npy",
            f"a_b.0.{T0 + 5000}.npy",
            f"a_b.0.{T0 + 5001}.npy",  # a_b:0 collides with a/b:0 at the same microsecond
            f".._x.0.{T0 + 6500}.npy",  # '../x:0' stays inside the dump dir
        ]
    )
    assert report.collisions == [["a/b:0", "a_b:0"]]
    assert (out / "mapping.csv").read_text() == (
        f"a_b.0.{T0 + 5000}.npy,a/b.0.{T0 + 5000}.npy\n"
        f"a_b.0.{T0 + 5001}.npy,a_b.0.{T0 + 5001}.npy\n"
    )
    assert not report.timestamps_estimated
    assert report.child_status == "exit status 1"  # tfdbg's exit makes the wrapper sys.exit(1)
    assert ticks[0] == ("start", 8)
    sizes = sorted(tick.bytes for tick in ticks[1:])
    assert sizes == sorted(Path(s.path).stat().st_size for s in report.saved)
    assert [p.name for p in out.iterdir() if p.is_dir()] == []  # staging removed
    assert list((tmp_path / "tmp").iterdir()) == []  # the child's TMPDIR removed
    assert sorted(p.name for p in (tmp_path / "ws").iterdir()) == ["temp", "tf"]
    transcript = Path(report.transcript).read_text()
    assert "tfdbg> run\n" in transcript.replace("\r", "") and "tfdbg> exit" in transcript


def test_steps_flag_sends_run_t(tmp_path: Path) -> None:
    assert run_command(1) == "run" and run_command(3) == "run -t 3"
    with pytest.raises(ValueError):
        run_command(0)
    report, _out = _harvest(tmp_path, LiveOptions(steps=3, timeouts=QUICK))
    transcript = Path(report.transcript).read_text().replace("\r", "")
    assert "tfdbg> run -t 3\nrun-end: run #3:" in transcript
    assert len(report.saved) == 8


def test_failed_run_is_reported_and_the_partial_dump_kept(tmp_path: Path) -> None:
    report, out = _harvest(tmp_path, run="error")
    assert report.run_error == "InvalidArgumentError at op 'bad'"
    assert report.error_message == (
        f"the debugged run failed (InvalidArgumentError at op 'bad'); 8 of 8 tensors saved to {out}"
    )
    _assert_saved_exactly(report, out)


def test_hang_in_run_times_out_and_stops_the_child(tmp_path: Path) -> None:
    options = LiveOptions(timeouts=Timeouts(startup=10, run=0.5, command=10))
    report, out = _harvest(tmp_path, options, run="hang")
    assert report.aborted == (
        "no tfdbg prompt 0.5 s after running 1 step(s); the process was stopped"
    )
    assert report.child_status == "stopped"
    assert report.total == 0 and report.saved == []
    assert report.error_message.startswith("no tfdbg prompt 0.5 s after running 1 step(s)")


def test_hang_at_startup_times_out(tmp_path: Path) -> None:
    options = LiveOptions(timeouts=Timeouts(startup=0.5, run=10, command=10))
    report, _out = _harvest(tmp_path, options, startup="hang")
    assert (
        report.aborted == "no tfdbg prompt 0.5 s after starting the script; the process was stopped"
    )
    assert any("step -1: building the graph" in note for note in report.notes)


def test_crash_before_the_prompt_shows_status_and_last_output(tmp_path: Path) -> None:
    report, _out = _harvest(tmp_path, startup="crash")
    assert report.aborted == (
        "tfdbg ended while starting the script (exit status 3); no tfdbg prompt: tf_run needs "
        "the session wrapped with precision_shell.tf_config.sess_dump_live(sess) "
        "(LocalCLIDebugWrapperSession with ui_type='readline'); sess_dump(sess), as "
        "precision_tool's, dumps offline for tf_dump"
    )
    assert report.notes == [
        "last output: step -1: building the graph\nTraceback (most recent call last):\n"
        "RuntimeError: the model failed to build"
    ]


def test_crash_while_writing_keeps_what_was_written_and_lists_the_rest(tmp_path: Path) -> None:
    report, out = _harvest(tmp_path, pt_crash_at=2)
    why = "tfdbg ended while writing dense/Relu:0 (dump 0) (killed by signal 6)"
    assert report.aborted == why
    assert [s.tensor_name for s in report.saved] == ["dense/MatMul:0", "dense/BiasAdd:0"]
    assert [(m.tensor_name, m.dump_index) for m in report.missed] == [
        ("dense/Relu:0", 0),
        ("loop/mul:0", 0),
        ("loop/mul:0", 1),
        ("a/b:0", 0),
        ("a_b:0", 0),
        ("../x:0", 0),
    ]
    assert {m.reason for m in report.missed} == {f"not harvested: {why}"}
    assert report.error_message == f"{why}; 2 of 8 tensors saved to {out}, 6 not saved"
    assert npy_files(out) == [f"dense_BiasAdd.0.{T0 + 1234}.npy", f"dense_MatMul.0.{T0}.npy"]
    assert [p for p in out.iterdir() if p.is_dir()] == []


def test_hang_while_writing_times_out_per_command(tmp_path: Path) -> None:
    options = LiveOptions(timeouts=Timeouts(startup=10, run=10, command=0.5))
    report, _out = _harvest(tmp_path, options, pt_hang_at=1)
    assert report.aborted == (
        "no tfdbg prompt 0.5 s after writing dense/BiasAdd:0 (dump 0); the process was stopped"
    )
    assert len(report.saved) == 1 and len(report.missed) == 7
    assert report.child_status == "stopped"


def test_tfdbg_errors_are_missed_and_pickled_values_hold_no_numbers(tmp_path: Path) -> None:
    """A tfdbg error is a tensor missed; a value of Python objects (a resource handle, strings)
    is no tensor of numbers: listed apart, not written, no failure of the harvest."""
    report, out = _harvest(tmp_path, pt_refuse=["dense/Relu:0"], pt_pickle=["../x:0"])
    reasons = {(m.tensor_name, m.dump_index): m.reason for m in report.missed}
    assert reasons == {
        ("dense/Relu:0", 0): 'tfdbg: Tensor "dense/Relu:0" did not generate any dumps.',
    }
    assert [(m.tensor_name, m.reason) for m in report.no_values] == [
        ("../x:0", "Python objects, not numbers")
    ]
    _assert_saved_exactly(report, out, skip={"dense/Relu:0", "../x:0"})
    assert report.error_message == f"1 tensor not saved; 6 of 7 tensors saved to {out}"


def test_listing_is_read_from_the_screen_when_lt_cannot_write_its_file(tmp_path: Path) -> None:
    report, out = _harvest(tmp_path, lt_file_fails=True)
    assert report.error_message is None
    _assert_saved_exactly(report, out)


def test_without_a_visible_dump_root_timestamps_are_estimated_in_order(tmp_path: Path) -> None:
    report, out = _harvest(tmp_path, dump_root="elsewhere")
    assert report.timestamps_estimated
    assert report.notes and "timestamps are estimated" in report.notes[0]
    stamps = {(s.tensor_name, s.dump_index): s.timestamp for s in report.saved}
    base = stamps[("dense/MatMul:0", 0)]
    for key, (timestamp, _value) in expected_files(standard_tensors()).items():
        assert stamps[key] - base == timestamp - T0  # the lt times are exact


def test_reharvest_goes_to_fresh_names_and_overwrite_replaces(tmp_path: Path) -> None:
    first, out = _harvest(tmp_path)
    before = {name: (out / name).read_bytes() for name in npy_files(out)}
    second, _ = _harvest(tmp_path)
    assert all(s.fresh_name for s in second.saved)
    assert len(npy_files(out)) == 16
    assert {name: (out / name).read_bytes() for name in before} == before  # untouched
    assert sorted(Path(s.path).name for s in second.saved) == sorted(
        set(npy_files(out)) - set(before)
    )
    third, _ = _harvest(tmp_path, LiveOptions(overwrite=True, timeouts=QUICK))
    # The same names as the first harvest; a_b:0 never replaces the file a/b:0 just wrote.
    assert sum(s.replaced for s in third.saved) == 8
    assert sorted(Path(s.path).name for s in third.saved) == sorted(before)
    assert len(npy_files(out)) == 16
    assert first.error_message is None and third.error_message is None


def test_a_script_that_keeps_running_after_exit_is_stopped(tmp_path: Path) -> None:
    options = LiveOptions(timeouts=Timeouts(startup=10, run=10, command=0.5))
    report, _out = _harvest(tmp_path, options, linger_after_exit=30)
    assert len(report.saved) == 8
    assert report.child_status == "stopped (still running 0.5 s after exit)"


def test_ctrl_c_stops_the_child_and_keeps_the_files(tmp_path: Path) -> None:
    def interrupt_after_two(tick: object, seen: list[int] = []) -> None:  # noqa: B006
        seen.append(1)
        if len(seen) == 2:
            raise KeyboardInterrupt

    report, out = _harvest(tmp_path, progress=ProgressSink(advance=interrupt_after_two))
    assert report.aborted == "interrupted"
    assert report.child_status == "stopped"
    assert len(report.saved) == 2 and len(npy_files(out)) == 2
    assert len(report.missed) == 6
    assert list((tmp_path / "tmp").iterdir()) == []


def test_the_prompt_live_bar_follows_a_whole_harvest(tmp_path: Path) -> None:
    """At the prompt tf_run once stopped after one tensor (the bar expected compare results)."""
    import io

    from rich.console import Console

    from precision_shell.progress import ProgressLabels
    from precision_shell.render.progress import live_progress_factory

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system=None)
    sink = live_progress_factory(console)(ProgressLabels("tf_run", "tensors"))
    report, _ = _harvest(tmp_path, progress=sink)
    assert report.aborted is None and len(report.saved) == 8
    assert "8/8 tensors" in out.getvalue()
