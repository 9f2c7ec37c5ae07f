from precision_shell.compare.pipeline.matcher import (
    Origin,
    input_origin,
    input_source,
    output_origin,
    record_output_origin,
)
from precision_shell.workspace.graph_index import GraphIndex
from tests.workspace.graph_fixture import sample_model


def make_index() -> GraphIndex:
    return GraphIndex.from_model(sample_model(), "sample.txt")


def test_output_origin_uses_desc_attributes():
    index = make_index()
    origin = output_origin(index.op("conv1/Conv2D"), 0)
    assert origin == Origin("relu1/Relu", 0, "NHWC", (2, 3))
    assert origin.key == "relu1_Relu.0"


def test_output_past_the_descs_uses_desc_zero():
    index = make_index()
    assert output_origin(index.op("dense/MatMul"), 3).name == "dense/BiasAdd"
    assert record_output_origin(index.get("dense/MatMul"), 3) == ("dense/BiasAdd", 0)


def test_no_origin_name_means_no_benchmark():
    index = make_index()
    assert output_origin(index.op("cast_0"), 0) is None
    assert record_output_origin(index.get("cast_0"), 0) is None
    assert record_output_origin(index.get("init"), 0) is None


def test_inputs_walk_through_ge_inserted_cast_and_transdata():
    index = make_index()
    assert input_source(index, "conv1/Conv2D", 0) == ("input", 0)
    assert input_origin(index, "conv1/Conv2D", 0) == ("input", 0)
    assert input_source(index, "dense/MatMul", 0) == ("conv1/Conv2D", 0)
    assert input_origin(index, "dense/MatMul", 0) == ("relu1/Relu", 0)
    assert input_origin(index, "dense/MatMul", 1) == ("dense/kernel", 0)


def test_control_edges_are_not_inputs():
    index = make_index()
    assert input_source(index, "dense/MatMul", 2) is None
