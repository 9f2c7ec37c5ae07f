"""SigmaStar DumpDebug files: binary and string forms, the three end markers, inputs and
constants, padded payloads, integer payloads and their dequantization."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from precision_shell.errors import FormatError
from precision_shell.formats import sigmastar_dump as sgs
from precision_shell.formats.sigmastar_dump import (
    FORM_BINARY,
    FORM_STRING,
    SigmaSpec,
    dequantize,
    detect,
    read_sigmastar_dump,
    read_values,
    real_values,
    write_sigmastar_dump,
)

# Values that print exactly with 6 decimals, so the string forms round-trip too.
NHWC = (np.arange(1 * 4 * 4 * 3, dtype=np.float32).reshape(1, 4, 4, 3) - 20) / 64
VEC = np.array([0.5, -1.25, 3.0, 1e3], np.float32)


def _float_specs() -> list[SigmaSpec]:
    return [
        SigmaSpec("images", NHWC, is_input=True, op_label="input", slot=0),
        SigmaSpec("conv1/weight", np.ones((3, 1, 1, 3), np.float32), constant=True),
        SigmaSpec("conv1", NHWC, op_index=0, op_label="CONV_2D"),
        SigmaSpec("split", VEC[:2].copy(), op_index=1, op_label="SPLIT", slot=0),
        SigmaSpec("split", VEC[2:].copy(), op_index=1, op_label="SPLIT", slot=1),
        SigmaSpec("fc", VEC, op_index=2, op_label="FULLY_CONNECTED", pad=5),
    ]


def _check_floats(path: Path, form: str) -> None:
    dump = read_sigmastar_dump(path)
    assert dump.form == form
    names = [(t.name, t.slot, t.is_input, t.constant) for t in dump.tensors]
    assert names == [
        ("images", 0, True, False),
        ("conv1/weight", 0, False, True),
        ("conv1", 0, False, False),
        ("split", 0, False, False),
        ("split", 1, False, False),
        ("fc", 0, False, False),
    ]
    assert [t.name for t in dump.outputs] == ["conv1", "split", "split", "fc"]
    by_name = dump.by_name()
    assert [t.slot for t in by_name["split"]] == [0, 1]
    expected = {("conv1", 0): NHWC, ("split", 0): VEC[:2], ("split", 1): VEC[2:], ("fc", 0): VEC}
    for tensor in dump.outputs:
        got = read_values(tensor)
        assert got.dtype == np.float32
        assert np.array_equal(got, expected[tensor.key])
        assert np.array_equal(real_values(tensor), expected[tensor.key])
    assert np.array_equal(read_values(dump.tensors[0]), NHWC)
    conv = dump.tensors[2]
    assert (conv.op_index, conv.op_label, conv.shape, conv.dtype) == (
        0,
        "CONV_2D",
        NHWC.shape,
        "float",
    )


@pytest.mark.parametrize("trailer", ["sigma", "tflite", "none"])
def test_binary_round_trips_with_each_end_marker(tmp_path: Path, trailer: str) -> None:
    path = tmp_path / "sigma_outtensor_dump.bin"
    write_sigmastar_dump(path, _float_specs(), trailer=trailer)
    _check_floats(path, FORM_BINARY)
    fc = read_sigmastar_dump(path).tensors[-1]
    assert fc.nbytes == 4 * (VEC.size + 5)  # the padded payload is accepted


def test_binary_end_marker_layout(tmp_path: Path) -> None:
    path = tmp_path / "a.bin"
    write_sigmastar_dump(path, [SigmaSpec("t", VEC[:1].copy())], trailer="sigma")
    assert path.read_bytes() == (
        b"isFloat: 1\n//out 0 s: 0.000000 z: 0 type: float name: t bConstant:0 shape:[1] "
        b"dims:1\nop_out[0] CONV_2D = {\n//buffer data size: 4\n"
        + np.float32(0.5).tobytes()
        + b"\n};\n"
    )


@pytest.mark.parametrize("style", ["sigma", "python"])
def test_string_forms_round_trip(tmp_path: Path, style: str) -> None:
    path = tmp_path / "caffe_NHWC_outtensor_dump.txt"
    write_sigmastar_dump(path, _float_specs(), form=FORM_STRING, text_style=style)
    _check_floats(path, FORM_STRING)


def test_python_text_layout(tmp_path: Path) -> None:
    path = tmp_path / "onnx_NHWC_outtensor_dump.txt"
    values = np.arange(17, dtype=np.float32)
    write_sigmastar_dump(path, [SigmaSpec("t", values)], form=FORM_STRING, text_style="python")
    body = path.read_text().split("//buffer data size: 68\n", 1)[1]
    assert body.startswith("\n0.000000, 1.000000, ")
    assert "15.000000, \n16.000000, \n}\n" in body
    assert np.array_equal(read_values(read_sigmastar_dump(path).tensors[0]), values)


def test_per_tensor_file_without_is_float_line(tmp_path: Path) -> None:
    path = tmp_path / "conv1#(1, 4, 4, 3)"
    specs = [SigmaSpec("conv1", NHWC), SigmaSpec("data", VEC, is_input=True)]
    write_sigmastar_dump(path, specs, form=FORM_STRING, text_style="python", is_float_line=False)
    assert "input[0] CONV_2D = {" in path.read_text()
    dump = read_sigmastar_dump(path)
    assert dump.is_float is None
    assert [t.is_input for t in dump.tensors] == [False, True]
    assert np.array_equal(read_values(dump.outputs[0]), NHWC)


QS8 = np.array([[-128, -3, 0, 5, 127]], np.int8)
QU8 = np.array([0, 12, 200, 255], np.uint8)
QS16 = np.array([-32768, -1, 0, 32767], np.int16)


def _int_specs() -> list[SigmaSpec]:
    return [
        SigmaSpec("a", QS8, dtype="SGS_S8", scale=0.125, zero_point=0),
        SigmaSpec("b", QU8, dtype="SGS_U8", scale=0.5, zero_point=128, pad=3),
        SigmaSpec("c", QS16, dtype="SGS_S16", scale=0.000239, zero_point=-2),
    ]


@pytest.mark.parametrize("form", [FORM_BINARY, FORM_STRING])
def test_integer_payloads_round_trip_and_dequantize(tmp_path: Path, form: str) -> None:
    path = tmp_path / "sigma_outtensor_dump.bin"
    write_sigmastar_dump(path, _int_specs(), is_float=False, form=form)
    dump = read_sigmastar_dump(path)
    assert dump.is_float is False and dump.form == form
    a, b, c = dump.tensors
    for tensor, q in ((a, QS8), (b, QU8), (c, QS16)):
        got = read_values(tensor)
        assert got.dtype == q.dtype and np.array_equal(got, q)
        assert tensor.is_quantized
        real = real_values(tensor)
        assert real.dtype == np.float64
        expected = tensor.scale * (q.astype(np.float64) - tensor.zero_point)
        assert np.array_equal(real, expected)
    assert (b.scale, b.zero_point) == (0.5, 128)
    assert np.array_equal(real_values(b), np.array([-64, -58, 36, 63.5]))


def test_dequantize() -> None:
    q = np.array([-128, 0, 127], np.int8)
    assert np.array_equal(dequantize(q, 0.5, -1), np.array([-63.5, 0.5, 64], np.float64))
    # float64 throughout: 0.0005 * 12343 is not a float32 (it was rounded to one before)
    got = dequantize(np.array([-32768, 12350, 32767], np.int16), 0.0005, 7)
    want = 0.0005 * (np.array([-32768, 12350, 32767], np.float64) - 7)
    assert got.dtype == np.float64 and np.array_equal(got, want)
    assert not np.array_equal(got, want.astype(np.float32))


def test_dequant_fixed_float_payload_keeps_its_values(tmp_path: Path) -> None:
    """dequantFixed: isFloat: 1 with type SGS_S16 -- the payload is already real."""
    path = tmp_path / "sigma_outtensor_dump.bin"
    write_sigmastar_dump(path, [SigmaSpec("t", VEC, dtype="SGS_S16", scale=0.01)])
    tensor = read_sigmastar_dump(path).tensors[0]
    assert tensor.storage == "float32" and not tensor.is_quantized
    assert np.array_equal(real_values(tensor), VEC)


def _error(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    with pytest.raises(FormatError) as info:
        for tensor in read_sigmastar_dump(path).tensors:
            read_values(tensor)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    return message


HEAD = b"//out 0 s: 0.000000 z: 0 type: %s name: t bConstant:0 shape:[2] dims:1\n"


def test_bad_files(tmp_path: Path) -> None:
    path = tmp_path / "x.bin"
    ops = b"op_out[0] ADD = {\n"
    body = b"\x00" * 8
    assert "unknown type 'SGS_Q4'" in _error(
        path, b"isFloat: 0\n" + HEAD % b"SGS_Q4" + ops + b"//buffer data size: 8\n" + body
    )
    assert "needs 8 bytes" in _error(
        path, b"isFloat: 1\n" + HEAD % b"float" + ops + b"//buffer data size: 4\n" + body[:4]
    )
    assert "truncated" in _error(
        path, b"isFloat: 1\n" + HEAD % b"float" + ops + b"//buffer data size: 800\n" + body
    )
    assert "is not a '//out k" in _error(path, b"isFloat: 1\n//out zero\n")
    assert "dims:3 but the shape has 1" in _error(
        path, b"isFloat: 1\n" + HEAD.replace(b"dims:1", b"dims:3") % b"float"
    )
    assert "second line" in _error(path, b"isFloat: 1\n" + HEAD % b"float" + b"hello\n")
    assert "no '//out k" in _error(path, b"isFloat: 1\n")
    assert "isFloat" in _error(path, b"isFloat: 7\n")
    assert "needs 2 values" in _error(
        path,
        b"isFloat: 1\n" + HEAD % b"float" + ops + b"//buffer data size: 8\n\n1.0, \n};\n",
    )
    assert "'abc' is not a number" in _error(
        path,
        b"isFloat: 1\n" + HEAD % b"float" + ops + b"//buffer data size: 8\n\n1.0, abc\n};\n",
    )


def test_huge_size_field_allocates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "x.bin"
    data = (
        b"isFloat: 1\n"
        + HEAD % b"float"
        + b"op_out[0] ADD = {\n//buffer data size: 9999999999999999999\n"
    )
    assert "truncated" in _error(path, data + b"\x00" * 8)


def test_detect(tmp_path: Path) -> None:
    binary = tmp_path / "sigma_outtensor_dump.bin"
    write_sigmastar_dump(binary, _float_specs(), trailer="none")
    text = tmp_path / "tflite_outtensor_dump.txt"
    write_sigmastar_dump(text, _float_specs(), form=FORM_STRING)
    assert detect(binary) == sgs.KIND_BIN
    assert detect(text) == sgs.KIND_TEXT
    assert detect(tmp_path) == sgs.KIND_DIR
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "a.bin").write_bytes(b"isFloat: 1\nhello")
    assert detect(junk) is None
    assert detect(junk / "a.bin") is None
    assert detect(tmp_path / "missing") is None


def test_an_integer_tensor_whose_scale_printed_as_zero_is_refused(tmp_path: Path) -> None:
    """QA Q25 #6: `s: 0.000000` (a scale below 5e-7) left raw integers compared as values."""
    from precision_shell.errors import FormatError

    path = tmp_path / "sigma_outtensor_dump.bin"
    q = np.array([1, 2, -3, 4], dtype=np.int16)
    write_sigmastar_dump(path, [SigmaSpec("tiny", q, "SGS_S16", 1e-7, 0)], is_float=False)
    (tensor,) = read_sigmastar_dump(path).tensors
    assert tensor.scale == 0.0 and not tensor.is_quantized
    with pytest.raises(FormatError, match="scale printed as 0 .below 5e-7.: its real values"):
        real_values(tensor)


