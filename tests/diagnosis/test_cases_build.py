"""Every diagnosis case builds, names its device op, and holds its fault where it should be.

Checked on the files, with the format readers (graph, dumps converted to the benchmark layout,
benchmark `.npy`), independently of the compare engine: the expected op's output is worse than
every op upstream of it (cosine, or NaN/inf count), every op the fault cannot reach stays
healthy, and a corrupted input shows at the first consumer's input.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pytest

from precision_shell.demo.device_graph import plan_device_graph
from precision_shell.demo.device_run import run_device
from precision_shell.demo.network import FP16_MAX, Network
from precision_shell.demo.spec import (
    CORRUPT_INPUT,
    FAULT_KINDS,
    FP16_OVERFLOW,
    LOCAL_ERROR,
    NAN_BIRTH,
    DemoManifest,
    FaultRecord,
)
from precision_shell.formats.benchmark import BenchmarkIndex, load_benchmark, scan_benchmark_dir
from precision_shell.formats.ge.graph import load_ge_graph
from precision_shell.formats.ge.model import OpDef
from precision_shell.formats.npu_dump import DumpHeader, read_dump_header, read_tensor_converted
from tests.diagnosis.cases import CASES, DEEP_BLOCKS, OP_KINDS, DiagnosisCase, build_case

PASS_THROUGH = frozenset({"Cast", "TransData"})
HEALTHY_COSINE = 0.999
# A local error is a real jump: its relative error at least this many times its worst input's.
LOCAL_JUMP = 3.0


def cosine(device: np.ndarray, benchmark: np.ndarray) -> float:
    """Cosine similarity in float64; nan when either side is non-finite or all zero."""
    x = np.asarray(device, dtype=np.float64).ravel()
    y = np.asarray(benchmark, dtype=np.float64).ravel()
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        return math.nan
    norm = np.linalg.norm(x) * np.linalg.norm(y)
    return float(x @ y / norm) if norm > 0 else math.nan


def relative_error(cos: float) -> float:
    """The relative error a cosine stands for (small-angle: sqrt(2 (1 - cos)))."""
    return math.sqrt(max(0.0, 2.0 * (1.0 - cos)))


@dataclass
class TensorCheck:
    """One device tensor against its benchmark."""

    cosine: float
    nonfinite: int


@dataclass
class OpCheck:
    """An op's output 0 and its data inputs (those with a benchmark) against the benchmark."""

    name: str
    output: TensorCheck
    inputs: dict[int, TensorCheck] = field(default_factory=dict)
    inputs_nonfinite: int = 0  # over every input, constants included

    @property
    def worst_input_cosine(self) -> float:
        values = [check.cosine for check in self.inputs.values()]
        return min(values) if values else math.nan


