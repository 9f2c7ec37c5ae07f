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


def test_a_benchmark_copied_over_with_its_old_mtime_kept_is_named(tiny_demo, tmp_path):
    """QA Q10: `cp -p` (rsync -a, tar) of other values over a benchmark keeps the source's
    older mtime: vcs, ni and report showed the old compare as current, and ni showed the old
    file's statistics next to it. The copy sets the file's ctime, which no one can set back."""
    import os
    import shutil

    root, _ = tiny_demo
    shell = open_shell(root)
    out_dir = run_ok(shell, "vc").summary_path.parent
    bench = benchmark_path(root, "relu2/Relu")
    other = tmp_path / "other.npy"
    np.save(other, np.load(bench) * 3)
    old = bench.stat().st_mtime_ns - 10**9
    os.utime(other, ns=(old, old))
    shutil.copy2(other, bench)  # cp -p: bytes and the older mtime
    assert bench.stat().st_mtime_ns == old
    line = (
        f"the compare {out_dir} may predate a change to a file it read (tf/dump/{bench.name}): "
        "its mtime is as it was, but a copy that keeps it (cp -p, rsync -a) rewrote or replaced "
        "it, or only chmod or a new hard link touched it; run vc again to be sure"
    )
    assert line in run_ok(shell, "vcs").notes
    node = run_ok(shell, f"ni {CONV2}").nodes[0]
    assert node.compare_notes[0] == line
    assert f"{float(np.load(bench).max()):g}"[:5] in rendered(node)  # the new file's stats


def test_a_benchmark_removed_while_a_sub_dir_came_in_is_seen(tiny_demo):
    """QA Q10: a benchmark deleted and `tf/dump/run_0/` made at the same time: the dir's mtime
    was read as "only a dir came in". Each entry records the names of the files of every dir
    it read."""
    root, _ = tiny_demo
    shell = open_shell(root)
    result = run_ok(shell, "vc")
    out_dir = result.summary_path.parent
    saved = json.loads(result.summary_path.read_text(encoding="utf-8"))
    listings = saved["results"][0]["listings"]
    bench = benchmark_path(root, "relu2/Relu")
    assert "tf/dump" in listings  # keyed in the workspace: a workspace moved still matches
    bench.unlink()
    (bench.parent / "run_0").mkdir()
    assert (
        f"the compare {out_dir} predates files added to or removed from tf/dump: run vc again"
        in run_ok(shell, "vcs").notes
    )


def test_a_compare_of_one_step_names_the_steps_dumped_since(tiny_demo):
    """QA Q10: a one-rank, one-step compare has no rank x step table, and a step dumped after
    it (with a NaN born in it) went unsaid: vcs and report read as an all-clear."""
    import shutil

    from tests.workspace.test_rank_step_checks import _step_dir

    root, _ = tiny_demo
    shell = open_shell(root)
    out_dir = run_ok(shell, "vc").summary_path.parent
    step = _step_dir(root)
    shutil.copytree(step, step.parent / "1")  # a copy: links would touch step 0's files
    line = (
        f"the compare {out_dir} predates rank 0 step 1 (dumped since): "
        "vc --rank 0 --step 1 compares it"
    )
    assert run_ok(shell, "vcs").notes[:1] == [line]
    assert run_ok(shell, f"ni {CONV2}").nodes[0].compare_notes[:1] == [line]


