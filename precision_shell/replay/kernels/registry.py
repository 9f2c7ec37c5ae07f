"""The replay kernel registry: one float64 kernel per GE op type, and the attribute reader.

A kernel is registered for one or more op types and is called in two phases, so the shell can
show which attributes a replay used without recomputing anything:

1. `kernel(call, attrs)` reads and validates every attribute it needs through `attrs` (an
   `Attrs`, which records each value and marks the op-definition defaults it applied) and
   checks the inputs; it returns a zero-argument `Compute`.
2. `compute()` does the float64 arithmetic and returns one array per output.

`describe_attrs` runs phase 1 only; `replay_op` runs both and checks the outputs against the
graph's output descs. Attributes missing from the graph get a default only where the op
definition (GE's REG_OP, or TF's op def for TF alias names) has one; otherwise the kernel
raises `ReplayUnsupported` naming the op type and the attribute: a replay with a guessed
stride or axis would measure the guess, not the kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from precision_shell.errors import PrecisionError


class ReplayUnsupported(PrecisionError):
    """An op this module cannot replay faithfully; the one-line message says which and why."""


@dataclass(frozen=True)
class TensorInfo:
    """What the graph says about one tensor of the op, in the layout the kernel sees it."""

    dtype: str  # GE data type name: "DT_FLOAT16", "DT_FLOAT", "DT_INT32"...
    format: str  # layout of the array handed to / returned by the kernel: "NHWC", "ND"...
    shape: tuple[int, ...]


@dataclass(frozen=True)
class KernelCall:
    """One op to replay: its GE type and attributes, the device's inputs and the output descs.

    Float inputs are float64 already; integer and bool inputs keep their dtype."""

    op_type: str
    attrs: Mapping[str, Any]
    inputs: Sequence[np.ndarray]
    input_info: Sequence[TensorInfo]
    output_info: Sequence[TensorInfo]
    op_name: str = ""


Compute = Callable[[], list[np.ndarray]]
Kernel = Callable[[KernelCall, "Attrs"], Compute]

_MISSING: Any = object()
_KERNELS: dict[str, Kernel] = {}


def register(*op_types: str) -> Callable[[Kernel], Kernel]:
    """Decorator: the kernel replays each of `op_types` (GE names and TF alias names)."""

    def add(kernel: Kernel) -> Kernel:
        for op_type in op_types:
            if op_type in _KERNELS:
                raise ValueError(f"two replay kernels for op type {op_type}")
            _KERNELS[op_type] = kernel
        return kernel

    return add


def _kernel(op_type: str) -> Kernel:
    _load_kernels()
    kernel = _KERNELS.get(op_type)
    if kernel is None:
        raise ReplayUnsupported(f"no replay kernel for op type {op_type}")
    return kernel


def _load_kernels() -> None:
    """Import the kernel modules (they register themselves) on first use."""
    from precision_shell.replay.kernels import (  # noqa: F401
        conv_pool,
        eltwise,
        matmul,
        norm,
        reduce,
        shape_ops,
    )


def has_kernel(op_type: str) -> bool:
    """True when `replay_op` knows `op_type`."""
    _load_kernels()
    return op_type in _KERNELS


def kernel_types() -> list[str]:
    """Every op type with a replay kernel, sorted."""
    _load_kernels()
    return sorted(_KERNELS)


def prepare(call: KernelCall) -> tuple[Compute, dict[str, Any]]:
    """Phase 1 of the kernel for `call`: its computation and the attributes it used (as
    `describe_attrs` shows them). For callers that want both without reading twice."""
    attrs = Attrs(call)
    compute = _kernel(call.op_type)(call, attrs)
    return compute, dict(attrs.used)


def describe_attrs(call: KernelCall) -> dict[str, Any]:
    """The attributes the kernel for `call` uses, as it reads them.

    A value the graph gave is shown as is; a default the kernel applied is the text
    "<value> (default)", e.g. {"strides": [1, 1, 1, 1], "dilations": "[1, 1, 1, 1] (default)"}.
    Raises ReplayUnsupported exactly where `replay_op` would for an attribute problem."""
    return prepare(call)[1]


def replay_op(call: KernelCall) -> list[np.ndarray]:
    """The op recomputed in float64: one array per output desc, shaped as the desc says."""
    compute, _ = prepare(call)
    return check_outputs(call, compute())


def check_outputs(call: KernelCall, outputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """`outputs` as float64 in the shapes of `call.output_info` (an empty info list: as is).

    A shape that differs from the desc only by size-1 dims is reshaped; any other mismatch
    means the attributes did not describe what the device computed, and is an error."""
    if call.output_info and len(outputs) < len(call.output_info):
        raise ReplayUnsupported(
            f"{call.op_type}: the graph lists {len(call.output_info)} outputs, "
            f"the replay makes {len(outputs)}"
        )
    result: list[np.ndarray] = []
    for index, out in enumerate(outputs[: len(call.output_info) or len(outputs)]):
        value = np.asarray(out, dtype=np.float64)
        if index < len(call.output_info):
            want = tuple(call.output_info[index].shape)
            if value.shape != want:
                squeezed = tuple(d for d in value.shape if d != 1)
                if squeezed != tuple(d for d in want if d != 1):
                    raise ReplayUnsupported(
                        f"{call.op_type}: output {index} replays with shape "
                        f"{_shape(value.shape)}, the graph says {_shape(want)}"
                    )
                value = value.reshape(want)
        result.append(value)
    return result


def _shape(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


Names = str | tuple[str, ...]


class Attrs:
    """Reads one call's attributes: validates types, applies op-definition defaults, records.

    `names` is one attribute name or a tuple of aliases (GE's name first, then TF's); the
    first alias present in the graph wins and is recorded under its own name. A default is
    recorded under the first alias as "<value> (default)"."""

    def __init__(self, call: KernelCall) -> None:
        self.op_type = call.op_type
        self._attrs = call.attrs
        self.used: dict[str, Any] = {}

    def fail(self, problem: str) -> ReplayUnsupported:
        """A ReplayUnsupported "<op type>: <problem>"."""
        return ReplayUnsupported(f"{self.op_type}: {problem}")

    def note(self, key: str, value: Any) -> None:
        """Record something the kernel derived or decided (shown with the attributes)."""
        self.used[key] = value

    def has(self, names: Names) -> bool:
        """True when the graph gives any alias of the attribute."""
        return self._find(names) is not None

    def _find(self, names: Names) -> tuple[str, Any] | None:
        for name in (names,) if isinstance(names, str) else names:
            if name in self._attrs and self._attrs[name] is not None:
                return name, self._attrs[name]
        return None

    def _get(self, names: Names, default: Any, check: Callable[[str, Any], Any]) -> Any:
        found = self._find(names)
        first = names if isinstance(names, str) else names[0]
        if found is None:
            if default is _MISSING:
                raise self.fail(f"attribute '{first}' is missing")
            self.used[first] = f"{_text(default)} (default)"
            return default
        name, raw = found
        value = check(name, raw)
        self.used[name] = value
        return value

    def ints(self, names: Names, count: int | None = None, default: Any = _MISSING) -> list[int]:
        """A list of ints; exactly `count` of them when given."""

        def check(name: str, raw: Any) -> list[int]:
            items = list(raw) if isinstance(raw, list | tuple | np.ndarray) else None
            if items is None or not all(_is_int(item) for item in items):
                raise self.fail(f"attribute '{name}' must be a list of ints, got {_text(raw)}")
            if count is not None and len(items) != count:
                raise self.fail(f"attribute '{name}' must be {count} ints, got {_text(raw)}")
            return [int(item) for item in items]

        return list(self._get(names, default, check))

    def int_(self, names: Names, default: Any = _MISSING) -> int:
        """One int (a one-element list is accepted: some converters wrap scalars)."""

        def check(name: str, raw: Any) -> int:
            if isinstance(raw, list | tuple) and len(raw) == 1:
                raw = raw[0]
            if not _is_int(raw):
                raise self.fail(f"attribute '{name}' must be an int, got {_text(raw)}")
            return int(raw)

        return int(self._get(names, default, check))

    def float_(self, names: Names, default: Any = _MISSING) -> float:
        """One float (ints are accepted)."""

        def check(name: str, raw: Any) -> float:
            if isinstance(raw, list | tuple) and len(raw) == 1:
                raw = raw[0]
            if isinstance(raw, bool) or not isinstance(raw, int | float | np.number):
                raise self.fail(f"attribute '{name}' must be a number, got {_text(raw)}")
            return float(raw)

        return float(self._get(names, default, check))

    def bool_(self, names: Names, default: Any = _MISSING) -> bool:
        """One bool."""

        def check(name: str, raw: Any) -> bool:
            if not isinstance(raw, bool | np.bool_):
                raise self.fail(f"attribute '{name}' must be a bool, got {_text(raw)}")
            return bool(raw)

        return bool(self._get(names, default, check))

    def str_(
        self, names: Names, default: Any = _MISSING, choices: Sequence[str] | None = None
    ) -> str:
        """One string; upper-cased and one of `choices` when given."""

        def check(name: str, raw: Any) -> str:
            if isinstance(raw, bytes):
                raw = raw.decode("utf-8", "replace")
            if not isinstance(raw, str):
                raise self.fail(f"attribute '{name}' must be a string, got {_text(raw)}")
            if choices is None:
                return raw
            value = raw.upper()
            if value not in choices:
                raise self.fail(
                    f"attribute '{name}' must be one of {', '.join(choices)}, got {raw!r}"
                )
            return value

        return str(self._get(names, default, check))


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _text(value: Any) -> str:
    """A value as one short line for messages."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, tuple):
        value = list(value)
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 80 else text[:77] + "..."


