"""`summary.json`: the typed summary of one `vc` run, written and read here only.

A summary holds what was compared (the primary compare, and the device-vs-device one when a
second run exists), under which threshold rule, whether the run is partial (interrupted),
and a `diagnosis` that is absent until a diagnosis ran. The file is written atomically (a
temp name, then a rename), so a reader never sees half a summary. Its numbers follow
`json_numbers` (a computed NaN/inf is "nan"/"inf"/"-inf", null is "not computed"); the writer
refuses a bare NaN token.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from precision_shell.compare.results.tally import CompareTally, row_json
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.errors import FormatError
from precision_shell.file_name_text import json_text
from precision_shell.foreign.dumps import MEGENGINE, SIGMASTAR
from precision_shell.formats.bounded_read import read_bounded_text
from precision_shell.workspace.output_files import replace_output

SUMMARY_NAME = "summary.json"
# Read back from a result dir anyone may have put there: a run of 32 slices of 100k ops writes
# tens of MB; a larger file (a link to /dev/zero, a sparse file) is refused, not read.
MAX_SUMMARY_BYTES = 1 << 30


# compares judged by their own tool's rule, which their summary.json records
RECORDED_RULE_MODES = frozenset({MEGENGINE, SIGMASTAR})


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _strs(value: Any) -> list[str] | None:
    """A list of strings, else None (not recorded, or not a list of names)."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


# summary.json lists the first LISTED_MAX failing outputs (`failing_outputs` counts them all),
# files not matched to the graph and repeated dumps, and the WORST_LISTED worst rows
LISTED_MAX = 50
WORST_LISTED = 10


@dataclass
class CompareRecord:
    """One compare (one CSV) of a run."""

    mode: str
    left: str
    right: str
    csv: str
    rows: int
    compared: int
    constant_inputs: int
    failed: int
    failing_outputs: int
    files_done: int
    files_total: int
    interrupted: bool = False
    failed_by_reason: dict[str, int] = field(default_factory=dict)
    worst: list[dict[str, Any]] = field(default_factory=list)
    failing: list[dict[str, Any]] = field(default_factory=list)  # first 50 failing outputs
    skipped: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    # ops dumped several times in the step (run in a loop): the newest file is compared
    repeated_dumps: list[dict[str, Any]] = field(default_factory=list)
    # `vc --resume`: the files the interrupted run had compared (None: not a resumed run)
    resumed_from_files: int | None = None

    @classmethod
    def from_tally(
        cls,
        tally: CompareTally,
        *,
        mode: str,
        left: str,
        right: str,
        csv: Path,
        files_done: int,
        files_total: int,
        interrupted: bool,
        skipped: list[str],
        elapsed_s: float,
        repeated: list[tuple[str, int, str]] | None = None,
        resumed_from: int | None = None,
    ) -> CompareRecord:
        return cls(
            mode=mode,
            left=left,
            right=right,
            csv=str(csv),
            rows=tally.rows,
            compared=tally.compared,
            constant_inputs=tally.constant_inputs,
            failed=tally.failed,
            failing_outputs=len(tally.failing),
            files_done=files_done,
            files_total=files_total,
            interrupted=interrupted,
            failed_by_reason=dict(tally.failed_reasons),
            worst=[row_json(r) for r in tally.worst(WORST_LISTED)],
            failing=[row_json(r) for r in tally.failing[:LISTED_MAX]],
            skipped=skipped[:LISTED_MAX],
            elapsed_s=round(elapsed_s, 3),
            repeated_dumps=[
                {"op": op, "files": n, "compared": name}
                for op, n, name in (repeated or [])[:LISTED_MAX]
            ],
            resumed_from_files=resumed_from,
        )

    @property
    def partial_text(self) -> str | None:
        """`partial: 16 of 300 files` for an interrupted compare, else None."""
        if not self.interrupted:
            return None
        return f"partial: {self.files_done} of {self.files_total} files"

    def to_json(self) -> dict[str, Any]:
        resumed = (
            {}
            if self.resumed_from_files is None
            else {"resumed_from_files": self.resumed_from_files}
        )
        return {
            "mode": self.mode,
            "left": self.left,
            "right": self.right,
            "csv": self.csv,
            "rows": self.rows,
            "compared": self.compared,
            "not_compared": {
                "constant_inputs": self.constant_inputs,
                "failed": self.failed,
                "by_reason": self.failed_by_reason,
            },
            "failing_outputs": self.failing_outputs,
            "partial": self.interrupted,
            "files_done": self.files_done,
            "files_total": self.files_total,
            "worst": self.worst,
            "failing": self.failing,
            "skipped": self.skipped,
            "elapsed_s": self.elapsed_s,
            "repeated_dumps": self.repeated_dumps,
            **resumed,
        }

    @classmethod
    def from_json(cls, payload: dict[str, Any]) -> CompareRecord:
        not_compared = payload.get("not_compared")
        if not isinstance(not_compared, dict):
            not_compared = {}
        by_reason = not_compared.get("by_reason", payload.get("failed_by_reason"))
        return cls(
            mode=_str(payload.get("mode")),
            left=_str(payload.get("left")),
            right=_str(payload.get("right")),
            csv=_str(payload.get("csv")),
            rows=_int(payload.get("rows")),
            compared=_int(payload.get("compared")),
            constant_inputs=_int(not_compared.get("constant_inputs")),
            failed=_int(not_compared.get("failed", payload.get("failed"))),
            failing_outputs=_int(payload.get("failing_outputs")),
            files_done=_int(payload.get("files_done")),
            files_total=_int(payload.get("files_total")),
            interrupted=bool(payload.get("partial", payload.get("interrupted", False))),
            failed_by_reason={str(k): v for k, v in (by_reason or {}).items() if isinstance(v, int)}
            if isinstance(by_reason, dict)
            else {},
            worst=_dicts(payload.get("worst")),
            repeated_dumps=_dicts(payload.get("repeated_dumps")),
            failing=_dicts(payload.get("failing")),
            skipped=[s for s in payload.get("skipped") or [] if isinstance(s, str)],
            elapsed_s=float(payload.get("elapsed_s") or 0.0)
            if isinstance(payload.get("elapsed_s"), int | float)
            else 0.0,
            resumed_from_files=payload["resumed_from_files"]
            if _int(payload.get("resumed_from_files"), -1) >= 0
            else None,
        )


