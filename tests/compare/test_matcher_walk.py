"""The Cast/TransData walk for outputs (msaccucmp compares them with what is upstream)."""

from __future__ import annotations

from precision_shell.compare.pipeline.matcher import input_source, output_source
from precision_shell.formats.ge.graph import GraphDef, ModelDef
from precision_shell.workspace.graph_index import GraphIndex
from tests.workspace.graph_fixture import desc, op, sample_model


def test_outputs_of_ge_cast_and_transdata_walk_to_the_producer_upstream():
    index = GraphIndex.from_model(sample_model(), "sample.txt")
    assert output_source(index, "cast_0", 0) == ("input", 0)
    assert output_source(index, "trans_TransData_4", 0) == ("conv1/Conv2D", 0)
    # past its inputs, input 0 stands for every output
    assert output_source(index, "trans_TransData_4", 3) == ("conv1/Conv2D", 0)
    # not a pass-through op, or an unknown op: nothing to walk
    assert output_source(index, "conv1/Conv2D", 0) is None
    assert output_source(index, "no/such/op", 0) is None


def test_transpose_is_never_walked_through_and_a_cast_with_an_origin_stops_the_walk():
    ops = [
        op("x", "Data", 1, [], [desc("x")]),
        op("t", "TransposeD", 2, ["x:0"], [desc(None)]),
        op("c", "Cast", 3, ["t:0"], [desc(None)]),
        op("user_cast", "Cast", 4, ["x:0"], [desc("user_cast")]),
        op("y", "Relu", 5, ["c:0", "user_cast:0"], [desc("y")]),
    ]
    graph = GraphIndex.from_model(ModelDef(name="m", graphs=[GraphDef(name="g", ops=ops)]), "m")
    # a transpose reorders elements without saying so in the dump: stop there
    assert input_source(graph, "y", 0) == ("t", 0)
    # a Cast the framework has (it has an origin) is compared with its own benchmark
    assert input_source(graph, "y", 1) == ("user_cast", 0)
    assert output_source(graph, "user_cast", 0) is None
    assert output_source(graph, "c", 0) == ("t", 0)