@pytest.mark.parametrize("style", ["sigma", "python"])
@pytest.mark.parametrize("trailer", ["sigma", "none"])
def test_an_empty_first_tensor_does_not_decide_the_form(
    tmp_path: Path, style: str, trailer: str
) -> None:
    """A record of no values has no payload in either form (QA Q25 #8): the next one decides."""
    specs = [SigmaSpec("empty", np.zeros((0,), np.float32)), SigmaSpec("x", VEC)]
    for form in (FORM_STRING, FORM_BINARY):
        path = tmp_path / f"{form}.txt"
        write_sigmastar_dump(path, specs, form=form, text_style=style, trailer=trailer)
        dump = read_sigmastar_dump(path)
        assert dump.form == form
        assert detect(path) == (sgs.KIND_TEXT if form == FORM_STRING else sgs.KIND_BIN)
        assert [read_values(t).shape for t in dump.tensors] == [(0,), (4,)]
        assert np.array_equal(read_values(dump.tensors[1]), VEC)


@pytest.mark.parametrize(
    "first",
    [
        SigmaSpec("q", np.frombuffer(b"12, 34, 5", np.int8).copy(), "SGS_S8", scale=0.1),
        SigmaSpec("f", np.frombuffer(b"1.0, 2.0, 3.0, 4", np.float32).copy()),
    ],
    ids=["int8", "float"],
)
def test_binary_bytes_that_spell_numbers_stay_binary(tmp_path: Path, first: SigmaSpec) -> None:
    """A binary payload whose bytes spell numbers stays binary: a string form's values start
    on a new line (QA Q25 #8)."""
    is_float = first.dtype == "float"
    second = SigmaSpec("g", np.array([1, 2], np.float32 if is_float else np.int8), first.dtype)
    path = tmp_path / "sigma_outtensor_dump.bin"
    write_sigmastar_dump(path, [first, second], is_float=is_float)
    dump = read_sigmastar_dump(path)
    assert dump.form == FORM_BINARY
    assert np.array_equal(read_values(dump.tensors[0]), first.values)
    assert np.array_equal(read_values(dump.tensors[1]), second.values)