def recorded_no_fault(cause: dict[str, Any]) -> bool:
    """A recorded root cause whose replay finds no fault at its op (`finds_no_fault`)."""
    replay = cause.get("replay")
    return isinstance(replay, dict) and replay.get("finds_no_fault") is True


def shown_first(causes: list[dict[str, Any]]) -> str | None:
    """The op of the first recorded cause, proven or not: where the deviation shows first."""
    op = causes[0].get("op") if causes else None
    return op if isinstance(op, str) else None


def none_proven(causes: list[dict[str, Any]]) -> bool:
    """The replay ran at the first recorded cause and finds no fault there (`ac -c`'s "Root
    cause: none proven")."""
    return bool(causes) and recorded_no_fault(causes[0])


def proven_root(causes: list[dict[str, Any]]) -> str | None:
    """The first recorded cause's op as the root cause; None when there is none, or when the
    replay finds no fault at it: no view may then call it the root cause (QA Q27 #1)."""
    return None if none_proven(causes) else shown_first(causes)


NO_LOSS = "no op degrades the signal on its own"


def none_found_text(
    compared: int | None, uncompared: int, clean: str = NO_LOSS, see: str = ""
) -> str:
    """Why a diagnosis names no root cause, as every view says it: `clean` only of what was
    compared (`compared` None: not counted); nothing judged when nothing was (QA Q29 #3:
    "nothing fails" in green of a compare of 0 of 2 rows), and the tensors not compared said,
    with where they are listed (`see`) (QA Q29 #5: the page dropped the terminal's caveat)."""
    if compared == 0:
        return f"nothing judged: no tensor could be compared{f' ({see})' if see else ''}"
    if not uncompared:
        return clean
    return (
        f"{clean} among the tensors compared; {uncompared} could not be compared"
        f"{f' ({see})' if see else ''}: a fault among them would not show"
    )


