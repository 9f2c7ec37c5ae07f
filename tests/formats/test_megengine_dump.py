"""MegEngine --bin-io-dump and --io-dump: values round-trip exactly, the graph comes from the
titles, and bad files give one-line errors naming the file."""

from __future__ import annotations

import struct
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from precision_shell.errors import FormatError
from precision_shell.formats import megengine_dump as meg
from precision_shell.formats.megengine_dump import (
    TextSpec,
    VarSpec,
    detect,
    parse_io_dump_text,
    parse_title,
    read_bin_io_dump,
    read_io_dump_text,
    read_values,
    read_var_file,
    var_info_of,
    write_bin_io_dump,
    write_io_dump_text,
)

RNG = np.random.default_rng(7)
DATA = RNG.standard_normal((1, 2, 3, 3)).astype(np.float32)
WEIGHT = RNG.standard_normal((2, 2, 1, 1)).astype(np.float32)
CONV = RNG.standard_normal((1, 2, 3, 3)).astype(np.float16)
ADD = (DATA + 1).astype(np.float32)
SPLIT0, SPLIT1 = ADD[:, :1].copy(), ADD[:, 1:].copy()
QS8 = np.array([[-128, -1, 0, 1, 127]], np.int8)
QU8 = np.array([0, 7, 128, 255], np.uint8)


def _graph() -> list[VarSpec]:
    data = var_info_of(1, DATA, "data", "Host2DeviceCopy")
    weight = var_info_of(2, WEIGHT, "conv1.weight", "ImmutableTensor")
    conv = var_info_of(3, CONV, "conv1", "ConvolutionForward")
    add = var_info_of(5, ADD, "ADD(conv1,data)", "Elemwise", name="add,0")
    return [
        VarSpec(1, DATA, "data", "Host2DeviceCopy"),
        VarSpec(2, WEIGHT, "conv1.weight", "ImmutableTensor"),
        VarSpec(3, CONV, "conv1", "ConvolutionForward", inputs=(data, weight)),
        VarSpec(
            5,
            ADD,
            "ADD(conv1,data)",
            "Elemwise",
            name="add,0",
            inputs=(conv, data),
            input_values={0: (conv, (data, weight), CONV), 1: (data, (), DATA)},
        ),
        VarSpec(7, SPLIT0, "split", "Split", name="split:0", slot=0, inputs=(add,)),
        VarSpec(8, SPLIT1, "split", "Split", name="split:1", slot=1, inputs=(add,)),
        VarSpec(9, QS8, "quant", "TypeCvt", inputs=(add,), dtype=100002),
        VarSpec(0x1000001, QU8, "quant_u8", "TypeCvt", inputs=(add,), dtype=100000),
    ]


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    write_bin_io_dump(tmp_path / "vars", _graph())
    return tmp_path / "vars"


def test_files_are_named_by_hex_var_id(run_dir: Path) -> None:
    names = sorted(p.name for p in run_dir.iterdir())
    assert names == [
        "000001",
        "000002",
        "000003",
        "000005",
        "000005-inp0",
        "000005-inp1",
        "000007",
        "000008",
        "000009",
        "1000001",
    ]


def test_header_layout_is_the_documented_one(run_dir: Path) -> None:
    raw = (run_dir / "000003").read_bytes()
    name_len, code, max_ndim, *dims = struct.unpack("<10I", raw[:40])
    assert (code, max_ndim, dims) == (9, 7, [1, 2, 3, 3, 0, 0, 0])
    title = raw[40 : 40 + name_len].decode("ascii")
    assert title.startswith("var={id:3, layout:{1(18),2(9),3(3),3(1) Float16}, Float16, owner:")
    assert "owner_opr_inputs=0={id:1, " in title and " 1={id:2, " in title
    assert np.array_equal(np.frombuffer(raw[40 + name_len :], "<f2").reshape(CONV.shape), CONV)


def test_run_round_trips_values_and_graph(run_dir: Path) -> None:
    run = read_bin_io_dump(run_dir)
    assert sorted(run.vars) == [1, 2, 3, 5, 7, 8, 9, 0x1000001]
    expected = {1: DATA, 2: WEIGHT, 3: CONV, 5: ADD, 7: SPLIT0, 8: SPLIT1, 9: QS8, 0x1000001: QU8}
    for var_id, values in expected.items():
        got = read_values(run.vars[var_id])
        assert got.dtype == values.dtype and got.shape == values.shape
        assert np.array_equal(got, values)
    conv = run.vars[3]
    assert (conv.op_name, conv.op_type, conv.input_ids, conv.dtype_name) == (
        "conv1",
        "ConvolutionForward",
        (1, 2),
        "Float16",
    )
    add = run.vars[5]
    assert (add.op_name, add.name, add.input_ids) == ("ADD(conv1,data)", "add,0", (3, 1))
    assert run.vars[1].input_ids == ()
    assert run.vars[7].input_ids == (5,)  # a single input has no "0=" prefix
    assert [(v.var_id, v.slot) for v in run.op_vars("split")] == [(7, 0), (8, 1)]
    assert run.vars[9].dtype_name == "QuantizedS8"
    assert run.vars[0x1000001].dtype_name == "Quantized8Asymm"


