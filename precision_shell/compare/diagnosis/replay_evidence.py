"""Replay in the diagnosis: ops recomputed from the device's own inputs, and the root causes
re-ranked by the kernel's measured own error.

Which ops (`ac -c --replay MODE`):
- "candidates" (default): the heuristic's root causes, then the EXTRA_CANDIDATES ops that
  lose the most signal quality by themselves;
- "all": every dumped op whose type (or every fused member's) has a replay kernel: the
  candidates first, then the others by their own quality drop, largest first;
- "none": no replay; every cause is an estimate.
When the candidates prove no fault while outputs fail the thresholds (what drift alone looks
like, and a small fault hidden under it), "candidates" goes on to every other op, as "all"
orders them, within the same budget (`ReplayPass.widen`): a wrong constant of 1% under
float16 drift is often no candidate at all. When the candidates prove a fault, it goes on to
the other dumped ops before the first fault they prove (execution order), in "all"'s order,
within the same budget (`ReplayPass.look_before`): only those can hold an earlier root cause
(a small kernel error upstream of a large wrong constant loses too little to be a candidate),
and the root cause is then the one "all" would name among them. The ops after it are left to
"all".
A time budget bounds the pass (checked between ops); ops it did not reach are counted, never
guessed at. Ctrl-C ends the pass early the same way.

Ranking: a replay that proves the kernel wrong (`replay.session.is_wrong`: beyond 4 ULP and
beyond rounding over the whole output, or a NaN/inf the exact computation does not have) is
measured evidence. Those ops come first, by own error (max ULP of their worst output), then by
execution order; an op the heuristic did not name joins the list this way. Next come the other
faults a replay proves: an op that, fed the benchmark's own data inputs, is still off the
benchmark beyond rounding (its constants or attributes differ: replay/isolated; an op the
heuristic missed under drift joins this way too), and an exact value that overflows the dtype
there; they keep the heuristic's order among themselves. Every other cause follows in the
heuristic's order: an own error within rounding is noise, not a ranking signal.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from precision_shell.compare.diagnosis.root_cause import (
    OUTLIER_DROP,
    OpEvidence,
    RootCause,
    measured_cause,
    own_drops,
    quality_db,
    quality_text,
)
from precision_shell.errors import PrecisionError
from precision_shell.progress import ProgressSink, Tick
from precision_shell.replay.session import (
    OutputReplay,
    ReplayReport,
    dtype_word,
    is_wrong,
    isolated_text,
    missing_kernel,
    replay_op_in_workspace,
    ulp_text,
)
from precision_shell.termination import stop_name
from precision_shell.workspace.graph_index import GraphIndex
from precision_shell.workspace.workspace import RunIndex, Workspace

REPLAY_MODES = ("candidates", "all", "none")
DEFAULT_REPLAY_MODE = "candidates"
DEFAULT_BUDGET_S = 60.0
EXTRA_CANDIDATES = 10  # ops beyond the named causes that "candidates" replays, by own drop


@dataclass
class ReplayPass:
    """What one replay pass did: the reports by op, why others could not be replayed, and
    how many the budget (or Ctrl-C) left out."""

    mode: str
    budget_s: float
    reports: dict[str, ReplayReport] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)  # op -> one-line reason
    undumped: int = 0  # ops ("all") with no tensor dump in this rank/step: nothing to replay
    unreached: list[str] = field(default_factory=list)  # left when the budget ran out / Ctrl-C
    interrupted: bool = False
    elapsed_s: float = 0.0
    where: str | None = None  # the (rank, step) replayed, when the compare covered several
    widened: bool = False  # "candidates" went on to every op: they proved no fault (`widen`)
    left_out: int = 0  # dumped ops with a replay kernel this pass did not target
    # "candidates" went on to the dumped ops before the first fault they proved (`look_before`)
    before: str | None = None  # that fault's op
    earlier: int = 0  # the other dumped ops before it the pass went on to
    earlier_left: int = 0  # of those, the ones the budget (or Ctrl-C) left

    def widen(self, more: ReplayPass) -> None:
        """Take in the pass that went on to every other op after this one's candidates."""
        self._take_in(more)
        self.widened, self.left_out = True, 0

    def look_before(self, fault: str, more: ReplayPass) -> None:
        """Take in the pass that went on to the other dumped ops before `fault`, the first
        fault this one's candidates proved."""
        self._take_in(more)
        self.before, self.earlier_left = fault, more.not_reached
        self.earlier = len(more.reports) + len(more.refused) + more.not_reached

    def _take_in(self, more: ReplayPass) -> None:
        self.reports.update(more.reports)
        self.refused.update(more.refused)
        self.undumped += more.undumped
        self.unreached = [*self.unreached, *more.unreached]
        self.interrupted = self.interrupted or more.interrupted
        self.elapsed_s += more.elapsed_s

    def first_fault(self, graph: GraphIndex) -> str | None:
        """The op, first in execution order, whose replay proves a fault; None: none does."""
        proven = [rec for rec in graph.in_order(self.reports) if proves_fault(self.worst(rec.name))]
        return proven[0].name if proven else None

    @property
    def not_reached(self) -> int:
        return len(self.unreached)

    def skipped(self, op: str) -> str | None:
        """Why `op` has no replay, when it was a target and has none."""
        if op in self.refused:
            return self.refused[op]
        if op in self.unreached:
            why = (
                stop_name()
                if self.interrupted
                else f"the {self.budget_s:g} s replay budget ran out"
            )
            return f"not reached: {why}"
        return None

    def worst(self, op: str) -> OutputReplay | None:
        """The replayed output of `op` with the largest own error, None when not replayed."""
        report = self.reports.get(op)
        if report is None or not report.outputs:
            return None
        return max(
            report.outputs,
            key=lambda out: (proves_wrong(out), proves_constants_differ(out), _ulp_key(out)),
        )

    @property
    def wrong(self) -> list[str]:
        """Ops whose replay proves the kernel wrong, in the pass's order."""
        return [op for op in self.reports if proves_wrong(self.worst(op))]

    @property
    def differing(self) -> list[str]:
        """Ops whose replay from the benchmark's own inputs proves that what the device gave
        them besides data (constants, attributes) differs, in the pass's order."""
        return [op for op in self.reports if proves_constants_differ(self.worst(op))]

    def to_json(self) -> dict[str, object]:
        where = {"slice": self.where} if self.where is not None else {}
        return where | {
            "mode": self.mode,
            "budget_s": self.budget_s,
            "replayed": len(self.reports),
            "kernel_wrong": self.wrong,
            "constants_differ": self.differing,
            "refused": len(self.refused),
            "not_dumped": self.undumped,
            "not_reached": self.not_reached,
            "interrupted": self.interrupted,
            "stopped_by": stop_name() if self.interrupted else None,  # what the terminal said
            "elapsed_s": round(self.elapsed_s, 3),
            "widened": self.widened,
            "left_out": self.left_out,
            "before_fault": self.before,
            "before_fault_ops": self.earlier,
            "before_fault_not_reached": self.earlier_left,
        }


