"""Where and how each demo file is written: dump dirs, file names, timestamps, task ids.

Everything is fixed by the plan (no wall clock), so two builds of one spec are byte-identical.
Tensors are written as they are computed and then dropped, so the large demo streams.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from precision_shell.compare.statistics.values import statistics_of
from precision_shell.demo.device_ops import SESSION_GRAPH_ID, DevicePlan, TensorPlan
from precision_shell.demo.device_run import DeviceStep, run_device
from precision_shell.demo.network import Network
from precision_shell.formats.benchmark import write_benchmark
from precision_shell.formats.dtypes import DumpDataType, code_for_numpy, payload_nbytes
from precision_shell.formats.dump_names import dump_file_name, write_mapping_csv
from precision_shell.formats.fusion_result import FusionPass, write_fusion_result
from precision_shell.formats.layouts import format_code, format_name, from_origin_layout
from precision_shell.formats.npu_dump_writer import TensorSpec, write_dump
from precision_shell.formats.opdebug_writer import write_opdebug_old
from precision_shell.formats.stats_dump import StatsRow, write_stats_dump

GRAPH_FILE_NAME = "ge_proto_00000001_Build.txt"
# Start times (UTC) of the runs; dump dirs are named after them, file timestamps count from them.
RUN_TIMES = {"debug_0": "20261122063000", "debug_1": "20261122070000"}
OVERFLOW_RUN_TIME = "20261122064500"
BENCHMARK_RUN_TIME = "20261122060000"
DEVICE_ID = "0"
MODEL_ID = 1
STEP = "0"
STREAM_ID = 1
FIRST_TASK_ID = 3
OP_INTERVAL_US = 1250
MAX_FILE_NAME_BYTES = 255
# AI Core status of the overflowing reduction: float overflow + FP32->FP16 conversion overflow.
OVERFLOW_STATUS = 0x20 | 0x100
# The benchmark tensor harvested twice: an older dump (another batch) and the current one.
DUPLICATED_TENSOR = "dense/BiasAdd"


def graph_name() -> str:
    """The GE graph name, which is also the graph's dump dir name."""
    return f"ge_default_{RUN_TIMES['debug_0']}_NPU_1"


