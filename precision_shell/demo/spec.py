"""What a demo workspace is asked to be (DemoSpec, Fault) and what a build produced (DemoManifest).

The spec is frozen and hashable so `ensure_demo` can tell whether a workspace on disk was built
from it; the manifest is plain JSON so other tools (tests, benchmarks) can read it without
importing numpy.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from precision_shell.errors import PrecisionError

# Bump when the files a build writes change, so `ensure_demo` rebuilds old workspaces.
DEMO_FORMAT_VERSION = 2  # 2: Muls carry their `value`

MANIFEST_FILE_NAME = "demo_manifest.json"

WRONG_CONSTANT = "wrong_constant"
FP16_OVERFLOW = "fp16_overflow"
WRONG_LAYOUT = "wrong_layout"
LOCAL_ERROR = "local_error"
NAN_BIRTH = "nan_birth"
CORRUPT_INPUT = "corrupt_input"
FAULT_KINDS = (WRONG_CONSTANT, FP16_OVERFLOW, WRONG_LAYOUT, LOCAL_ERROR, NAN_BIRTH, CORRUPT_INPUT)


@dataclass(frozen=True)
class Fault:
    """A deliberate defect of the device run (or, for `fp16_overflow`, of the model).

    `kind` names a rule in `precision_shell.demo.faults`; `op` is the benchmark op it hits (the
    manifest records the device op that contains it). Kinds and what `magnitude` / `variant`
    mean for them:
    - `wrong_constant`: the device's copy of the op's constant is mis-scaled, every other
      channel by 1+magnitude and the rest by 1-magnitude; variant "nan": max(1,
      round(magnitude)) of its elements are NaN or +inf instead.
    - `fp16_overflow`: the model is scaled so the op's float32 peak is magnitude x 65504, which
      float16 cannot hold (a side-branch op, a batch norm or a MatMul).
    - `wrong_layout`: the device op writes its output through a wrong layout conversion;
      variant "hw" swaps H and W, "c0" reverses the channel order inside each C0 block, ""
      picks "hw" for outputs with H = W > 1 and "c0" otherwise.
    - `local_error`: the device op's output carries a relative error of rms `magnitude`.
    - `nan_birth`: max(1, round(magnitude)) elements of the device op's output become NaN
      or +inf.
    - `corrupt_input`: the network input the device was fed differs from the benchmark's
      (op "input"); variant "channels" (default) reverses the channel order (BGR for RGB),
      "mean" adds `magnitude` (the mean was not subtracted), "nan" makes max(1,
      round(magnitude)) of its elements NaN or +inf.
    """

    kind: str
    op: str
    magnitude: float = 0.5
    variant: str = ""


DEFAULT_FAULTS: tuple[Fault, ...] = (
    Fault(WRONG_CONSTANT, "bn2/FusedBatchNormV3", 0.5),
    Fault(FP16_OVERFLOW, "l2_loss/Sum", 4.0),
)


@dataclass(frozen=True)
class NetworkShape:
    """The sizes of the demo network, resolved from a spec."""

    batch: int
    spatial: int
    channels: int
    blocks: int
    in_channels: int = 3
    classes: int = 10
    long_name_op: bool = True
    fp32_head: bool = False
    branch_gain: float | None = None


# batch, spatial, channels, residual blocks. Channels are deliberately not multiples of 16 in
# the small sizes so the NC1HWC0 pads are exercised; "large" is sized for ~1 GB and ~300 ops.
_SIZE_PRESETS: dict[str, tuple[int, int, int, int]] = {
    "tiny": (2, 8, 8, 1),
    "small": (4, 32, 24, 2),
    "large": (4, 48, 64, 144),
}


@dataclass(frozen=True)
class DemoSpec:
    """How to build a demo workspace; None knobs take the size preset's value.

    `fp32_head`: the head runs in float32 on the device, as mixed precision leaves reductions:
    GE casts the features to float32 for `global_pool/Mean`, a per-channel feature scale
    `head/mul` follows, and a Cast back to float16 feeds the dense layer.
    `branch_gain`: the last batch norm of every residual branch is this many times its usual
    scale (instead of shrinking with depth), so a deep stack amplifies float16 rounding from
    block to block: the drift of a deep network.
    """

    size: str = "small"
    seed: int = 0
    faults: tuple[Fault, ...] = DEFAULT_FAULTS
    second_run: bool = True
    long_name_op: bool = True
    batch: int | None = None
    spatial: int | None = None
    channels: int | None = None
    blocks: int | None = None
    fp32_head: bool = False
    branch_gain: float | None = None
    # "tensor": device runs dump every tensor; "stats": statistics-only dumps (one `.csv` per
    # op, as CANN writes with `dump_data: stats`), computed on the tensors as stored
    dump_data: str = "tensor"

    def network_shape(self) -> NetworkShape:
        """The network sizes this spec asks for; raises PrecisionError for impossible ones."""
        if self.size not in _SIZE_PRESETS:
            known = ", ".join(_SIZE_PRESETS)
            raise PrecisionError(f"unknown demo size {self.size!r}; choose one of {known}")
        batch, spatial, channels, blocks = _SIZE_PRESETS[self.size]
        shape = NetworkShape(
            batch=batch if self.batch is None else self.batch,
            spatial=spatial if self.spatial is None else self.spatial,
            channels=channels if self.channels is None else self.channels,
            blocks=blocks if self.blocks is None else self.blocks,
            long_name_op=self.long_name_op,
            fp32_head=self.fp32_head,
            branch_gain=self.branch_gain,
        )
        if self.dump_data not in ("tensor", "stats"):
            raise PrecisionError(f"demo dump_data must be tensor or stats, got {self.dump_data!r}")
        if self.branch_gain is not None and self.branch_gain <= 0:
            raise PrecisionError(f"demo branch_gain must be positive, got {self.branch_gain}")
        if shape.batch < 1 or shape.channels < 1 or shape.blocks < 1:
            raise PrecisionError("demo batch, channels and blocks must be at least 1")
        if shape.spatial < 2 or shape.spatial % 2:
            raise PrecisionError(f"demo spatial size must be even and >= 2, got {shape.spatial}")
        return shape

    def to_json(self) -> dict[str, Any]:
        """The spec as JSON-ready data (faults as lists of dicts)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DemoSpec:
        """The spec `to_json` wrote."""
        values = dict(data)
        values["faults"] = tuple(Fault(**fault) for fault in values.get("faults", ()))
        return cls(**values)


