"""`ac -c` over several cards names another card's root cause only when it is a fault of its
own, never the drift every card shares (QA: on 16 cards with a 1% filter on one, the other 15
were each said to have "its own root cause" at block44, where float16 drift crosses the
thresholds on every card, the chosen one included; `report` of such a card said so too).

The workspace: the 60-block float16 drift stack on ranks 0-2 x steps 0-1; rank 2 step 1 has a
1% wrong filter in block40/conv2 (drift alone first fails at block44 on every slice)."""

from __future__ import annotations

import json
import shutil

import pytest

from precision_shell.settings import Settings
from precision_shell.shell.context import ShellContext
from precision_shell.shell.dispatcher import Dispatcher
from tests.commands.shell_fixture import open_shell, rendered, run_ok
from tests.diagnosis.drift_cards import DRIFT_FIRST, FAULTY, drift_layout


@pytest.fixture(scope="module")
def drift_cards(tmp_path_factory):
    root = drift_layout(tmp_path_factory, ranks=3, steps=2, faulty_at=("2", "1"))
    ws = tmp_path_factory.mktemp("ws") / "ws"
    shutil.copytree(root, ws, symlinks=True)
    shell = open_shell(ws)
    return shell, run_ok(shell, "ac -c --rank all --step all")


def test_drift_every_card_shares_is_one_line_not_each_cards_own_root_cause(drift_cards):
    _, check = drift_cards
    panel = check.root_cause
    assert (panel.cause.op, panel.lines.where) == (FAULTY, "rank 2 step 1")
    assert DRIFT_FIRST in [c.op for c in check.diagnosis.causes]  # the chosen card's too
    assert panel.lines.cards == (
        "rank 2 only: the other 2 cards match the benchmark here: suspect that card or its "
        "input data"
    )
    assert panel.lines.card_notes == [
        "ranks 0, 1: match the benchmark here and go wrong first beyond it, at "
        f"{DRIFT_FIRST} (index 92), as this card does: drift, no fault of their own"
    ]
    assert panel.lines.other_steps == []  # step 0 is drift alone too
    text = rendered(check, 400)
    assert "its own root cause" not in text
    assert "ranks 0, 1: match the benchmark here and go wrong first beyond it, at" in text
    diagnosis = json.loads(check.compare.summary_path.read_text())["diagnosis"]
    assert (diagnosis["rank"], diagnosis["step"]) == ("2", "1")
    assert "other_cards" not in diagnosis


def test_the_report_of_a_drift_only_card_says_the_same_on_every_step(drift_cards):
    shell, _ = drift_cards
    run = (
        f"none in this compare; the run's root cause: {FAULTY} in rank 2 step 1 "
        "(report --rank 2 --step 1 reports that one)"
    )
    for rank, step in (("0", "0"), ("0", "1"), ("1", "1")):
        report = run_ok(shell, f"report --rank {rank} --step {step}")
        assert f"root cause: {run}" in " ".join(rendered(report, 400).split()), (rank, step)


def test_cards_failing_a_strict_threshold_by_drift_do_not_share_a_proven_fault(
    drift_cards, tmp_path
):
    """QA: with thresholds strict enough that drift fails them at the faulty op on every
    card, the cards line said "on every card: ... suspect the op, not one card" although only
    rank 2's replay proves the fault and the other cards' replays clear the op there."""
    shell, _ = drift_cards
    root = shell.context.workspace.root.parent
    strict = tmp_path / "strict.toml"
    strict.write_text("[thresholds]\nrelative_euclidean_distance = 0.03\n")
    context = ShellContext(root, Settings.load(user_file=strict), use_cache=False)
    check = run_ok(Dispatcher(context), "ac -c --rank all --step all")
    panel = check.root_cause
    assert (panel.cause.op, panel.lines.where) == (FAULTY, "rank 2 step 1")
    ok = [r for r in check.compare.summary.results if (r["rank"], r["step"]) == ("0", "1")]
    assert ok and ok[0]["failed"] > 0  # the drift-only cards do fail the strict thresholds
    assert panel.lines.cards == (
        "rank 2 only: its replay proves the fault here; ranks 0, 1 fail the thresholds here "
        "too, but their replay clears the op (drift): suspect that card or its input data"
    )
