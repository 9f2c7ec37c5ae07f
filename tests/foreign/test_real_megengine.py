"""Dumps written by a real MegEngine, read by our readers and compared by `vc` (optional).

MegEngine has no wheel for this project's Python (3.11), so the dumps are made by another
interpreter that has it: `$PRECISION_SHELL_PY310`, else `python3.10` on PATH. It needs both
`megengine` (to build and dump a tiny network) and `megenginelite` (to run it with the io dump
plugins; both come in MegEngine's wheel, which wants numpy < 2). Without them the tests are
skipped, saying which interpreter or module is missing. Checked with MegEngine 1.13.0.

The network runs through megenginelite's `io_bin_dump` / `io_txt_dump` (what `load_and_run
--bin-io-dump` / `--io-dump` do in its lite mode): twice on one input, once on that input with
its first value moved (the planted change), and that once more as text. A second network
gives vars of every dtype a graph can hold (run twice), a third the low-bit ones; the script
also writes what MegEngine's own numpy-to-DTypeEnum conversion says of each dtype.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import struct
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

from precision_shell.errors import FormatError
from precision_shell.foreign.dumps import ForeignDump, open_foreign
from precision_shell.foreign.pairing import pair_dumps
from precision_shell.foreign.run import run_foreign_compare
from precision_shell.formats.megengine_dump import DTYPE_CODES, read_bin_io_dump, read_values

ENV = "PRECISION_SHELL_PY310"
MODULES = ("megengine", "megenginelite")
X = (np.arange(8, dtype=np.float32).reshape(2, 4) - 3.0) / 4.0
W = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3)

# Run by the other interpreter: argv = model path, the three bin dump dirs, the text dump, the
# typed network's two bin dump dirs, the low-bit network's bin dump dir, the enum JSON.
SCRIPT = textwrap.dedent(
    """
    import json
    import os
    import sys

    import numpy as np
    import megengine as mge
    import megengine.functional as F
    from megengine.core._imperative_rt.utils import _get_dtype_num
    from megengine.core.tensor import dtype as D
    from megengine.jit import trace
    from megenginelite import LiteConfig, LiteNetwork

    model, same_a, same_b, planted, planted_text = sys.argv[1:6]
    typed_a, typed_b, lowbit_dir, enum_json = sys.argv[6:10]
    weight = mge.tensor(np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3))

    @trace(symbolic=True, capture_as_const=True)
    def net(data):
        h = F.relu(F.matmul(data, weight)) * 2.0 + 1.0
        wide = F.broadcast_to(F.sum(h, axis=0, keepdims=True), (4, 3))
        return h, wide, h[:, ::2]

    x = (np.arange(8, dtype=np.float32).reshape(2, 4) - 3.0) / 4.0
    net(mge.tensor(x))
    net.dump(model, arg_names=["data"], output_names=["out", "wide", "every_other"])

    def run(data, out_dir=None, text=None, model=model):
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

    # vars of each dtype a graph holds, each cast back to float32 and summed; sum(data) is a
    # Python scalar (shape ()), `s`
    @trace(symbolic=True, capture_as_const=True)
    def typed(data):
        scaled = F.abs(data) * 100.0
        parts = [(data > 0.0).astype("float32")]
        for kind in ("uint16", "int16", "float16", D.bfloat16, "int8", "uint8", "int32"):
            parts.append(scaled.astype(kind).astype("float32"))
        for kind in (D.qint8(0.25), D.quint8(0.25, 128), D.qint32(0.25)):
            parts.append(data.astype(kind).astype("float32"))
        total = parts[0]
        for part in parts[1:]:
            total = total + part
        s = F.sum(data)
        return total, s, s * 2.0

    typed(mge.tensor(x))
    typed.dump(model + ".typed", arg_names=["data"], output_names=["total", "s", "s2"])
    run(x, typed_a, model=model + ".typed")
    run(x, typed_b, model=model + ".typed")

    @trace(symbolic=True, capture_as_const=True)
    def lowbit(data):
        kinds = (D.qint4(0.25), D.quint4(0.25, 8), D.qint1(0.25))
        parts = [data.astype(kind).astype("float32") for kind in kinds]
        return parts[0] + parts[1] + parts[2]

    lowbit(mge.tensor(x))
    lowbit.dump(model + ".lowbit", arg_names=["data"], output_names=["low"])
    run(x, lowbit_dir, model=model + ".lowbit")

    # DTypeEnum as MegEngine's own numpy conversion gives it (`dtype_np2mgb(...).enumv()`)
    kinds = {
        "Bool": np.dtype("bool"),
        "Uint16": np.dtype("uint16"),
        "Complex64": np.dtype("complex64"),
        "Float32": np.dtype("float32"),
        "Uint8": np.dtype("uint8"),
        "Int8": np.dtype("int8"),
        "Int16": np.dtype("int16"),
        "Int32": np.dtype("int32"),
        "Float16": np.dtype("float16"),
        "BFloat16": D.bfloat16,
        "IntB1": D.intb1,
        "IntB2": D.intb2,
        "IntB4": D.intb4,
        "Quantized8Asymm": D.quint8(0.25, 8),
        "QuantizedS32": D.qint32(0.25),
        "QuantizedS8": D.qint8(0.25),
        "Quantized4Asymm": D.quint4(0.25, 8),
        "QuantizedS4": D.qint4(0.25),
        "QuantizedS1": D.qint1(0.25),
    }
    enum = {name: _get_dtype_num(kind) for name, kind in kinds.items()}
    with open(enum_json, "w") as out:
        json.dump(enum, out)
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
    names = ("same_a", "same_b", "planted", "planted.txt", "typed_a", "typed_b", "lowbit")
    paths = [root / name for name in (*names, "enum.json")]
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


