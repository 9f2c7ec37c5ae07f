"""Fuzz the NPU dump reader: mutated valid dumps and headers with arbitrary shapes, types,
formats and sizes. Any input gives a header and tensors, or a one-line PrecisionError."""

from __future__ import annotations

import io
import struct
import tempfile
from functools import cache, partial
from pathlib import Path

import numpy as np
import pytest
from fuzz_inputs import (
    EDGE_INTEGERS,
    assert_picklable,
    budget,
    mutated_bytes,
    returns_or_names_error,
)
from hypothesis import given
from hypothesis import strategies as st

from precision_shell.formats import dump_proto
from precision_shell.formats.dtypes import DumpDataType
from precision_shell.formats.layouts import DumpFormat, from_origin_layout
from precision_shell.formats.npu_dump import (
    KINDS,
    DumpHeader,
    check_tensor,
    read_dump_header,
    read_tensor,
    read_tensor_converted,
)
from precision_shell.formats.npu_dump_writer import TensorSpec, write_dump

DUMP_NAME = "Conv2D.conv1.3.1664178151845623"


@cache
def seed_dumps() -> list[bytes]:
    """Valid dumps of both layouts, several types and device formats, a buffer."""
    with tempfile.TemporaryDirectory() as name:
        return _write_seeds(Path(name))


def _write_seeds(directory: Path) -> list[bytes]:
    nchw = np.arange(2 * 3 * 4 * 5, dtype=np.float16).reshape(2, 3, 4, 5)
    matrix = np.arange(20 * 7, dtype=np.float32).reshape(20, 7)
    specs = [
        (
            [TensorSpec(np.array([1.5, -2.0], np.float32))],
            [
                TensorSpec(
                    from_origin_layout(nchw, "NC1HWC0", "NCHW"),
                    format=DumpFormat.NC1HWC0,
                    original_shape=nchw.shape,
                    original_op=("conv1", 0),
                    original_format=DumpFormat.NCHW,
                ),
                TensorSpec(
                    from_origin_layout(matrix, "FRACTAL_NZ", "ND"),
                    format=DumpFormat.FRACTAL_NZ,
                    original_shape=matrix.shape,
                    original_format=DumpFormat.ND,
                ),
            ],
            [b"\x01\x02\x03"],
        ),
        (
            [TensorSpec(np.array([[1, 0, 1]], np.uint8), dtype=DumpDataType.UINT1)],
            [
                TensorSpec(np.array([-8, 7, 3], np.int8), dtype=DumpDataType.INT4),
                TensorSpec(np.zeros((0, 3), np.float32)),
            ],
            [],
        ),
    ]
    seeds = []
    for number, (inputs, outputs, buffers) in enumerate(specs):
        for inline in (False, True):
            path = directory / f"seed{number}{inline}"
            write_dump(path, "conv1", inputs, outputs, buffers, dump_time=7, inline=inline)
            seeds.append(path.read_bytes())
    return seeds


@pytest.fixture(scope="module")
def fuzz_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dump_fuzz") / DUMP_NAME


def _checked(header: DumpHeader, kind: str, index: int) -> bool:
    check_tensor(header, kind, index)
    return True


def read_everything(path: Path) -> None:
    """Read the header, every tensor and every conversion the shell may ask for."""
    header = returns_or_names_error(lambda: read_dump_header(path))
    if header is None:
        return
    assert_picklable(header)
    for kind in KINDS:
        for meta in getattr(header, f"{kind}s"):
            values = returns_or_names_error(partial(read_tensor, header, kind, meta.index))
            # what vc checks instead of reading a tensor it needs no values of: it passes
            # exactly when the read does (the header already bounds the payload by the file)
            checked = returns_or_names_error(partial(_checked, header, kind, meta.index))
            assert (checked is True) == (values is not None)
            if values is not None:
                assert values.size == meta.element_count
                np.asarray(values).tobytes()
            returns_or_names_error(partial(read_tensor_converted, header, kind, meta.index))
            returns_or_names_error(
                partial(read_tensor_converted, header, kind, meta.index, "NCHW", (2, 3, 4, 5))
            )


def test_the_seeds_read(fuzz_file: Path) -> None:
    for seed in seed_dumps():
        fuzz_file.write_bytes(seed)
        header = read_dump_header(fuzz_file)
        assert header.op_name == "conv1"
        read_everything(fuzz_file)


@budget(300)
@given(data=st.data())
def test_mutated_dumps(fuzz_file: Path, data: st.DataObject) -> None:
    fuzz_file.write_bytes(data.draw(mutated_bytes(seed_dumps())))
    read_everything(fuzz_file)


_DIM = st.one_of(st.sampled_from(EDGE_INTEGERS), st.integers(0, 2**64 - 1), st.integers(0, 9))


@st.composite
def _shape(draw: st.DrawFn) -> list[int]:
    """Short shapes of any dims, and long ones (past numpy's 32 / 64 dims); often with a 0
    dim, which makes a zero-size tensor whatever the other dims are."""
    dims = draw(
        st.one_of(
            st.lists(_DIM, max_size=6),
            st.lists(st.integers(1, 2), min_size=30, max_size=70),
        )
    )
    if draw(st.booleans()):
        dims.insert(draw(st.integers(0, len(dims))), 0)
    return dims


_SHAPE = _shape()
_CODE = st.one_of(st.integers(0, 40), st.sampled_from([2**31 - 1, -1, -(2**31)]))


@st.composite
def _header_tensor(draw: st.DrawFn) -> dict[str, object]:
    return {
        "data_type": draw(_CODE),
        "format": draw(_CODE),
        "shape": draw(_SHAPE),
        "original_shape": draw(_SHAPE),
        "size": draw(st.one_of(st.just(0), st.integers(0, 64), st.sampled_from(EDGE_INTEGERS))),
        "inline_data": draw(st.one_of(st.none(), st.binary(max_size=64))),
    }


def _build(tensors: list[dict[str, object]], inline: bool, payload: bytes) -> bytes:
    message = dump_proto.DumpData(version="2.0", op_name="conv1")
    for number, tensor in enumerate(tensors):
        entry = message.output.add() if number % 2 else message.input.add()
        entry.data_type = tensor["data_type"]
        entry.format = tensor["format"]
        entry.size = tensor["size"]
        entry.shape.dim.extend(tensor["shape"])
        entry.original_shape.dim.extend(tensor["original_shape"])
        if inline and tensor["inline_data"] is not None:
            entry.data = tensor["inline_data"]
    header = message.SerializeToString()
    stream = io.BytesIO()
    if not inline:
        stream.write(struct.pack("<Q", len(header)))
    stream.write(header)
    stream.write(payload)
    return stream.getvalue()


@budget(300)
@given(
    tensors=st.lists(_header_tensor(), min_size=1, max_size=3),
    inline=st.booleans(),
    payload=st.binary(max_size=256),
)
def test_arbitrary_headers(
    fuzz_file: Path, tensors: list[dict[str, object]], inline: bool, payload: bytes
) -> None:
    fuzz_file.write_bytes(_build(tensors, inline, payload))
    read_everything(fuzz_file)
