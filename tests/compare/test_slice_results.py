"""Which (rank, step) compare a summary's diagnosis and partial state are about
(compare/results/slice_results.py), for summaries written now and before the diagnosis
recorded its compare."""

from __future__ import annotations

from pathlib import Path

from precision_shell.compare.results.diagnosed_slice import diagnosed_slice, diagnosis_elsewhere
from precision_shell.compare.results.slice_results import partial_text
from precision_shell.compare.results.summary import CompareRecord, DiagnosisRecord, RunSummary
from precision_shell.compare.results.thresholds import ThresholdRule

RUN = Path("/x/temp/vector_compare/1")
PRIMARY = "result_1.csv"


def _record(csv: str, interrupted: bool = False) -> CompareRecord:
    return CompareRecord(
        "benchmark",
        "debug_0 rank 0 step 0",
        "tf",
        str(RUN / csv),
        37,
        29,
        8,
        0,
        0,
        3 if interrupted else 14,
        14,
        interrupted,
    )


def _summary(diagnosis: DiagnosisRecord | None, primary_partial: bool = False) -> RunSummary:
    entries = [
        ("0", "0", PRIMARY, primary_partial),
        ("1", "0", "result_1_rank1_step0.csv", False),
        ("0", "10", "result_1_rank0_step10.csv", False),
        ("1", "10", "result_1_rank1_step10.csv", False),
    ]
    results = [
        {"rank": r, "step": s, "csv": str(RUN / c), "rows": 37, "failed": 0, "partial": p}
        for r, s, c, p in entries
    ]
    return RunSummary(
        "/x",
        ThresholdRule.default(),
        _record(PRIMARY, primary_partial),
        device_compare=_record("result_1_device.csv"),
        diagnosis=diagnosis,
        results=results,
    )


def test_the_diagnosis_names_its_compare_and_old_summaries_are_read_as_ac_wrote_them():
    recorded = DiagnosisRecord([], [], None, rank="1", step="10")
    assert diagnosed_slice(_summary(recorded)) == ("1", "10")
    assert DiagnosisRecord.from_json(recorded.to_json()) == recorded
    old_with_cause = DiagnosisRecord([{"op": "conv2", "rank": "1", "step": "0"}], [])
    assert diagnosed_slice(_summary(old_with_cause)) == ("1", "0")
    # no root cause anywhere: ac -c recorded the first compare in (step, rank) order
    assert diagnosed_slice(_summary(DiagnosisRecord([], []))) == ("0", "0")
    assert diagnosed_slice(_summary(None)) is None


def test_another_compare_knows_whether_the_diagnosis_read_it():
    summary = _summary(DiagnosisRecord([{"op": "conv2"}], [], "conv2", rank="0", step="10"))
    assert diagnosis_elsewhere(summary, RUN / "result_1_rank0_step10.csv") is None
    before = diagnosis_elsewhere(summary, RUN / "result_1_rank1_step0.csv")
    assert before is not None
    assert (before.label, before.root_cause, before.diagnosed_here) == (
        "rank 0 step 10",
        "conv2",
        True,
    )
    assert before.command == "--rank 0 --step 10"
    # a card of the step diagnosed: read by the diagnosis (its own cause, if any, recorded)
    beside = diagnosis_elsewhere(summary, RUN / "result_1_rank1_step10.csv")
    assert beside is not None and beside.diagnosed_here and beside.own_cause is None
    own = {"rank": "1", "step": "10", "op": "conv1", "index": 2}
    summary.diagnosis.other_cards = [own]  # type: ignore[union-attr]
    beside = diagnosis_elsewhere(summary, RUN / "result_1_rank1_step10.csv")
    assert beside is not None and beside.own_cause == own
    # a later step than the one diagnosed: not recorded
    summary = _summary(DiagnosisRecord([{"op": "conv2"}], [], "conv2", rank="0", step="0"))
    after = diagnosis_elsewhere(summary, RUN / "result_1_rank1_step10.csv")
    assert after is not None and not after.diagnosed_here
    device = diagnosis_elsewhere(summary, RUN / "result_1_device.csv")
    assert device is not None
    assert (device.label, device.where, device.diagnosed_here) == (
        "the device vs benchmark compare",
        None,
        False,
    )
    # no root cause in any compare: each was diagnosed
    none = _summary(DiagnosisRecord([], [], rank="0", step="0"))
    later = diagnosis_elsewhere(none, RUN / "result_1_rank1_step10.csv")
    assert later is not None and later.diagnosed_here and later.root_cause is None


def test_partial_is_the_state_of_the_compare_looked_at():
    summary = _summary(None, primary_partial=True)
    assert partial_text(summary, RUN / PRIMARY) == "partial: 3 of 14 files"
    assert partial_text(summary, RUN / "result_1_rank1_step0.csv") is None
    assert partial_text(summary, RUN / "result_1_device.csv") is None