def test_input_dumps_attach_to_their_op(run_dir: Path) -> None:
    run = read_bin_io_dump(run_dir)
    inputs = run.op_inputs(5)
    assert [(v.input_index, v.var_id, v.consumer_id) for v in inputs] == [(0, 3, 5), (1, 1, 5)]
    assert inputs[0].op_name == "conv1" and inputs[0].input_ids == (1, 2)
    assert np.array_equal(read_values(inputs[0]), CONV)
    assert np.array_equal(read_values(inputs[1]), DATA)
    assert run.op_inputs(3) == ()
    assert 5 not in {v.var_id for v in inputs}


def test_sibling_outputs_share_input_dumps(tmp_path: Path) -> None:
    add = var_info_of(5, ADD, "add", "Elemwise")
    specs = [
        VarSpec(7, SPLIT0, "split", "Split", inputs=(add,), input_values={0: (add, (), ADD)}),
        VarSpec(8, SPLIT1, "split", "Split", slot=1, inputs=(add,)),
    ]
    write_bin_io_dump(tmp_path, specs)
    run = read_bin_io_dump(tmp_path)
    assert [v.var_id for v in run.op_inputs(8)] == [5]


def test_title_of_the_documented_example_parses() -> None:
    info = (
        "{id:%d, layout:{1(18),2(9),3(3),3(1) Float32}, Float32, owner:%s{%s}, name:%s, "
        "slot:0, cpu0:0, d, 0, 0}"
    )
    title = (
        "var="
        + info % (9, "add", "Elemwise", "add")
        + " owner_opr_inputs=0="
        + info % (7, "mul", "Elemwise", "mul")
        + " 1="
        + info % (1, "x", "Host2DeviceCopy", "x")
    )
    index, var, inputs = parse_title(title)
    assert index is None
    assert (var.id, var.owner_name, var.owner_type, var.name, var.slot) == (
        9,
        "add",
        "Elemwise",
        "add",
        0,
    )
    assert (var.dtype, var.comp_node, var.storage) == ("Float32", "cpu0:0", "d")
    assert [i.id for i in inputs] == [7, 1]
    _, _, none = parse_title(
        "var=" + info % (1, "x", "Host2DeviceCopy", "x") + " owner_opr_inputs="
    )
    assert none == ()
    # --bin-out-dump's extra space
    _, _, one = parse_title(
        "var="
        + info % (3, "y", "Elemwise", "y")
        + " owner_opr_inputs= "
        + info % (1, "x", "H", "x")
    )
    assert [i.id for i in one] == [1]


def test_invalid_var_prints_shape_not_layout() -> None:
    text = (
        "var={id:4, shape:{2,3}, Float32, owner:r{Reshape}, name:r, slot:0, cpu0:0, d, 0, 0}"
        " owner_opr_inputs="
    )
    _, var, _ = parse_title(text)
    assert var.layout == "{2,3}"


def test_trailing_zero_dim_is_kept_as_an_empty_array(tmp_path: Path) -> None:
    empty = np.zeros((2, 0), np.float32)
    write_bin_io_dump(tmp_path, [VarSpec(4, empty, "e", "Elemwise")])
    var = read_var_file(tmp_path / "000004")
    assert var.shape == (2, 0)
    assert read_values(var).shape == (2, 0)


def test_bfloat16_and_int_types_round_trip(tmp_path: Path) -> None:
    arrays = [
        np.array([1.5, -2.0], ml_dtypes.bfloat16),
        np.array([-3, 4], np.int16),
        np.array([2**31 - 1, -(2**31)], np.int32),
        np.array([True, False]),
        np.array([65535, 1], np.uint16),
    ]
    write_bin_io_dump(tmp_path, [VarSpec(i + 1, a, f"v{i}", "X") for i, a in enumerate(arrays)])
    run = read_bin_io_dump(tmp_path)
    for i, a in enumerate(arrays):
        got = read_values(run.vars[i + 1])
        assert got.dtype == a.dtype and np.array_equal(got, a)


