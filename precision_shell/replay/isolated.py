"""The op replayed from the BENCHMARK's data inputs and the device's own constants.

The inherited error (replay from the device's inputs against the benchmark) mixes what the
inputs carry with what the op adds. Under a deep float16 drift the inputs carry most of it,
and a wrong constant (a filter scaled by 1.1) adds less than an op's loss from drift alone.
Feeding the op the benchmark's own data inputs takes the drift away: what is left against
the benchmark output is what the device gives the op besides data (its constant inputs:
folded filter and bias, scale) and its attributes, plus rounding.

Inputs: an input from a constant op (through GE's Cast/TransData) keeps the device's values;
every other float input takes the benchmark tensor that stands for it (the rule `vc` uses),
which must have the device input's shape in the kernel's layout (up to dims of 1: the same
number of elements in another shape is another layout, never reshaped). Integer and bool inputs
(indices, shapes) keep the device's values: they do not drift. When a float data input has
no benchmark tensor, or one of another shape, there is no isolated measure and a note says
which input.

Rule (`constants_differ`): the isolated output holds NaN/inf where the benchmark's is finite
(a NaN in a device constant), or the other way round, or it is off the benchmark (relative
Euclidean distance, over the elements finite on both) by more than it may be by rounding
alone: BASE_ROUNDOFFS unit roundoffs of the device
dtype (at least FLOOR: a float32 op meets the benchmark's own float32 arithmetic), or
SENSITIVITY_FACTOR times what rounding its constants moves it by, whichever is more. That
sensitivity is measured, only for an op beyond the base allowance, by a third replay with
every float constant moved by half its ULP in the device dtype (signs from a fixed seed):
constants that are float16 subnormals (a batch norm folded over a large gain) lose most of
their digits to rounding, and the op with them legitimately strays further.
Measured on the demo networks: healthy ops stay within about 1.1 unit roundoffs (1,808
replays of 16 deep float16 drift-only networks, about 1,860 of 128 others); a filter scaled
by 1.01 is off by 26-29, by 1.1 about 290; a kernel (local) error leaves it within 0.6;
float16 subnormal folded filters were off by 17-72 roundoffs, which their sensitivity covers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from precision_shell.compare.pipeline.matcher import constant_input
from precision_shell.errors import PrecisionError
from precision_shell.formats.benchmark import load_benchmark
from precision_shell.replay.measure import OwnError, ulp
from precision_shell.workspace.graph_index import GraphIndex, OpRecord
from precision_shell.workspace.workspace import Workspace

BASE_ROUNDOFFS = 4.0  # the isolated output may be off by this many unit roundoffs of the dtype
FLOOR = 1e-5  # ... and at least this relative distance (float32 ops: the benchmark's rounding)
SENSITIVITY_FACTOR = 4.0  # ... or this many times what rounding its constants moves it by
_SEED = 20261124  # the signs of the half-ULP moves: the same measure every time


@dataclass(frozen=True)
class BenchmarkInputs:
    """The inputs of an isolated replay, or why there is none."""

    inputs: list[np.ndarray] | None
    replaced: int = 0  # data inputs that took the benchmark's values
    note: str | None = None  # why there is no isolated replay
    constants: tuple[int, ...] = ()  # the float inputs that keep the device's constants


def benchmark_inputs(
    ws: Workspace,
    graph: GraphIndex,
    rec: OpRecord,
    device_inputs: Sequence[np.ndarray],
    scope: tuple[str | None, str | None] = (None, None),
) -> BenchmarkInputs:
    """`device_inputs` with every float data input replaced by its benchmark tensor (of the
    (rank, step) `scope`: `Workspace.benchmark_for`)."""
    inputs = list(device_inputs)
    replaced = 0
    constants = []
    for k, value in enumerate(device_inputs):
        if value.dtype.kind != "f":
            continue
        if constant_input(graph, rec.name, k):
            constants.append(k)
            continue
        which = f"input {k} ({rec.data_inputs[k][0] if k < len(rec.data_inputs) else '?'})"
        benchmark = ws.input_benchmark(graph, rec, k, *scope)
        if benchmark is None:
            return BenchmarkInputs(None, note=f"{which}: no benchmark tensor")
        try:
            reference = np.asarray(load_benchmark(benchmark.path), dtype=np.float64)
        except PrecisionError as exc:
            return BenchmarkInputs(None, note=f"{which}: {exc}")
        if _squeezed(reference.shape) != _squeezed(value.shape):  # reshaping would scramble
            return BenchmarkInputs(
                None, note=f"{which}: benchmark shape {reference.shape}, device {value.shape}"
            )
        inputs[k] = reference.reshape(value.shape)
        replaced += 1
    if replaced == 0:
        return BenchmarkInputs(None, note="no data input to take from the benchmark")
    return BenchmarkInputs(inputs, replaced, constants=tuple(constants))


def rounded_constants(fed: BenchmarkInputs, dtypes: Sequence[str]) -> list[np.ndarray] | None:
    """`fed`'s inputs with each float constant moved by half its ULP in its device dtype
    (`dtypes[k]`, GE names), signs from a fixed seed; None when it has no such constant."""
    if fed.inputs is None or not fed.constants:
        return None
    rng = np.random.default_rng(_SEED)
    moved = list(fed.inputs)
    for k in fed.constants:
        value = moved[k]
        try:
            half = ulp(value, dtypes[k]) / 2 if k < len(dtypes) else None
        except PrecisionError:  # a dtype without a ULP rule: leave it
            half = None
        if half is not None:
            signs = rng.choice(np.array([-1.0, 1.0]), size=value.shape)
            moved[k] = value + signs * half
    return moved


def _squeezed(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d for d in shape if d != 1)


def allowed_distance(dtype: str, sensitivity: float = 0.0) -> float:
    """The relative distance the isolated output may be off by rounding alone: the base
    allowance of `dtype`, or SENSITIVITY_FACTOR x `sensitivity` (what rounding its constants
    moves it by) when that is more."""
    roundoff = float(ulp(np.array(1.0), dtype)) / 2
    return max(BASE_ROUNDOFFS * roundoff, FLOOR, SENSITIVITY_FACTOR * sensitivity)


def constants_differ(isolated: OwnError | None, allowed: float) -> bool:
    """True when, from the benchmark's own inputs, the op is off by more than `allowed`
    (module rule), or holds a NaN/inf the benchmark's output has not (or lacks one it has):
    what the device gave it besides data differs from what the benchmark used. Its distance
    is over the elements finite on both sides, which a NaN constant does not reach."""
    if isolated is None:
        return False
    distance = isolated.relative_euclidean_distance
    return bool(isolated.nonfinite_mismatch) or bool(np.isnan(distance)) or distance > allowed