def _ulp_key(out: OutputReplay | None) -> float:
    if out is None:
        return -math.inf
    value = out.own.max_ulp
    return math.inf if math.isnan(value) else value


def proves_wrong(out: OutputReplay | None) -> bool:
    return out is not None and is_wrong(out.own, out.dtype)


def proves_constants_differ(out: OutputReplay | None) -> bool:
    return out is not None and out.constants_differ


def proves_fault(out: OutputReplay | None) -> bool:
    """The replay measured a fault at this op: a wrong kernel, constants (or attributes)
    that differ from the benchmark's, or exact values that overflow the dtype here."""
    return (
        proves_wrong(out) or proves_constants_differ(out) or (out is not None and out.overflow > 0)
    )


def unjudged_before(causes: Sequence[RootCause]) -> list[str]:
    """`conv2 runs before it (53.9 dB lost) and could not be replayed (...): it may be the
    first fault`: the candidates that run before the fault the replay proved and shown
    first, whose replay was tried and could not run (a truncated dump, the budget spent).
    The proven fault heads the panel, but what ran before it is not cleared (QA Q23 #6)."""
    return unjudged_before_cause(causes, causes[0]) if causes else []


def unjudged_before_cause(causes: Sequence[RootCause], first: RootCause) -> list[str]:
    """`unjudged_before` of one fault among a card's `causes` (the first cause of the card
    shown, or the own fault named of another card: QA Q26 #3): nothing unless its replay
    proves it."""
    if not proves_fault(first.replay):
        return []
    return [
        f"{c.op} runs before it ({c.drop_text or 'its loss not measured'}) and could not be "
        "replayed "
        f"({c.replay_skipped}): it may be the first fault"
        for c in causes
        if c is not first and c.position < first.position
        if c.replay is None and c.replay_skipped is not None and not c.input_differs
    ]