def _one_var(tmp_path: Path, code: int = 0, dims=(2,), title: str | None = None, data=b"\0" * 8):
    if title is None:
        title = (
            "var={id:1, layout:{2(1) Float32}, Float32, owner:x{H}, name:x, slot:0, "
            "cpu0:0, d, 0, 0} owner_opr_inputs="
        )
    raw = title.encode()
    header = struct.pack("<3I", len(raw), code, 7) + struct.pack(
        "<7I", *(list(dims) + [0] * (7 - len(dims)))
    )
    path = tmp_path / "000001"
    path.write_bytes(header + raw + data)
    return path


def _error(path: Path) -> str:
    with pytest.raises(FormatError) as info:
        var = read_var_file(path)
        read_values(var)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    return message


def test_unknown_dtype_code(tmp_path: Path) -> None:
    assert "unknown dtype code 77" in _error(_one_var(tmp_path, code=77))


def test_low_bit_dtype_is_refused_by_name(tmp_path: Path) -> None:
    assert "IntB4" in _error(_one_var(tmp_path, code=7))


def test_huge_title_length_is_refused_before_reading(tmp_path: Path) -> None:
    path = _one_var(tmp_path)
    raw = bytearray(path.read_bytes())
    raw[0:4] = struct.pack("<I", 2**32 - 1)
    path.write_bytes(bytes(raw))
    assert "title length 4294967295" in _error(path)


def test_payload_not_filling_the_shape(tmp_path: Path) -> None:
    assert "needs 8 bytes" in _error(_one_var(tmp_path, data=b"\0" * 6))
    assert "needs 8 bytes" in _error(_one_var(tmp_path, data=b"\0" * 12))


def test_malformed_title(tmp_path: Path) -> None:
    assert "malformed title" in _error(_one_var(tmp_path, title="hello world"))
    broken = "var={id:1, layout:{2(1) Float32}, Float32, owner:x, name:x} owner_opr_inputs="
    assert "malformed title" in _error(_one_var(tmp_path, title=broken))


def test_file_name_and_title_must_agree(tmp_path: Path) -> None:
    path = _one_var(tmp_path)
    other = path.rename(tmp_path / "000002")
    assert "says var 2 but the title says var 1" in _error(other)


def test_dir_without_var_files(tmp_path: Path) -> None:
    (tmp_path / "readme.txt").write_text("x")
    with pytest.raises(FormatError, match="no MegEngine var dump files"):
        read_bin_io_dump(tmp_path)


def test_other_files_in_the_dir_are_ignored(run_dir: Path) -> None:
    (run_dir / "io.txt").write_text("x")
    assert read_bin_io_dump(run_dir).ignored == ("io.txt",)


# ---------------------------------------------------------------------------- text form

SAMPLE = """var1 produced: name=data layout={2(3),3(1) Float32} owner_opr=data{Host2DeviceCopy} opr0
 deps:
 val: [2.352, 0.1114, -0.2721, 0.7569, -0.2438, ...]min=-0.272 max=2.35 mean=0.477 l2=1.01 sd=0.931 s
var17 produced: name=var17 layout={2(3),3(1) Float32} owner_opr=opr16{Elemwise} opr16
 deps:
  [i0]var1: [2.352, 0.1114, -0.2721, 0.7569, -0.2438, ...] s
  [i1]var5:  <host value[s]> [0] s
  var9:  <shape dep[s]> {2,3} s
  var11:  <dev comp order> s
 val: [3]min=3 max=3 mean=3 l2=3 sd=N/A d
"""

LAZY = """==== begin lazy value recording
var3 produced: name=conv layout={1(4),4(1) Float32} owner_opr=conv{ConvolutionForward} opr2
 deps:
  [i0]var1: <see lazy value below> s
  [i1]var2: <see lazy value below> s
 val: <see lazy value below> d
==== recorded values
#0: opr2 conv{ConvolutionForward}
  var3: name=conv [1, 2, 3, 4]min=1 max=4 mean=2.5 l2=2.74 sd=1.29
"""