@dataclass
class DeviceOpRecord:
    """One op of the device graph, in execution order."""

    name: str
    type: str
    original_op_names: list[str]
    dump_file: str | None  # relative to the workspace; None for ops without a task


@dataclass
class FaultRecord:
    """Where an injected fault landed."""

    kind: str
    benchmark_op: str
    device_op: str
    magnitude: float


@dataclass
class DemoManifest:
    """What `build_demo` wrote; saved as `ROOT/demo_manifest.json`. Paths are absolute."""

    format_version: int
    spec: dict[str, Any]
    root: str
    workspace: str
    graph_name: str
    graph_files: list[str]
    dump_dirs: list[str]
    benchmark_dir: str
    overflow_dir: str
    fusion_file: str
    device_ops: list[DeviceOpRecord]
    faults: list[FaultRecord]
    overflow_op: str | None
    long_name_op: str | None
    file_counts: dict[str, int] = field(default_factory=dict)
    total_bytes: int = 0

    def to_json(self) -> str:
        """The manifest as indented JSON text."""
        return json.dumps(asdict(self), indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> DemoManifest:
        """The manifest `to_json` wrote; raises ValueError/KeyError/TypeError on other text."""
        data = json.loads(text)
        data["device_ops"] = [DeviceOpRecord(**op) for op in data["device_ops"]]
        data["faults"] = [FaultRecord(**fault) for fault in data["faults"]]
        return cls(**data)

    def save(self, path: Path) -> None:
        """Write the manifest to `path` (through a temporary file, so readers never see half)."""
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(self.to_json(), encoding="utf-8")
        temporary.replace(path)
