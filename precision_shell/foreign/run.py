"""The compare of two foreign dumps: pair, compute, judge, write; `ac -c` adds the root cause.

Writes `result_<ts>.csv` (our lead columns, the foreign metric columns of
`foreign.metrics`, `CompareFailReason`) and `summary.json` (`"mode": "megengine"` or
`"sigmastar"`) into `-o DIR`, else `<workspace>/precision_data/temp/vector_compare/<ts>/`,
as `vc -lt/-rt` does. The CSV reads back with `read_result_csv`, so `vcs -f` reads it.

A MegEngine var that an `--io-dump` text printed only in part is judged on what both sides
show (`metrics.partial_compare`): its row holds `MegEngineRelativeErrorAtLeast` and fails when
the rule fails that bound; otherwise the row is not compared ("not judged"), never passed.
"""

from __future__ import annotations

import contextlib
import csv
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from precision_shell.compare.metrics.cells import NOT_COMPUTED
from precision_shell.compare.pipeline.execute import given_result_dir, result_dir
from precision_shell.compare.results.schema import (
    LEAD_COLUMNS,
    REASON_COLUMN,
    ResultRow,
    mark_latest,
)
from precision_shell.compare.results.summary import (
    SUMMARY_NAME,
    CompareRecord,
    DiagnosisRecord,
    RunSummary,
)
from precision_shell.compare.results.tally import CompareTally
from precision_shell.compare.results.thresholds import (
    COUNT_MISMATCH_MARK,
    SHAPE_MISMATCH_MARK,
    SIZE_MISMATCH_MARK,
    ThresholdRule,
)
from precision_shell.errors import PrecisionError
from precision_shell.foreign.dumps import (
    MEGENGINE,
    SIGMASTAR,
    ForeignDump,
    ForeignTensor,
    Printed,
    detect_foreign,
    open_foreign,
)
from precision_shell.foreign.metrics import (
    FOREIGN_METRICS,
    MEGENGINE_REL,
    MEGENGINE_REL_AT_LEAST,
    cell,
    compute,
    partial_compare,
    relative_error_bounds,
    rounding_half_step,
)
from precision_shell.foreign.pairing import Pairing, pair_dumps
from precision_shell.foreign.root_cause import (
    ForeignCause,
    InputDump,
    Node,
    graph_causes,
    order_causes,
)
from precision_shell.foreign.sigma_reference import benchmark_is_left, rank_text, reference_rank
from precision_shell.foreign.verdict import default_rule
from precision_shell.formats import sigmastar_dump as sigma
from precision_shell.workspace.layout import workspace_root_or_new
from precision_shell.workspace.output_files import create_output_file, ensure_dir


def foreign_header() -> list[str]:
    return [*LEAD_COLUMNS, *FOREIGN_METRICS, REASON_COLUMN]