# --- input helpers shared by the kernel modules -------------------------------------------


def need_inputs(call: KernelCall, at_least: int, at_most: int | None = None) -> None:
    """Raise unless the call has between `at_least` and `at_most` inputs."""
    count = len(call.inputs)
    most = at_least if at_most is None else at_most
    if count < at_least or count > most:
        want = str(at_least) if most == at_least else f"{at_least} to {most}"
        raise ReplayUnsupported(f"{call.op_type}: needs {want} inputs, got {count}")


def as_float(value: np.ndarray) -> np.ndarray:
    """An input as float64 (bool and int inputs of float ops are converted exactly)."""
    return np.asarray(value, dtype=np.float64)


def input_format(call: KernelCall, index: int) -> str:
    """The layout the graph gives for input `index` ("" when there is no desc)."""
    if index < len(call.input_info):
        return call.input_info[index].format.upper().removeprefix("FORMAT_")
    return ""


def activation_layout(call: KernelCall, attrs: Attrs, default: str = "NHWC") -> str:
    """The NHWC / NCHW layout of a 4-D activation input, from the `data_format` attribute.

    The attribute wins over input_info[0].format when both exist: GE keeps the framework's
    data_format on the node, while the dump's desc format is whatever layout GE chose for the
    tensor, which need not say where the channels are."""
    return attrs.str_("data_format", default, choices=("NHWC", "NCHW"))


def out_dtype(call: KernelCall, index: int = 0) -> str:
    """The GE dtype name of output `index` ("" when there is no desc)."""
    if index < len(call.output_info):
        return call.output_info[index].dtype.upper()
    return ""
