"""`ls`, `ni`, `pt`, `cp`, `dc` on a foreign workspace (MegEngine / SigmaStar dumps).

Names: a var name (`mul1:0`), a var id (`8` or `var8`), a SigmaStar tensor name, or an op
name (every output of that op). `cp` pairs the tensor with its partner the way `vc` does
(`pairing.pair_dumps`) and computes `vc`'s metrics (`foreign.metrics`) and verdict.
`pt` saves each tensor's values as text as the native `pt` does (`workspace.tensor_text`), in
`<root>/precision_data/temp/pt/<run>.<var or tensor>.txt`, a repeated `pt` replacing its own
file. `dc` writes `.npy` files of the values as the reader gives them (MegEngine: the stored
dtype; SigmaStar: real values, quantized runs dequantized in float64, float runs float32),
never over a file and never inside a dump dir.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from precision_shell.compare.metrics.cells import NOT_COMPUTED
from precision_shell.compare.results.thresholds import ThresholdRule
from precision_shell.errors import PrecisionError
from precision_shell.foreign.dumps import ForeignTensor
from precision_shell.foreign.metrics import FOREIGN_METRICS
from precision_shell.foreign.pairing import pair_dumps
from precision_shell.foreign.run import _row
from precision_shell.foreign.verdict import default_rule
from precision_shell.foreign.workspace import ForeignRun, ForeignWorkspace
from precision_shell.workspace.output_files import (
    OutputError,
    make_user_dir,
    output_error,
)
from precision_shell.workspace.subgraph_files import safe_file_stem
from precision_shell.workspace.tensor_stats import TensorStats, compute_stats
from precision_shell.workspace.tensor_text import write_tensor_text

_MAX_SUFFIX = 1000


def shape_text(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def label(t: ForeignTensor) -> str:
    """`var8 mul1:0` (MegEngine) or the tensor name (SigmaStar)."""
    return f"var{t.key} {t.name}" if t.var_id is not None else t.name


def file_stem(run: ForeignRun, t: ForeignTensor) -> str:
    """`runA.var8_mul1_0` / `<run>.<tensor name>`: the run and the tensor, safe as a file
    name (`pt`'s text and `dc`'s `.npy` files)."""
    return safe_file_stem(f"{run.name}.{t.name if t.var_id is None else label(t)}", 200)


# ---------------------------------------------------------------------------- ls


@dataclass(frozen=True)
class ListingRow:
    order: int
    key: str
    name: str
    op_name: str
    op_type: str
    dtype: str
    shape: tuple[int, ...]
    runs: tuple[str, ...]  # the runs holding it


@dataclass(frozen=True)
class ForeignListing:
    title: str
    family: str
    filters: dict[str, str]
    rows: list[ListingRow]
    total: int


def _matches(t: ForeignTensor, name: str | None, op_type: str | None) -> bool:
    if name and not any(name.lower() in s.lower() for s in (t.name, t.op_name, t.key)):
        return False
    return not op_type or op_type.lower() in t.op_type.lower()


def list_tensors(
    ws: ForeignWorkspace, name: str | None = None, op_type: str | None = None
) -> ForeignListing:
    """Tensors in execution order (the left run's, then those only the right has)."""
    pairs: list[tuple[ForeignTensor | None, ForeignTensor | None]]
    if ws.right is None:
        pairs = [(t, None) for t in ws.left.tensors]
    else:
        pairs = [(lt, rt) for lt, rt, _ in pair_dumps(ws.left.dump, ws.right.dump).pairs]
    rows = []
    for n, (lt, rt) in enumerate(pairs):
        main = lt if lt is not None else rt
        assert main is not None
        if not _matches(main, name, op_type):
            continue
        runs = tuple(r.name for r, t in zip(ws.runs, (lt, rt), strict=False) if t is not None)
        rows.append(
            ListingRow(
                n, main.key, main.name, main.op_name, main.op_type, main.dtype, main.shape, runs
            )
        )
    filters = {k: v for k, v in (("name", name), ("type", op_type)) if v}
    return ForeignListing(ws.describe(), ws.family, filters, rows, len(pairs))


# ---------------------------------------------------------------------------- lookup


def _var_match(t: ForeignTensor, name: str) -> bool:
    return name in (t.name, t.key) or (t.var_id is not None and name == f"var{t.key}")


def find_in_run(run: ForeignRun, name: str) -> tuple[str, list[ForeignTensor]]:
    """("var", [tensor]) or ("op", its outputs by slot) or ("", [])."""
    found = [t for t in run.tensors if _var_match(t, name)]
    if found:
        return "var", found[:1]
    outputs = sorted((t for t in run.tensors if t.op_name == name), key=lambda t: t.slot)
    return ("op", outputs) if outputs else ("", [])


def _not_found(ws: ForeignWorkspace, command: str, name: str) -> PrecisionError:
    low = name.lower()
    near = list(
        dict.fromkeys(
            t.op_name
            for run in ws.runs
            for t in run.tensors
            if low in t.op_name.lower() or low in t.name.lower()
        )
    )
    if near:
        shown = ", ".join(near[:8]) + (f", ... (+{len(near) - 8} more)" if len(near) > 8 else "")
        return PrecisionError(
            f"{command}: no var or op named {name!r}; {len(near)} op(s) contain it: {shown}"
        )
    return PrecisionError(f"{command}: no var or op named or containing {name!r}; try ls -n PART")


def _resolve(
    ws: ForeignWorkspace, command: str, name: str, run: str | None
) -> list[tuple[ForeignRun, str, list[ForeignTensor]]]:
    runs = [ws.run(run)] if run is not None else ws.runs
    hits = []
    for r in runs:
        kind, tensors = find_in_run(r, name)
        if tensors:
            hits.append((r, kind, tensors))
    if not hits:
        raise _not_found(ws, command, name)
    return hits


# ---------------------------------------------------------------------------- ni


@dataclass(frozen=True)
class Edge:
    """A neighbour: the var and the op that produces (inputs) or reads it (consumers)."""

    key: str
    name: str
    op_name: str
    op_type: str
    dumped: bool = True


@dataclass
class ForeignNode:
    query: str
    kind: str  # "var" / "op"
    run: str  # the run the panel is read from
    family: str
    op_name: str
    op_type: str
    outputs: list[ForeignTensor]
    inputs: list[Edge] = field(default_factory=list)
    consumers: list[Edge] = field(default_factory=list)  # one per consumer var
    runs: list[str] = field(default_factory=list)  # the runs holding it

    @property
    def consumer_ops(self) -> list[str]:
        return list(dict.fromkeys(e.op_name for e in self.consumers))


def node_info(ws: ForeignWorkspace, name: str, run: str | None = None) -> ForeignNode:
    hits = _resolve(ws, "ni", name, run)
    shown, kind, outputs = hits[0]
    first = outputs[0]
    if kind == "var" and first.var_id is None:
        kind = "tensor"  # SigmaStar: a tensor is its layer's output
    node = ForeignNode(
        name, kind, shown.name, ws.family, first.op_name, first.op_type, outputs,
        runs=[r.name for r, _, _ in hits],
    )  # fmt: skip
    seen: set[str] = set()
    for t in outputs:
        dumped_inputs = shown.dump.input_dumps.get(t.key, ())
        for i, key in enumerate(t.inputs):
            if key in seen:
                continue
            seen.add(key)
            producer = shown.get(key)
            if producer is not None:
                node.inputs.append(Edge(key, producer.name, producer.op_name, producer.op_type))
            elif i < len(dumped_inputs):
                d = dumped_inputs[i]
                node.inputs.append(Edge(key, d.name, d.op_name, d.op_type, dumped=False))
            else:
                node.inputs.append(Edge(key, "?", "?", "?", dumped=False))
    keys = {t.key for t in outputs}
    own = {id(t) for t in outputs}
    for t in shown.tensors:
        if id(t) not in own and keys.intersection(t.inputs):
            node.consumers.append(Edge(t.key, t.name, t.op_name, t.op_type))
    return node


# ---------------------------------------------------------------------------- pt


@dataclass(frozen=True)
class ForeignSummary:
    run: str
    label: str
    dtype: str
    detail: str
    stats: TensorStats
    preview: list[float]
    text_file: str  # the values as text (workspace.tensor_text)


@dataclass(frozen=True)
class ForeignSummaries:
    items: list[ForeignSummary]


def summarize(
    ws: ForeignWorkspace, name: str, run: str | None = None, preview: int = 10
) -> ForeignSummaries:
    """Statistics of the tensor (every output of an op) in each run holding it, or `run`; the
    values saved as text under `<root>/precision_data/temp/pt/`."""
    items = []
    hits = _resolve(ws, "pt", name, run)
    out_dir = ws.output_dir("pt")
    for r, _, tensors in hits:
        for t in tensors:
            values = np.asarray(t.load())
            stats = compute_stats(values, f"{r.name}: {label(t)}")
            flat = values.reshape(-1)[:preview].astype(np.float64)
            header = {
                "source": str(r.path),
                "run": r.name,
                "tensor": label(t),
                "shape": str(list(stats.shape)),
                "dtype": stats.dtype,
                "stored as": f"{t.dtype} {shape_text(t.shape)}"
                + (f" ({t.detail})" if t.detail else ""),
            }
            text_path = write_tensor_text(out_dir / f"{file_stem(r, t)}.txt", values, header)
            items.append(
                ForeignSummary(
                    r.name,
                    label(t),
                    t.dtype,
                    t.detail,
                    stats,
                    [float(v) for v in flat],
                    str(text_path),
                )
            )
    return ForeignSummaries(items)


# ---------------------------------------------------------------------------- cp


@dataclass(frozen=True)
class ForeignTensorCompare:
    name: str
    left_run: str
    right_run: str
    left: str
    right: str
    left_shape: tuple[int, ...]
    right_shape: tuple[int, ...]
    left_dtype: str
    right_dtype: str
    method: str  # how the pair was found (vc's pairing)
    metrics: dict[str, float]  # vc's metric columns; empty when not compared
    note: str  # why not compared, or "shapes differ, compared flat"
    rule: str
    fails: bool


def _single_tensor(
    command: str, name: str, kind: str, tensors: list[ForeignTensor]
) -> ForeignTensor:
    if len(tensors) != 1:
        names = ", ".join(t.name for t in tensors)
        raise PrecisionError(
            f"{command}: op {name!r} has {len(tensors)} outputs ({names}); name one"
        )
    return tensors[0]


def compare_tensor(
    ws: ForeignWorkspace, name: str, rule: ThresholdRule | None = None
) -> ForeignTensorCompare:
    """The tensor in the left run against its partner in the right, as `vc` pairs them, judged
    by `rule` (None: the family's default, as vc's)."""
    if ws.right is None:
        raise PrecisionError(f"cp: {ws.left.name} is one run; cp NAME needs a pair of dumps")
    right_run = ws.right
    kind, tensors = find_in_run(ws.left, name)
    side = "left"
    if not tensors:
        kind, tensors = find_in_run(right_run, name)
        side = "right"
    if not tensors:
        raise _not_found(ws, "cp", name)
    tensor = _single_tensor("cp", name, kind, tensors)
    pairing = pair_dumps(ws.left.dump, right_run.dump)
    found = next((p for p in pairing.pairs if p[0 if side == "left" else 1] is tensor), None)
    if found is None:  # pragma: no cover - every tensor is in the pairing
        raise PrecisionError(f"cp: {name!r} is not in the pairing")
    lt, rt, why = found
    if lt is None or rt is None:
        missing = right_run.name if rt is None else ws.left.name
        raise PrecisionError(f"cp: {label(tensor)} has no partner in {missing}: {why}")
    rule = rule or default_rule(ws.family)
    row = _row(1, lt, rt, why, rule, ws.family)
    metrics = {
        m: row.metrics[m] for m in FOREIGN_METRICS if row.texts.get(m, NOT_COMPUTED) != NOT_COMPUTED
    }
    return ForeignTensorCompare(
        name, ws.left.name, right_run.name, label(lt), label(rt), lt.shape, rt.shape,
        lt.dtype, rt.dtype, pairing.method_of(lt, rt), metrics, row.reason, rule.describe(),
        rule.fails(row),
    )  # fmt: skip


# ---------------------------------------------------------------------------- dc


@dataclass(frozen=True)
class ForeignDecoded:
    files: list[tuple[str, str, str, tuple[int, ...], str]]  # (run, label, path, shape, dtype)
    out_dir: str


def _dump_dirs(ws: ForeignWorkspace) -> list[Path]:
    """Dirs outputs must never go in: each dump dir, the dir holding a dump file."""
    dirs = []
    for r in ws.runs:
        path = r.path.resolve()
        dirs.append(path if path.is_dir() else path.parent)
    return dirs


def _check_out_dir(ws: ForeignWorkspace, out_dir: Path) -> Path:
    target = out_dir.expanduser().resolve()
    for d in _dump_dirs(ws):
        inside = target == d or (
            d.is_dir() and any(r.path.resolve() == d for r in ws.runs) and d in target.parents
        )
        if inside:
            raise PrecisionError(f"dc: {out_dir} is a dump dir; outputs never go inside one")
    return make_user_dir(target, out_dir)


def _save_new(directory: Path, stem: str, values: np.ndarray) -> Path:
    """`stem.npy`, or `stem_1.npy`, `stem_2.npy`... : an existing file is never replaced."""
    for n in range(_MAX_SUFFIX):
        path = directory / (f"{stem}.npy" if n == 0 else f"{stem}_{n}.npy")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        except FileExistsError:
            continue
        except OSError as exc:
            raise output_error(path, exc) from None
        try:
            with os.fdopen(fd, "wb") as fh:
                np.save(fh, values, allow_pickle=False)
        except OSError as exc:
            path.unlink(missing_ok=True)
            raise output_error(path, exc) from None
        return path
    raise OutputError(f"{directory / stem}.npy: too many files of this name")


def decode(
    ws: ForeignWorkspace, name: str, run: str | None = None, out_dir: Path | None = None
) -> ForeignDecoded:
    """`.npy` files of the tensor (every output of an op) of each run holding it, or `run`."""
    hits = _resolve(ws, "dc", name, run)
    target = ws.output_dir("decode") if out_dir is None else _check_out_dir(ws, out_dir)
    files = []
    for r, _, tensors in hits:
        for t in tensors:
            values = np.ascontiguousarray(np.asarray(t.load()))
            path = _save_new(target, file_stem(r, t), values)
            files.append((r.name, label(t), str(path), tuple(values.shape), str(values.dtype)))
    return ForeignDecoded(files, str(target))


# ---------------------------------------------------------------------------- vc / ac -c


def compare_paths(
    ws: ForeignWorkspace, command: str, left: str | None, right: str | None
) -> tuple[str, str]:
    """The pair `vc` / `ac -c` compare: -lt/-rt (paths, or run names of the workspace), else
    the opened pair."""
    lt, rt = ws.run_path(left), ws.run_path(right)
    if lt is None:
        lt = str(ws.left.path) if ws.right is not None or rt is not None else None
    if rt is None and ws.right is not None:
        rt = str(ws.right.path)
    if lt is None or rt is None:
        raise PrecisionError(
            f"{command}: {ws.left.name} is one run; give the other side: "
            f"{command}{' -c' if command == 'ac' else ''} -rt DUMP"
        )
    return lt, rt
