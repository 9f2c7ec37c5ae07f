"""`ac -c` over several steps shows the first step with a root cause, and names the faults of
their own that later steps hold (QA: a step-2 wrong constant failing 10 outputs was dropped
behind a step-1 kernel error that failed none).

step 0: a kernel error in dense/MatMul (fails no threshold); step 1: that and a wrong
constant in conv2 (fails them); step 2: healthy."""

from __future__ import annotations

import json

from precision_shell.demo.builder import build_demo
from precision_shell.demo.spec import CORRUPT_INPUT, LOCAL_ERROR, WRONG_CONSTANT, DemoSpec, Fault
from tests.commands.shell_fixture import CONV2, open_shell, rendered, run_ok
from tests.commands.test_second_dump_dir import _link_copy, _step_dir

DENSE = "dense/MatMul"
KERNEL = Fault(LOCAL_ERROR, DENSE, 0.05)
WRONG = Fault(WRONG_CONSTANT, "bn2/FusedBatchNormV3", 0.5)


def _steps(tmp_path):  # noqa: ANN001, ANN202
    root = tmp_path / "ws"
    build_demo(root, DemoSpec(size="tiny", faults=(KERNEL,), second_run=False))
    both = tmp_path / "both"
    build_demo(both, DemoSpec(size="tiny", faults=(KERNEL, WRONG), second_run=False))
    healthy = tmp_path / "healthy"
    build_demo(healthy, DemoSpec(size="tiny", faults=(), second_run=False))
    step = _step_dir(root)
    _link_copy(_step_dir(both), step.parent / "1")
    _link_copy(_step_dir(healthy), step.parent / "2")
    return root, step.parents[2].name


def test_a_later_steps_own_fault_is_named_beside_the_first_root_cause(tmp_path):
    root, rank = _steps(tmp_path)
    shell = open_shell(root)
    check = run_ok(shell, "ac -c --step all")
    panel = check.root_cause
    assert (panel.cause.op, panel.lines.where) == (DENSE, f"rank {rank} step 0")
    (note,) = panel.lines.other_steps
    assert note.startswith(
        f"rank {rank} step 1: a fault of its own at {CONV2} (index 4), 10 outputs failing: "
    )
    assert note.endswith(f" (ac -c --rank {rank} --step 1)")
    assert "other steps   rank" in rendered(check, 200)
    summary = json.loads(check.compare.summary_path.read_text())["diagnosis"]
    assert [(c["rank"], c["step"], c["op"]) for c in summary["other_cards"]] == [(rank, "1", CONV2)]
    # dense/MatMul is the same fault on step 1: not named again
    assert all(DENSE not in n for n in panel.lines.other_steps)
    # the shown cause is proven: no "benign single-point deviation" beside it
    assert "single-point deviation" not in [f.detection for f in panel.findings]


def test_the_later_step_named_is_counted_as_replayed_by_itself(tmp_path):
    """QA Q21 #4: step 1's proof came from its own replay, while the replay line called it
    "not replayed" and summary.json's replay passes had no trace of it."""
    root, rank = _steps(tmp_path)
    check = run_ok(open_shell(root), "ac -c --step all")
    (named,) = check.named_replays
    assert named.where == f"rank {rank} step 1" and CONV2 in named.differing
    text = " ".join(rendered(check, 300).split())
    assert f"of rank {rank} step 0: " in text and f"of rank {rank} step 0 only" not in text
    assert (
        "replayed by themselves too, as ac -c --rank R --step S replays one (a fault of their own "
        f"is named above): rank {rank} step 1: {len(named.reports)} ops in "
    ) in text
    assert f"1 op whose constants differ from the benchmark's ({CONV2})" in text
    replay = json.loads(check.compare.summary_path.read_text())["diagnosis"]["replay"]
    (recorded,) = replay["named_slices"]
    assert recorded["slice"] == f"rank {rank} step 1" and recorded["constants_differ"] == [CONV2]


def test_a_later_steps_own_fault_behind_the_fault_every_card_shares_is_named(tmp_path):
    """QA Q21 #6: every card was fed the same wrong input; step 1 also has a wrong constant.
    Step 1's estimate ranks the input first, the cause shown, and its own fault was named
    nowhere."""
    shared = Fault(CORRUPT_INPUT, "input", 0.1, variant="mean")
    root = tmp_path / "ws"
    build_demo(root, DemoSpec(size="tiny", faults=(shared,), second_run=False))
    both = tmp_path / "both"
    build_demo(both, DemoSpec(size="tiny", faults=(shared, WRONG), second_run=False))
    step = _step_dir(root)
    _link_copy(_step_dir(both), step.parent / "1")
    rank = step.parents[2].name
    check = run_ok(open_shell(root), "ac -c --step all --replay none")
    assert check.root_cause.cause.op == "input"
    (note,) = check.root_cause.lines.other_steps
    assert note.startswith(f"rank {rank} step 1: a fault of its own at {CONV2} (index 4), ")
