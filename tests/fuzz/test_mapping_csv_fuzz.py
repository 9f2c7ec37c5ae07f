"""Fuzz both `mapping.csv` readers (dump dirs and benchmark dirs): they never raise; a bad
file or row becomes a warning naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzz_inputs import budget, mutated_bytes
from hypothesis import given
from hypothesis import strategies as st

from precision_shell.formats import benchmark, dump_names

SEEDS = [
    b"123456,Conv2D.resnet_model_conv2d_Conv2D.4.1.1664178151845623\n"
    b'"7,8","MatMul.a,b.5.1664178151845623"\n',
    b"dense_BiasAdd.0.1.npy,dense/BiasAdd.0.1619492699305998.npy\r\n\r\nx,y,z\n",
]


@pytest.fixture(scope="module")
def directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mapping_fuzz")


@budget(300)
@given(content=st.one_of(mutated_bytes(SEEDS), st.binary(max_size=64)))
def test_mutated_mapping_files(directory: Path, content: bytes) -> None:
    path = directory / "mapping.csv"
    path.write_bytes(content)
    for mapping, warnings in (
        dump_names.read_mapping_csv(directory),
        benchmark.read_mapping_csv(path),
    ):
        assert all(
            isinstance(key, str) and isinstance(value, str) for key, value in mapping.items()
        )
        assert all(warning.startswith(str(path)) for warning in warnings)
