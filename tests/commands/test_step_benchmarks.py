"""A step compared with its own benchmark dir (`tf/dump/step<S>/`): `vc` reads that step's
tensors and says which dir each (rank, step) was compared with, `ni` and the replay use them,
and a step with no benchmark anywhere is said so rather than compared with another's."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from precision_shell.replay.session import replay_op_in_workspace
from precision_shell.workspace.workspace import Workspace
from tests.commands.shell_fixture import CONV2, open_shell, rendered, run_fail, run_ok
from tests.workspace.test_rank_step_checks import _add, _step_dir

RELU2 = "relu2_Relu"  # the benchmark file of CONV2's output 0


def _bench(root: Path) -> Path:
    return root / "precision_data" / "tf" / "dump"


@pytest.fixture
def two_steps(tiny_demo) -> Path:
    """Step 1 a copy of step 0; tf/dump/step1/ a copy of tf/dump/ with relu2's output
    negated (as if the weights had changed between the steps)."""
    root, _ = tiny_demo
    _add(_step_dir(root), "0", "1")
    step1 = _bench(root) / "step1"
    step1.mkdir()
    for f in _bench(root).glob("*.npy"):
        shutil.copy(f, step1 / f.name)
    (negated,) = step1.glob(f"{RELU2}.0.*.npy")
    np.save(negated, -np.load(negated))
    return root


def _output_row(csv_path: str, op: str) -> dict[str, str]:
    with open(csv_path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    return next(r for r in rows if r["TensorIndex"] == f"{op}:output:0")


def test_each_step_is_compared_with_its_own_benchmark_dir(two_steps):
    result = run_ok(open_shell(two_steps), "vc --step all")
    summary = json.loads((result.out_dir / "summary.json").read_text())
    step0, step1 = summary["results"]
    assert Path(step0["right"]) == _bench(two_steps)
    assert Path(step1["right"]) == _bench(two_steps) / "step1"
    cos0 = _output_row(step0["csv"], CONV2)["CosineSimilarity"]
    cos1 = _output_row(step1["csv"], CONV2)["CosineSimilarity"]
    assert float(cos0) > 0.5 and cos1 == f"-{cos0}"  # the same dump, the negated benchmark
    text = rendered(result)
    assert "against tf/dump/: rank 0 step 0" in text
    assert "against tf/dump/step1/: rank 0 step 1" in text
    # the table vcs prints reads the same entries
    assert "against tf/dump/step1/: rank 0 step 1" in rendered(run_ok(open_shell(two_steps), "vcs"))
    # and the page (QA Q27 #4: it never named tf/dump/step1/): its own dir, and the table's
    page = run_ok(open_shell(two_steps), "report --step 1").path.read_text(encoding="utf-8")
    assert "<dt>Benchmark</dt><dd>tf/dump/step1/</dd>" in page
    assert "Against tf/dump/: rank 0 step 0. Against tf/dump/step1/: rank 0 step 1." in page
    page = run_ok(open_shell(two_steps), "report --step 0").path.read_text(encoding="utf-8")
    assert "<dt>Benchmark</dt><dd>tf/dump/</dd>" in page


def test_ni_and_the_replay_read_the_steps_benchmark(two_steps):
    text = rendered(run_ok(open_shell(two_steps), f"ni {CONV2} --step 1"))
    assert f"step1/{RELU2}.0." in text
    assert f" {RELU2}.0." in rendered(run_ok(open_shell(two_steps), f"ni {CONV2} --step 0"))
    ws = Workspace.open(two_steps, use_cache=False)
    report = replay_op_in_workspace(ws, None, CONV2, "0", "1")
    (out,) = report.outputs
    assert out.benchmark is not None and Path(out.benchmark).parent == _bench(two_steps) / "step1"
    first = replay_op_in_workspace(ws, None, CONV2, "0", "0")
    assert first.outputs[0].benchmark is not None
    assert Path(first.outputs[0].benchmark).parent == _bench(two_steps)


def test_a_step_without_a_benchmark_is_said_so_not_compared_with_another(two_steps):
    for f in _bench(two_steps).glob("*.npy"):  # only step 1 has benchmark tensors now
        f.unlink()
    shell = open_shell(two_steps)
    result = run_ok(shell, "vc --step all")
    summary = json.loads((result.out_dir / "summary.json").read_text())
    assert [(r["rank"], r["step"]) for r in summary["results"]] == [("0", "1")]
    assert summary["nothing_to_compare"] == [
        {
            "rank": "0",
            "step": "0",
            "reason": "no benchmark tensor in tf/dump/rank0/step0/, step0/, rank0/ or "
            "tf/dump/ itself",
        }
    ]
    failed = run_fail(shell, "vc --step 0")
    assert failed.error == (
        "debug_0 rank 0 step 0: no benchmark tensor in tf/dump/rank0/step0/, step0/, rank0/ "
        "or tf/dump/ itself"
    )
    # ni of step 0 says why the compare has no rows there (not "vc --step 0 compares it")
    text = " ".join(rendered(run_ok(shell, f"ni {CONV2} --step 0")).replace("│", " ").split())
    assert (
        "found nothing to compare in rank 0 step 0: no benchmark tensor in tf/dump/rank0/step0/,"
        " step0/, rank0/ or tf/dump/ itself"
    ) in text
    assert "compares it" not in text
    (step1_file,) = (_bench(two_steps) / "step1").glob(f"{RELU2}.0.*.npy")
    assert run_fail(shell, f"pt {step1_file.name} --step 0").error == (
        f"{step1_file.name}: step 0 has no benchmark dir; tf/dump/step1/{step1_file.name} is "
        "another rank's or step's tensor: give that path to read it"
    )


def test_pt_and_cp_read_a_benchmark_name_in_the_steps_own_dir_or_say_where_it_is(two_steps):
    """QA: with relu2's file missing from tf/dump/step1/, `pt X.npy --step 1` and `cp` read
    tf/dump/X.npy (step 0's tensor) without a word; and X.npy in both dirs printed the same
    name over different values, both saved to one temp/pt file."""
    (negated,) = (_bench(two_steps) / "step1").glob(f"{RELU2}.0.*.npy")
    name = negated.name
    shell = open_shell(two_steps)
    step0 = run_ok(shell, f"pt {name}").items[0]
    step1 = run_ok(shell, f"pt {name} --step 1").items[0]
    assert (step0.label, step1.label) == (name, f"step1/{name}")
    assert step1.stats.mean == pytest.approx(-step0.stats.mean)
    assert step0.text_file != step1.text_file  # each its own file under temp/pt/
    compared = run_ok(shell, f"cp {CONV2} {name} --step 1")
    assert compared.right == f"step1/{name}"
    negated.unlink()  # step 1's dir no longer has it: tf/dump/'s is step 0's tensor
    failed = run_fail(open_shell(two_steps), f"pt {name} --step 1")
    assert failed.error == (
        f"{name}: no benchmark of that name in tf/dump/step1/, the benchmark dir of step 1; "
        f"tf/dump/{name} is another rank's or step's tensor: give that path to read it"
    )
    assert run_fail(open_shell(two_steps), f"cp {CONV2} {name} --step 1").error == failed.error
    given = run_ok(open_shell(two_steps), f"pt tf/dump/{name} --step 1").items[0]
    assert given.stats.mean == pytest.approx(step0.stats.mean)  # the path given is read


@pytest.mark.parametrize(
    ("make", "why", "warning"),
    [
        ("empty", "tf/dump/step1/ holds no benchmark tensor", None),
        ("file", "tf/dump/step1/ is not a dir", "{d}: not a dir; no benchmark of step1"),
        ("fifo", "tf/dump/step1/ is not a dir", "{d}: not a dir; no benchmark of step1"),
        (
            "above",
            "tf/dump/step1/ is a symlink to {tf}, above tf/dump/",
            "{d}: a symlink to {tf}, above {top} (a loop); skipped",
        ),
    ],
)
def test_a_step_dir_that_cannot_serve_leaves_its_step_without_a_benchmark(
    two_steps, make, why, warning
):
    """QA: an empty, unreadable or FIFO tf/dump/step1, or a link above tf/dump/, had step 1
    compared with tf/dump/ (step 0's tensors) without a word."""
    import os

    top = _bench(two_steps)
    step1 = top / "step1"
    shutil.rmtree(step1)
    if make == "empty":
        step1.mkdir()
    elif make == "file":
        step1.write_text("not a dir")
    elif make == "fifo":
        os.mkfifo(step1)
    else:
        step1.symlink_to("..")
    shell = open_shell(two_steps)
    fill = {"d": step1, "tf": top.parent, "top": top}
    if warning is not None:
        assert warning.format(**fill) in shell.context.workspace.warnings
    result = run_ok(shell, "vc --step all")
    summary = json.loads((result.out_dir / "summary.json").read_text())
    assert [(r["rank"], r["step"]) for r in summary["results"]] == [("0", "0")]
    assert summary["nothing_to_compare"] == [
        {"rank": "0", "step": "1", "reason": f"its benchmark dir {why.format(**fill)}"}
    ]


def test_a_step_dir_linked_to_tf_dump_itself_or_misnamed_is_said_and_not_used(two_steps):
    top = _bench(two_steps)
    shutil.move(top / "step1", top / "step01")  # not named as the dump's step dirs are
    shell = open_shell(two_steps)
    assert (
        f"{top / 'step01'}: not a rank or step benchmark dir name (rank<R>, step<S>, numbered "
        "as the dump dirs are: step1, not step01); its tensors are not used"
    ) in shell.context.workspace.warnings
    summary = json.loads((run_ok(shell, "vc --step all").out_dir / "summary.json").read_text())
    assert [Path(r["right"]) for r in summary["results"]] == [top, top]  # as the warning says
    shutil.rmtree(top / "step01")
    (top / "step1").symlink_to(".")
    shell = open_shell(two_steps)
    assert (
        f"{top / 'step1'}: a symlink to {top} itself, not a benchmark dir of its own; skipped"
    ) in shell.context.workspace.warnings
    summary = json.loads((run_ok(shell, "vc --step all").out_dir / "summary.json").read_text())
    assert [Path(r["right"]) for r in summary["results"]] == [top, top]  # not "step1/"
    assert run_fail(shell, "tf_dump --run 0 --into step01").error.startswith(
        "tf_dump: --into takes step<S>, rank<R>"
    )


def test_a_rank_alone_reads_the_benchmark_of_its_first_step(two_steps):
    """QA: rank 1 dumped only step 1; `cp`/`pt ... --rank 1` read tf/dump/ (step 0's tensor)
    while vc and ni --rank 1 read step1/."""
    _add(_step_dir(two_steps), "1", "1")  # rank 1: step 1 only
    (negated,) = (_bench(two_steps) / "step1").glob(f"{RELU2}.0.*.npy")
    shell = open_shell(two_steps)
    alone = run_ok(shell, f"pt {negated.name} --rank 1").items[0]
    assert alone.label == f"step1/{negated.name}"
    assert alone.stats.mean == pytest.approx(float(np.load(negated).mean()))
    assert run_ok(shell, f"cp {CONV2} {negated.name} --rank 1").right == f"step1/{negated.name}"


def test_a_compare_with_the_dir_given_is_not_called_stale(two_steps):
    """QA: right after `vc -lt debug_0 -rt tf/dump --step all`, vcs said the compare predated
    step 1's benchmark becoming step1/ (it was there all along; -rt was the user's choice)."""
    shell = open_shell(two_steps)
    run_ok(shell, f"vc -lt debug_0 -rt {_bench(two_steps)} --step all")
    assert not any("predates" in n for n in run_ok(shell, "vcs --step 1").notes)