def test_a_graph_changed_after_the_compare_is_named(tiny_demo):
    """QA Q10: a graph edited or replaced after the compare (its ops renamed, another build)
    left vcs showing the compare made with the old one."""
    root, _ = tiny_demo
    shell = open_shell(root)
    out_dir = run_ok(shell, "vc").summary_path.parent
    (graph,) = (root / "precision_data" / "npu" / "debug_0" / "graph").glob("*_Build.txt")
    graph.write_text(graph.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert run_ok(shell, "vcs").notes[:1] == [
        f"the compare {out_dir} predates a change to the graph it read "
        f"(npu/debug_0/graph/{graph.name}): run vc again"
    ]


def test_a_new_dump_session_is_files_added_not_files_changed(tiny_demo):
    """QA Q10: a re-dump in a new session dir read as "changes to 15 files it compared": the
    compare never read those files. A dir it did not read is named as files added."""
    import shutil

    from tests.workspace.test_rank_step_checks import _step_dir

    root, _ = tiny_demo
    shell = open_shell(root)
    out_dir = run_ok(shell, "vc").summary_path.parent
    step = _step_dir(root)
    session = step.parents[3]
    later = session.parent / str(int(session.name) + 1)
    shutil.copytree(session, later)
    notes = run_ok(shell, "vcs").notes
    new_step = later / step.relative_to(session)
    assert notes[:1] == [
        f"the compare {out_dir} predates files added to or removed from "
        f"{new_step.relative_to(root / 'precision_data')}: run vc again"
    ]


def test_a_damaged_or_missing_summary_is_never_read_as_a_compare_of_two_dirs(tiny_demo):
    """QA Q10: with summary.json truncated, ni said the latest compare "compared no (rank,
    step): two dump dirs"; with it removed, vcs --rank 1 --step 0 said the compare had no
    rank/step results, beside its per-(rank, step) CSVs."""
    from tests.commands.shell_fixture import run_fail
    from tests.workspace.test_rank_step_checks import _add, _step_dir

    root, _ = tiny_demo
    step = _step_dir(root)
    _add(step, "1", step.name)
    shell = open_shell(root)
    summary = run_ok(shell, "vc --rank all").summary_path
    text = summary.read_text(encoding="utf-8")
    summary.write_text(text[: len(text) // 2], encoding="utf-8")
    shown = " ".join(rendered(run_ok(shell, f"ni {CONV2} --rank 1 --step 0"), 400).split())
    assert "summary.json: not valid JSON" in shown
    assert "which (rank, step)s the latest compare" in shown and "two dump dirs" not in shown
    summary.unlink()
    error = run_fail(shell, "vcs --rank 1 --step 0").error
    assert "its summary.json is missing or unreadable" in error and "_rank1_step0.csv" in error


def test_no_byte_changed_is_never_said_to_be_a_change(tiny_demo, tmp_path):
    """QA Q14: chmod, a hard-link backup and a moved workspace changed no byte, but were
    "changes to 38 files it compared" (ctime) and "files added or removed" (dirs keyed by
    their absolute path). chmod and links are at most a "may predate"; a move is nothing."""
    import os
    import shutil

    root, _ = tiny_demo
    shell = open_shell(root)
    run_ok(shell, "vc")
    moved = tmp_path / "moved"
    shutil.move(str(root), moved)
    assert not any("predate" in n for n in run_ok(open_shell(moved), "vcs").notes)
    bench = benchmark_path(moved, "relu2/Relu")
    os.chmod(bench, 0o444)
    notes = run_ok(open_shell(moved), "vcs").notes
    assert not any(" predates " in n for n in notes)
    assert any("may predate a change to a file it read (tf/dump/" in n for n in notes)


def test_a_compare_of_two_dirs_given_by_path_says_it_is_stale(tiny_demo):
    """QA Q14: after `vc -lt DIR -rt tf/dump`, a benchmark rewritten was said by ni but not by
    vcs: no (rank, step) entry names the dirs; the compare's own left and right do."""
    from tests.workspace.test_rank_step_checks import _step_dir

    root, _ = tiny_demo
    shell = open_shell(root)
    bench = benchmark_path(root, "relu2/Relu")
    out_dir = run_ok(shell, f"vc -lt {_step_dir(root)} -rt {bench.parent}").summary_path.parent
    assert not any("predate" in n for n in run_ok(shell, "vcs").notes)
    np.save(bench, np.load(bench) * 1.5)
    assert (
        f"the compare {out_dir} predates a change to a file it compared (tf/dump/{bench.name}): "
        "run vc again"
    ) in run_ok(shell, "vcs").notes
