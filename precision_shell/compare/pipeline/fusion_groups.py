"""Fusion groups: which device ops and benchmark ops stand for each other, and the CSV `Index`.

The rule is msaccucmp's (`FusionRuleParser.make_fusion_op_name`): an op's group key is its
`_L1_fusion_sub_graph_no` when set; else its single original (benchmark) op name; else, when it
fused several benchmark ops, the set of their names. An op without the attribute stands for the
benchmark op of its own name; one whose list is empty has no benchmark and is a group of its own.
Device ops with the same key form one group; its kind (`get_relation_for_fusion`) says how the
two sides map. Groups are numbered in the order their first op runs.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from precision_shell.workspace.graph_index import OpRecord

ONE_TO_ONE = "one-to-one"
MANY_TO_ONE = "many-to-one"  # several benchmark ops fused into one device op
ONE_TO_MANY = "one-to-many"  # one benchmark op split over several device ops
MANY_TO_MANY = "many-to-many"
L1_FUSION = "L1 fusion"
NO_BENCHMARK = "no benchmark"

# Kinds whose CSV rows name every device op of the group (msaccucmp's any-to-multi rows).
MULTI_OP_KINDS = frozenset({ONE_TO_MANY, MANY_TO_MANY, L1_FUSION})


@dataclass(frozen=True, slots=True)
class FusionGroup:
    index: int
    kind: str
    device_ops: tuple[str, ...]
    original_ops: tuple[str, ...]

    @property
    def ground_truth(self) -> str:
        """The CSV `GroundTruth` cell: the benchmark ops joined by ",", or "*" when none."""
        return ",".join(self.original_ops) if self.original_ops else "*"

    def npu_dump(self, op_name: str) -> str:
        """The CSV `NPUDump` cell of `op_name`'s rows: the op, or all device ops of the group."""
        return ",".join(self.device_ops) if self.kind in MULTI_OP_KINDS else op_name


def original_names(record: OpRecord) -> tuple[str, ...]:
    """The benchmark ops `record` stands for: the attribute's names, else its own name."""
    if record.original_names is None:
        return (record.name,)
    return tuple(name for name in record.original_names if name)


def group_key(record: OpRecord) -> Hashable:
    """msaccucmp's fusion op name: L1 sub-graph number, single original name, set, op name."""
    if record.l1_group is not None:
        return ("l1", record.l1_group)
    names = original_names(record)
    if len(names) == 1:
        return ("name", names[0])
    if names:
        return ("names", frozenset(names))
    return ("op", record.name)


def fusion_groups(ops: Sequence[OpRecord]) -> dict[str, FusionGroup]:
    """Group `ops` (in execution order) and number the groups from 0; keyed by device op."""
    members: dict[Hashable, list[OpRecord]] = {}
    for rec in ops:
        members.setdefault(group_key(rec), []).append(rec)
    result: dict[str, FusionGroup] = {}
    for index, group_ops in enumerate(members.values()):
        originals: list[str] = []
        for rec in group_ops:
            for name in original_names(rec):
                if name not in originals:
                    originals.append(name)
        kind = _kind(group_ops, originals)
        group = FusionGroup(index, kind, tuple(r.name for r in group_ops), tuple(originals))
        for rec in group_ops:
            result.setdefault(rec.name, group)
    return result


def _kind(group_ops: list[OpRecord], originals: list[str]) -> str:
    if not originals:
        return NO_BENCHMARK
    if len(group_ops) == 1:
        # msaccucmp: one device op is one-to-one or many-to-one, even inside an L1 sub-graph
        return MANY_TO_ONE if len(originals) > 1 else ONE_TO_ONE
    if group_ops[0].l1_group is not None:
        return L1_FUSION
    return ONE_TO_MANY if len(originals) == 1 else MANY_TO_MANY
