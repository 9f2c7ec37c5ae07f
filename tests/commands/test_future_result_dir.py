"""A result dir dated in the future (a crafted name, or a clock ahead) is never taken as the
newest compare: it would hide every compare run since (QA: `29991231235959/`, its CSV edited
to all-pass, was shown by `vcs`, `report` and `ni` right after a `vc` that found 6 fails)."""

from __future__ import annotations

import shutil

from tests.commands.shell_fixture import CONV2, open_shell, run_fail, run_ok


def _plant(root, name: str, source) -> None:  # noqa: ANN001
    planted = root / "precision_data" / "temp" / "vector_compare" / name
    shutil.copytree(source, planted)
    for csv in planted.glob("result_*.csv"):  # every row passes: cosine 1
        csv.rename(planted / f"result_{name[:14]}.csv")


def test_a_future_result_dir_is_passed_over_and_said(tiny_demo) -> None:  # noqa: ANN001
    root, _ = tiny_demo
    shell = open_shell(root)
    first = run_ok(shell, "vc")
    for name in ("29991231235959", "99999999999999"):
        _plant(root, name, first.summary_path.parent)
    again = run_ok(shell, "vc")
    shown = run_ok(shell, "vcs")
    assert shown.path == again.primary.csv_path
    note = next(n for n in shown.notes if n.startswith("passed over"))
    assert "29991231235959, 99999999999999" in note and "vcs -f DIR reads one" in note
    assert run_ok(shell, "report").csv_path == again.primary.csv_path
    (info,) = run_ok(shell, f"ni {CONV2}").nodes
    assert info.compare_file == str(again.primary.csv_path)
    # read on purpose: -f takes it
    planted = root / "precision_data/temp/vector_compare/29991231235959"
    assert run_ok(shell, f"vcs -f {planted}").path.parent == planted


def test_only_future_result_dirs_is_an_error_that_says_so(tiny_demo) -> None:  # noqa: ANN001
    root, _ = tiny_demo
    shell = open_shell(root)
    made = run_ok(shell, "vc").summary_path.parent
    _plant(root, "29991231235959", made)
    shutil.rmtree(made)
    error = run_fail(shell, "vcs").error
    assert "29991231235959, dated after now" in error and "run vc" in error


def test_a_copy_dated_minutes_ahead_or_named_bak_is_not_the_newest(tiny_demo) -> None:  # noqa: ANN001
    """QA Q24 #3, #8: a copy of an older compare named 5 minutes ahead (within the slack a
    clock may be off), or `<newest>.bak`, hid the compare just run."""
    import datetime as dt
    import time

    root, _ = tiny_demo
    shell = open_shell(root)
    first = run_ok(shell, "vc").summary_path.parent
    ahead = dt.datetime.fromtimestamp(time.time() + 300).strftime("%Y%m%d%H%M%S")
    _plant(root, ahead, first)  # its summary says when its compare began: before the next
    again = run_ok(shell, "vc")
    _plant(root, f"{again.summary_path.parent.name}.bak", first)
    shown = run_ok(shell, "vcs")
    assert shown.path == again.primary.csv_path
    assert any(".bak" in n for n in shown.notes if n.startswith("passed over"))
    assert any(n.startswith(f"{ahead} in ") and "dated after now" in n for n in shown.notes)
    # without a summary that says when it began, the dir vc made last is still the newest
    (root / "precision_data/temp/vector_compare" / ahead / "summary.json").unlink()
    assert run_ok(shell, "vcs").path == again.primary.csv_path


def test_a_clock_stepped_back_does_not_hide_the_compare_just_run(tiny_demo) -> None:  # noqa: ANN001
    """QA Q26 #2: a compare made while the clock was 4 minutes ahead (its dir's name and its
    summary's start both ahead), then the clock set right and vc run again: the compare just
    run is the newest, and the reader says the dirs' names are out of order."""
    import datetime as dt
    import json
    import time

    root, _ = tiny_demo
    shell = open_shell(root)
    first = run_ok(shell, "vc").summary_path.parent
    ahead = dt.datetime.fromtimestamp(time.time() + 240).strftime("%Y%m%d%H%M%S")
    moved = first.with_name(ahead)
    first.rename(moved)
    summary = json.loads((moved / "summary.json").read_text())
    summary["started_ns"] += 240 * 10**9
    (moved / "summary.json").write_text(json.dumps(summary))
    (moved.parent / ".latest").write_text(ahead)  # that vc made it last, then
    again = run_ok(shell, "vc --step 0")
    assert again.summary_path.parent.name < ahead  # named, and begun, before the other
    looked, written = run_ok(shell, "vcs"), run_ok(shell, "report")
    assert looked.path == written.csv_path == again.primary.csv_path
    for notes in (looked.notes, written.notes):
        note = next(n for n in notes if "dated after now" in n)
        assert note.startswith(f"{ahead} in ") and "which one vc made last" in note
    (info,) = run_ok(shell, f"ni {CONV2}").nodes
    assert info.compare_file == str(again.primary.csv_path)
