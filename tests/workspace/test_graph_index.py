from precision_shell.workspace.graph_index import Consumer, GraphIndex
from tests.workspace.graph_fixture import sample_model


def make_index() -> GraphIndex:
    return GraphIndex.from_model(sample_model(), "sample.txt")


def test_ops_are_in_execution_order_by_id_then_file_order():
    names = make_index().names()
    assert names[:3] == ["init", "dense/kernel", "conv1/weights"]  # id 0, in file order
    assert names[3:] == [
        "input",
        "cast_0",
        "conv1/Conv2D",
        "trans_TransData_4",
        "dense/MatMul",
        "softmax/Softmax",
    ]


def test_record_holds_fusion_kernel_and_edges():
    rec = make_index().get("dense/MatMul")
    assert rec.type == "MatMulV2" and rec.id == 5
    assert rec.pass_name == "MatMulBiasAddFusionPass"
    assert rec.kernel_name == "te_matmul_k0"
    assert rec.original_names == ("dense/MatMul", "dense/BiasAdd")
    assert rec.data_inputs == (("trans_TransData_4", 0), ("dense/kernel", 0))
    assert rec.control_inputs == ("init",)
    assert rec.output_origins == (("dense/BiasAdd", 0),)


def test_empty_original_names_differs_from_absent():
    index = make_index()
    assert index.get("cast_0").original_names == ()
    assert index.get("init").original_names is None


def test_search_filters_are_case_insensitive_substrings_and_combine():
    index = make_index()
    assert [r.name for r in index.search(name="CONV1/")] == ["conv1/weights", "conv1/Conv2D"]
    assert [r.name for r in index.search(op_type="conv2d")] == ["conv1/Conv2D"]
    assert [r.name for r in index.search(pass_name="fusionpass")] == [
        "conv1/Conv2D",
        "dense/MatMul",
    ]
    assert [r.name for r in index.search(kernel="matmul")] == ["dense/MatMul"]
    assert [r.name for r in index.search(name="conv", op_type="Const")] == ["conv1/weights"]
    assert index.search(name="nothing-like-this") == []


def test_consumers_and_control_consumers():
    index = make_index()
    assert index.consumers("conv1/Conv2D") == [Consumer("trans_TransData_4", 0, 0)]
    assert index.consumers("dense/kernel") == [Consumer("dense/MatMul", 1, 0)]
    assert index.control_consumers("init") == ["dense/MatMul"]
    assert index.consumers("softmax/Softmax") == []


def test_by_dump_name_maps_sanitized_names():
    index = make_index()
    assert index.by_dump_name("conv1_Conv2D").name == "conv1/Conv2D"
    assert index.by_dump_name("trans_TransData_4").name == "trans_TransData_4"
    assert index.by_dump_name("nope") is None


def test_full_op_is_unpickled_on_demand_and_equal_to_source():
    source = {o.name: o for o in sample_model().graphs[0].ops}
    index = make_index()
    assert index.op("conv1/Conv2D") == source["conv1/Conv2D"]
    assert index.op("conv1/Conv2D") is index.op("conv1/Conv2D")  # cached after first use
    assert index.op("missing") is None


def test_state_round_trip_keeps_everything():
    index = make_index()
    again = GraphIndex.from_state(index.to_state())
    assert again.names() == index.names()
    assert list(again.records()) == list(index.records())
    assert again.type_counts() == {
        "Cast": 1,
        "Const": 2,
        "Conv2D": 1,
        "Data": 1,
        "MatMulV2": 1,
        "NoOp": 1,
        "SoftmaxV2": 1,
        "TransData": 1,
    }


def test_names_containing_puts_prefix_matches_first():
    index = make_index()
    assert index.names_containing("conv1") == ["conv1/weights", "conv1/Conv2D"]
    assert index.names_containing("Softmax") == ["softmax/Softmax"]
    assert index.names_containing("dense", limit=1) == ["dense/kernel"]
