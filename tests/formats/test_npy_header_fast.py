"""The `.npy` header's fast path gives what literal_eval gives on every header numpy writes,
and leaves anything else to literal_eval."""

from __future__ import annotations

import ast
import io

import numpy as np
import pytest

from precision_shell.formats.benchmark import _NUMPY_HEADER, _header_fields, read_npy_header

DTYPES = ["<f2", "<f4", "<f8", "|b1", "|i1", "|u1", "<i2", "<i4", "<i8", "<u8", "<c8", "<U7", ">f4"]
SHAPES = [(), (0,), (5,), (2, 3), (1, 1, 1, 1), (2, 0, 3), (7,) * 8, (123456789, 2)]


def _header_text(dtype: str, shape: tuple[int, ...], fortran: bool) -> str:
    out = io.BytesIO()
    header = {"descr": dtype, "fortran_order": fortran, "shape": shape}
    np.lib.format.write_array_header_1_0(out, header)
    raw = out.getvalue()
    return raw[10:].decode("latin1")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("fortran", [False, True])
def test_fast_path_equals_literal_eval_on_numpys_own_headers(dtype, shape, fortran):
    text = _header_text(dtype, shape, fortran)
    assert _NUMPY_HEADER.fullmatch(text) is not None, text
    slow = ast.literal_eval(text)
    assert _header_fields(text) == (slow["descr"], slow["fortran_order"], slow["shape"])


@pytest.mark.parametrize(
    "text",
    [
        "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}",  # other key order
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,3), }",  # other spacing
        "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",  # structured
    ],
)
def test_other_spellings_go_through_literal_eval(text):
    assert _NUMPY_HEADER.fullmatch(text) is None
    slow = ast.literal_eval(text)
    assert _header_fields(text) == (slow["descr"], slow["fortran_order"], slow["shape"])


def test_read_npy_header_reads_a_real_file(tmp_path):
    path = tmp_path / "a.npy"
    np.save(path, np.arange(6, dtype=np.float16).reshape(2, 3))
    header = read_npy_header(path)
    assert (header.dtype, header.shape, header.fortran_order) == (np.float16, (2, 3), False)