# The typed network's vars that are not float32, by the dtype their titles name.
TYPED = ("Bool", "Uint16", "Int16", "Float16", "BFloat16", "Int8", "Uint8", "Int32")
TYPED += ("QuantizedS8", "Quantized8Asymm", "QuantizedS32")
ITEMSIZE = {"Bool": 1, "Uint16": 2, "Int16": 2, "Float16": 2, "BFloat16": 2, "Int8": 1}
ITEMSIZE |= {"Uint8": 1, "Int32": 4, "QuantizedS8": 1, "Quantized8Asymm": 1, "QuantizedS32": 4}
_TITLE_DTYPE = re.compile(
    r"var=\{id:[0-9]+, layout:\{[^ ]* (?:@ LOWBITS\{[0-9,]+\} )?[A-Za-z0-9]+\}, ([A-Za-z0-9]+), owner:"
)


def _header(path: Path) -> tuple[int, tuple[int, ...], int, str]:
    """(dtype code, the 7 dims, payload bytes, the dtype the title names) of a real var file,
    from its bytes alone (not through our reader)."""
    raw = path.read_bytes()
    name_len, code, max_ndim = struct.unpack_from("<III", raw)
    assert max_ndim == 7, path
    dims = struct.unpack_from("<7I", raw, 12)
    title = raw[40 : 40 + name_len].decode("ascii")
    found = _TITLE_DTYPE.match(title)
    assert found is not None, title[:120]
    return code, dims, len(raw) - 40 - name_len, found.group(1)


def _headers(directory: Path) -> dict[str, list[tuple[int, tuple[int, ...], int]]]:
    """The headers of a dir's var files by the dtype their titles name."""
    found: dict[str, list[tuple[int, tuple[int, ...], int]]] = {}
    for path in sorted(directory.iterdir()):
        code, dims, payload, dtype = _header(path)
        found.setdefault(dtype, []).append((code, dims, payload))
    return found


def test_real_dtype_codes(dumps: list[Path]) -> None:
    """docs/FORMATS-OTHER.md 1.1: MegEngine 1.13.0's DTypeEnum, from its own numpy-to-dtype
    conversion (Complex64 included, which no graph op of it can produce) and from the headers
    of the files it writes, agrees with our table."""
    enum = json.loads(dumps[7].read_text(encoding="utf-8"))
    assert enum == {name: DTYPE_CODES[name] for name in enum}
    assert (enum["Bool"], enum["Uint16"], enum["Complex64"]) == (12, 13, 14)

    typed = _headers(dumps[4])
    assert set(typed) == {"Float32", *TYPED}
    for name, headers in typed.items():
        for code, dims, payload in headers:
            assert code == DTYPE_CODES[name], (name, code)
            assert dims == (2, 4, 0, 0, 0, 0, 0) or dims[1:] == (0,) * 6, (name, dims)
            if name != "Float32":
                assert dims[:2] == (2, 4) and payload == 8 * ITEMSIZE[name], (name, payload)

    # the low-bit types: 4-bit values packed two a byte; QuantizedS1 one byte a value
    low = _headers(dumps[6])
    assert set(low) == {"Float32", "QuantizedS4", "Quantized4Asymm", "QuantizedS1"}
    assert low["QuantizedS4"] == [(100004, (2, 4, 0, 0, 0, 0, 0), 4)]
    assert low["Quantized4Asymm"] == [(100003, (2, 4, 0, 0, 0, 0, 0), 4)]
    assert low["QuantizedS1"] == [(100006, (2, 4, 0, 0, 0, 0, 0), 8)]


