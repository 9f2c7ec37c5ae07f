"""Foreign dump fixtures written with the readers' own writers, and numpy oracles.

MegEngine: a 9-op network (a multi-output Split, float16 and float32 vars, `-inp` dumps),
computed in numpy; `planted` perturbs one op's kernel and lets the error flow downstream.
SigmaStar: a float run and a fixed (int8, scale/zero point) run of a 5-layer model.
MegEngine text: two `--io-dump` files whose vars the text prints in part (`write_text_pair`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from precision_shell.formats.megengine_dump import (
    TextSpec,
    VarInfo,
    VarSpec,
    var_info_of,
    write_bin_io_dump,
    write_io_dump_text,
)
from precision_shell.formats.sigmastar_dump import SigmaSpec, write_sigmastar_dump

PLANTED = "mul1"


@dataclass(frozen=True)
class Op:
    name: str
    type: str
    inputs: tuple[int, ...]  # var ids


# var id -> (owner op, slot); ops in execution order
OPS: dict[int, tuple[Op, int]] = {}


def _op(ids: tuple[int, ...], op: Op) -> None:
    for slot, var_id in enumerate(ids):
        OPS[var_id] = (op, slot)


_op((1,), Op("data", "Host2DeviceCopy", ()))
_op((2,), Op("w1", "ImmutableTensor", ()))
_op((3,), Op("fc1", "MatrixMul", (1, 2)))
_op((4,), Op("relu1", "Elemwise", (3,)))
_op((5,), Op("cast1", "TypeCvt", (4,)))
_op((6, 7), Op("split1", "Split", (5,)))
_op((8,), Op(PLANTED, "Elemwise", (6, 7)))
_op((9,), Op("cast2", "TypeCvt", (8,)))
_op((10,), Op("reduce1", "Reduce", (9,)))


def megengine_values(planted: bool = False, poison: int | None = None) -> dict[int, np.ndarray]:
    """Every var's values of one execution; `planted`: mul1's kernel is off by 3%; `poison`:
    that var's first value is NaN (set last: no other var sees it)."""
    rng = np.random.default_rng(7)
    v: dict[int, np.ndarray] = {}
    v[1] = rng.standard_normal((2, 8)).astype(np.float32)
    v[2] = rng.standard_normal((8, 8)).astype(np.float32)
    v[3] = (v[1] @ v[2]).astype(np.float32)
    v[4] = np.maximum(v[3], 0).astype(np.float32) + np.float32(0.5)
    v[5] = v[4].astype(np.float16)
    v[6], v[7] = v[5][:, :4].copy(), v[5][:, 4:].copy()
    v[8] = (v[6] * v[7]).astype(np.float16)
    if planted:
        v[8] = (v[8].astype(np.float32) * np.float32(1.03) + np.float32(0.05)).astype(np.float16)
    v[9] = v[8].astype(np.float32)
    v[10] = v[9].sum(axis=1).astype(np.float32)
    if poison is not None:
        v[poison] = v[poison].copy()
        v[poison].flat[0] = np.nan
    return v


def _info(var_id: int, values: dict[int, np.ndarray], ids: dict[int, int]) -> VarInfo:
    op, slot = OPS[var_id]
    return var_info_of(ids[var_id], values[var_id], op.name, op.type, f"{op.name}:{slot}", slot)


def write_megengine(
    root: Path,
    planted: bool = False,
    renumber: dict[int, int] | None = None,
    poison: int | None = None,
) -> tuple[Path, dict[int, np.ndarray]]:
    """A --bin-io-dump dir with `-inp` files; `renumber` maps our var ids to the run's ids;
    `poison` as `megengine_values`."""
    values = megengine_values(planted, poison)
    ids = renumber or {i: i for i in OPS}
    specs = []
    for var_id, (op, slot) in OPS.items():
        inputs = tuple(_info(i, values, ids) for i in op.inputs)
        input_values = {
            k: (
                _info(i, values, ids),
                tuple(_info(j, values, ids) for j in OPS[i][0].inputs),
                values[i],
            )
            for k, i in enumerate(op.inputs)
        }
        specs.append(
            VarSpec(
                id=ids[var_id],
                values=values[var_id],
                op_name=op.name,
                op_type=op.type,
                name=f"{op.name}:{slot}",
                slot=slot,
                inputs=inputs,
                input_values=input_values,
            )
        )
    write_bin_io_dump(root, specs)
    return root, values


# ---------------------------------------------------------------------------- SigmaStar