@dataclass
class DiagnosisRecord:
    """What a diagnosis concluded (root causes best first, the advisor's findings), and of
    which (rank, step) compare when the run compared several: its findings and baseline are
    about that compare only."""

    root_causes: list[dict[str, Any]]
    advice: list[dict[str, Any]]
    baseline_first_below: str | None = None
    replay: dict[str, Any] | None = None  # the replay pass (ops replayed, budget...), if one ran
    rank: str | None = None  # the compare diagnosed (None: the run compared one dump dir)
    step: str | None = None
    # `ac -c` on several cards: each other card of the step diagnosed whose own root cause is
    # another op than the root cause's, and each card of another step with a fault of its own
    # (cards.other_step_faults) ({rank, step, op, ...} as a root cause); None: none or one card
    other_cards: list[dict[str, Any]] | None = None
    # what the root-cause panel says beside the op when several cards or steps were dumped, as
    # the terminal printed it (`ac -c`'s `where`, `cards`, their notes, `other steps`), so the
    # report says the same: {"where": str, "cards": str, "card_notes": [str], "other_steps": [str]}
    lines: dict[str, Any] | None = None
    # the other cards of the step that go wrong at the root cause as the card diagnosed does
    # ([rank, step] each: the `cards` line's), so their pages say they share it
    sharing_cards: list[list[str]] | None = None

    @property
    def root_cause(self) -> str | None:
        """`proven_root` of the recorded causes."""
        return proven_root(self.root_causes)

    def to_json(self) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "root_causes": self.root_causes,
            "advice": self.advice,
            "baseline_first_below": self.baseline_first_below,
        }
        if self.replay is not None:
            payload["replay"] = self.replay
        if self.rank is not None and self.step is not None:
            payload["rank"], payload["step"] = self.rank, self.step
        if self.other_cards is not None:
            payload["other_cards"] = self.other_cards
        if self.lines:
            payload["lines"] = self.lines
        if self.sharing_cards:
            payload["sharing_cards"] = self.sharing_cards
        return payload

    @classmethod
    def from_json(cls, payload: dict[str, Any]) -> DiagnosisRecord:
        base = payload.get("baseline_first_below")
        replay = payload.get("replay")
        rank, step = payload.get("rank"), payload.get("step")
        where = rank is not None and step is not None
        return cls(
            _dicts(payload.get("root_causes")),
            _dicts(payload.get("advice")),
            base if isinstance(base, str) else None,
            replay if isinstance(replay, dict) else None,
            str(rank) if where else None,
            str(step) if where else None,
            _dicts(payload["other_cards"]) if "other_cards" in payload else None,
            _lines(payload.get("lines")),
            _pairs(payload.get("sharing_cards")),
        )


def _pairs(value: Any) -> list[list[str]] | None:
    """A record's `sharing_cards` as [rank, step] texts (a crafted summary's other values are
    dropped)."""
    if not isinstance(value, list):
        return None
    pairs = [
        [str(v[0]), str(v[1])]
        for v in value
        if isinstance(v, list) and len(v) == 2 and all(isinstance(x, str | int) for x in v)
    ]
    return pairs or None


def _lines(value: Any) -> dict[str, Any] | None:
    """A record's `lines` as texts only (a crafted summary's other values are dropped)."""
    if not isinstance(value, dict):
        return None
    lines: dict[str, Any] = {}
    for key in ("where", "cards"):
        if isinstance(value.get(key), str):
            lines[key] = value[key]
    for key in ("card_notes", "other_steps", "not_proven"):
        texts = value.get(key)
        if isinstance(texts, list):
            lines[key] = [t for t in texts if isinstance(t, str)]
    return lines or None