@dataclass
class ForeignCompareResult:
    """What `vc -lt A -rt B` (and `ac -c -lt A -rt B`) on two foreign dumps made."""

    family: str
    left: str
    right: str
    method: str  # how tensors were paired
    rule: ThresholdRule
    rows: list[ResultRow]
    summary: RunSummary
    csv_path: Path
    causes: list[ForeignCause] | None = None  # None: no root cause was asked for
    failing: list[ResultRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # lines the terminal must show (pairing)

    @property
    def summary_path(self) -> Path:
        assert self.summary.path is not None
        return self.summary.path

    @property
    def error_message(self) -> str | None:
        return None


def is_foreign_pair(left: str | None, right: str | None) -> bool:
    """Either path is a foreign dump (then both must be, of one family: see `check_pair`)."""
    return any(p and detect_foreign(p) is not None for p in (left, right))


def check_pair(command: str, left: str | None, right: str | None) -> None:
    """Both paths given, both foreign dumps, one family; else a one-line PrecisionError."""
    if not left or not right:
        raise PrecisionError(f"{command}: a MegEngine/SigmaStar compare needs both -lt and -rt")
    found = []
    for path in (left, right):
        kind = detect_foreign(path)
        if kind is None:
            raise PrecisionError(
                f"{path}: not a MegEngine io dump (--bin-io-dump dir, --io-dump text) nor a "
                "SigmaStar DumpDebug dump"
            )
        found.append(kind[0])
    if found[0] != found[1]:
        raise PrecisionError(
            f"{command}: {left} is a {found[0]} dump, {right} a {found[1]} dump; "
            "compare two dumps of one kind"
        )


def output_dir(workspace: Path, output: Path | None) -> tuple[Path, str]:
    """`-o DIR` (created, must not hold a summary.json) or a new timestamped dir under
    `<workspace>/precision_data/temp/vector_compare/`, as vc picks it."""
    if output is None:
        root = workspace_root_or_new(workspace)
        base = ensure_dir(root.parent, root.name, "temp", "vector_compare")
        return result_dir(base)
    return given_result_dir(output)


def _discard(csv_path: Path, out_dir: Path, made_dir: bool) -> None:
    """Remove what a compare that failed wrote: its CSV, its summary, and its dir when the
    compare made it (a `-o DIR` the user gave stays)."""
    for path in (csv_path, out_dir / SUMMARY_NAME):
        path.unlink(missing_ok=True)
    if made_dir:
        with contextlib.suppress(OSError):  # only when empty: nothing of anyone else's goes
            out_dir.rmdir()


def _shape(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _label(t: ForeignTensor) -> str:
    return f"var{t.key} {t.name}" if t.var_id is not None and t.name != t.op_name else t.name


def _pair_metrics(
    left: ForeignTensor, right: ForeignTensor, family: str
) -> tuple[dict[str, float], str, str | None]:
    """The metrics of one pair and the row's reason, or ({}, why not compared); a pair that a
    text dump printed in part gives the bound and, third, the reason if the rule is not
    crossed by it (then the row is not judged). Shapes that differ over the same elements
    are compared flat; MegEngine's compare fails them (`shape mismatch`), and so does the
    row's reason (`SHAPE_MISMATCH_MARK`), printed in part or not; element counts that differ
    it fails too: the row compares the leading values both hold (`COUNT_MISMATCH_MARK`)."""
    if left.count != right.count:
        return _count_mismatch(left, right, family)
    mismatch = family == MEGENGINE and left.shape != right.shape
    shapes = f"{_shape(left.shape)} vs {_shape(right.shape)}"
    if left.partial or right.partial:
        metrics, failed, unjudged = _partial_metrics(left, right)
        if mismatch and metrics:  # QA Q26 #5: failed whatever the values not shown are
            return metrics, f"{SHAPE_MISMATCH_MARK}: {shapes}; {failed}", None
        return metrics, failed, unjudged
    try:
        a, b = left.values(), right.values()
    except PrecisionError as exc:
        return {}, str(exc), None
    if a.size != left.count or b.size != right.count:
        return {}, "the values do not fill the shape", None
    if a.size == 0:
        return {}, "empty tensor", None
    metrics = compute(a, b)
    if mismatch:  # QA Q25 #3: a reshape to the wrong shape passed, its user blamed
        return metrics, f"{SHAPE_MISMATCH_MARK}: {shapes}", None
    if left.shape == right.shape:
        return metrics, "", None
    return metrics, "shapes differ, compared flat", None


def _count_mismatch(
    left: ForeignTensor, right: ForeignTensor, family: str
) -> tuple[dict[str, float], str, str | None]:
    """Two tensors of different element counts: failed, as each family's own compare fails
    them (MegEngine `COUNT_MISMATCH_MARK`, SigmaStar `SIZE_MISMATCH_MARK`; QA Q29 #10), their
    cells measured on the leading values both sides show (printed ones of a text dump)."""
    counts = f"{_shape(left.shape)} has {left.count}, {_shape(right.shape)} has {right.count}"
    mark = COUNT_MISMATCH_MARK if family == MEGENGINE else SIZE_MISMATCH_MARK
    why = f"{mark}: {counts}"
    try:
        a, b = _printed_of(left).values, _printed_of(right).values
    except PrecisionError as exc:
        return {}, f"{why}; {exc}", None
    common = min(a.size, b.size)
    if common == 0:  # an empty side: no cell to fail by, so a row not compared, said why
        tool = "MegEngine's compare" if family == MEGENGINE else "SigmaStar's compareAccuracy"
        return {}, f"element counts differ: {counts} ({tool} fails it); no values to compare", None
    shown = "printed " if left.printed is not None or right.printed is not None else ""
    return (
        compute(a[:common], b[:common]),
        f"{why}; the leading {common} {shown}values compared",
        None,
    )


def _printed_of(t: ForeignTensor) -> Printed:
    """What a side shows of its values: the text's print, or its values in full, exactly."""
    if t.printed is not None:
        return t.printed
    values = t.values()
    if values.size != t.count:
        raise PrecisionError("the values do not fill the shape")
    return Printed.exact(values)


def _shown(printed: Printed) -> str:
    if printed.value_digits is None:
        return f"all {printed.count}"
    if printed.complete:
        return f"all {printed.count} (as %.{printed.value_digits}g)"
    return f"{printed.values.size} of {printed.count}"


def _partial_metrics(
    left: ForeignTensor, right: ForeignTensor
) -> tuple[dict[str, float], str, str | None]:
    """A pair one side of which a text dump printed in part: judged only on what both printed
    (`metrics.partial_compare`); never passed."""
    try:
        lp, rp = _printed_of(left), _printed_of(right)
    except PrecisionError as exc:
        return {}, str(exc), None
    found = partial_compare(lp, rp)
    shown = f"the dumps show left {_shown(lp)}, right {_shown(rp)} values"
    if math.isnan(found.at_least):
        seen = f"{shown}; one side shows nan/inf (MegEngine's rule fails a var holding one)"
        return {MEGENGINE_REL_AT_LEAST: math.nan}, f"{seen}: partial values", None
    facts = f"min/max/mean differ by up to {found.stats_diff:.4g}, l2 by {found.l2_diff:.3%}"
    if found.common:
        facts += f", the {found.common} leading values by up to {found.values_diff:.4g}"
    proven = f"{shown}; {facts}; so {MEGENGINE_REL} >= {found.at_least:.4g}"
    failed = f"{proven} whatever the values not shown are: partial values"
    unjudged = (
        f"{proven}, which crosses no limit, and the values not shown are unknown: "
        "partial values, not judged"
    )
    return {MEGENGINE_REL_AT_LEAST: found.at_least}, failed, unjudged


def _result_row(
    index: int,
    left: ForeignTensor | None,
    right: ForeignTensor | None,
    metrics: dict[str, float],
    reason: str,
) -> ResultRow:
    main = left if left is not None else right
    assert main is not None
    texts = {
        name: cell(metrics[name]) if name in metrics else NOT_COMPUTED for name in FOREIGN_METRICS
    }
    return ResultRow(
        index=index,
        op_type=main.op_type,
        npu_dump=_label(left) if left is not None else "NaN",
        ground_truth=_label(right) if right is not None else "NaN",
        tensor_index=f"{main.op_name}:output:{main.slot}",
        shape=_shape(main.shape),
        texts=texts,
        reason=reason,
        device_dtype=left.dtype if left is not None else "NaN",
        benchmark_dtype=right.dtype if right is not None else "NaN",
    )


def _row(
    index: int,
    left: ForeignTensor | None,
    right: ForeignTensor | None,
    why: str,
    rule: ThresholdRule,
    family: str,
) -> ResultRow:
    """One pair's row. A pair judged on part of its values keeps its bound only when `rule`
    fails it; otherwise it becomes a row not compared (not judged), never a passing one."""
    if left is None or right is None:
        return _result_row(index, left, right, {}, why)
    metrics, reason, unjudged = _pair_metrics(left, right, family)
    row = _result_row(index, left, right, metrics, reason)
    if unjudged is not None and not rule.fails(row):
        return _result_row(index, left, right, {}, unjudged)
    rounded = _rounding_verdict(left, right, row, rule)
    if rounded is not None:
        return _result_row(index, left, right, *rounded)
    return row


def _rounding_verdict(
    left: ForeignTensor, right: ForeignTensor, row: ResultRow, rule: ThresholdRule
) -> tuple[dict[str, float], str] | None:
    """A var a MegEngine text printed in full but rounded (`%.4g`): its verdict on the
    printed values stands only when every value they may stand for gives it (QA Q25 #4:
    1.0014 vs 0.99996, printed 1.001 and 1, passed at 0.000999 where the true error 1.44e-3
    fails); else (metrics, reason) of a row not judged. None: no rounding to account for."""
    lh, rh = _half_steps(left), _half_steps(right)
    if (lh is None and rh is None) or left.partial or right.partial or not row.compared:
        return None  # exact on both sides, or printed in part (`_partial_metrics` judges it)
    if left.count != right.count:
        return None  # failed by its shape whatever the values (QA Q29 #2: it crashed here)
    a, b = left.values(), right.values()
    low, high = relative_error_bounds(
        a, b, np.zeros(a.size) if lh is None else lh, np.zeros(b.size) if rh is None else rh
    )
    fails_low = rule.fails(_with_metric(row, MEGENGINE_REL, low))
    fails_high = rule.fails(_with_metric(row, MEGENGINE_REL, high))
    if fails_low == fails_high:
        return None  # every value the print stands for gives the same verdict
    return {}, (  # as a var printed in part: not judged, never passed
        f"values printed as %.4g: {MEGENGINE_REL} {low:.4g} to {high:.4g} for the values "
        "they stand for, across the limit: rounded values, not judged"
    )


def _half_steps(t: ForeignTensor) -> np.ndarray | None:
    printed = t.printed
    if printed is None or printed.value_digits is None or not printed.complete:
        return None
    return rounding_half_step(printed.values, printed.value_digits)


def _with_metric(row: ResultRow, metric: str, value: float) -> ResultRow:
    """`row` with one metric's cell set to `value` (its metrics are read from its cells)."""
    return replace(row, texts={**row.texts, metric: repr(value)})


def _cells(row: ResultRow) -> list[str]:
    return [
        "" if row.index is None else str(row.index),
        row.op_type,
        row.npu_dump,
        row.device_dtype,
        row.address,
        row.ground_truth,
        row.benchmark_dtype,
        row.tensor_index,
        row.shape,
        *(row.texts.get(c, NOT_COMPUTED) for c in FOREIGN_METRICS),
        row.reason,
    ]


def _own_dump(in_left: bool, in_right: bool, row: ResultRow | None) -> str:
    """Why a var's own dump did not judge it, as the root cause's reason says it."""
    if in_left and in_right and row is not None:
        return f"its own pair not compared: {row.reason}"
    if in_left:
        return "not dumped on the right"
    if in_right:
        return "not dumped on the left"
    return "not dumped on either side"


def _input_dumps(
    pairing: Pairing,
    rows: list[ResultRow],
    left: ForeignDump,
    right: ForeignDump,
    rule: ThresholdRule,
) -> dict[str, dict[int, InputDump]]:
    """For each paired var whose op has inputs that no compared row judges (not dumped on a
    side, or not compared): those inputs judged from the two sides' `-inp` dumps. `rows` are
    the rows of `pairing.pairs`, in its order."""
    paired_rows = list(zip(pairing.pairs, rows, strict=True))
    left_rows = {lt.key: row for (lt, _, _), row in paired_rows if lt is not None}
    right_only = {rt.key: row for (lt, rt, _), row in paired_rows if lt is None and rt}
    right_keys = {t.key for t in right.tensors}
    found: dict[str, dict[int, InputDump]] = {}
    for lt, rt, _ in pairing.pairs:
        if lt is None or rt is None:
            continue
        lin, rin = left.input_dumps.get(lt.key, ()), right.input_dumps.get(rt.key, ())
        states: dict[int, InputDump] = {}
        for i, key in enumerate(lt.inputs):
            own_row = left_rows.get(key)
            if (own_row is not None and own_row.compared) or i >= len(lin) or i >= len(rin):
                continue
            right_key = rt.inputs[i] if i < len(rt.inputs) else ""
            own_row = own_row or right_only.get(right_key)
            own = _own_dump(key in left_rows, right_key in right_keys, own_row)
            dumped = lin[i]  # its title names the var's producer op and that op's inputs
            states[i] = InputDump(
                _row(0, dumped, rin[i], "", rule, MEGENGINE),
                dumped.op_name,
                dumped.op_type,
                dumped.slot,
                dumped.inputs,
                own,
                own_row.index if own_row is not None else None,
            )
        if states:
            found[lt.key] = states
    return found


def float_run_right(left: ForeignDump, right: ForeignDump) -> tuple[ForeignDump, ForeignDump, str]:
    """The pair with SigmaStar's more original run on the right: it is the benchmark
    (SigmaStarRMSE divides by it), as when a workspace pair is opened (`sigma_reference`: the
    framework's run, then the float run, then the quantized one). A left run more original
    than the right is swapped, with the line that says so; two of one kind, or a side that
    cannot tell, stay as given."""
    if left.family != SIGMASTAR:
        return left, right, ""
    ranks = [_reference_rank(d) for d in (left, right)]
    if not benchmark_is_left(*ranks):
        return left, right, ""
    note = (
        f"-lt {Path(left.path).name} is {rank_text(ranks[0])}, -rt {Path(right.path).name} "
        f"{rank_text(ranks[1])}: swapped, the more original run is the benchmark (right)"
    )
    return right, left, note


def _reference_rank(dump: ForeignDump) -> int | None:
    per_tensor = dump.kind == sigma.KIND_DIR and dump.is_float is None
    return reference_rank(Path(dump.path).name, dump.is_float, per_tensor)


def _write_rows(
    csv_path: Path, pairing: Pairing, rule: ThresholdRule, family: str
) -> tuple[list[ResultRow], list[tuple[ForeignTensor, ResultRow]]]:
    """Each pair's row, written to `csv_path` as it is made (a file cut short is removed:
    `create_output_file`); with the left tensor of each row that has one, for the root cause."""
    rows: list[ResultRow] = []
    nodes_src: list[tuple[ForeignTensor, ResultRow]] = []
    with create_output_file(csv_path, keep_on_interrupt=False) as fh:
        writer = csv.writer(fh)
        writer.writerow(foreign_header())
        for index, (lt, rt, why) in enumerate(pairing.pairs, start=1):
            row = _row(index, lt, rt, why, rule, family)
            writer.writerow(_cells(row))
            rows.append(row)
            if lt is not None:
                nodes_src.append((lt, row))
    return rows, nodes_src


def _causes(
    pairing: Pairing,
    rows: list[ResultRow],
    nodes_src: list[tuple[ForeignTensor, ResultRow]],
    left: ForeignDump,
    right: ForeignDump,
    rule: ThresholdRule,
) -> list[ForeignCause]:
    """The root causes: MegEngine's by its graph (inputs judged from `-inp` dumps where their
    own rows cannot), SigmaStar's in layer order."""
    if left.family != MEGENGINE:
        nodes = [
            Node(t.key, t.op_name, t.op_type, t.slot, t.order, (), row) for t, row in nodes_src
        ]
        return order_causes(nodes, rule)
    dumped = _input_dumps(pairing, rows, left, right, rule)
    nodes = [
        Node(t.key, t.op_name, t.op_type, t.slot, t.order, t.inputs, row, dumped.get(t.key, {}))
        for t, row in nodes_src
    ]
    return graph_causes(nodes, rule)


def run_foreign_compare(
    workspace: Path,
    left_path: str,
    right_path: str,
    output: Path | None = None,
    rule: ThresholdRule | None = None,
    diagnose: bool = False,
    command: str = "vc",
) -> ForeignCompareResult:
    """Compare two foreign dumps (left: the device / fixed run, right: the benchmark / float
    run; a SigmaStar float run given as the left is swapped: `float_run_right`); with
    `diagnose`, rank the root causes into summary.json too."""
    check_pair(command, left_path, right_path)
    started = time.monotonic()
    left, right, swapped = float_run_right(open_foreign(left_path), open_foreign(right_path))
    rule = rule or default_rule(left.family)
    pairing = pair_dumps(left, right)
    out_dir, stamp = output_dir(workspace, output)
    csv_path = out_dir / f"result_{stamp}.csv"
    try:
        rows, nodes_src = _write_rows(csv_path, pairing, rule, left.family)
        tally = CompareTally(rule)
        tally.add(rows)
        record = CompareRecord.from_tally(
            tally,
            mode=left.family,
            left=left.path,
            right=right.path,
            csv=csv_path,
            files_done=len(left.tensors),
            files_total=len(left.tensors),
            interrupted=False,
            skipped=[],
            elapsed_s=time.monotonic() - started,
        )
        summary = RunSummary(workspace=str(workspace), rule=rule, primary=record)
        causes = _causes(pairing, rows, nodes_src, left, right, rule) if diagnose else None
        if causes is not None:
            summary.diagnosis = DiagnosisRecord(
                [{**c.to_json(), "pairing": pairing.method} for c in causes], []
            )
        summary.write(out_dir / SUMMARY_NAME)
        mark_latest(out_dir)
    except BaseException:
        # no journal marks a foreign compare cut short: what it wrote must not be read back
        # as a finished compare judged by another rule (QA Q29 #2)
        _discard(csv_path, out_dir, made_dir=output is None)
        raise
    return ForeignCompareResult(
        family=left.family,
        left=left.path,
        right=right.path,
        method=pairing.method,
        rule=rule,
        rows=rows,
        summary=summary,
        csv_path=csv_path,
        causes=causes,
        failing=list(tally.failing),
        notes=[note for note in (swapped, pairing.note) if note],
    )
