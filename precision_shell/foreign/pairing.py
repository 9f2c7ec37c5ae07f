"""Which left tensor is compared with which right tensor.

- MegEngine: by var id (what MegEngine's own compare does), valid when both runs built the
  same graph. Decided per run pair: when, of the ids both runs hold, most name another
  (owner op, slot), the runs numbered their vars differently and every var is paired by
  (owner op name, output slot) instead.
- SigmaStar: by tensor name; the output slot only breaks ties between records of one name
  (the caffe/onnx reference writers print `//out 0` for every output of a layer).

A tensor on one side only is an unpaired entry with the reason, which becomes a row that
was not compared.
"""

from __future__ import annotations

from dataclasses import dataclass

from precision_shell.foreign.dumps import MEGENGINE, ForeignDump, ForeignTensor

BY_VAR_ID = "var id"
BY_OP_SLOT = "op name + slot"
BY_NAME = "tensor name (slot breaks ties)"


@dataclass(frozen=True)
class Pairing:
    """Pairs and leftovers in left execution order (right-only tensors after them)."""

    method: str
    pairs: list[tuple[ForeignTensor | None, ForeignTensor | None, str]]  # (left, right, reason)

    @property
    def paired(self) -> int:
        return sum(1 for left, right, _ in self.pairs if left is not None and right is not None)


def _op_slot(t: ForeignTensor) -> tuple[str, int]:
    return (t.op_name, t.slot)


def megengine_method(left: ForeignDump, right: ForeignDump) -> str:
    """BY_VAR_ID unless most ids both runs hold name another (op, slot) on each side."""
    lk, rk = left.by_key(), right.by_key()
    common = [k for k in lk if k in rk]
    if not common:
        return BY_OP_SLOT
    agree = sum(1 for k in common if _op_slot(lk[k]) == _op_slot(rk[k]))
    return BY_VAR_ID if agree * 2 > len(common) else BY_OP_SLOT


def _finish(
    method: str,
    left: ForeignDump,
    right: ForeignDump,
    matched: dict[int, ForeignTensor],  # left order -> right tensor
    why_left: str,
    why_right: str,
) -> Pairing:
    pairs: list[tuple[ForeignTensor | None, ForeignTensor | None, str]] = []
    used = {id(t) for t in matched.values()}
    for t in left.tensors:
        other = matched.get(t.order)
        pairs.append((t, other, "" if other is not None else why_left))
    for t in right.tensors:
        if id(t) not in used:
            pairs.append((None, t, why_right))
    return Pairing(method, pairs)


def pair_megengine(left: ForeignDump, right: ForeignDump) -> Pairing:
    method = megengine_method(left, right)
    matched: dict[int, ForeignTensor] = {}
    if method == BY_VAR_ID:
        rk = right.by_key()
        for t in left.tensors:
            if t.key in rk:
                matched[t.order] = rk[t.key]
        why = "var id"
    else:
        by_op: dict[tuple[str, int], ForeignTensor] = {}
        for t in right.tensors:
            by_op.setdefault(_op_slot(t), t)
        for t in left.tensors:
            other = by_op.get(_op_slot(t))
            if other is not None:
                matched[t.order] = other
        why = "op name and slot"
    return _finish(
        method,
        left,
        right,
        matched,
        f"no tensor of this {why} in the right dump",
        f"no tensor of this {why} in the left dump",
    )


def pair_sigmastar(left: ForeignDump, right: ForeignDump) -> Pairing:
    by_name: dict[str, list[ForeignTensor]] = {}
    for t in right.tensors:
        by_name.setdefault(t.name, []).append(t)
    left_by_name: dict[str, list[ForeignTensor]] = {}
    for t in left.tensors:
        left_by_name.setdefault(t.name, []).append(t)
    matched: dict[int, ForeignTensor] = {}
    for name, lefts in left_by_name.items():
        rights = list(by_name.get(name, ()))
        if not rights:
            continue
        if len(lefts) == 1 and len(rights) == 1:
            matched[lefts[0].order] = rights[0]  # one each: the name decides, slots aside
            continue
        pending = []
        for t in lefts:  # several of one name: the same slot first, then file order
            same = next((r for r in rights if r.slot == t.slot), None)
            if same is not None:
                matched[t.order] = same
                rights.remove(same)
            else:
                pending.append(t)
        for t, r in zip(pending, rights, strict=False):
            matched[t.order] = r
    return _finish(
        BY_NAME,
        left,
        right,
        matched,
        "no tensor of this name in the right dump",
        "no tensor of this name in the left dump",
    )


def pair_dumps(left: ForeignDump, right: ForeignDump) -> Pairing:
    if left.family == MEGENGINE:
        return pair_megengine(left, right)
    return pair_sigmastar(left, right)