SIGMA_BAD = "pool1"
SIGMA_LAYERS = ("conv1", "relu1", SIGMA_BAD, "fc1", "softmax")
SCALE, ZERO = 0.01, 3


def sigmastar_float_values() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    return {
        name: rng.uniform(-1.0, 1.0, size=(1, 2, 2, 4)).astype(np.float32) for name in SIGMA_LAYERS
    }


def quantize(values: np.ndarray) -> np.ndarray:
    return np.clip(np.round(values / SCALE) + ZERO, -128, 127).astype(np.int8)


def write_sigmastar_pair(
    root: Path,
) -> tuple[Path, Path, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(fixed file, float file, fixed int8 values, float values); the fixed run's pool1 and
    what follows are wrong (their sign flipped)."""
    real = sigmastar_float_values()
    fixed: dict[str, np.ndarray] = {}
    seen_bad = False
    for name in SIGMA_LAYERS:
        seen_bad = seen_bad or name == SIGMA_BAD
        fixed[name] = quantize(-real[name] if seen_bad else real[name])
    image = np.zeros((1, 2, 2, 3), np.float32)
    weight = np.ones((4,), np.float32)
    float_specs = [SigmaSpec("image", image, is_input=True, op_label="input")]
    float_specs.append(SigmaSpec("weight", weight, constant=True))
    float_specs += [
        SigmaSpec(n, real[n], op_index=i, op_label=n) for i, n in enumerate(SIGMA_LAYERS)
    ]
    fixed_specs = [
        SigmaSpec(
            "image", quantize(image), dtype="SGS_S8", scale=SCALE, zero_point=ZERO, is_input=True
        )
    ]
    fixed_specs += [
        SigmaSpec(n, fixed[n], dtype="SGS_S8", scale=SCALE, zero_point=ZERO, op_index=10 + i)
        for i, n in enumerate(SIGMA_LAYERS)
    ]
    fixed_path, float_path = (
        root / "sigma_outtensor_dump.bin",
        root / "onnx_NHWC_outtensor_dump.bin",
    )
    write_sigmastar_dump(fixed_path, fixed_specs, is_float=False)
    write_sigmastar_dump(float_path, float_specs, is_float=True, trailer="none")
    return fixed_path, float_path, fixed, real


# ---------------------------------------------------------------------------- MegEngine text

# var id -> (op name, what the right run does to the left run's values); 24 values each (the
# text prints 5 and `...`) but `small` (4 values: printed in full)
TEXT_SAME, TEXT_SHIFT, TEXT_SWAP, TEXT_TAIL, TEXT_SMALL = "data", "shift", "swap", "tail", "small"


def text_values() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """op name -> (left values, right values) of the text pair.

    - `data`: equal: nothing printed can tell them apart.
    - `shift`: right = left + 0.25: statistics and leading values differ.
    - `swap`: right swaps the first and last value: statistics equal, the first printed
      value differs.
    - `tail`: right's last value + 3: the leading values equal, max / mean / l2 differ.
    - `small`: 4 values, equal, printed in full: compared value by value.
    """
    base = np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(4, 6)
    ramp = (np.arange(24, dtype=np.float32) / 24).reshape(4, 6)
    swapped = ramp.copy()
    swapped.flat[0], swapped.flat[23] = ramp.flat[23], ramp.flat[0]
    tail = ramp.copy()
    tail.flat[23] += np.float32(3.0)
    small = np.array([0.5, -1.5, 2.0, 4.0], dtype=np.float32)
    return {
        TEXT_SAME: (base, base.copy()),
        TEXT_SHIFT: (base * 2, base * 2 + np.float32(0.25)),
        TEXT_SWAP: (ramp, swapped),
        TEXT_TAIL: (ramp, tail),
        TEXT_SMALL: (small, small.copy()),
    }


def write_text_pair(root: Path) -> tuple[Path, Path, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Two `--io-dump` text files (left, right) of the vars of `text_values`, ids 1..5."""
    root.mkdir(parents=True, exist_ok=True)
    values = text_values()
    paths = []
    for side, name in ((0, "left.txt"), (1, "right.txt")):
        specs = [
            TextSpec(
                id=var_id,
                values=pair[side],
                op_name=op,
                op_type="Host2DeviceCopy" if var_id == 1 else "Elemwise",
                op_id=var_id,
                name=f"{op}:0",
                deps=() if var_id == 1 else ((0, 1),),
            )
            for var_id, (op, pair) in enumerate(values.items(), start=1)
        ]
        write_io_dump_text(root / name, specs)
        paths.append(root / name)
    return paths[0], paths[1], values
