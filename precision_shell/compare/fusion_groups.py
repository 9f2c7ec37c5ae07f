"""Fusion groups: which device ops and benchmark ops stand for each other, and the CSV `Index`.

Device ops that share an original (benchmark) op name, or an L1 fusion sub-graph number,
belong to one group. The group's kind says how the two sides map (one-to-one, many-to-one,
one-to-many, many-to-many, L1 fusion); groups are numbered in execution order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from precision_shell.workspace.graph_index import OpRecord

ONE_TO_ONE = "one-to-one"
MANY_TO_ONE = "many-to-one"  # several benchmark ops fused into one device op
ONE_TO_MANY = "one-to-many"  # one benchmark op split over several device ops
MANY_TO_MANY = "many-to-many"
L1_FUSION = "L1 fusion"
NO_BENCHMARK = "no benchmark"


@dataclass(frozen=True, slots=True)
class FusionGroup:
    index: int
    kind: str
    device_ops: tuple[str, ...]
    original_ops: tuple[str, ...]


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            # keep the earlier op as the root so the group sorts by its first op
            self.parent[max(ra, rb)] = min(ra, rb)


def fusion_groups(ops: Sequence[OpRecord]) -> dict[str, FusionGroup]:
    """Group `ops` (in execution order) and number the groups from 0; keyed by device op."""
    uf = _UnionFind(len(ops))
    first_by_name: dict[str, int] = {}
    first_by_l1: dict[int, int] = {}
    for i, rec in enumerate(ops):
        if rec.l1_group is not None:
            j = first_by_l1.setdefault(rec.l1_group, i)
            uf.union(i, j)
            continue
        for name in rec.original_names or ():
            j = first_by_name.setdefault(name, i)
            uf.union(i, j)
    members: dict[int, list[int]] = {}
    for i in range(len(ops)):
        members.setdefault(uf.find(i), []).append(i)
    result: dict[str, FusionGroup] = {}
    for index, root in enumerate(sorted(members)):
        group_ops = [ops[i] for i in members[root]]
        originals: list[str] = []
        for rec in group_ops:
            for name in rec.original_names or ():
                if name not in originals:
                    originals.append(name)
        kind = _kind(group_ops, originals)
        group = FusionGroup(index, kind, tuple(r.name for r in group_ops), tuple(originals))
        for rec in group_ops:
            result[rec.name] = group
    return result


def _kind(group_ops: list[OpRecord], originals: list[str]) -> str:
    if any(r.l1_group is not None for r in group_ops):
        return L1_FUSION
    if not originals:
        return NO_BENCHMARK
    many_device = len(group_ops) > 1
    many_bench = len(originals) > 1
    if many_device and many_bench:
        return MANY_TO_MANY
    if many_device:
        return ONE_TO_MANY
    if many_bench:
        return MANY_TO_ONE
    return ONE_TO_ONE
