"""The replay's lines of `ac -c`: one pass (`replay (candidates): ...`), its going on to the
ops before a proven fault, and the passes over several (rank, step) slices. Plain text, so
that the HTML report says what the terminal said (`report.replay_caveat`)."""

from __future__ import annotations

from precision_shell.compare.diagnosis.replay_evidence import ReplayPass, stop_reason
from precision_shell.compare.diagnosis.slice_replays import CANDIDATES_BEFORE_FAULT, SliceReplays
from precision_shell.listing_text import some_of


def replay_pass_line(done: ReplayPass, alone: bool = True) -> str:
    """`replay (candidates): 5 ops replayed in 0.02 s, 1 kernel wrong; 2 refused; ...`; a
    pass over one slice of several compared says which, and how to replay another (`alone`:
    no other card was replayed by itself, `named_replays_line`)."""
    wrong = done.wrong
    where = ""
    if done.where is not None and not alone:
        where = f" of {done.where}"
    elif done.where is not None:
        where = (
            f" of {done.where} only (ac -c --rank R --step S replays another; "
            "--replay all every compared slice)"
        )
    mode = done.mode
    if done.widened:
        mode += ", then every op: the candidates proved no fault"
    if done.before is not None:
        mode += ", then the ops before the first fault they proved"
    parts = [f"replay ({mode}){where}: {len(done.reports)} ops replayed in {done.elapsed_s:.2f} s"]
    parts[0] += _wrong_text(len(wrong))
    parts[0] += _differing_text(len(done.differing))
    if done.refused:
        parts.append(f"{len(done.refused)} without a replay (no kernel, attribute or dump)")
    if done.undumped:
        parts.append(f"{done.undumped} not dumped")
    if done.before is not None:
        parts.append(before_fault_text(done))
    elif done.not_reached:
        why = stop_reason(done.interrupted, done.budget_s)
        parts.append(f"{done.not_reached} not reached ({why})")
    if done.left_out:
        parts.append(
            f"{done.left_out} other dumped op{'s' if done.left_out != 1 else ''} with a kernel "
            "not replayed (--replay all replays them)"
        )
    return "; ".join(parts)


def named_replays_line(passes: list[ReplayPass]) -> str:
    """`replayed by themselves too, as ac -c --rank R --step S replays one (a fault of their
    own is named above): rank 0 step 0: 8 ops in 0.02 s, 0 kernels wrong, 1 op whose
    constants differ (conv2)`: the other cards named with a fault of their own, whose proof
    comes from these replays, not from the passes of the line before (QA Q21 #4)."""
    shown = []
    for p in passes:
        text = f"{p.where}: {_ops(len(p.reports))} in {p.elapsed_s:.2f} s"
        text += _wrong_text(len(p.wrong))
        if p.wrong:
            text += f" ({some_of(p.wrong)})"
        text += _differing_text(len(p.differing))
        if p.differing:
            text += f" ({some_of(p.differing)})"
        if p.not_reached:
            text += f", {p.not_reached} not reached ({stop_reason(p.interrupted, p.budget_s)})"
        shown.append(text)
    return (
        "replayed by themselves too, as ac -c --rank R --step S replays one (a fault of their "
        "own is named above): " + "; ".join(shown)
    )


def before_fault_text(done: ReplayPass) -> str:
    """How far the candidates' going on to the ops before their first proven fault got
    (`ReplayPass.look_before`): every one, or how many the budget (or Ctrl-C) left."""
    ops = f"other dumped op{'s' if done.earlier != 1 else ''} before {done.before}"
    first = "(the first fault the candidates proved)"
    if not done.earlier_left:
        return f"the {done.earlier} {ops} {first} replayed too, to find a fault before it"
    why = stop_reason(done.interrupted, done.budget_s)
    return (
        f"{done.earlier_left} of the {done.earlier} {ops} {first} not reached ({why}): an "
        "earlier fault is not ruled out"
    )


def _wrong_text(count: int) -> str:
    """ ", 1 kernel wrong": said whatever the count (0 kernels wrong is a finding too)."""
    return f", {count} kernel{'s' if count != 1 else ''} wrong"


def _differing_text(count: int) -> str:
    """ ", 1 op whose constants differ": said only when the replay found any."""
    if not count:
        return ""
    return f", {count} op{'s' if count != 1 else ''} whose constants differ from the benchmark's"


