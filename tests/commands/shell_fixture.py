"""Helpers for command tests: a real dispatcher over a demo workspace, and independent oracles.

The oracles read the files with the format layer only (header + raw tensor, `np.load`) or plain
text, so a command's numbers are checked against values it did not compute itself.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import precision_shell.commands  # noqa: F401  (registers every command)
from precision_shell.formats.npu_dump import read_dump_header, read_tensor
from precision_shell.render.output import Renderer, make_console
from precision_shell.settings import Settings
from precision_shell.shell.context import ShellContext
from precision_shell.shell.dispatcher import Dispatcher, Outcome

# tiny demo (DemoSpec(size="tiny")): batch 2, spatial 8, 8 channels, 3 input channels, 10 classes
CONV2 = "conv2/Conv2Drelu2/Relu"
CONV1 = "conv1/Conv2Drelu1/Relu"
CONV3 = "conv3/Conv2Dres/addrelu3/Relu"
POOL = "pool1/MaxPool"
DENSE = "dense/MatMul"


def open_shell(root: Path, use_cache: bool = False) -> Dispatcher:
    """A dispatcher over the workspace under `root`, with the packaged default settings only;
    `use_cache`: with the index cache and the result columns caches, as the CLI runs."""
    settings = Settings.load(user_file=root / "no-user-settings.toml")
    return Dispatcher(ShellContext(root, settings, use_cache=use_cache))


def run_ok(shell: Dispatcher, line: str) -> Any:
    outcome = shell.execute(line)
    assert outcome.ok, f"{line!r} failed: {outcome.error} {outcome.internal_log or ''}"
    return outcome.result


def rendered(result: object, width: int = 200) -> str:
    """What the render layer prints for `result`, as plain text `width` columns wide."""
    import io

    out = io.StringIO()
    Renderer(make_console(False, file=out, width=width), make_console(False)).result(result)
    return out.getvalue()


def run_fail(shell: Dispatcher, line: str) -> Outcome:
    outcome = shell.execute(line)
    assert not outcome.ok, f"{line!r} should have failed"
    assert outcome.internal_log is None, f"{line!r} crashed: {outcome.error}"
    assert "\n" not in (outcome.error or ""), "an error is one line"
    return outcome


def dump_path(root: Path, manifest: Any, op_name: str) -> Path:
    """The debug_0 dump file of `op_name` in the workspace copy at `root`."""
    op = next(o for o in manifest.device_ops if o.name == op_name)
    assert op.dump_file, op_name
    return root / "precision_data" / op.dump_file


def decoded(path: Path, kind: str, index: int) -> np.ndarray:
    """One tensor of a dump file, in its device layout."""
    return np.array(read_tensor(read_dump_header(str(path)), kind, index))


def benchmark_path(root: Path, origin_name: str, index: int = 0) -> Path:
    """The newest benchmark `.npy` of (origin op, output index), by the file-name rule."""
    stem = re.sub(r"[/.]", "_", origin_name)
    found = sorted(
        (root / "precision_data" / "tf" / "dump").glob(f"{stem}.{index}.*.npy"),
        key=lambda p: int(p.name.rsplit(".", 2)[-2]),
    )
    assert found, origin_name
    return found[-1]


@dataclass(frozen=True)
class NumpyStats:
    max: float
    min: float
    mean: float
    std: float
    nan: int
    inf: int


def numpy_stats(values: np.ndarray) -> NumpyStats:
    """Max/min/mean/std over the finite values in float64; NaN and inf counted apart."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    finite = x[np.isfinite(x)]
    nan = int(np.isnan(x).sum())
    inf = int(np.isinf(x).sum())
    if not finite.size:
        return NumpyStats(math.nan, math.nan, math.nan, math.nan, nan, inf)
    return NumpyStats(
        float(finite.max()),
        float(finite.min()),
        float(finite.mean()),
        float(finite.std()),
        nan,
        inf,
    )


def assert_stats_equal(stats: Any, values: np.ndarray) -> None:
    """`stats` (a TensorStats) equals numpy's on `values`."""
    want = numpy_stats(values)
    assert stats.shape == tuple(values.shape)
    assert stats.count == values.size
    assert stats.max == want.max
    assert stats.min == want.min
    assert math.isclose(stats.mean, want.mean, rel_tol=1e-12, abs_tol=1e-15)
    assert math.isclose(stats.std, want.std, rel_tol=1e-9, abs_tol=1e-15)
    assert (stats.nan_count, stats.inf_count) == (want.nan, want.inf)


def nc1hwc0_to_nhwc(arr: np.ndarray, channels: int) -> np.ndarray:
    n, c1, h, w, c0 = arr.shape
    return arr.transpose(0, 2, 3, 1, 4).reshape(n, h, w, c1 * c0)[..., :channels]


def fractal_z_to_nchw(arr: np.ndarray, n: int, c: int, h: int, w: int) -> np.ndarray:
    """Element (n, c, y, x) of a FRACTAL_Z filter sits at [(c // C0)*H*W + y*W + x, n // 16,
    n % 16, c % C0]; gathered by fancy indexing."""
    c0 = arr.shape[3]
    ni, ci, yi, xi = np.indices((n, c, h, w))
    return arr[(ci // c0) * h * w + yi * w + xi, ni // 16, ni % 16, ci % c0]


def op_block(graph_text: str, op_name: str) -> str:
    """The text of one `op { ... }` block of a GE text graph (ops are 2-space indented)."""
    start = graph_text.index(f'  op {{\n    name: "{op_name}"\n')
    end = graph_text.index("\n  }\n", start)
    return graph_text[start:end]


def top_level_attr_keys(block: str) -> list[str]:
    """Keys of the op's own attrs (4-space indent), not those of its tensor descs."""
    return re.findall(r'^    attr \{\n      key: "([^"]*)"', block, flags=re.M)


def tree_snapshot(root: Path, skip: Path | None = None) -> dict[str, tuple[int, int, bytes]]:
    """(size, mtime_ns, first bytes) of every file under `root`, except under `skip`."""
    snap = {}
    for path in sorted(root.rglob("*")):
        if skip is not None and (path == skip or skip in path.parents):
            continue
        if path.is_file():
            st = path.stat()
            snap[str(path.relative_to(root))] = (st.st_size, st.st_mtime_ns, path.read_bytes()[:64])
        else:
            snap[str(path.relative_to(root)) + "/"] = (0, 0, b"")
    return snap
