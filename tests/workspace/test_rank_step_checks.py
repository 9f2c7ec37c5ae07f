"""Several ranks and steps in one run: the summary lists them, and a dump dir that names no
parsed graph, a step with only part of its siblings' ops, or a rank dumping other ops than
the others is one warning naming the dir, the rest indexed as usual."""

from __future__ import annotations

import os
from pathlib import Path

from precision_shell.workspace.workspace import Workspace


def _step_dir(root: Path) -> Path:
    """The demo's one `<ts>/<rank>/<graph>/<model>/<step>/` dir of debug_0."""
    dump = root / "precision_data" / "npu" / "debug_0" / "dump"
    return next(p for p in dump.rglob("*") if p.is_file()).parent


def _link_copy(src: Path, dst: Path) -> Path:
    dst.mkdir(parents=True)
    for f in src.iterdir():
        if f.is_file():
            os.link(f, dst / f.name)
    return dst


def _add(step: Path, rank: str, new_step: str) -> Path:
    """A hard-linked copy of `step` as `<ts>/<rank>/<graph>/<model>/<new_step>/`."""
    ts = step.parents[3]
    return _link_copy(step, ts / rank / step.relative_to(step.parents[2]).parent / new_step)


def _drop_op(step: Path) -> str:
    """Remove every dump file of one op (the last by name); returns the file name's op part."""
    victim = sorted(f.name for f in step.iterdir() if f.name != "mapping.csv")[-1]
    op = victim.split(".")[1]
    for f in step.iterdir():
        if f.name.split(".")[1:2] == [op]:
            f.unlink()
    return op


def _run_warnings(ws: Workspace) -> list[str]:
    return [w for w in ws.warnings if "/npu/debug_0/" in w]


def test_summary_lists_each_runs_ranks_and_their_steps(tiny_demo):
    root, _ = tiny_demo
    step = _step_dir(root)
    rank0, s0 = step.parents[2].name, step.name
    _add(step, rank0, "10")
    _add(step, "1", s0)
    _add(step, "1", "10")
    _add(step, "2", s0)  # one step only
    summary = Workspace.open(root).summary()
    assert summary.rank_steps["debug_0"] == {
        rank0: [s0, "10"],
        "1": [s0, "10"],
        "2": [s0],
    }
    assert summary.rank_steps["debug_1"] == {"0": ["0"]}
    dumped = len(Workspace.open(root).run().dumps)
    assert summary.runs[0][3] == 5 * dumped  # every rank and step counted


def test_a_partial_step_is_one_warning_naming_its_dir(tiny_demo):
    root, _ = tiny_demo
    step = _step_dir(root)
    partial = _add(step, step.parents[2].name, "7")
    files = len([f for f in partial.iterdir() if f.name != "mapping.csv"])
    op = _drop_op(partial)
    ws = Workspace.open(root)
    warnings = _run_warnings(ws)
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(f"{partial}: step 7 has dump files of ")
    assert warnings[0].endswith(f"ops its other steps dump; missing {op}")
    run = ws.run()
    assert run.steps() == [step.name, "7"]
    assert len(run.slice(step=step.name).dumps) == files
    assert 0 < len(run.slice(step="7").dumps) < files  # still indexed


def test_a_rank_with_other_ops_is_one_warning_naming_the_rank_dir(tiny_demo):
    root, _ = tiny_demo
    step = _step_dir(root)
    odd = _add(step, "1", step.name)
    op = _drop_op(odd)
    ws = Workspace.open(root)
    warnings = _run_warnings(ws)
    rank_dir = step.parents[3] / "1"
    assert warnings == [
        f"{rank_dir}: rank 1 dumps other ops of graph {step.parents[1].name} than rank "
        f"{step.parents[2].name}: lacks 1 ({op})"
    ]
    assert ws.run().ranks() == [step.parents[2].name, "1"]


def test_the_odd_rank_is_the_one_most_ranks_disagree_with(tiny_demo):
    root, _ = tiny_demo
    step = _step_dir(root)
    _add(step, "1", step.name)
    _add(step, "2", step.name)
    op = _drop_op(step)  # rank 0 itself is the odd one
    warnings = _run_warnings(Workspace.open(root))
    assert warnings == [
        f"{step.parents[2]}: rank {step.parents[2].name} dumps other ops of graph "
        f"{step.parents[1].name} than rank 1: lacks 1 ({op})"
    ]


def test_a_graph_dir_naming_no_parsed_graph_is_a_warning(tiny_demo):
    root, _ = tiny_demo
    step = _step_dir(root)
    graph_dir = step.parents[1]
    renamed = graph_dir.with_name("ge_default_19990101000000_NPU_9")
    graph_dir.rename(renamed)
    ws = Workspace.open(root)
    warnings = _run_warnings(ws)
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(
        f"{renamed}: no parsed graph is named 'ge_default_19990101000000_NPU_9' (graphs: "
    )
    assert warnings[0].endswith("its dumps are matched by op name only")
    assert len(ws.run().dumps) > 0


def test_a_step_given_alone_is_the_lowest_rank_that_dumped_it(tiny_demo):
    """QA Q10: `ls --step 2` where only rank 1 dumped step 2 said "rank 0 has no step 2"."""
    import pytest

    from precision_shell.errors import PrecisionError
    from tests.commands.shell_fixture import open_shell, rendered, run_ok

    root, _ = tiny_demo
    step = _step_dir(root)
    _add(step, "1", step.name)
    _add(step, "1", "2")
    run = Workspace.open(root, use_cache=False).run()
    assert (run.slice(step="2").rank, run.slice(step="2").step) == ("1", "2")
    assert run.slice().rank == "0"
    with pytest.raises(PrecisionError, match=r"no rank dumped step 7; steps: "):
        run.slice(step="7")
    with pytest.raises(PrecisionError, match="rank 0 has no step 2"):
        run.slice("0", "2")
    assert "Conv2D" in rendered(run_ok(open_shell(root), "ls --step 2 -t Conv2D"))
    assert "ops with a dump file in rank 1 step 2" in rendered(
        run_ok(open_shell(root), "ls --step 2")
    )


def test_vcs_says_which_dump_files_the_compare_could_not_place(tiny_demo):
    """QA Q10: vc says "dump files not matched"; vcs on the same result said nothing, and
    those ops simply had no rows."""
    import shutil

    from tests.commands.shell_fixture import open_shell, run_ok

    root, _ = tiny_demo
    step = _step_dir(root)
    real = next(f for f in sorted(step.iterdir()) if f.name.startswith("Conv2D."))
    stray = step / real.name.replace(real.name.split(".")[1], "not_in_the_graph", 1)
    shutil.copy(real, stray)
    shell = open_shell(root)
    result = run_ok(shell, "vc")
    assert (
        result.primary.record().skipped[:1]
        and "not_in_the_graph" in result.primary.record().skipped[0]
    )
    notes = run_ok(shell, "vcs").notes
    assert any(
        n.startswith("1 dump file was not matched to the graph: their ops have no rows here (e.g. ")
        and "not_in_the_graph" in n
        for n in notes
    )
    # the page says it too (QA Q27 #5)
    page = run_ok(shell, "report").path.read_text(encoding="utf-8")
    assert '<dt>Not in the graph</dt><dd><span class="bad">1 dump file was not matched' in page
    assert "not_in_the_graph" in page