def proof_text(out: OutputReplay | None) -> str | None:
    """What the replay proves of an op (`proves_fault`), as the panel and the card notes say
    it; None when it proves nothing."""
    if proves_wrong(out):
        return "its kernel is proven wrong by the replay"
    if proves_constants_differ(out):
        return "the replay proves its constants differ from the benchmark's"
    if out is not None and out.overflow > 0:
        return "the replay proves an overflow born there"
    return None


def stop_reason(interrupted: bool, budget_s: float) -> str:
    """Why a replay stopped before its end: Ctrl-C (or SIGTERM), or its budget."""
    return stop_name() if interrupted else f"the {budget_s:g} s budget ran out"


def measured_fault(cause: RootCause) -> bool:
    """A fault measured at `cause`, not estimated: its replay proves one (`proves_fault`), or
    NaN/inf is born there (finite inputs, a non-finite output: an infinite drop) and no
    replay ran to clear it. Which (rank, step) `ac -c` shows, and whether its default replay
    goes on to other cards, rest on this."""
    if cause.input_differs:
        return True
    if cause.replay is not None:
        return proves_fault(cause.replay)
    return cause.drop_db == math.inf


def measured_text(cause: RootCause) -> str | None:
    """What was measured of `cause` (`measured_fault`), as the panel says it; None: nothing."""
    if cause.input_differs:
        return "the network input itself differs from the benchmark"
    if cause.replay is None and cause.drop_db == math.inf:
        return "NaN/inf is born there from finite inputs"
    return proof_text(cause.replay)


def replay_targets(
    graph: GraphIndex,
    evidence: dict[str, OpEvidence],
    causes: Sequence[RootCause],
    mode: str,
) -> list[str]:
    """The ops a pass of `mode` replays, in the order it replays them."""
    if mode == "none":
        return []
    named = list(dict.fromkeys(c.op for c in causes))
    drops = own_drops(graph, evidence)
    losing = [rec.name for rec in graph.in_order(drops) if rec.name not in named]
    losing.sort(key=lambda op: -drops[op])  # stable: execution order on equal drops
    if mode == "candidates":
        return named + [op for op in losing if drops[op] > 0][:EXTRA_CANDIDATES]
    chosen = set(named) | set(losing)
    return named + losing + [name for name in graph.names() if name not in chosen]


def untargeted(
    ws: Workspace,
    run: RunIndex,
    graph: GraphIndex,
    evidence: dict[str, OpEvidence],
    causes: Sequence[RootCause],
    targets: Sequence[str],
    rank: str | None,
    step: str | None,
) -> list[str]:
    """The ops dumped in this (rank, step) that `targets` leaves out, in "all"'s order."""
    targeted = set(targets)
    return [
        name
        for name in replay_targets(graph, evidence, causes, "all")
        if name not in targeted and ws.dump_files(run, name, rank, step)
    ]


def before(graph: GraphIndex, names: Sequence[str], op: str) -> list[str]:
    """Those of `names` (their order kept) that run before `op`."""
    rec = graph.get(op)
    if rec is None:
        return []
    return [
        name for name in names if (r := graph.get(name)) is not None and r.position < rec.position
    ]


def replayable(graph: GraphIndex, names: Sequence[str]) -> int:
    """How many of `names` have a replay kernel."""
    return sum(1 for name in names if (op := graph.op(name)) is not None and not missing_kernel(op))


