"""`vcs`, `ni` and `report` on a compare whose dump or benchmark files changed after it ran:
one line says so (never on a compare of the files as they are)."""

from __future__ import annotations

import html
import json

import numpy as np

from tests.commands.shell_fixture import CONV2, benchmark_path, open_shell, rendered, run_ok


def _stale(text: str) -> list[str]:
    return [line for line in text.splitlines() if "predates" in line]


def test_a_benchmark_rewritten_in_place_after_the_compare_is_named(tiny_demo, tmp_path):
    root, _ = tiny_demo
    shell = open_shell(root)
    result = run_ok(shell, "vc")
    started = json.loads(result.summary_path.read_text(encoding="utf-8"))["started_ns"]
    assert isinstance(started, int) and started > 0
    out_dir = result.summary_path.parent
    assert _stale(rendered(run_ok(shell, "vcs"))) == []
    assert run_ok(shell, f"ni {CONV2}").nodes[0].compare_notes == []
    # np.save over the same path: the file changes, its dir's entries do not
    bench = benchmark_path(root, "relu2/Relu")
    np.save(bench, np.load(bench) * 1.5)
    line = (
        f"the compare {out_dir} predates a change to a file it compared "
        f"(tf/dump/{bench.name}): run vc again"
    )
    assert line in run_ok(shell, "vcs").notes
    assert run_ok(shell, f"ni {CONV2}").nodes[0].compare_notes[0] == line
    assert line in run_ok(shell, f"report -o {tmp_path / 'r.html'}").notes
    page = (tmp_path / "r.html").read_text(encoding="utf-8")  # the page says it too
    assert f'<dt>Stale</dt><dd><span class="bad">{html.escape(line)}</span></dd>' in page
    run_ok(shell, "vc")  # a compare of the files as they are now
    assert not any("predates" in n for n in run_ok(shell, "vcs").notes)
    run_ok(shell, f"report -o {tmp_path / 'fresh.html'}")
    assert "<dt>Stale</dt>" not in (tmp_path / "fresh.html").read_text(encoding="utf-8")


def test_a_file_added_to_a_big_dir_is_seen_by_its_dir(tiny_demo, monkeypatch):
    """Past STAT_MAX entries a dir is not stat'ed file by file: its own mtime tells."""
    from precision_shell.compare.results import input_changes

    root, _ = tiny_demo
    shell = open_shell(root)
    out_dir = run_ok(shell, "vc").summary_path.parent
    monkeypatch.setattr(input_changes, "STAT_MAX", 3)
    bench = benchmark_path(root, "relu2/Relu")
    extra = bench.parent / "extra_op.0.1.npy"
    np.save(extra, np.zeros(2, np.float32))
    assert (
        f"the compare {out_dir} predates files added to or removed from tf/dump: run vc again"
        in run_ok(shell, "vcs").notes
    )
    # the op shown: its own files are stat'ed whatever the dir's size
    np.save(bench, np.load(bench) * 1.5)
    notes = run_ok(shell, f"ni {CONV2}").nodes[0].compare_notes
    assert notes[0] == (
        f"the compare {out_dir} predates a change to a file it compared (tf/dump/{bench.name}) "
        "and files added to or removed from tf/dump: run vc again"
    )


def test_a_step_given_its_own_benchmark_dir_after_the_compare_is_said(tiny_demo, tmp_path):
    """QA: a step1/ harvested after `vc` (step 1 had been compared with tf/dump/, step 0's
    tensors): vcs and report showed the old failures with no word; ni named files of the new
    dir as "files it compared"."""
    import shutil

    from tests.commands.shell_fixture import CONV2
    from tests.workspace.test_rank_step_checks import _add, _step_dir

    root, _ = tiny_demo
    _add(_step_dir(root), "0", "1")
    shell = open_shell(root)
    out_dir = run_ok(shell, "vc --step all").summary_path.parent
    bench = root / "precision_data" / "tf" / "dump"
    (bench / "step1").mkdir()
    for f in bench.glob("*.npy"):
        shutil.copy(f, bench / "step1" / f.name)
    moved = (
        f"the compare {out_dir} predates the benchmark of rank 0 step 1 becoming tf/dump/step1/ "
        "(it compared tf/dump/)"
    )
    notes = run_ok(shell, "vcs --step 1").notes
    assert any(n.startswith(moved) and n.endswith(": run vc again") for n in notes)
    # step 0 still reads tf/dump/, whose files are as they were: a dir came in, no file
    assert not any("predates" in n for n in run_ok(shell, "vcs --step 0").notes)
    ni = run_ok(shell, f"ni {CONV2} --step 1").nodes[0].compare_notes
    assert ni[0].startswith(moved) and "step1/" not in ni[0][len(moved) :]
    page = tmp_path / "r.html"
    assert any(n.startswith(moved) for n in run_ok(shell, f"report --step 1 -o {page}").notes)