class BuiltWorkspace:
    """A built case read back with the format readers."""

    def __init__(self, manifest: DemoManifest) -> None:
        self.manifest = manifest
        self.root = Path(manifest.workspace)
        (graph,) = load_ge_graph(manifest.graph_files[0]).graphs
        self.ops: dict[str, OpDef] = {op.name: op for op in graph.ops}
        self.order = [op.name for op in graph.ops]
        self.dump_files = {
            r.name: self.root / r.dump_file for r in manifest.device_ops if r.dump_file
        }
        self.benchmarks: BenchmarkIndex = scan_benchmark_dir(Path(manifest.benchmark_dir))

    def header(self, op: str) -> DumpHeader:
        return read_dump_header(self.dump_files[op])

    def benchmark(self, origin: str) -> np.ndarray:
        found = self.benchmarks.lookup(origin, 0)
        assert found is not None, origin
        return load_benchmark(found.path)

    def input_origin(self, op: str, k: int) -> str | None:
        """The benchmark op behind data input k, walking up through GE's Cast/TransData."""
        source, index = self.ops[op].data_inputs[k]
        while True:
            producer = self.ops[source]
            origin = producer.output_descs[index].origin_name
            if origin is not None or producer.type not in PASS_THROUGH:
                return origin
            source, index = producer.data_inputs[0]

    def _tensor(self, header: DumpHeader, kind: str, k: int, desc_list: list) -> np.ndarray:
        desc = desc_list[k]
        return read_tensor_converted(header, kind, k, desc.origin_format, desc.origin_shape)

    def check(self, op: str) -> OpCheck:
        """Output 0 and the data inputs of a dumped op against their benchmarks."""
        op_def = self.ops[op]
        header = self.header(op)
        out = self._tensor(header, "output", 0, op_def.output_descs)
        origin = op_def.output_descs[0].origin_name
        out_cos = cosine(out, self.benchmark(origin)) if origin else math.nan
        result = OpCheck(op, TensorCheck(out_cos, int((~np.isfinite(out)).sum())))
        for k in range(len(op_def.input_descs)):
            value = self._tensor(header, "input", k, op_def.input_descs)
            result.inputs_nonfinite += int((~np.isfinite(value)).sum())
            if k < len(op_def.data_inputs) and (source := self.input_origin(op, k)) is not None:
                result.inputs[k] = TensorCheck(
                    cosine(value, self.benchmark(source)), int((~np.isfinite(value)).sum())
                )
        return result

    def _reach(self, op: str, upward: bool) -> set[str]:
        consumers: dict[str, list[str]] = {}
        for name, op_def in self.ops.items():
            for source, _ in op_def.data_inputs:
                consumers.setdefault(source, []).append(name)
        seen: set[str] = set()
        todo = [op]
        while todo:
            name = todo.pop()
            nexts = (
                [source for source, _ in self.ops[name].data_inputs]
                if upward
                else consumers.get(name, [])
            )
            for other in nexts:
                if other not in seen:
                    seen.add(other)
                    todo.append(other)
        return seen

    def upstream(self, op: str) -> set[str]:
        """Every op `op` reads from, directly or not."""
        return self._reach(op, upward=True)

    def downstream(self, op: str) -> set[str]:
        """Every op that reads `op`'s output, directly or not."""
        return self._reach(op, upward=False)

    @cached_property
    def compared(self) -> dict[str, OpCheck]:
        """Every dumped op whose output has a benchmark, in execution order."""
        return {
            name: self.check(name)
            for name in self.order
            if name in self.dump_files and self.ops[name].output_descs[0].origin_name
        }

    def first_consumer(self, op: str) -> str:
        return next(
            name
            for name in self.order
            if any(source == op for source, _ in self.ops[name].data_inputs)
        )


def measure_case(case: DiagnosisCase, root: Path) -> tuple[DemoManifest, BuiltWorkspace, float]:
    """Build a case; its manifest, the workspace read back, and the build time in seconds."""
    start = time.perf_counter()
    manifest = build_case(case, root)
    seconds = time.perf_counter() - start
    return manifest, BuiltWorkspace(manifest), seconds


def test_suite_covers_every_fault_kind_and_op_kind() -> None:
    assert len(CASES) >= 24
    assert len({case.name for case in CASES}) == len(CASES)
    assert {case.fault.kind for case in CASES} == set(FAULT_KINDS)
    assert {case.op_kind for case in CASES} == set(OP_KINDS)
    for kind in FAULT_KINDS:
        kinds = {case.op_kind for case in CASES if case.fault.kind == kind}
        if kind == CORRUPT_INPUT:
            assert kinds == {"input"}
        else:
            assert {"conv", "cast"} <= kinds and len(kinds) >= 3, (kind, kinds)
    for case in CASES:
        assert len(case.spec.faults) == 1, case.name
        assert case.spec.size in ("tiny", "small"), case.name
        deep = case.spec.blocks is not None and case.spec.blocks > 2
        assert deep == (case.fault.kind == LOCAL_ERROR), case.name


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_case_builds_with_its_fault_in_the_expected_op(case: DiagnosisCase, tmp_path: Path) -> None:
    manifest, ws, seconds = measure_case(case, tmp_path)
    fault = case.fault
    assert seconds < (10.0 if fault.kind == LOCAL_ERROR else 3.0), seconds
    assert manifest.faults == [
        FaultRecord(fault.kind, fault.op, case.expected_device_op, fault.magnitude)
    ]
    assert case.expected_device_op in ws.ops
    nonfinite_kinds = (NAN_BIRTH, FP16_OVERFLOW)
    # Opdebug files exist exactly when the fault makes NaN/inf, and name the faulty op.
    expected_overflow = case.expected_device_op if fault.kind in nonfinite_kinds else None
    assert manifest.overflow_op == expected_overflow

    op = case.expected_device_op
    compared = ws.compared
    downstream = ws.downstream(op)
    if fault.kind == CORRUPT_INPUT:
        _check_corrupt_input(ws, op)
    else:
        target = compared[op]
        upstream = [compared[name] for name in ws.upstream(op) if name in compared]
        # The op's own inputs count as upstream too (the first conv has only the feed there).
        upstream += [OpCheck(f"{op}:input:{k}", check) for k, check in target.inputs.items()]
        assert upstream, "the fault op has nothing compared upstream"
        if fault.kind in nonfinite_kinds:
            _check_nonfinite_birth(ws, case, target, upstream)
        else:
            _check_cosine_drop(case, target, upstream)
    # Only this fault: every op it cannot reach is as healthy as float16 leaves it.
    unreached = [check for name, check in compared.items() if name not in downstream | {op}]
    for check in unreached:
        assert check.output.nonfinite == 0, check.name
        if fault.kind != LOCAL_ERROR:
            assert check.output.cosine > HEALTHY_COSINE, (check.name, check.output.cosine)


