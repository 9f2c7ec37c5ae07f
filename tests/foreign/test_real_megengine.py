"""Dumps written by a real MegEngine, read by our readers and compared by `vc` (optional).

MegEngine has no wheel for this project's Python (3.11), so the dumps are made by another
interpreter that has it: `$PRECISION_SHELL_PY310`, else `python3.10` on PATH. It needs both
`megengine` (to build and dump a tiny network) and `megenginelite` (to run it with the io dump
plugins; both come in MegEngine's wheel, which wants numpy < 2). Without them the tests are
skipped, saying which interpreter or module is missing. Checked with MegEngine 1.13.0.

The network runs through megenginelite's `io_bin_dump` / `io_txt_dump` (what `load_and_run
--bin-io-dump` / `--io-dump` do in its lite mode): twice on one input, once on that input with
its first value moved (the planted change), and that once more as text.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

from precision_shell.foreign.dumps import ForeignDump, open_foreign
from precision_shell.foreign.pairing import pair_dumps
from precision_shell.foreign.run import run_foreign_compare
from precision_shell.formats.megengine_dump import read_bin_io_dump

ENV = "PRECISION_SHELL_PY310"
MODULES = ("megengine", "megenginelite")
X = (np.arange(8, dtype=np.float32).reshape(2, 4) - 3.0) / 4.0
W = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3)

# Run by the other interpreter: argv = model path, the three bin dump dirs, the text dump.
SCRIPT = textwrap.dedent(
    """
    import os
    import sys

    import numpy as np
    import megengine as mge
    import megengine.functional as F
    from megengine.jit import trace
    from megenginelite import LiteConfig, LiteNetwork

    model, same_a, same_b, planted, planted_text = sys.argv[1:6]
    weight = mge.tensor(np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3))

    @trace(symbolic=True, capture_as_const=True)
    def net(data):
        h = F.relu(F.matmul(data, weight)) * 2.0 + 1.0
        wide = F.broadcast_to(F.sum(h, axis=0, keepdims=True), (4, 3))
        return h, wide, h[:, ::2]

    x = (np.arange(8, dtype=np.float32).reshape(2, 4) - 3.0) / 4.0
    net(mge.tensor(x))
    net.dump(model, arg_names=["data"], output_names=["out", "wide", "every_other"])

    def run(data, out_dir=None, text=None):
        network = LiteNetwork(LiteConfig())
        network.load(model)
        if text:
            network.io_txt_dump(text)
        else:
            os.makedirs(out_dir, exist_ok=True)
            network.io_bin_dump(out_dir)
        network.get_io_tensor(network.get_input_name(0)).set_data_by_copy(data)
        network.forward()
        network.wait()
        del network  # the text dump is flushed when the plugin goes

    run(x, same_a)
    run(x, same_b)
    moved = x.copy()
    moved[0, 0] += 0.5
    run(moved, planted)
    run(moved, text=planted_text)
    """
)


def _interpreter() -> str:
    """The interpreter that can import MegEngine, or pytest.skip saying what is missing."""
    given = os.environ.get(ENV)
    found = given or shutil.which("python3.10")
    if not found:
        pytest.skip(f"no Python 3.10 interpreter: ${ENV} is not set and python3.10 is not on PATH")
    where = f"${ENV}={given}" if given else f"python3.10 ({found})"
    for code, what in [("import sys", "run")] + [(f"import {m}", f"import {m}") for m in MODULES]:
        try:
            probe = subprocess.run([found, "-c", code], capture_output=True, text=True, timeout=300)
        except OSError as exc:
            pytest.skip(f"{where} cannot be run: {exc}")
        if probe.returncode != 0:
            lines = [line for line in probe.stderr.splitlines() if line.strip()]
            said = (lines[-1] if what != "run" else lines[0]) if lines else "no message"
            pytest.skip(f"{where} cannot {what}: {said.strip()}")
    return found


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    python = _interpreter()
    root = tmp_path_factory.mktemp("real_megengine")
    script = root / "make_dumps.py"
    script.write_text(SCRIPT, encoding="utf-8")
    paths = [root / name for name in ("same_a", "same_b", "planted", "planted.txt")]
    made = subprocess.run(
        [python, str(script), str(root / "net.mge"), *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert made.returncode == 0, made.stderr[-2000:]
    (root / "ws").mkdir()
    return paths


def _by_name(dump: ForeignDump, name: str):
    (found,) = [t for t in dump.tensors if t.name == name]
    return found


def _contiguous(layout: str) -> bool:
    """`{4(0),3(1) Float32}`: do the strides walk the dims in C order without gaps?"""
    pairs = [(int(d), int(s)) for d, s in re.findall(r"(\d+)\((-?\d+)\)", layout)]
    step = 1
    for dim, stride in reversed(pairs):
        if dim != 1 and stride != step:
            return False
        step *= dim
    return True


def test_real_bin_io_dumps_pair_and_the_planted_var_fails(dumps: list[Path]) -> None:
    same_a, same_b, planted = (open_foreign(d) for d in dumps[:3])
    assert same_a.kind == "megengine_bin_io_dump" and len(same_a.tensors) >= 5
    ws = dumps[0].parent / "ws"

    # one input twice: every var pairs and passes
    assert pair_dumps(same_a, same_b).paired == len(same_a.tensors) == len(same_b.tensors)
    again = run_foreign_compare(ws, str(dumps[0]), str(dumps[1]))
    assert all(r.compared for r in again.rows) and again.failing == []

    # the planted input: every var pairs; the input var fails and is the one root cause
    assert pair_dumps(planted, same_a).paired == len(same_a.tensors) == len(planted.tensors)
    result = run_foreign_compare(ws, str(dumps[2]), str(dumps[0]), diagnose=True)
    assert len(result.rows) == len(same_a.tensors) and all(r.compared for r in result.rows)
    (data,) = [r for r in result.rows if r.op_type == "Host2DeviceCopy"]
    assert data in result.failing and math.isclose(data.metrics["MaxAbsoluteError"], 0.5)
    assert result.causes is not None and [c.type for c in result.causes] == ["Host2DeviceCopy"]


def test_real_strided_vars_are_written_contiguous(dumps: list[Path]) -> None:
    """docs/FORMATS-OTHER.md 1.1: the title shows the var's device strides (a broadcast's 0,
    a subtensor's step), the payload holds the values in C order of the dims."""
    dump = open_foreign(dumps[0])
    titles = read_bin_io_dump(dumps[0]).vars.values()
    h = np.maximum(X @ W, 0) * 2 + 1
    for name, want in (("wide", np.broadcast_to(h.sum(0, keepdims=True), (4, 3))),
                       ("every_other", h[:, ::2])):  # fmt: skip
        tensor = _by_name(dump, name)
        layout = next(v.info.layout for v in titles if v.name == name)
        assert not _contiguous(layout), (name, layout)
        assert tensor.shape == want.shape
        np.testing.assert_allclose(tensor.values(), want, rtol=1e-6)


def test_real_text_dump_is_judged_on_what_it_printed(dumps: list[Path]) -> None:
    """The planted run as `--io-dump` text against the plain binary run: the input var (8
    values, 5 printed) fails on its first printed value; no var printed in part passes."""
    text = open_foreign(dumps[3])
    assert text.kind == "megengine_io_dump_text"
    assert pair_dumps(text, open_foreign(dumps[0])).paired == len(text.tensors)
    result = run_foreign_compare(dumps[0].parent / "ws", str(dumps[3]), str(dumps[0]))
    partial = {t.key for t in text.tensors if t.partial}
    assert partial
    for row in result.rows:
        key = row.npu_dump.split()[0].removeprefix("var")
        if key in partial:
            assert row in result.failing or not row.compared, row
    (data,) = [r for r in result.rows if r.op_type == "Host2DeviceCopy"]
    assert data in result.failing
    # first printed value: -0.25 (+-0.00005) against -0.75, over max(|x|, 1) = 1
    assert math.isclose(data.metrics["MegEngineRelativeErrorAtLeast"], 0.5 - 0.00005, rel_tol=1e-9)
