"""A MegEngine var whose own dump is missing on a side but that a consumer's `-inp` dump shows
failing: its producer is named (proven when the producer's inputs pass, else "at or before"),
never "nothing fails" next to failing outputs (QA F5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from precision_shell.compare.results.schema import ResultRow
from precision_shell.foreign.metrics import MEGENGINE_REL
from precision_shell.foreign.root_cause import Node, graph_causes
from precision_shell.foreign.run import ForeignCompareResult
from precision_shell.foreign.verdict import megengine_rule
from precision_shell.shell.dispatcher import Dispatcher
from tests.commands.shell_fixture import open_shell, rendered, run_ok
from tests.foreign.fixtures import PLANTED, write_megengine


@pytest.fixture
def shell(tmp_path: Path) -> Dispatcher:
    (tmp_path / "ws" / "precision_data").mkdir(parents=True)
    return open_shell(tmp_path / "ws")


def _pair(tmp_path: Path, gone: str, *var_files: str) -> tuple[Path, Path]:
    """Clean left, right with mul1 planted; `var_files` (file name prefixes) deleted on the
    `gone` side."""
    left, _ = write_megengine(tmp_path / "left")
    right, _ = write_megengine(tmp_path / "right", planted=True)
    for prefix in var_files:
        for f in (left if gone == "left" else right).glob(f"{prefix}*"):
            f.unlink()
    return left, right


@pytest.mark.parametrize("side", ["left", "right"])
def test_producer_not_dumped_on_one_side_is_named_from_its_consumers_inp_dump(
    shell: Dispatcher, tmp_path: Path, side: str
) -> None:
    left, right = _pair(tmp_path, side, "000008")
    result = run_ok(shell, f"ac -c -lt {left} -rt {right}")
    assert isinstance(result, ForeignCompareResult)
    assert [r.op_name for r in result.failing] == ["cast2", "reduce1"]
    assert result.causes is not None
    assert [c.op for c in result.causes] == [PLANTED]
    (cause,) = result.causes
    assert cause.reason == (
        f"its output var8 (not dumped on the {side}) fails in cast2's input dump (-inp0) "
        "while none of its inputs fail"
    )
    assert [(i["var"], i["op"], i["status"]) for i in cause.evidence["inputs"]] == [
        ("6", "split1", "pass"),
        ("7", "split1", "pass"),
    ]
    (output,) = cause.evidence["outputs"]
    assert (output["var"], output["from"]) == ("8", "cast2's input dump (-inp0)")
    assert output["metrics"][MEGENGINE_REL] > 0.01  # the planted 3% error, seen in the dump
    summary = json.loads(result.summary_path.read_text())
    assert [c["op"] for c in summary["diagnosis"]["root_causes"]] == [PLANTED]
    text = rendered(result, 300)
    assert "nothing fails" not in text
    lines = text.splitlines()
    header = lines[lines.index("root causes (estimate)") + 2]
    assert header.split() == ["┃", "cause", "┃", "op", "┃", "type", "┃", "#", "┃", "why", "┃"]
    assert "fails in cast2's input dump (-inp0)" in text


def test_producer_and_its_inputs_not_dumped_is_at_or_before(
    shell: Dispatcher, tmp_path: Path
) -> None:
    """mul1's inputs are gone from the left too (and with them mul1's -inp dumps): nothing
    proves mul1's inputs pass, so the fault lies at or before mul1."""
    left, right = _pair(tmp_path, "left", "000006", "000007", "000008")
    result = run_ok(shell, f"ac -c -lt {left} -rt {right}")
    assert result.causes is not None
    assert [c.op for c in result.causes] == [PLANTED]
    assert result.causes[0].reason == (
        f"the fault lies at or before {PLANTED}: its output var8 (not dumped on the left) "
        "fails in cast2's input dump (-inp0); 2 input(s) not judged (6, 7)"
    )


def _node(key: str, order: int, error: str, inputs: tuple[str, ...] = ()) -> Node:
    row = ResultRow(order, "Elemwise", f"op_{key}", f"op_{key}", f"op_{key}:output:0", "[4]",
                    {MEGENGINE_REL: error})  # fmt: skip
    return Node(key, f"op_{key}", "Elemwise", 0, order, inputs, row)


def test_failing_vars_that_all_have_failing_inputs_still_name_a_cause() -> None:
    """Edges that form a cycle leave no var without a failing input: the earliest failing var
    is named, with why, rather than no cause next to failing outputs."""
    nodes = [_node("a", 0, "0.5", ("b",)), _node("b", 1, "0.5", ("a",))]
    causes = graph_causes(nodes, megengine_rule())
    assert [c.op for c in causes] == ["op_a"]
    assert causes[0].reason == (
        "the earliest failing var: every failing var has a failing input (the dump's edges "
        "form a cycle)"
    )