def test_real_typed_vars_read_and_pair(dumps: list[Path]) -> None:
    """Each dtype the reader decodes reads back as MegEngine computed it, and two runs of one
    input pair and pass var by var."""
    run = read_bin_io_dump(dumps[4])
    by_dtype = {v.info.dtype: v for v in run.vars.values() if v.info.dtype in TYPED}
    assert set(by_dtype) == set(TYPED)
    scaled = np.abs(X) * 100.0
    np.testing.assert_array_equal(read_values(by_dtype["Bool"]), X > 0)
    for name, kind in (("Uint16", "uint16"), ("Int16", "int16"), ("Int8", "int8"),
                       ("Uint8", "uint8"), ("Int32", "int32"), ("Float16", "float16")):  # fmt: skip
        np.testing.assert_array_equal(read_values(by_dtype[name]), scaled.astype(kind))
    bf16 = read_values(by_dtype["BFloat16"]).astype(np.float32)
    np.testing.assert_allclose(bf16, scaled, rtol=2.0**-8)
    np.testing.assert_array_equal(read_values(by_dtype["QuantizedS8"]), np.round(X / 0.25))

    left, right = open_foreign(dumps[4]), open_foreign(dumps[5])
    assert pair_dumps(left, right).paired == len(left.tensors) == len(right.tensors)
    result = run_foreign_compare(dumps[0].parent / "ws", str(dumps[4]), str(dumps[5]))
    assert len(result.rows) == len(left.tensors)
    assert all(r.compared for r in result.rows) and result.failing == []


def test_real_scalar_is_a_one_element_var(dumps: list[Path]) -> None:
    """A Python scalar (shape ()) is a {1(1)} var in the graph: the header's dims are
    (1, 0, ...), the payload one value. The reader gives shape (1,), and `vc` pairs it."""
    run = read_bin_io_dump(dumps[4])
    for name, want in (("s", X.sum()), ("s2", 2 * X.sum())):
        (var,) = [v for v in run.vars.values() if v.name == name]
        assert var.info.layout == "{1(1) Float32}"
        assert _header(Path(var.path))[:3] == (0, (1, 0, 0, 0, 0, 0, 0), 4)
        assert var.shape == (1,)
        np.testing.assert_allclose(read_values(var), [want], rtol=1e-6)
    pairing = pair_dumps(open_foreign(dumps[4]), open_foreign(dumps[5]))
    scalars = [(a, b) for a, b, _ in pairing.pairs if a is not None and a.name in ("s", "s2")]
    assert len(scalars) == 2
    assert all(b is not None and b.name == a.name and b.shape == (1,) for a, b in scalars)


def test_real_lowbit_dir_reads_and_refuses_only_the_values(dumps: list[Path]) -> None:
    """A 4-bit var's title (`{2(4),4(1) @ LOWBITS{4,8} QuantizedS4}`) parses; its packed
    values are refused when asked for; QuantizedS1, one byte a value, reads."""
    run = read_bin_io_dump(dumps[6])
    (var,) = [v for v in run.vars.values() if v.dtype == DTYPE_CODES["QuantizedS4"]]
    assert "LOWBITS" in var.info.layout and var.shape == (2, 4)
    with pytest.raises(FormatError, match="packed low-bit"):
        read_values(var)
    (one_bit,) = [v for v in run.vars.values() if v.dtype == DTYPE_CODES["QuantizedS1"]]
    values = read_values(one_bit)
    assert values.dtype == np.int8 and values.shape == (2, 4)
    assert set(values.reshape(-1).tolist()) <= {0, 1}
