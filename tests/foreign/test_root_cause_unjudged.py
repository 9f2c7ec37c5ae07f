"""A MegEngine root whose inputs could not all be judged is unproven: said so, ranked last."""

from __future__ import annotations

from precision_shell.compare.results.schema import ResultRow
from precision_shell.foreign.metrics import MEGENGINE_REL
from precision_shell.foreign.root_cause import Node, graph_causes
from precision_shell.foreign.verdict import megengine_rule


def _node(key: str, order: int, error: str, inputs: tuple[str, ...] = ()) -> Node:
    row = ResultRow(order, "Elemwise", f"op_{key}", f"op_{key}", f"op_{key}:output:0", "[4]",
                    {MEGENGINE_REL: error})  # fmt: skip
    return Node(key, f"op_{key}", "Elemwise", 0, order, inputs, row)


def test_a_root_with_an_input_not_judged_ranks_after_a_proven_root() -> None:
    rule = megengine_rule()
    nodes = [
        _node("a", 0, "0"),  # passes
        _node("hidden", 1, "NaN"),  # not judged (a text dump printed it in part)
        # fails; its only input was not judged: may inherit; downstream of it: d
        _node("b", 2, "0.5", ("hidden",)),
        _node("d", 3, "0.5", ("b",)),
        _node("c", 4, "0.2", ("a",)),  # fails; its input passes: a proven root
    ]
    causes = graph_causes(nodes, rule)
    assert [c.op for c in causes] == ["op_c", "op_b"]
    assert causes[0].reason == "fails while none of its inputs fail"
    assert causes[1].reason == (
        "fails while no judged input fails; 1 input(s) not judged (hidden): it may inherit "
        "their error"
    )
    assert causes[1].evidence["inputs"] == [{"var": "hidden", "op": "op_hidden",
                                             "status": "not compared",
                                             "metrics": {MEGENGINE_REL: None}}]  # fmt: skip


def test_without_unjudged_inputs_the_most_consequential_root_comes_first() -> None:
    nodes = [
        _node("s", 0, "0.3"),  # a source that fails, two failing vars downstream
        _node("t", 1, "0.3", ("s",)),
        _node("u", 2, "0.3", ("t",)),
        _node("p", 3, "0"),
        _node("v", 4, "0.3", ("p",)),  # a root with nothing failing downstream
    ]
    causes = graph_causes(nodes, megengine_rule())
    assert [c.op for c in causes] == ["op_s", "op_v"]
    assert causes[0].reason.endswith("(it has no inputs: a source of the graph)")
    assert causes[0].evidence["failing_downstream"] == 2