def test_text_sample_parses() -> None:
    dump = parse_io_dump_text(SAMPLE, "io.txt")
    assert dump.order == (1, 17)
    var = dump.vars[17]
    assert (var.op_name, var.op_type, var.op_id, var.layout) == (
        "opr16",
        "Elemwise",
        16,
        "{2(3),3(1) Float32}",
    )
    assert var.input_ids == (1, 5)
    assert [(d.var_id, d.kind) for d in var.deps] == [
        (1, "value"),
        (5, "host_value"),
        (9, "shape"),
        (11, "comp_order"),
    ]
    assert var.deps[0].values == (2.352, 0.1114, -0.2721, 0.7569, -0.2438)
    assert var.deps[0].truncated and var.deps[1].values == (0.0,)
    assert var.stats is not None and var.stats.sd is None and var.stats.max == 3.0
    first = dump.vars[1]
    assert first.truncated and first.stats is not None and first.stats.sd == 0.931


def test_lazy_text_takes_the_recorded_values() -> None:
    dump = parse_io_dump_text(LAZY, "io.txt")
    assert dump.lazy
    var = dump.vars[3]
    assert var.values == (1.0, 2.0, 3.0, 4.0) and var.input_ids == (1, 2)
    assert var.stats is not None and var.stats.mean == 2.5


def test_text_writer_round_trips_graph_and_statistics(tmp_path: Path) -> None:
    specs = [
        TextSpec(1, DATA, "data", "Host2DeviceCopy", 0),
        TextSpec(
            3, CONV.astype(np.float32), "conv1", "ConvolutionForward", 2, deps=((0, 1), (1, 2))
        ),
        TextSpec(5, ADD, "add", "Elemwise", 4, deps=((0, 3), (1, 1))),
    ]
    path = tmp_path / "io.txt"
    write_io_dump_text(path, specs, values_of={2: WEIGHT}, iterations=3)
    dump = read_io_dump_text(path)
    assert dump.order == (1, 3, 5)
    assert dump.vars[5].executions == 3
    assert dump.vars[5].input_ids == (3, 1)
    assert dump.vars[3].input_ids == (1, 2)
    flat = ADD.astype(np.float64).reshape(-1)
    stats = dump.vars[5].stats
    assert stats is not None
    assert stats.min == float(f"{flat.min():.3g}") and stats.max == float(f"{flat.max():.3g}")
    assert stats.mean == float(f"{flat.mean():.3g}")
    assert stats.l2 == float(f"{np.sqrt((flat**2).mean()):.3g}")
    assert stats.sd == float(f"{flat.std(ddof=1):.3g}")
    assert dump.vars[5].values == tuple(float(f"{v:.4g}") for v in flat[:5])


@pytest.mark.parametrize(
    "text, problem",
    [
        (" val: [1]min=1 max=1 mean=1 l2=1 sd=N/A s\n", "before any 'varN produced:'"),
        ("var1 produced: name=x layout={1(1) Float32}\n", "not 'varN produced:"),
        (SAMPLE.replace("mean=0.477", "mean=abc"), "are not 'min="),
        (SAMPLE.replace("[3]min", "[3min"), "closing ']'"),
        ("hello\n", "before any"),
        ("", "no 'varN produced:' blocks"),
    ],
)
def test_bad_text_names_the_file_and_line(text: str, problem: str) -> None:
    with pytest.raises(FormatError) as info:
        parse_io_dump_text(text, "io.txt")
    assert str(info.value).startswith("io.txt: ") and problem in str(info.value)
    assert "\n" not in str(info.value)


def test_detect(run_dir: Path, tmp_path: Path) -> None:
    assert detect(run_dir) == meg.KIND_BIN_DIR
    assert detect(run_dir / "000005") == meg.KIND_BIN_FILE
    assert detect(run_dir / "000005-inp1") == meg.KIND_BIN_FILE
    text = tmp_path / "io.txt"
    text.write_text(SAMPLE)
    assert detect(text) == meg.KIND_TEXT
    lazy = tmp_path / "lazy.txt"
    lazy.write_text(LAZY)
    assert detect(lazy) == meg.KIND_TEXT
    other = tmp_path / "other"
    other.mkdir()
    (other / "000001").write_bytes(b"\0" * 64)
    assert detect(other) is None
    assert detect(tmp_path / "missing") is None
    assert detect(other / "000001") is None


def test_a_symlinked_var_file_is_not_followed(run_dir: Path, tmp_path: Path) -> None:
    """A link named like a var file, pointing outside the run dir, is ignored, not read."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    real = sorted(p for p in run_dir.iterdir() if p.is_file())[0]
    target = outside / real.name
    target.write_bytes(real.read_bytes())
    before = read_bin_io_dump(run_dir)
    link = run_dir / "0fffff"
    link.symlink_to(target)
    after = read_bin_io_dump(run_dir)
    assert "0fffff" in after.ignored
    assert set(after.vars) == set(before.vars)
