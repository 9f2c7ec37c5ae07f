"""MegEngine pairing when var ids are not to be trusted: a var id never pairs two vars of
another (owner op, slot); what the ids leave is paired by op name + slot when unambiguous."""

from __future__ import annotations

import numpy as np

from precision_shell.foreign.dumps import MEGENGINE, ForeignDump, ForeignTensor
from precision_shell.foreign.pairing import BY_OP_SLOT, BY_VAR_ID, pair_dumps


def _dump(vars_: list[tuple[int, str, int, str]]) -> ForeignDump:
    """(var id, op name, slot, var name) in execution order."""
    tensors = tuple(
        ForeignTensor(
            order=n,
            key=str(var_id),
            name=name,
            op_name=op,
            op_type="Elemwise",
            slot=slot,
            dtype="Float32",
            shape=(1,),
            load=lambda: np.zeros(1, np.float32),
            var_id=var_id,
        )
        for n, (var_id, op, slot, name) in enumerate(vars_)
    )
    return ForeignDump(MEGENGINE, "megengine_bin_dir", "run", tensors)


def _pairs(left: ForeignDump, right: ForeignDump) -> list[tuple[str | None, str | None, str]]:
    pairing = pair_dumps(left, right)
    return [(lt.key if lt else None, rt.key if rt else None, why) for lt, rt, why in pairing.pairs]


def _plain(*ops: tuple[int, str]) -> list[tuple[int, str, int, str]]:
    return [(i, op, 0, f"{op}:0") for i, op in ops]


def test_a_disagreeing_id_without_a_partner_of_its_op_is_left_unpaired() -> None:
    left = _dump(_plain((1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e")))
    right = _dump(_plain((1, "a"), (2, "b"), (3, "c"), (4, "e"), (5, "x")))
    pairing = pair_dumps(left, right)
    assert pairing.method == BY_VAR_ID
    assert _pairs(left, right) == [
        ("1", "1", ""),
        ("2", "2", ""),
        ("3", "3", ""),
        (
            "4",
            None,
            "var id 4 names e:0 (op e) in the right dump, which holds no other var of op d slot 0",
        ),
        ("5", "4", ""),
        (
            None,
            "5",
            "var id 5 names e:0 (op e) in the left dump, which holds no other var of op x slot 0",
        ),
    ]
    assert pairing.note == (
        "2 of 5 shared var ids name different vars in the two runs (4, 5): those vars paired "
        "by op name + slot instead (1 paired, 1 unpaired)"
    )


def test_an_id_one_run_lacks_pairs_by_op_and_slot() -> None:
    left = _dump(_plain((1, "a"), (2, "b"), (3, "c"), (4, "d")))
    right = _dump(_plain((1, "a"), (2, "b"), (3, "c"), (9, "d"), (10, "new")))
    pairing = pair_dumps(left, right)
    assert pairing.method == BY_VAR_ID and pairing.note == ""
    assert _pairs(left, right)[3:] == [
        ("4", "9", ""),
        (None, "10", "no tensor of this var id, nor of this op name and slot, in the left dump"),
    ]


def test_vars_sharing_an_op_and_slot_are_told_apart_by_var_name_or_left_unpaired() -> None:
    """A text dump has slot 0 for every output: split's outputs share (op, slot)."""
    left = _dump(
        [(1, "a", 0, "a:0"), (2, "split", 0, "split:0"), (3, "split", 0, "split:1")]
        + [(4, "dup", 0, "x"), (5, "dup", 0, "x")]
    )
    right = _dump(
        [(11, "a", 0, "a:0"), (13, "split", 0, "split:1"), (12, "split", 0, "split:0")]
        + [(14, "dup", 0, "x"), (15, "dup", 0, "x")]
    )
    pairing = pair_dumps(left, right)
    assert pairing.method == BY_OP_SLOT
    ambiguous = "2 left and 2 right vars of op dup slot 0, not told apart by var name: ambiguous"
    assert _pairs(left, right) == [
        ("1", "11", ""),
        ("2", "12", ""),
        ("3", "13", ""),
        ("4", None, ambiguous),
        ("5", None, ambiguous),
        (None, "14", ambiguous),
        (None, "15", ambiguous),
    ]
