"""Builds the demo workspace on disk: `build_demo` writes, `ensure_demo` builds once and reuses.

A build goes into a staging dir next to the workspace and is moved into place only when
complete, so a crash never leaves half a workspace where a reader looks. The builder only ever
replaces a `precision_data` that carries its own marker file: anything else is the user's.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from precision_shell.demo.device_graph import plan_device_graph
from precision_shell.demo.device_ops import DevicePlan
from precision_shell.demo.ge_model_def import model_def
from precision_shell.demo.network import Network
from precision_shell.demo.spec import (
    DEMO_FORMAT_VERSION,
    MANIFEST_FILE_NAME,
    DemoManifest,
    DemoSpec,
    DeviceOpRecord,
    FaultRecord,
)
from precision_shell.demo.workspace_files import (
    GRAPH_FILE_NAME,
    WorkspaceWriter,
    graph_name,
)
from precision_shell.errors import PrecisionError
from precision_shell.formats.ge.graph import model_to_text

WORKSPACE_DIR_NAME = "precision_data"
STAGING_DIR_NAME = ".precision_data.demo-staging"
DEFAULT_SPEC = DemoSpec()
# Present in every workspace this module wrote; its absence means "not ours, hands off".
MARKER_FILE_NAME = ".precision_shell_demo"


def _is_ours(directory: Path) -> bool:
    return (directory / MARKER_FILE_NAME).is_file()


def _check_replaceable(directory: Path) -> None:
    """Raise unless `directory` is absent, empty, or a demo build (which may be replaced)."""
    if not directory.exists():
        return
    if not directory.is_dir():
        raise PrecisionError(
            f"{directory}: exists and is not a directory; the demo will not replace it"
        )
    if any(directory.iterdir()) and not _is_ours(directory):
        raise PrecisionError(
            f"{directory}: not empty and not a demo workspace; refusing to write into it "
            "(choose another root)"
        )


def _clear(directory: Path) -> None:
    """Remove `directory` after `_check_replaceable` passed for it."""
    _check_replaceable(directory)
    if directory.exists():
        shutil.rmtree(directory)


def build_demo(root: Path, spec: DemoSpec = DEFAULT_SPEC) -> DemoManifest:
    """Write the demo workspace `ROOT/precision_data` and `ROOT/demo_manifest.json`.

    Replaces an earlier demo build; raises PrecisionError for a non-empty `precision_data`
    it did not create, or a spec that cannot be built.
    """
    root = Path(root).absolute()
    shape = spec.network_shape()
    net = Network(shape, spec.seed, spec.faults)
    workspace = root / WORKSPACE_DIR_NAME
    staging = root / STAGING_DIR_NAME
    _check_replaceable(workspace)
    _clear(staging)
    staging.mkdir(parents=True)
    (staging / MARKER_FILE_NAME).write_text(
        json.dumps({"format_version": DEMO_FORMAT_VERSION}) + "\n", encoding="utf-8"
    )

    name = graph_name()
    plan = plan_device_graph(net, name)
    writer = WorkspaceWriter(staging, plan, statistics=spec.dump_data == "stats")
    writer.write_benchmark(net)
    graph_text = model_to_text(model_def(plan, writer.stream_id, net.scalar_constants()))
    runs = ["debug_0", "debug_1"] if spec.second_run else ["debug_0"]
    for run in runs:
        writer.write_graph(run, graph_text)
        writer.write_device_run(net, run, faulty=run == "debug_0")
    writer.write_fusion_result()

    counts, total = _count_files(staging)
    manifest = DemoManifest(
        format_version=DEMO_FORMAT_VERSION,
        spec=_json_normal(spec.to_json()),
        root=str(root),
        workspace=str(workspace),
        graph_name=name,
        graph_files=[str(workspace / "npu" / run / "graph" / GRAPH_FILE_NAME) for run in runs],
        dump_dirs=[str(workspace / writer.dump_dir(run)) for run in runs],
        benchmark_dir=str(workspace / writer.benchmark_dir),
        overflow_dir=str(workspace / writer.overflow_dir) if writer.overflow_ops else "",
        fusion_file=str(workspace / writer.fusion_file),
        device_ops=[
            DeviceOpRecord(
                op.name, op.type, list(op.original_names or ()), writer.dump_files.get(op.name)
            )
            for op in plan.ops
        ],
        faults=[
            FaultRecord(fault.kind, fault.op, _device_name(plan, fault.op), fault.magnitude)
            for fault in spec.faults
        ],
        overflow_op=writer.overflow_ops[0] if writer.overflow_ops else None,
        long_name_op=writer.long_name_ops[0] if writer.long_name_ops else None,
        file_counts=counts,
        total_bytes=total,
    )
    _clear(workspace)
    staging.rename(workspace)
    manifest.save(root / MANIFEST_FILE_NAME)
    return manifest


def ensure_demo(root: Path, spec: DemoSpec = DEFAULT_SPEC) -> DemoManifest:
    """The demo workspace under `root`, built only when missing, stale or from another spec."""
    root = Path(root).absolute()
    manifest_path = root / MANIFEST_FILE_NAME
    try:
        manifest = DemoManifest.from_json(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        manifest = None
    if (
        manifest is not None
        and manifest.format_version == DEMO_FORMAT_VERSION
        and manifest.spec == _json_normal(spec.to_json())
        and manifest.workspace == str(root / WORKSPACE_DIR_NAME)
        and _is_ours(Path(manifest.workspace))
    ):
        return manifest
    return build_demo(root, spec)


def _device_name(plan: DevicePlan, benchmark_op: str) -> str:
    op = plan.device_op_of(benchmark_op)
    return op.name if op is not None else ""


def _json_normal(data: dict) -> dict:
    """`data` as it reads back from JSON (tuples become lists)."""
    return json.loads(json.dumps(data))


def _count_files(directory: Path) -> tuple[dict[str, int], int]:
    """Files per top-level area ("npu/debug_0", "tf", "overflow"...) and their total bytes."""
    counts: dict[str, int] = {}
    total = 0
    for dirpath, _, filenames in os.walk(directory):
        relative = Path(dirpath).relative_to(directory).parts
        if not relative:
            continue
        area = "/".join(relative[:2]) if relative[0] == "npu" else relative[0]
        for file_name in filenames:
            counts[area] = counts.get(area, 0) + 1
            total += (Path(dirpath) / file_name).stat().st_size
    return dict(sorted(counts.items())), total