def replay_pass(
    ws: Workspace,
    run: RunIndex,
    graph: GraphIndex,
    targets: Sequence[str],
    mode: str,
    *,
    rank: str | None = None,
    step: str | None = None,
    budget_s: float = DEFAULT_BUDGET_S,
    spent_s: float = 0.0,
    where: str | None = None,
    progress: ProgressSink | None = None,
) -> ReplayPass:
    """Replay `targets` in the (rank, step) dump given until the budget runs out; `spent_s`
    of it went to earlier passes of the same command (other slices), `where` names the
    slice in the pass."""
    done = ReplayPass(mode, budget_s, where=where)
    sink = progress or ProgressSink()
    start = time.monotonic()
    left_s = budget_s - spent_s
    runnable: list[str] = []
    for name in targets:
        op = graph.op(name)
        if mode == "all" and op is not None and not ws.dump_files(run, name, rank, step):
            done.undumped += 1  # a Const, a Data, a GE-local op: no kernel ran on the device
            continue
        reason = "not in the graph" if op is None else missing_kernel(op)
        if reason is not None:
            done.refused[name] = reason
        else:
            runnable.append(name)
    sink.start(len(runnable), 0)
    finished = 0
    try:
        for name in runnable:
            if time.monotonic() - start >= left_s:
                break
            try:
                done.reports[name] = replay_op_in_workspace(ws, run, name, rank, step)
            except PrecisionError as exc:
                done.refused[name] = str(exc)
            except MemoryError:
                done.refused[name] = "replay failed: its float64 tensors do not fit in memory"
            except OSError as exc:  # the dump went away or became unreadable since indexing
                done.refused[name] = f"replay failed: {exc.strerror or exc}"
            except (ArithmeticError, IndexError, TypeError, ValueError) as exc:
                # a kernel meeting data it was not written for: one op lost, not the pass
                done.refused[name] = f"replay failed: {type(exc).__name__}: {exc}"
            finished += 1
            sink.advance(Tick())
    except KeyboardInterrupt:
        done.interrupted = True
    finally:
        sink.stop()
        done.unreached = list(runnable[finished:])
        done.elapsed_s = time.monotonic() - start
    return done


def rerank(
    causes: Sequence[RootCause],
    done: ReplayPass,
    graph: GraphIndex,
    evidence: dict[str, OpEvidence],
) -> list[RootCause]:
    """The causes with their replays attached: a network input that differs first, then the
    faults the replay proves (a wrong kernel, constants that differ, an overflow born here)
    in execution order, then the rest (module rule)."""
    found = [replace(c, replay=done.worst(c.op), replay_skipped=done.skipped(c.op)) for c in causes]
    named = {c.op for c in causes}
    for op in dict.fromkeys(done.wrong + done.differing):
        if op in named:
            continue
        report, out = done.reports[op], done.worst(op)
        if out is None:
            continue
        if proves_wrong(out):
            reason = f"replay from the device's own inputs: {out.verdict}"
        else:
            reason = f"replay: {isolated_reason(out)}"
        cause = measured_cause(graph, evidence, op, report.type, reason)
        if cause is not None:
            found.append(replace(cause, replay=out))
    # every fault a replay proves (a wrong kernel, constants that differ, an overflow born
    # there), the first to run first: what goes wrong first is the root cause, whatever a
    # later fault costs (a wrong kernel first at one op, then by its own error)
    proven = sorted(
        (c for c in found if proves_fault(c.replay)),
        key=lambda c: (c.position, not proves_wrong(c.replay), -_ulp_key(c.replay)),
    )
    # ahead of every cause the replay did not prove, which keep the heuristic's order: those
    # it could not judge, then those it clears (their deviation inherited within rounding)
    rest = sorted((c for c in found if not proves_fault(c.replay)), key=replay_clears)
    # a network input fed other data comes first: what goes wrong after it follows from it
    first = [c for c in found if c.input_differs]
    return first + [c for c in proven + rest if not c.input_differs]


def isolated_reason(out: OutputReplay) -> str:
    """The one-line reason of a cause found by its replay from the benchmark's inputs."""
    assert out.isolated is not None
    return isolated_text(out.isolated, out.allowed)


def added_quality_loss(cause: RootCause) -> float | None:
    """The signal quality in dB the op's exact computation loses below its worst data input:
    the input's quality minus the quality of the replay from the device's own inputs against
    the benchmark (the device's output when the replay has no benchmark). None without a
    replay or an input quality."""
    out = cause.replay
    if out is None or math.isnan(cause.input_quality):
        return None
    if out.inherited is not None:
        exact = quality_db(out.inherited.relative_euclidean_distance)
    else:
        exact = cause.output_quality
    return None if math.isnan(exact) else cause.input_quality - exact


def replay_clears(cause: RootCause) -> bool:
    """The replay ran at the op and clears it: an exact kernel whose deviation is inherited
    from its inputs (`replay_reading`'s last case), not one that amplifies it, with every data
    input measured."""
    out = cause.replay
    if out is None or proves_fault(out) or cause.unknown_inputs:
        return False
    added = added_quality_loss(cause)
    return added is not None and added < OUTLIER_DROP


