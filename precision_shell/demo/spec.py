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
DEMO_FORMAT_VERSION = 1

MANIFEST_FILE_NAME = "demo_manifest.json"

WRONG_CONSTANT = "wrong_constant"
FP16_OVERFLOW = "fp16_overflow"


@dataclass(frozen=True)
class Fault:
    """A deliberate defect of the device run.

    `kind` names a rule in `precision_shell.demo.faults` (`wrong_constant`: the device's copy of
    the op's constant is mis-scaled, every other channel by 1+magnitude and the rest by
    1-magnitude; `fp16_overflow`: the network is scaled so the op's float32 peak is
    `magnitude` x 65504, which float16 cannot hold). `op` is the benchmark op it hits.
    """

    kind: str
    op: str
    magnitude: float = 0.5


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


# batch, spatial, channels, residual blocks. Channels are deliberately not multiples of 16 in
# the small sizes so the NC1HWC0 pads are exercised; "large" is sized for ~1 GB and ~300 ops.
_SIZE_PRESETS: dict[str, tuple[int, int, int, int]] = {
    "tiny": (2, 8, 8, 1),
    "small": (4, 32, 24, 2),
    "large": (4, 48, 64, 144),
}


@dataclass(frozen=True)
class DemoSpec:
    """How to build a demo workspace; None knobs take the size preset's value."""

    size: str = "small"
    seed: int = 0
    faults: tuple[Fault, ...] = DEFAULT_FAULTS
    second_run: bool = True
    long_name_op: bool = True
    batch: int | None = None
    spatial: int | None = None
    channels: int | None = None
    blocks: int | None = None

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
        )
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
    golden_dir: str
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