@dataclass
class RunSummary:
    """`summary.json` of one `vc` (or `ac -c`) run."""

    workspace: str
    rule: ThresholdRule
    primary: CompareRecord
    device_compare: CompareRecord | None = None
    diagnosis: DiagnosisRecord | None = None  # None: no diagnosis ran on this compare
    # one entry per (rank, step) compare: rank, step, graph, csv, rows, failed, first_failed_op
    results: list[dict[str, Any]] = field(default_factory=list)
    # `vc --across ranks`: per rank that leaves the reference rank, its first output whose
    # values differ {rank, step, first_op, index, cosine, max_abs_error} and its first output
    # the rule fails (`first_failing`: {op, index, cosine, max_abs_error} or None); None (not
    # written) for other compares
    rank_divergence: list[dict[str, Any]] | None = None
    # (rank, step) dump dirs of the compared run that this compare left out: {rank, step}
    not_selected: list[dict[str, Any]] = field(default_factory=list)
    # (rank, step) dump dirs selected but with nothing to compare (an empty step dir, or
    # dumps of another graph only): {rank, step, reason}; never in `not_selected`
    nothing_to_compare: list[dict[str, Any]] = field(default_factory=list)
    # selected (rank, step)s the run was cut short before it compared any of their files
    # (Ctrl-C, a lost worker): {rank, step, files_total}; `vc --resume` compares them
    not_begun: list[dict[str, Any]] = field(default_factory=list)
    created: str = field(
        default_factory=lambda: _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    )
    path: Path | None = None
    # wall clock (ns) just before the compare looked at its inputs: a file modified after it
    # may not be what it compared (results/input_changes.py); None: not recorded
    started_ns: int | None = None
    # the metric columns computed (`vc --alg`); None: every one (not written)
    metrics: list[str] | None = None

    @property
    def partial(self) -> bool:
        return self.primary.interrupted

    @property
    def own_tool_rule(self) -> bool:
        """A MegEngine or SigmaStar compare: judged by that tool's rule, which `rule` records
        (its metrics are its own; columns a row leaves empty are that tool's way)."""
        return self.primary.mode in RECORDED_RULE_MODES

    def cut_text(self) -> str | None:
        """Which compare of the run was cut short (Ctrl-C, a lost worker), and how far it got:
        `partial: 5 of 14 files` (the primary), `rank 1 step 0 partial: 9 of 14 files`,
        `device vs device debug_0 vs debug_1 partial: 6 of 14 files`; None for a whole run."""
        if self.primary.interrupted:
            cut = self.primary.partial_text
            return f"{cut}; {not_begun_text(len(self.not_begun))}" if self.not_begun else cut
        for entry in self.results[1:]:
            if entry.get("partial"):
                done, total = entry.get("files_done"), entry.get("files_total")
                counts = f": {done} of {total} files" if _int(total, -1) >= 0 else ""
                cut = f"rank {entry.get('rank')} step {entry.get('step')} partial{counts}"
                return f"{cut}; {not_begun_text(len(self.not_begun))}" if self.not_begun else cut
        if self.not_begun:
            return not_begun_text(len(self.not_begun))
        device = self.device_compare
        if device is not None and device.interrupted:
            left, right = Path(device.left).name, Path(device.right).name
            return f"device vs device {left} vs {right} {device.partial_text}"
        return None

    def totals(self) -> dict[str, Any]:
        """The whole run at once (every (rank, step) compared), where the top-level fields are
        the primary compare's: what a CI check reads."""
        failed = [e.get("failed") for e in self.results]
        counts = [n for n in failed if isinstance(n, int)]
        if not counts:
            counts = [self.primary.failing_outputs]
        return {
            "results": max(1, len(self.results)),
            "failing_outputs": sum(counts),
            "results_failing": sum(1 for n in counts if n),
            "partial": self.cut_text() is not None,
            "not_selected": len(self.not_selected),
            "nothing_to_compare": len(self.nothing_to_compare),
            "not_begun": len(self.not_begun),
        }

    def to_json(self) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "workspace": self.workspace,
            "created": self.created,
            **({"started_ns": self.started_ns} if self.started_ns is not None else {}),
            "thresholds": self.rule.to_json(),
            **({"metrics": self.metrics} if self.metrics is not None else {}),
            "totals": self.totals(),
            **self.primary.to_json(),
        }
        payload["results"] = self.results
        if self.not_selected:
            payload["not_selected"] = self.not_selected
        if self.nothing_to_compare:
            payload["nothing_to_compare"] = self.nothing_to_compare
        if self.not_begun:
            payload["not_begun"] = self.not_begun
        if self.rank_divergence is not None:
            payload["rank_divergence"] = self.rank_divergence
        if self.device_compare is not None:
            payload["device_compare"] = self.device_compare.to_json()
        if self.diagnosis is not None:
            payload["diagnosis"] = self.diagnosis.to_json()
        return payload

    @classmethod
    def from_json(cls, payload: dict[str, Any], path: Path | None = None) -> RunSummary:
        diagnosis = None
        if isinstance(payload.get("diagnosis"), dict):
            diagnosis = DiagnosisRecord.from_json(payload["diagnosis"])
        elif "advice" in payload:  # the layout before `diagnosis` had its own key
            diagnosis = DiagnosisRecord.from_json(payload)
        device = payload.get("device_compare")
        return cls(
            workspace=_str(payload.get("workspace")),
            rule=ThresholdRule.from_json(payload.get("thresholds")) or ThresholdRule.default(),
            primary=CompareRecord.from_json(payload),
            device_compare=CompareRecord.from_json(device) if isinstance(device, dict) else None,
            diagnosis=diagnosis,
            results=_dicts(payload.get("results")),
            rank_divergence=_dicts(payload["rank_divergence"])
            if "rank_divergence" in payload
            else None,
            not_selected=_dicts(payload.get("not_selected")),
            nothing_to_compare=_dicts(payload.get("nothing_to_compare")),
            not_begun=_dicts(payload.get("not_begun")),
            created=_str(payload.get("created")),
            path=path,
            started_ns=started if (started := _int(payload.get("started_ns"), -1)) >= 0 else None,
            metrics=_strs(payload.get("metrics")),
        )

    def write(self, path: Path) -> None:
        """Atomically: a reader sees the old summary or the new one, never half of one."""
        text = json_text(self.to_json(), indent=2) + "\n"

        def write(fh: IO[Any]) -> None:
            fh.write(text)

        replace_output(path, write, text=True)
        self.path = path