def _check_nonfinite_birth(
    ws: BuiltWorkspace, case: DiagnosisCase, target: OpCheck, upstream: list[OpCheck]
) -> None:
    assert target.output.nonfinite > 0
    assert target.inputs_nonfinite == 0  # NaN/inf is born here: inputs and constants finite
    for check in upstream:
        assert check.output.nonfinite == 0, check.name
        assert check.output.cosine > HEALTHY_COSINE, (check.name, check.output.cosine)
    origin = ws.ops[case.expected_device_op].output_descs[0].origin_name
    peak = float(np.abs(ws.benchmark(origin)).max())
    if case.fault.kind == FP16_OVERFLOW:
        assert peak > FP16_MAX  # the model itself leaves float16's range
    else:
        assert peak < FP16_MAX and target.output.nonfinite == round(case.fault.magnitude)


def _check_cosine_drop(case: DiagnosisCase, target: OpCheck, upstream: list[OpCheck]) -> None:
    assert target.output.nonfinite == 0
    worst_upstream = min(check.output.cosine for check in upstream)
    assert target.output.cosine < worst_upstream
    assert target.inputs and all(not math.isnan(c.cosine) for c in target.inputs.values())
    if case.fault.kind == LOCAL_ERROR:
        # Close to its benchmark, yet a real jump over the drift it receives.
        assert target.output.cosine > 0.975
        jump = relative_error(target.output.cosine) / relative_error(target.worst_input_cosine)
        assert jump > LOCAL_JUMP, jump
        assert relative_error(target.output.cosine) > LOCAL_JUMP * relative_error(worst_upstream)
    else:
        assert target.output.cosine < 0.99
        for check in upstream:
            assert check.output.cosine > HEALTHY_COSINE, (check.name, check.output.cosine)


def _check_corrupt_input(ws: BuiltWorkspace, op: str) -> None:
    assert ws.ops[op].type == "Data" and op not in ws.dump_files
    consumer = ws.first_consumer(op)
    assert ws.ops[consumer].type == "Cast"  # GE's cast of the float32 feed
    seen = ws.check(consumer).inputs[0]
    assert seen.nonfinite == 0 and seen.cosine < 0.99
    conv = next(name for name in ws.order if ws.ops[name].type == "Conv2D")
    assert ws.input_origin(conv, 0) == op
    conv_check = ws.check(conv)
    assert conv_check.inputs[0].cosine == pytest.approx(seen.cosine, abs=1e-3)


@pytest.mark.parametrize(
    "case",
    [case for case in CASES if case.fault.kind == LOCAL_ERROR],
    ids=lambda case: case.name,
)
def test_deep_stack_drifts_near_0_99_without_the_fault(case: DiagnosisCase) -> None:
    spec = case.spec
    net = Network(spec.network_shape(), spec.seed, ())
    benchmark = {op.name: value for op, value in net.benchmark()}
    plan = plan_device_graph(net, "drift")
    last_conv = [
        cosine(step.outputs[0], benchmark[step.op.output_descs[0].origin])
        for step in run_device(net, plan)
        if step.op.type == "Conv2D"
    ]
    assert spec.blocks == DEEP_BLOCKS and len(last_conv) == 2 * DEEP_BLOCKS + 1
    # Healthy early, drifting toward 0.99 by the end of the stack, never a jump of its own.
    assert last_conv[1] > 0.99999
    assert 0.98 < last_conv[-1] < 0.997, last_conv[-1]