def slice_replays_line(done: SliceReplays) -> str:
    """`replay (all) of 4 rank/step slices: 532 ops replayed in 0.45 s, 1 kernel wrong
    (rank 2 step 0: OP); ...`, and the slices the budget (or Ctrl-C) left unfinished; the
    default's going on says how far it went and which slices it left."""
    passes, wrong, unfinished = done.passes, done.wrong, done.unfinished
    replays = sum(len(p.reports) for p in passes)
    ops = len(set().union(*(p.reports for p in passes)))
    if done.mode == "all":
        what = f"replay (all) of {len(passes)} rank/step slices"
    else:  # the default, gone on from the first slice (slice_replays.replay_going_on)
        what = f"{_going_on_text(done)} of {len(passes)} of {done.slices} rank/step slices "
        what += f"({_went_on_text(done)})"
    head = (
        f"{what}: {ops} op{'s' if ops != 1 else ''} "
        f"replayed ({replays} replays) in {done.elapsed_s:.2f} s{_wrong_text(len(wrong))}"
    )
    if unfinished:
        head += " among them"
    if wrong:
        shown = "; ".join(f"{where}: {op}" for where, op in wrong[:3])
        head += f" ({shown}{'; ...' if len(wrong) > 3 else ''})"
    slices_of: dict[str, list[str]] = {}  # op -> the slices where its constants differ
    for where, op in done.differing:
        slices_of.setdefault(op, []).append(where)
    head += _differing_text(len(slices_of))
    if slices_of:
        shown = "; ".join(f"{op} on {', '.join(at)}" for op, at in list(slices_of.items())[:3])
        head += f" ({shown}{'; ...' if len(slices_of) > 3 else ''})"
    parts = [head]
    refused = len(set().union(*(p.refused for p in passes)))
    if refused:
        parts.append(f"{_ops(refused)} without a replay (no kernel, attribute or dump)")
    undumped = sorted({p.undumped for p in passes if p.undumped})
    if undumped:
        per = f"{undumped[0]}" if len(undumped) == 1 else f"{undumped[0]}-{undumped[-1]}"
        parts.append(f"{per} ops not dumped per slice")
    # a pass cut while going on to the ops before its proven fault says so below
    cut = [p for p in unfinished if p.before is None]
    if cut:
        # a pass cut inside its candidates never got to the ops it would have gone on to
        left = sum(p.not_reached + p.left_out for p in cut)
        interrupted = any(p.interrupted for p in cut)
        why = stop_reason(interrupted, done.budget_s)
        slices = ", ".join(p.where or "" for p in cut)
        parts.append(
            f"{left} not reached ({why}) on {slices}: "
            "ac -c --replay all --rank R --step S replays one slice"
        )
    parts += [f"on {p.where}, {before_fault_text(p)}" for p in passes if p.before is not None]
    finished = [p for p in passes if p.left_out and not p.not_reached]
    left_out = sum(p.left_out for p in finished)
    if left_out:
        why = "their candidates proved a fault, or none of their outputs fails"
        if done.mode == CANDIDATES_BEFORE_FAULT:
            why = "past a proven fault the default replays candidates, and the ops before a fault"
            why += " they prove"
        parts.append(
            f"{left_out} other dumped op{'s' if left_out != 1 else ''} with a kernel not "
            f"replayed on {some_of([p.where or '' for p in finished])} ({why}; --replay all "
            "replays them)"
        )
    if done.not_begun:
        parts.append(
            f"{_slices(len(done.not_begun))} not begun ({done.not_begun_why}): "
            f"{some_of(done.not_begun)} (ac -c --rank R --step S replays one)"
        )
    if done.left:
        parts.append(
            f"{_slices(len(done.left))} of later steps not replayed ({some_of(done.left)}): a "
            "step before them has a measured fault (--replay all replays every one)"
        )
    return "; ".join(parts)


def _going_on_text(done: SliceReplays) -> str:
    """`replay (candidates, then ...)`: what the default did on the slices it replayed."""
    looked_before = any(p.before is not None for p in done.passes)
    if done.mode == CANDIDATES_BEFORE_FAULT:
        then = ", then the ops before the first fault they proved" if looked_before else ""
        return f"replay (candidates{then})"
    then = "then every op where they proved no fault"
    if looked_before:
        then += ", the ops before the first fault where they proved one"
    return f"replay ({done.mode}, {then})"


def _went_on_text(done: SliceReplays) -> str:
    """Why the default went on from the first slice, and to which slices."""
    first = done.passes[0].where
    if done.mode != CANDIDATES_BEFORE_FAULT:
        # QA Q29 #8: "proved no fault" of a slice the budget let replay no op
        proved = "proved no fault" if done.passes[0].reports else "replayed no op"
        return (
            f"{first} {proved}: the others by how far they leave their step's other "
            "cards, but for steps after a measured fault"
        )
    scope = []
    if done.same_step:  # and the fault's op and each card's own first cause (QA Q28)
        scope.append(
            "the candidates before it on the other cards of its step (with it and each card's "
            "first cause)"
        )
    if done.earlier_steps:
        scope.append("every candidate of the earlier steps")
    # every pass after the first is one of those; the others were left or not begun (below)
    skipped = len(done.passes) - 1 < done.same_step + done.earlier_steps
    but = ", but for the slices named below" if skipped else ""
    return (
        f"{first} proved a fault at {done.fault}: {' and '.join(scope)} replayed too{but}; "
        "--replay all replays every op"
    )


def _ops(count: int) -> str:
    return f"{count} op{'s' if count != 1 else ''}"


def _slices(count: int) -> str:
    return f"{count} slice{'s' if count != 1 else ''}"