def finds_no_fault(cause: RootCause) -> bool:
    """The replay ran at the op, every data input measured, and proves no fault there (an
    exact kernel that inherits or amplifies its inputs' deviation): the op the diagnosis
    shows is where the deviation shows, not a fault (QA: a clean workspace's softmax headed
    "Root cause")."""
    return cause.replay is not None and not proves_fault(cause.replay) and not cause.unknown_inputs


def root_cause_title(no_fault: bool) -> str:
    """The root-cause panel's heading, the terminal's and the report's."""
    return (
        "Root cause: none proven (the replay finds no fault at this op)"
        if no_fault
        else "Root cause"
    )


def replay_reading(cause: RootCause) -> str | None:
    """What the replay says about `cause` in one sentence, None when none ran.

    A wrong kernel is named as such. An op that, fed the benchmark's own data inputs, is still
    off the benchmark beyond rounding (replay/isolated) is given something besides data that
    differs: its constant inputs or attributes. An exact kernel whose exact value overflows
    its dtype is where the overflow happens. An exact kernel whose exact output (the replay
    against the benchmark) is OUTLIER_DROP dB or more worse than its worst data input adds
    error its inputs do not carry: when the replay from the benchmark's inputs matches to
    rounding, its own math amplifies its inputs' deviation. Without that replay (a data input
    has no benchmark tensor) the op's constants are the suspects when it takes any, else its
    math. Otherwise the deviation is inherited from its inputs. The margin is the loss an op
    must show on its own to be a candidate: float16 drift alone adds at most 6.3 dB at an
    exact op other than softmax (measured over every op of 84 deep drift-only demo networks),
    a wrong weight scaled by 1.3 under that drift 17 dB; softmax, which takes no constant,
    amplifies its inputs' drift by up to 14 dB there."""
    out = cause.replay
    if out is None:
        return None
    if proves_wrong(out):
        return out.verdict
    exact = f"the kernel computes what it is given ({ulp_text(out.own.max_ulp)} ULP own error)"
    if proves_constants_differ(out):
        return f"{exact}, but {isolated_reason(out)}"
    word = dtype_word(out.dtype)
    if out.overflow:
        return (
            f"{exact}, but {out.overflow} exact values exceed the {word} range: the overflow "
            f"happens here; run this op in float32 or rescale its inputs"
        )
    added = added_quality_loss(cause)
    if added is None and cause.unknown_inputs:
        which = ", ".join(str(k) for k in cause.unknown_inputs)
        plural = "s" if len(cause.unknown_inputs) > 1 else ""
        return (
            f"{exact}, so what differs is what it was given: its data input{plural} {which} "
            "(no benchmark tensor to compare with: harvest it) or its "
            "constant inputs"
        )
    if added is None:
        return f"{exact}; its inputs' deviation is unknown, so what it adds is not measured"
    in_q = cause.input_quality
    qualities = f"inputs {quality_text(in_q)}, its exact output {quality_text(in_q - added)}"
    loses = (
        f"{exact}, yet from the device's inputs its exact output loses {added:.1f} dB "
        f"more than they carry ({qualities})"
    )
    if out.isolated is not None:
        matches = (
            "from the benchmark's own inputs it matches the benchmark within rounding "
            f"({out.isolated.relative_euclidean_distance:.2g} rel. Euclidean, rounding allows "
            f"{out.allowed:.2g})"
        )
        if added >= OUTLIER_DROP:
            return (
                f"{loses}; {matches}, so what it adds comes from its own math amplifying its "
                "inputs' deviation: look at why they deviate, or run it in float32"
            )
        return f"{exact}: its deviation is inherited from its inputs ({qualities}); {matches}"
    if added >= OUTLIER_DROP and cause.takes_constants is False:
        return (
            f"{loses}: it takes no constant inputs, so its own math amplifies its inputs' "
            "deviation (as exp and softmax do): look at why they deviate, or run it in float32"
        )
    if added >= OUTLIER_DROP:
        return (
            f"{loses}: what differs is what the device gave it besides data: its constant "
            "inputs (weights, bias, scale) or its attributes"
        )
    return f"{exact}: its deviation is inherited from its inputs ({qualities})"
