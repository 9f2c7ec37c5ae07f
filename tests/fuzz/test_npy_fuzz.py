"""Fuzz the benchmark `.npy` loader with mutated files of every header version, several
dtypes, orders and shapes, and headers declaring arbitrary shapes and dtypes. Any input gives
an array or a one-line PrecisionError."""

from __future__ import annotations

import io
from functools import cache, partial
from pathlib import Path

import numpy as np
import pytest
from fuzz_inputs import EDGE_INTEGERS, budget, mutated_bytes, returns_or_names_error
from hypothesis import given
from hypothesis import strategies as st

from precision_shell.formats.benchmark import load_benchmark, read_npy_header

NAME = "dense_BiasAdd.0.1619492699305998.npy"


def npy_bytes(array: np.ndarray, version: tuple[int, int] | None = None) -> bytes:
    stream = io.BytesIO()
    np.lib.format.write_array(stream, array, version=version, allow_pickle=False)
    return stream.getvalue()


@cache
def seed_files() -> list[bytes]:
    arrays = [
        np.arange(12, dtype=np.float32).reshape(3, 4),
        np.asfortranarray(np.arange(6, dtype=np.int64).reshape(2, 3)),
        np.array([True, False]),
        np.float16(1.5) * np.ones((), np.float16),
        np.zeros((0, 5), np.float64),
        np.array(["ab", "c"]),
    ]
    return [npy_bytes(array) for array in arrays] + [
        npy_bytes(arrays[0], (2, 0)),
        npy_bytes(arrays[0], (3, 0)),
    ]


@pytest.fixture(scope="module")
def fuzz_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("npy_fuzz") / NAME


def load(path: Path) -> None:
    for mmap in (True, False):
        array = returns_or_names_error(partial(load_benchmark, path, mmap=mmap))
        if array is not None:
            header = read_npy_header(path)
            assert array.shape == header.shape
            assert array.dtype == header.dtype
            np.asarray(array).tobytes()


def test_the_seeds_read(fuzz_file: Path) -> None:
    for seed in seed_files():
        fuzz_file.write_bytes(seed)
        assert load_benchmark(fuzz_file).size in (0, 1, 2, 6, 12)


@budget(400)
@given(data=st.data())
def test_mutated_npy_files(fuzz_file: Path, data: st.DataObject) -> None:
    fuzz_file.write_bytes(data.draw(mutated_bytes(seed_files())))
    load(fuzz_file)


_DESCRS = st.one_of(
    st.sampled_from(["<f4", "|b1", "<U3", "|S0", "|V0", "<U0", "|O", "<M8[s]", "|V16", "<c8"]),
    st.sampled_from(["<f4", "|S2"]).map(lambda d: [("a", d), ("b", "<i2", (2,))]),
    st.sampled_from([[("a", "<f4", (2**40,))], "x", 3, [], [("", "<f4")]]),
    st.text(st.characters(max_codepoint=255), max_size=8),
)
_DIM = st.one_of(st.sampled_from(EDGE_INTEGERS), st.integers(0, 5), st.integers(-3, -1))


@budget(400)
@given(
    descr=_DESCRS,
    shape=st.one_of(
        st.lists(_DIM, max_size=4),
        st.lists(st.integers(0, 2), min_size=30, max_size=70),
    ).map(tuple),
    fortran=st.booleans(),
    zero=st.booleans(),
    data=st.binary(max_size=64),
)
def test_arbitrary_headers(
    fuzz_file: Path, descr: object, shape: tuple, fortran: bool, zero: bool, data: bytes
) -> None:
    if zero:
        shape = (0, *shape)
    header = repr({"descr": descr, "fortran_order": fortran, "shape": shape}).encode("latin1")
    header += b" " * (-(len(header) + 11) % 64) + b"\n"
    fuzz_file.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + data)
    load(fuzz_file)
