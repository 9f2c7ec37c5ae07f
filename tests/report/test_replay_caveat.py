"""The report of an `ac -c` whose replay was cut short says so, as the terminal did (QA Q7 F4:
after SIGTERM the terminal said "... not reached (SIGTERM): an earlier fault is not ruled
out"; the page showed the root cause with no caveat).

The tiny demo's candidates prove conv2 (its constants differ) and go on to the 4 ops before
it; the replay is stopped on the second of those."""

from __future__ import annotations

import html
import json
import re

from precision_shell import termination
from tests.commands.shell_fixture import CONV2, open_shell, run_fail, run_ok
from tests.diagnosis.drift_cards import replay_line
from tests.diagnosis.test_replay_before_fault import _replayed_ops  # replay N: Ctrl-C

CANDIDATES = 5  # the tiny demo's candidates' replays, before the 4 ops before conv2


def _caveat(page: str) -> str | None:
    found = re.search(r'<p class="note" id="replay-unfinished">(.*?)</p>', page)
    return html.unescape(found.group(1)) if found else None


BEFORE = (
    f"3 of the 4 other dumped ops before {CONV2} (the first fault the candidates proved) "
    "not reached ({why}): an earlier fault is not ruled out"
)


def test_a_replay_stopped_before_the_fault_is_said_on_the_page(tiny_demo, monkeypatch) -> None:
    root, _ = tiny_demo
    shell = open_shell(root)
    _replayed_ops(monkeypatch, CANDIDATES + 2)
    monkeypatch.setattr(termination, "_received", True)  # as SIGTERM leaves it
    outcome = run_fail(shell, "ac -c --report")
    check = outcome.result
    assert BEFORE.format(why="SIGTERM") in replay_line(check)  # the terminal's words
    replay = json.loads(check.compare.summary_path.read_text())["diagnosis"]["replay"]
    assert (replay["interrupted"], replay["stopped_by"]) == (True, "SIGTERM")
    expected = (
        "replay cut short (SIGTERM): the diagnosis rests on the replays done; "
        + BEFORE.format(why="SIGTERM")
    )
    assert _caveat(check.report_path.read_text(encoding="utf-8")) == expected
    # `report` later, in a shell SIGTERM never reached, says what stopped that replay
    monkeypatch.setattr(termination, "_received", False)
    written = run_ok(open_shell(root), f"report -o {root / 'later.html'}")
    assert _caveat(written.path.read_text(encoding="utf-8")) == expected


def test_a_replay_stopped_among_its_candidates_and_a_finished_one(tiny_demo, monkeypatch) -> None:
    root, _ = tiny_demo
    shell = open_shell(root)
    _replayed_ops(monkeypatch, 2)
    check = run_fail(shell, "ac -c --report").result
    # the first candidate proved a fault (the NaN born at l2_loss/Sum): what was left is the
    # ops before it, where an earlier fault could be
    done = check.diagnosis.replays
    assert done.before == "l2_loss/Sum" and done.earlier == done.earlier_left > 0
    assert _caveat(check.report_path.read_text(encoding="utf-8")) == (
        "replay cut short (Ctrl-C): the diagnosis rests on the replays done; "
        f"{done.earlier} of the {done.earlier} other dumped ops before l2_loss/Sum (the first "
        "fault the candidates proved) not reached (Ctrl-C): an earlier fault is not ruled out"
    )
    monkeypatch.undo()
    finished = run_ok(shell, "ac -c --report")
    assert _caveat(finished.report_path.read_text(encoding="utf-8")) is None


def test_slices_cut_and_not_begun_are_named() -> None:
    from precision_shell.compare.diagnosis.replay_evidence import ReplayPass
    from precision_shell.report.replay_caveat import replay_caveat

    done = ReplayPass("candidates", 60.0, where="rank 0 step 0")
    cut = ReplayPass("candidates", 60.0, where="rank 1 step 0", unreached=["a", "b"])
    cut.interrupted = True
    with termination.recorded_stop("SIGTERM"):  # as `ac -c` records it after SIGTERM
        slices = [done.to_json(), cut.to_json()]
    replay = done.to_json() | {"slices": slices, "slices_not_begun": ["rank 2 step 0"]}
    assert replay_caveat(replay) == (
        "replay cut short (SIGTERM): the diagnosis rests on the replays done; on rank 1 step 0, "
        "2 ops to replay not reached (SIGTERM); 1 slice not begun (SIGTERM): rank 2 step 0"
    )
    budget = ReplayPass("candidates", 0.5, unreached=["a"]).to_json()
    assert replay_caveat(budget) == (
        "replay cut short (the 0.5 s budget ran out): the diagnosis rests on the replays done; "
        "1 op to replay not reached (the 0.5 s budget ran out)"
    )
    assert replay_caveat(done.to_json()) is None and replay_caveat(None) is None
