"""The targeted tensor dump that confirms a statistics compare's suspects.

From the suspects (and their producers up to `depth` edges back, so the next compare can tell
an op's own error from what it received) it writes, into one dir:
- `acl.json`: the ACL dump config (`dump_list` naming exactly those ops, `dump_data: tensor`);
- `tf_session_dump.py`: the TF-on-Ascend session options (`enable_dump`, `dump_path`,
  `dump_step`, `dump_mode`, `dump_data`, `dump_layer`) to paste into the NPU session config;
- `dump_config.json`: the same, machine-readable, with the size estimate.
The estimate is the tensor bytes of those ops' dump files (inputs and outputs), from the
statistics rows' `Data Size` (else element count x dtype size); a full dump is the same sum
over every op the statistics dump holds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from precision_shell.compare.statistics.table import StatisticsRow
from precision_shell.formats.dtypes import DumpDataType, payload_nbytes
from precision_shell.workspace.graph_index import GraphIndex
from precision_shell.workspace.output_files import replace_output

DEFAULT_DEPTH = 1
DEFAULT_DUMP_PATH = "/home/HwHiAiUser/dump_tensor"
DUMP_MODE = "all"


@dataclass(frozen=True)
class DumpConfigPlan:
    suspects: list[str]
    ops: list[str]  # suspects and producers, execution order
    depth: int
    model_name: str
    step: str
    dump_path: str
    tensor_bytes: int
    full_bytes: int
    unknown_size: list[str]  # tensors whose size the statistics do not tell

    @property
    def ratio(self) -> float:
        """How many times smaller than a full tensor dump."""
        return self.full_bytes / self.tensor_bytes if self.tensor_bytes else math.inf

    def to_json(self) -> dict[str, Any]:
        return {
            "suspects": self.suspects,
            "ops": self.ops,
            "depth": self.depth,
            "model_name": self.model_name,
            "dump_step": self.step,
            "dump_path": self.dump_path,
            "dump_mode": DUMP_MODE,
            "dump_data": "tensor",
            "estimate_bytes": self.tensor_bytes,
            "full_dump_bytes": self.full_bytes,
            "smaller_by": round(self.ratio, 1) if math.isfinite(self.ratio) else None,
            "unknown_size": self.unknown_size,
        }


@dataclass(frozen=True)
class DumpConfigFiles:
    plan: DumpConfigPlan
    directory: Path
    acl_json: Path
    session_options: Path
    summary: Path


def row_bytes(row: StatisticsRow) -> int | None:
    """Bytes of one tensor as the device stores it."""
    if row.data_size is not None:
        return row.data_size
    if row.count is None or row.dtype not in DumpDataType.__members__:
        return None
    try:
        return payload_nbytes(int(DumpDataType[row.dtype]), row.count)
    except ValueError:
        return None


def _with_producers(
    suspects: Sequence[str], graph: GraphIndex | None, depth: int, dumped: set[str]
) -> set[str]:
    chosen = set(suspects)
    frontier = list(suspects)
    for _ in range(depth if graph is not None else 0):
        assert graph is not None
        nxt = []
        for op in frontier:
            for source in graph.nearest_producers(op, dumped):
                if source not in chosen:
                    chosen.add(source)
                    nxt.append(source)
        frontier = nxt
    return chosen


def plan_dump_config(
    rows: Sequence[StatisticsRow],
    suspects: Sequence[str],
    graph: GraphIndex | None,
    depth: int = DEFAULT_DEPTH,
    step: str = "0",
    dump_path: str = DEFAULT_DUMP_PATH,
    model_name: str = "",
) -> DumpConfigPlan:
    """What to dump next: `suspects` (op names) and their dumped producers to `depth`."""
    order: dict[str, int] = {}
    sizes: dict[str, int] = {}
    unknown: list[str] = []
    for row in rows:
        order.setdefault(row.op_name, len(order))
        size = row_bytes(row)
        if size is None:
            unknown.append(row.tensor_index)
        sizes[row.op_name] = sizes.get(row.op_name, 0) + (size or 0)
    chosen = _with_producers(suspects, graph, depth, set(order))
    ops = sorted(chosen, key=lambda op: order.get(op, len(order)))
    return DumpConfigPlan(
        suspects=list(suspects),
        ops=ops,
        depth=depth,
        model_name=model_name or (graph.root_graph if graph is not None else ""),
        step=step,
        dump_path=dump_path,
        tensor_bytes=sum(sizes.get(op, 0) for op in ops),
        full_bytes=sum(sizes.values()),
        unknown_size=[t for t in unknown if t.rsplit(":", 2)[0] in chosen][:20],
    )


def acl_json(plan: DumpConfigPlan) -> dict[str, Any]:
    """The ACL dump config: exactly the chosen ops, whole tensors."""
    return {
        "dump": {
            "dump_list": [{"model_name": plan.model_name, "layer": plan.ops}],
            "dump_path": plan.dump_path,
            "dump_mode": DUMP_MODE,
            "dump_data": "tensor",
            "dump_step": plan.step,
        }
    }


def session_options(plan: DumpConfigPlan) -> str:
    """The TF-on-Ascend session options, as Python to paste after `custom_op = ...`."""
    layers = " ".join(plan.ops)
    spaced = [op for op in plan.ops if any(c.isspace() for c in op)]
    lines = [
        "# Written by precision_shell: a tensor dump of the ops a statistics compare suspects",
        f"# ({len(plan.suspects)} suspects, their producers to depth {plan.depth}; "
        f"~{plan.tensor_bytes:,} bytes, {plan.ratio:.1f}x less than a full dump).",
        '# Paste after `custom_op = ...add(); custom_op.name = "NpuOptimizer"` in the session',
        "# config of the training script, run the same step again, then open the new dump.",
        'custom_op.parameter_map["enable_dump"].b = True',
        f'custom_op.parameter_map["dump_path"].s = tf.compat.as_bytes({plan.dump_path!r})',
        f'custom_op.parameter_map["dump_step"].s = tf.compat.as_bytes({plan.step!r})',
        f'custom_op.parameter_map["dump_mode"].s = tf.compat.as_bytes({DUMP_MODE!r})',
        'custom_op.parameter_map["dump_data"].s = tf.compat.as_bytes("tensor")',
        f'custom_op.parameter_map["dump_layer"].s = tf.compat.as_bytes({layers!r})',
    ]
    if spaced:
        lines.append(f"# dump_layer separates names by spaces; these hold one: {spaced}")
    return "\n".join(lines) + "\n"


def write_dump_config(plan: DumpConfigPlan, directory: Path) -> DumpConfigFiles:
    """Write the three files into `directory` (made if missing), each atomically."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = (
        directory / "acl.json",
        directory / "tf_session_dump.py",
        directory / "dump_config.json",
    )
    texts = (
        json.dumps(acl_json(plan), indent=2, allow_nan=False) + "\n",
        session_options(plan),
        json.dumps(plan.to_json(), indent=2, allow_nan=False) + "\n",
    )
    for path, text in zip(paths, texts, strict=True):

        def write(fh: IO[Any], text: str = text) -> None:
            fh.write(text)

        replace_output(path, write, text=True)
    return DumpConfigFiles(plan, directory, *paths)
