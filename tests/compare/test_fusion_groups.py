"""Fusion groups (msaccucmp's rule) on hand-built op records: keys, kinds, Index order, CSV cells."""

from __future__ import annotations

from precision_shell.compare.pipeline.fusion_groups import (
    L1_FUSION,
    MANY_TO_MANY,
    MANY_TO_ONE,
    NO_BENCHMARK,
    ONE_TO_MANY,
    ONE_TO_ONE,
    fusion_groups,
    group_key,
)
from precision_shell.workspace.graph_index import GraphIndex, OpRecord
from tests.workspace.graph_fixture import sample_model


def rec(position, name, originals, l1=None, op_type="Op") -> OpRecord:
    return OpRecord(
        position=position,
        name=name,
        type=op_type,
        id=position,
        graph="g",
        pass_name=None,
        kernel_name=None,
        original_names=None if originals is None else tuple(originals),
        data_inputs=(),
        control_inputs=(),
        output_origins=(),
        l1_group=l1,
    )


def test_one_to_one_and_many_to_one_each_make_their_own_group():
    groups = fusion_groups([rec(0, "relu", ["relu"]), rec(1, "convbn", ["conv", "bn"])])
    assert groups["relu"].kind == ONE_TO_ONE
    assert groups["relu"].original_ops == ("relu",)
    assert groups["convbn"].kind == MANY_TO_ONE
    assert groups["convbn"].device_ops == ("convbn",)
    assert groups["convbn"].original_ops == ("conv", "bn")
    assert (groups["relu"].index, groups["convbn"].index) == (0, 1)
    assert groups["convbn"].ground_truth == "conv,bn"
    assert groups["convbn"].npu_dump("convbn") == "convbn"


def test_two_device_ops_sharing_one_original_name_are_one_to_many():
    ops = [rec(0, "split_a", ["matmul"]), rec(1, "other", ["x"]), rec(2, "split_b", ["matmul"])]
    groups = fusion_groups(ops)
    group = groups["split_a"]
    assert groups["split_b"] is group
    assert group.kind == ONE_TO_MANY
    assert group.device_ops == ("split_a", "split_b")
    assert group.original_ops == ("matmul",)
    # msaccucmp names every device op of the group in NPUDump
    assert group.npu_dump("split_b") == "split_a,split_b"
    assert group.ground_truth == "matmul"
    # numbered by the first op: the group of split_a comes before "other"
    assert (group.index, groups["other"].index) == (0, 1)


def test_device_ops_with_the_same_set_of_original_names_are_many_to_many():
    ops = [rec(0, "part1", ["a", "b"]), rec(1, "part2", ["b", "a"])]
    groups = fusion_groups(ops)
    assert groups["part1"] is groups["part2"]
    assert groups["part1"].kind == MANY_TO_MANY
    assert groups["part1"].original_ops == ("a", "b")
    assert groups["part1"].npu_dump("part1") == "part1,part2"


def test_overlapping_but_different_name_sets_are_separate_groups_as_in_msaccucmp():
    groups = fusion_groups([rec(0, "ab", ["a", "b"]), rec(1, "bc", ["b", "c"])])
    assert groups["ab"] is not groups["bc"]
    assert [groups["ab"].kind, groups["bc"].kind] == [MANY_TO_ONE, MANY_TO_ONE]
    assert [groups["ab"].index, groups["bc"].index] == [0, 1]


def test_l1_fusion_number_wins_over_original_names():
    ops = [
        rec(0, "conv_l1", ["conv"], l1=7),
        rec(1, "relu_l1", ["relu"], l1=7),
        rec(2, "conv_plain", ["conv"]),
        rec(3, "lonely_l1", ["x", "y"], l1=9),
    ]
    groups = fusion_groups(ops)
    group = groups["conv_l1"]
    assert groups["relu_l1"] is group
    assert group.kind == L1_FUSION
    assert group.original_ops == ("conv", "relu")
    assert group.ground_truth == "conv,relu"
    # the same original name outside the L1 sub-graph is another group
    assert groups["conv_plain"] is not group
    assert groups["conv_plain"].kind == ONE_TO_ONE
    # a sub-graph of one op is one-to-one / many-to-one (msaccucmp's get_relation_for_fusion)
    assert groups["lonely_l1"].kind == MANY_TO_ONE
    assert [groups[n].index for n in ("conv_l1", "conv_plain", "lonely_l1")] == [0, 1, 2]


def test_empty_original_list_means_no_benchmark_and_a_group_of_its_own():
    groups = fusion_groups([rec(0, "trans_Cast_0", []), rec(1, "trans_Cast_1", [])])
    assert groups["trans_Cast_0"] is not groups["trans_Cast_1"]
    assert groups["trans_Cast_0"].kind == NO_BENCHMARK
    assert groups["trans_Cast_0"].original_ops == ()
    assert groups["trans_Cast_0"].ground_truth == "*"


def test_missing_attribute_stands_for_the_benchmark_op_of_its_own_name():
    groups = fusion_groups([rec(0, "dense/kernel", None), rec(1, "fused", ["dense/kernel"])])
    # msaccucmp: no `_datadump_original_op_names` -> [op name], so both share the key
    assert groups["dense/kernel"] is groups["fused"]
    assert groups["fused"].kind == ONE_TO_MANY
    assert groups["fused"].ground_truth == "dense/kernel"
    assert group_key(rec(0, "k", None)) == group_key(rec(5, "other", ["k"]))


def test_groups_of_a_parsed_graph_follow_execution_order():
    index = GraphIndex.from_model(sample_model(), "sample.txt")
    records = list(index.records())
    groups = fusion_groups(records)
    by_index = sorted({g.index: g for g in groups.values()}.items())
    first_ops = [g.device_ops[0] for _, g in by_index]
    # ops in execution order (id 0 first: init, then the consts, input, cast_0, conv, ...)
    assert [r.name for r in records] == [
        "init",
        "dense/kernel",
        "conv1/weights",
        "input",
        "cast_0",
        "conv1/Conv2D",
        "trans_TransData_4",
        "dense/MatMul",
        "softmax/Softmax",
    ]
    assert first_ops == [r.name for r in records]
    assert [i for i, _ in by_index] == list(range(9))
    assert groups["conv1/Conv2D"].kind == MANY_TO_ONE
    assert groups["conv1/Conv2D"].ground_truth == "conv1/Conv2D,bn1/FusedBatchNormV3,relu1/Relu"
    assert groups["cast_0"].kind == NO_BENCHMARK
    assert groups["softmax/Softmax"].kind == ONE_TO_ONE