def epoch_us(stamp: str) -> int:
    """Microseconds since the epoch of a `YYYYmmddHHMMSS` UTC time."""
    moment = datetime.strptime(stamp, "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    return int(moment.timestamp()) * 1_000_000


def _tensor_spec(value: np.ndarray, desc: TensorPlan, output: bool) -> TensorSpec:
    array = from_origin_layout(np.ascontiguousarray(value), desc.layout, desc.origin_format)
    return TensorSpec(
        array=array,
        format=format_code(desc.layout),
        original_shape=desc.origin_shape,
        original_op=(desc.origin, 0) if output and desc.origin else None,
        original_format=format_code(desc.origin_format) if output else None,
    )


def statistics_rows(inputs: list[TensorSpec], outputs: list[TensorSpec]) -> list[StatsRow]:
    """What a statistics dump records of these tensors: taken on them as stored (a padded
    layout's zeros included), as the device does."""
    rows = []
    for kind, specs in (("input", inputs), ("output", outputs)):
        for index, spec in enumerate(specs):
            array = np.asarray(spec.array)
            code = spec.dtype if spec.dtype is not None else code_for_numpy(array.dtype)
            rows.append(
                StatsRow(
                    kind=kind,
                    index=index,
                    dtype=DumpDataType(code).name,
                    format=format_name(spec.format),
                    shape=tuple(array.shape),
                    data_size=payload_nbytes(code, array.size),
                    values=statistics_of(array),
                )
            )
    return rows


def _overflowed(step: DeviceStep) -> bool:
    """The op made inf/NaN out of finite inputs: what the AI Core overflow check flags."""
    finite_in = all(np.isfinite(x).all() for x in step.inputs)
    return finite_in and not all(np.isfinite(y).all() for y in step.outputs)


class WorkspaceWriter:
    """Writes the files of one demo workspace under `base` (paths kept relative to it)."""

    def __init__(self, base: Path, plan: DevicePlan, statistics: bool = False) -> None:
        self.base = base
        self.plan = plan
        self.statistics = statistics  # device runs write statistics dumps, not tensors
        self.stream_id = STREAM_ID
        self.benchmark_dir = Path("tf", "dump")
        self.fusion_file = Path("fusion", "fusion_result.json")
        self.overflow_dir = Path(
            "overflow", "dump", OVERFLOW_RUN_TIME, DEVICE_ID, plan.graph_name, str(MODEL_ID), STEP
        )
        task_ops = [op for op in plan.ops if op.has_task]
        self.task_ids = {op.name: FIRST_TASK_ID + index for index, op in enumerate(task_ops)}
        self.dump_files: dict[str, str] = {}  # device op -> its debug_0 dump, workspace-relative
        self.overflow_ops: list[str] = []
        self.long_name_ops: list[str] = []

    def dump_dir(self, run: str) -> Path:
        """The leaf dump dir of a device run, relative to the workspace."""
        return Path(
            "npu", run, "dump", RUN_TIMES[run], DEVICE_ID, self.plan.graph_name, str(MODEL_ID), STEP
        )

    def _mkdir(self, relative: Path) -> Path:
        path = self.base / relative
        path.mkdir(parents=True, exist_ok=True)
        return path

    def write_benchmark(self, net: Network) -> None:
        """Every benchmark op output as a `.npy`, in execution order (one duplicated)."""
        directory = self._mkdir(self.benchmark_dir)
        start = epoch_us(BENCHMARK_RUN_TIME)
        for index, (op, value) in enumerate(net.benchmark()):
            write_benchmark(directory, op.tensor_name, value, start + 50_000 + index * 731)
            if op.name == DUPLICATED_TENSOR:
                # A dump left from an earlier step (other samples): the newer file must win.
                stale = np.roll(value, 1, axis=0) + np.float32(0.25)
                write_benchmark(directory, op.tensor_name, stale, start - 600_000_000)

    def write_graph(self, run: str, text: str) -> None:
        """The Build-stage graph dump of a run."""
        (self._mkdir(Path("npu", run, "graph")) / GRAPH_FILE_NAME).write_text(
            text, encoding="utf-8"
        )

    def write_device_run(self, net: Network, run: str, faulty: bool) -> None:
        """The dump of every task op of one device run, plus overflow files for the first run."""
        directory = self._mkdir(self.dump_dir(run))
        start = epoch_us(RUN_TIMES[run])
        overflow_start = epoch_us(OVERFLOW_RUN_TIME)
        mapping: dict[str, str] = {}
        for step in run_device(net, self.plan, faulty):
            op = step.op
            if not op.has_task:
                continue
            task_id = self.task_ids[op.name]
            offset = 100_000 + (task_id - FIRST_TASK_ID) * OP_INTERVAL_US
            inputs = [
                _tensor_spec(x, d, False) for x, d in zip(step.inputs, op.input_descs, strict=True)
            ]
            outputs = [
                _tensor_spec(y, d, True) for y, d in zip(step.outputs, op.output_descs, strict=True)
            ]
            file_name = dump_file_name(op.type, op.name, task_id, start + offset, self.stream_id)
            if self.statistics:
                file_name += ".csv"
            stored = file_name
            if len(file_name.encode()) > MAX_FILE_NAME_BYTES:
                # What the dumper does with names the file system refuses.
                stored = str(len(mapping) + 1)
                mapping[stored] = file_name
                if op.name not in self.long_name_ops:
                    self.long_name_ops.append(op.name)
            if self.statistics:
                write_stats_dump(directory / stored, statistics_rows(inputs, outputs))
            else:
                write_dump(directory / stored, op.name, inputs, outputs, dump_time=start + offset)
            if run == "debug_0":
                self.dump_files[op.name] = str(self.dump_dir(run) / stored)
            if faulty and _overflowed(step):
                self._write_overflow(
                    op.name, op.type, task_id, overflow_start + offset, inputs, outputs
                )
        if mapping:
            write_mapping_csv(directory, mapping)

    def _write_overflow(
        self,
        op_name: str,
        op_type: str,
        task_id: int,
        timestamp: int,
        inputs: list[TensorSpec],
        outputs: list[TensorSpec],
    ) -> None:
        directory = self._mkdir(self.overflow_dir)
        dump_name = dump_file_name(op_type, op_name, task_id, timestamp, self.stream_id)
        write_dump(directory / dump_name, op_name, inputs, outputs, dump_time=timestamp)
        debug_name = dump_file_name(
            "Opdebug", "Node_OpDebug", task_id, timestamp + 1, self.stream_id
        )
        write_opdebug_old(
            directory / debug_name,
            model_id=MODEL_ID,
            stream_id=self.stream_id,
            task_id=task_id,
            task_type=0,
            status=OVERFLOW_STATUS,
        )
        self.overflow_ops.append(op_name)

    def write_fusion_result(self) -> None:
        """`fusion_result.json`: how often each pass used in the plan matched and took effect."""
        counts: dict[tuple[str, str], int] = {}
        for op in self.plan.ops:
            for name in op.graph_passes:
                counts[("graph_fusion", name)] = counts.get(("graph_fusion", name), 0) + 1
            if op.ub_pass:
                counts[("ub_fusion", op.ub_pass)] = counts.get(("ub_fusion", op.ub_pass), 0) + 1
        passes = [
            FusionPass(SESSION_GRAPH_ID, kind, name, times, times, {})
            for (kind, name), times in counts.items()
        ]
        path = self.base / self.fusion_file
        path.parent.mkdir(parents=True, exist_ok=True)
        write_fusion_result(path, SESSION_GRAPH_ID, passes)