def not_begun_text(count: int) -> str:
    """The selected (rank, step)s a cut-short run never began, counted."""
    what = "rank and step" if count == 1 else "ranks and steps"
    return f"{count} selected {what} not begun"


def run_files_text(done: int, total: int, slices: int) -> str:
    """`partial: 2,410 of 4,320 files in 32 ranks and steps`: how far a run of several
    (rank, step) compares got, all of them counted."""
    return f"partial: {done:,} of {total:,} files in {slices} ranks and steps"


def read_summary(path: Path) -> RunSummary:
    try:
        payload = json.loads(read_bounded_text(path, MAX_SUMMARY_BYTES))
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise FormatError(path, f"not valid JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise FormatError(path, "not a compare summary (expected a JSON object)")
    return RunSummary.from_json(payload, path)


def judging_rule(summary: RunSummary | None, settings_rule: ThresholdRule) -> ThresholdRule:
    """The one rule every reader of a compare (vcs, report, ni) judges it by: the settings'
    thresholds, as vc's were; a MegEngine or SigmaStar compare by its tool's own rule, which
    its summary records (QA Q24 #6: vcs judged by the settings and report by the summary's
    rule, and told 12 and 0 failing ops of one compare)."""
    if summary is not None and summary.own_tool_rule:
        return summary.rule
    return settings_rule


def summary_beside(csv_path: Path) -> RunSummary | None:
    """The summary of the run a result CSV belongs to, or None (an msaccucmp CSV has none)."""
    path = csv_path.parent / SUMMARY_NAME
    return read_summary(path) if path.is_file() else None


class SummaryBacked:
    """What a `vc` result says through its written summary (mixed into the result types)."""

    summary: RunSummary

    @property
    def summary_path(self) -> Path:
        assert self.summary.path is not None
        return self.summary.path

    @property
    def rule(self) -> ThresholdRule:
        return self.summary.rule

    @property
    def error_message(self) -> str | None:
        cut = self.summary.cut_text()
        return f"vc: interrupted ({cut}); the rows written so far are kept" if cut else None

    @property
    def user_interrupted(self) -> bool:
        """Ctrl-C cut the compare (kept as a partial result): a script stops there, as on a
        Ctrl-C outside a compare. (A worker or cluster lost is an error raised instead.)"""
        return self.summary.cut_text() is not None
