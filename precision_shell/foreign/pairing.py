"""Which left tensor is compared with which right tensor.

- MegEngine: by var id (what MegEngine's own compare does), valid only where both runs gave
  the id to the same var: a var id is never paired with a var of another (owner op, slot).
  When most of the ids both runs hold name the same (op, slot) on each side, those ids pair
  their vars; every other var (an id naming another var on the other side, an id one run
  lacks) is paired by (owner op name, output slot) when exactly one var on each side has it
  (several: their var names break the tie), else left unpaired. When most shared ids name
  another var, the runs numbered their vars differently and every var is paired by (op name,
  slot). `Pairing.note` says how many shared ids disagreed and how their vars were paired.
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
_LISTED = 6  # disagreeing var ids named in the note


@dataclass(frozen=True)
class Pairing:
    """Pairs and leftovers in left execution order (right-only tensors after them)."""

    method: str
    pairs: list[tuple[ForeignTensor | None, ForeignTensor | None, str]]  # (left, right, reason)
    note: str = ""  # one line for the terminal when var ids could not all be trusted

    @property
    def paired(self) -> int:
        return sum(1 for left, right, _ in self.pairs if left is not None and right is not None)

    def method_of(self, left: ForeignTensor, right: ForeignTensor) -> str:
        """How one pair was found: by var id, a pair of two ids was paired by op name + slot."""
        if self.method == BY_VAR_ID and left.key != right.key:
            return BY_OP_SLOT
        return self.method


def _op_slot(t: ForeignTensor) -> tuple[str, int]:
    return (t.op_name, t.slot)


def _finish(
    method: str,
    left: ForeignDump,
    right: ForeignDump,
    matched: dict[int, ForeignTensor],  # left order -> right tensor
    why_left: str,
    why_right: str,
    why: dict[int, str] | None = None,  # id(tensor) -> its own reason, over the side's
    note: str = "",
) -> Pairing:
    own = why or {}
    pairs: list[tuple[ForeignTensor | None, ForeignTensor | None, str]] = []
    used = {id(t) for t in matched.values()}
    for t in left.tensors:
        other = matched.get(t.order)
        pairs.append((t, other, "" if other is not None else own.get(id(t), why_left)))
    for t in right.tensors:
        if id(t) not in used:
            pairs.append((None, t, own.get(id(t), why_right)))
    return Pairing(method, pairs, note)


def _by_op_slot(
    lefts: list[ForeignTensor], rights: list[ForeignTensor]
) -> tuple[dict[int, ForeignTensor], dict[int, str]]:
    """Pairs of one (op name, slot) on each side (left order -> right tensor); where several
    share it, the vars whose var name is unique on both sides; the others get a reason
    (by id(tensor))."""
    groups: dict[tuple[str, int], tuple[list[ForeignTensor], list[ForeignTensor]]] = {}
    for t in lefts:
        groups.setdefault(_op_slot(t), ([], []))[0].append(t)
    for t in rights:
        groups.setdefault(_op_slot(t), ([], []))[1].append(t)
    matched: dict[int, ForeignTensor] = {}
    why: dict[int, str] = {}
    for (op, slot), (ls, rs) in groups.items():
        if not ls or not rs:
            continue  # the side's own reason
        if len(ls) == 1 and len(rs) == 1:
            matched[ls[0].order] = rs[0]
            continue
        for t in ls:
            same = [r for r in rs if r.name == t.name]
            if len(same) == 1 and [u.name for u in ls].count(t.name) == 1:
                matched[t.order] = same[0]
        ambiguous = (
            f"{len(ls)} left and {len(rs)} right vars of op {op} slot {slot}, "
            "not told apart by var name: ambiguous"
        )
        used = {id(r) for r in matched.values()}
        why.update({id(t): ambiguous for t in ls if t.order not in matched})
        why.update({id(r): ambiguous for r in rs if id(r) not in used})
    return matched, why


def _id_note(differ: list[str], common: int, trusted: bool, repaired: int) -> str:
    """The terminal's line on shared var ids that name different vars in the two runs."""
    if not differ:
        return ""
    ids = ", ".join(differ[:_LISTED]) + (", ..." if len(differ) > _LISTED else "")
    head = f"{len(differ)} of {common} shared var ids name different vars in the two runs ({ids})"
    if not trusted:
        return f"{head}: the runs number vars differently, every var paired by op name + slot"
    return (
        f"{head}: those vars paired by op name + slot instead ({repaired} paired, "
        f"{len(differ) - repaired} unpaired)"
    )


def pair_megengine(left: ForeignDump, right: ForeignDump) -> Pairing:
    lk, rk = left.by_key(), right.by_key()
    common = [k for k in lk if k in rk]
    differ = [k for k in common if _op_slot(lk[k]) != _op_slot(rk[k])]
    trusted = len(common) > 2 * len(differ)  # most shared ids name one (op, slot) on each side
    differs = set(differ)
    matched = {lk[k].order: rk[k] for k in common if trusted and k not in differs}
    taken = {id(t) for t in matched.values()}
    by_op, why = _by_op_slot(
        [t for t in left.tensors if t.order not in matched],
        [t for t in right.tensors if id(t) not in taken],
    )
    matched.update(by_op)
    if trusted:
        for k in differ:
            for t, other, side in ((lk[k], rk[k], "right"), (rk[k], lk[k], "left")):
                why.setdefault(
                    id(t),
                    f"var id {k} names {other.name} (op {other.op_name}) in the {side} dump, "
                    f"which holds no other var of op {t.op_name} slot {t.slot}",
                )
        gone = "no tensor of this var id, nor of this op name and slot, in the {} dump"
    else:
        gone = "no tensor of this op name and slot in the {} dump"
    repaired = sum(1 for k in differ if lk[k].order in by_op)
    return _finish(
        BY_VAR_ID if trusted else BY_OP_SLOT,
        left,
        right,
        matched,
        gone.format("right"),
        gone.format("left"),
        why,
        _id_note(differ, len(common), trusted, repaired),
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
