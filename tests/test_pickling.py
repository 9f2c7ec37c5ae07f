"""`pickling.by_fields`: the classes that cross process boundaries (tasks out, result rows
back) come back equal, derived fields included, and pickles made the old way still load."""

from __future__ import annotations

import copy
import pickle
from dataclasses import dataclass

import pytest

from precision_shell.compare.metrics.cells import METRIC_COLUMNS
from precision_shell.compare.pipeline.plan import FileTask, MappingRow
from precision_shell.compare.results.schema import ResultRow
from precision_shell.pickling import by_fields


def _row() -> ResultRow:
    texts = {c: f"0.{i}5" for i, c in enumerate(METRIC_COLUMNS)}
    texts[METRIC_COLUMNS[1]] = "nan"
    return ResultRow(
        7, "Conv2D", "conv1", "tf/conv1", "conv1:output:0", "[1,2,3]", texts,
        reason="r", extras={"sqnr": 12.5}, line=3,
    )  # fmt: skip


def _task() -> FileTask:
    row = MappingRow("*", "/b/conv1.0.npy", reason="")
    return FileTask(
        3, 1, "conv1", "Conv2D", "/d/Conv2D.conv1.1.2.3", (row,), (row, row),
        npu_dump="conv1", last_uses=("/b/conv1.0.npy",),
    )  # fmt: skip


@pytest.mark.parametrize("make", [_row, _task], ids=["row", "task"])
def test_round_trip_is_equal_field_for_field(make):
    obj = make()
    back = pickle.loads(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))
    assert back == obj
    assert type(back) is type(obj)
    for name in type(obj)._pickled_fields:
        assert repr(getattr(back, name)) == repr(getattr(obj, name)), name  # nan != nan


def test_row_keeps_its_derived_fields_without_reparsing():
    row = _row()
    back = pickle.loads(pickle.dumps(row))
    # compare=False fields: equality above does not look at them
    assert repr(back.metrics) == repr(row.metrics)
    assert back.metrics[METRIC_COLUMNS[0]] == 0.05
    assert (back.kind, back.slot) == ("output", 0)
    assert back.nonfinite(METRIC_COLUMNS[1])


def test_task_last_uses_travel_though_out_of_the_repr():
    back = pickle.loads(pickle.dumps(_task()))
    assert back.last_uses == ("/b/conv1.0.npy",)
    assert "last_uses" not in repr(back)


def test_copy_and_deepcopy_still_work():
    row = _row()
    assert copy.copy(row) == row
    deep = copy.deepcopy(row)
    assert deep == row and deep.texts is not row.texts


@pytest.mark.parametrize(
    ("make", "classes"), [(_row, [ResultRow]), (_task, [FileTask, MappingRow])], ids=["row", "task"]
)
def test_a_pickle_made_before_by_fields_still_loads(make, classes, monkeypatch):
    obj = make()
    for cls in classes:  # back to the dataclass's own state methods
        monkeypatch.delattr(cls, "__reduce__")
    old = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    monkeypatch.undo()
    assert b"_rebuild" not in old
    assert pickle.loads(old) == obj
    assert b"_rebuild" in pickle.dumps(obj)


def test_the_new_form_is_smaller_and_names_no_field():
    row = _row()
    assert b"device_dtype" not in pickle.dumps(row)


def test_refuses_a_class_without_slots():
    @dataclass
    class Plain:
        a: int

    with pytest.raises(TypeError, match="slots=True"):
        by_fields(Plain)
