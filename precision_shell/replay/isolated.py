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

Rule (`constants_differ`): the isolated output is off the benchmark by more than
ROUNDING_ROUNDOFFS unit roundoffs of the device dtype (relative Euclidean distance), and by
more than FLOOR, beyond what rounding the constants to the device dtype and the benchmark's
own float32 arithmetic leave. Measured on deep float16 demo networks: healthy ops stay within
about 1.1 unit roundoffs (1,808 replays of 16 drift-only networks); a filter scaled by 1.01 is
off by 26-29, by 1.1 about 290; a kernel (local) error leaves it within 0.6.
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

ROUNDING_ROUNDOFFS = 16.0  # beyond this many unit roundoffs of the dtype: constants differ
FLOOR = 1e-5  # ... and beyond this relative distance (float32 ops: the benchmark's rounding)


@dataclass(frozen=True)
class BenchmarkInputs:
    """The inputs of an isolated replay, or why there is none."""

    inputs: list[np.ndarray] | None
    replaced: int = 0  # data inputs that took the benchmark's values
    note: str | None = None  # why there is no isolated replay


def benchmark_inputs(
    ws: Workspace,
    graph: GraphIndex,
    rec: OpRecord,
    device_inputs: Sequence[np.ndarray],
) -> BenchmarkInputs:
    """`device_inputs` with every float data input replaced by its benchmark tensor."""
    inputs = list(device_inputs)
    replaced = 0
    for k, value in enumerate(device_inputs):
        if value.dtype.kind != "f" or constant_input(graph, rec.name, k):
            continue
        which = f"input {k} ({rec.data_inputs[k][0] if k < len(rec.data_inputs) else '?'})"
        benchmark = ws.input_benchmark(graph, rec, k)
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
    return BenchmarkInputs(inputs, replaced)


def _squeezed(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d for d in shape if d != 1)


def allowed_distance(dtype: str) -> float:
    """The relative distance the isolated output may be off by rounding alone."""
    roundoff = float(ulp(np.array(1.0), dtype)) / 2
    return max(ROUNDING_ROUNDOFFS * roundoff, FLOOR)


def constants_differ(isolated: OwnError | None, dtype: str) -> bool:
    """True when, from the benchmark's own inputs, the op is off beyond rounding (module
    rule): what the device gives it besides data differs from what the benchmark used."""
    if isolated is None:
        return False
    distance = isolated.relative_euclidean_distance
    return bool(np.isnan(distance)) or distance > allowed_distance(dtype)
