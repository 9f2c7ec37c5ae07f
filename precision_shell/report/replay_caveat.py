"""The page's caveat on a replay cut short (Ctrl-C, SIGTERM or its budget): what `ac -c`
said in the terminal about the ops and slices it left, read back from the summary's
`diagnosis.replay`, so that the page does not show a root cause the replay may not have
had the time to overturn as if it were final."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from precision_shell.compare.diagnosis.replay_evidence import ReplayPass, stop_reason
from precision_shell.listing_text import some_of
from precision_shell.render.replay_lines import before_fault_text
from precision_shell.termination import recorded_stop

# a summary written before the stop was recorded: either
_UNRECORDED_STOP = "Ctrl-C or SIGTERM"


def _number(record: dict[str, Any], key: str) -> int:
    value = record.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _pass_of(record: dict[str, Any]) -> ReplayPass:
    """The counts of one recorded pass that the terminal's wording reads."""
    budget = record.get("budget_s")
    before = record.get("before_fault")
    return ReplayPass(
        mode=str(record.get("mode", "")),
        budget_s=float(budget) if isinstance(budget, int | float) else 0.0,
        interrupted=record.get("interrupted") is True,
        where=record.get("slice") if isinstance(record.get("slice"), str) else None,
        before=before if isinstance(before, str) else None,
        earlier=_number(record, "before_fault_ops"),
        earlier_left=_number(record, "before_fault_not_reached"),
    )


def _stopped_by(record: dict[str, Any]) -> str:
    name = record.get("stopped_by")
    return name if isinstance(name, str) else _UNRECORDED_STOP


def _pass_caveat(record: dict[str, Any], several: bool) -> str | None:
    done = _pass_of(record)
    left = _number(record, "not_reached")
    if not left:
        return None
    on = f"on {done.where}, " if several and done.where else ""
    with recorded_stop(_stopped_by(record)) if done.interrupted else nullcontext():
        if done.before is not None and done.earlier_left:
            return on + before_fault_text(done)
        why = stop_reason(done.interrupted, done.budget_s)
    return f"{on}{left} op{'s' if left != 1 else ''} to replay not reached ({why})"


def replay_caveat(replay: dict[str, Any] | None) -> str | None:
    """What the replay recorded in `replay` (summary.json `diagnosis.replay`) left undone,
    worded as `ac -c` said it; None when it finished what it set out to replay."""
    if not isinstance(replay, dict):
        return None
    slices = replay.get("slices")
    passes = [p for p in slices if isinstance(p, dict)] if isinstance(slices, list) else [replay]
    parts = [c for p in passes if (c := _pass_caveat(p, isinstance(slices, list))) is not None]
    not_begun = replay.get("slices_not_begun")
    interrupted = any(p.get("interrupted") is True for p in passes)
    stopped = next((p for p in passes if p.get("interrupted") is True), replay)
    with recorded_stop(_stopped_by(stopped)) if interrupted else nullcontext():
        budget = _pass_of(passes[0] if passes else replay).budget_s
        why = stop_reason(interrupted, budget)
    if isinstance(not_begun, list) and not_begun:
        names = [str(n) for n in not_begun]
        slices_text = f"{len(names)} slice{'s' if len(names) != 1 else ''}"
        parts.append(f"{slices_text} not begun ({why}): {some_of(names)}")
    if not parts:
        return None
    return f"replay cut short ({why}): the diagnosis rests on the replays done; " + "; ".join(parts)
