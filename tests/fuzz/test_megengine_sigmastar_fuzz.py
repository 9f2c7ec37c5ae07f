"""Fuzz the MegEngine and SigmaStar dump readers with mutations of valid files: any input gives
records whose values read, or a one-line PrecisionError naming the file; detect never raises."""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from fuzz_inputs import (
    assert_picklable,
    budget,
    mutated_bytes,
    mutated_text,
    returns_or_names_error,
)
from hypothesis import given
from hypothesis import strategies as st

from precision_shell.formats import megengine_dump as meg
from precision_shell.formats import sigmastar_dump as sgs


@cache
def meg_seeds() -> list[bytes]:
    with tempfile.TemporaryDirectory() as name:
        root = Path(name)
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        xi = meg.var_info_of(1, x, "x", "Host2DeviceCopy")
        wi = meg.var_info_of(2, x.astype(np.float16), "w", "ImmutableTensor")
        specs = [
            meg.VarSpec(1, x, "x", "Host2DeviceCopy"),
            meg.VarSpec(2, x.astype(np.float16), "w", "ImmutableTensor"),
            meg.VarSpec(
                3,
                np.array([[-1, 2]], np.int8),
                "ADD(x,w)",
                "Elemwise",
                inputs=(xi, wi),
                dtype=100002,
                input_values={1: (wi, (), x.astype(np.float16))},
            ),
            meg.VarSpec(4, np.zeros((2, 0), np.float32), "e", "Split", slot=1, inputs=(xi,)),
        ]
        paths = meg.write_bin_io_dump(root, specs)
        return [p.read_bytes() for p in paths]


@cache
def meg_text_seeds() -> list[str]:
    with tempfile.TemporaryDirectory() as name:
        path = Path(name) / "io.txt"
        x = np.array([[1.5, -2.0, 3.25, 0.0, 7.0, 9.0]], np.float32)
        meg.write_io_dump_text(
            path,
            [
                meg.TextSpec(1, x, "x", "Host2DeviceCopy", 0),
                meg.TextSpec(3, x * 2, "mul", "Elemwise", 2, deps=((0, 1), (None, 1))),
                meg.TextSpec(5, x[:, :1].copy(), "one", "Reduce", 4, deps=((0, 3),)),
            ],
            iterations=2,
        )
        return [
            path.read_text(),
            "==== begin lazy value recording\nvar3 produced: name=c layout={1(4),4(1) Float32} "
            "owner_opr=c{Conv} opr2\n deps:\n  [i0]var1: <see lazy value below> s\n val: "
            "<see lazy value below> d\n==== recorded values\n#0: opr2 c{Conv}\n  var3: name=c "
            "[1, 2, 3, 4]min=1 max=4 mean=2.5 l2=2.74 sd=1.29\n",
        ]


@cache
def sgs_seeds() -> list[bytes]:
    with tempfile.TemporaryDirectory() as name:
        path = Path(name) / "dump"
        x = (np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4) - 5) / 8
        floats = [
            sgs.SigmaSpec("in", x, is_input=True),
            sgs.SigmaSpec("w", x[0, 0], constant=True),
            sgs.SigmaSpec("conv1", x),
            sgs.SigmaSpec("fc", x[0, 0, 0], slot=1, pad=3),
        ]
        ints = [
            sgs.SigmaSpec("a", np.array([-3, 4], np.int8), dtype="SGS_S8", scale=0.5),
            sgs.SigmaSpec("b", np.array([9, 300], np.int16), dtype="SGS_S16", scale=0.01),
            sgs.SigmaSpec("c", np.array([1, 255], np.uint8), dtype="SGS_U8", scale=1, pad=1),
        ]
        seeds = []
        for trailer in sgs.TRAILERS:
            sgs.write_sigmastar_dump(path, floats, trailer=trailer)
            seeds.append(path.read_bytes())
        for style in ("sigma", "python"):
            sgs.write_sigmastar_dump(path, floats, form=sgs.FORM_STRING, text_style=style)
            seeds.append(path.read_bytes())
        sgs.write_sigmastar_dump(path, ints, is_float=False)
        seeds.append(path.read_bytes())
        sgs.write_sigmastar_dump(path, ints, is_float=False, form=sgs.FORM_STRING)
        seeds.append(path.read_bytes())
        return seeds


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("meg_sgs_fuzz")


def _meg_read(directory: Path, data: bytes) -> None:
    for old in directory.iterdir():
        old.unlink()
    path = directory / "var.bin"  # not a var file name: the name is not checked against the id
    path.write_bytes(data)
    (directory / "000003").write_bytes(data)
    meg.detect(path)
    meg.detect(directory)

    def read() -> meg.MegVar:
        var = meg.read_var_file(path)
        assert_picklable(var)
        assert all(d >= 0 for d in var.shape)
        if meg.DTYPES[var.dtype].numpy is not None:
            values = meg.read_values(var)
            assert values.shape == var.shape
        return var

    returns_or_names_error(read)
    returns_or_names_error(lambda: meg.read_bin_io_dump(directory))


def test_meg_seeds_read(work: Path) -> None:
    directory = work / "seeds"
    directory.mkdir()
    for number, data in enumerate(meg_seeds()):
        (directory / f"seed{number}").write_bytes(data)
        var = meg.read_var_file(directory / f"seed{number}")
        assert var.var_id in (1, 2, 3, 4)
        assert meg.read_values(var).shape == var.shape


@budget(400)
@given(data=st.one_of(mutated_bytes(meg_seeds()), st.binary(max_size=80)))
def test_meg_mutated_bytes(work: Path, data: bytes) -> None:
    directory = work / "bytes"
    directory.mkdir(exist_ok=True)
    _meg_read(directory, data)


@budget(300)
@given(text=mutated_text([seed.decode("latin-1") for seed in meg_seeds()]))
def test_meg_mutated_titles(work: Path, text: str) -> None:
    directory = work / "titles"
    directory.mkdir(exist_ok=True)
    _meg_read(directory, text.encode("latin-1", "replace"))


@budget(300)
@given(text=mutated_text(meg_text_seeds()))
def test_meg_mutated_io_dump_text(work: Path, text: str) -> None:
    path = work / "io.txt"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    meg.detect(path)
    dump = returns_or_names_error(lambda: meg.read_io_dump_text(path))
    if dump is not None:
        assert_picklable(dump)
        assert dump.path == str(path)


def _sgs_read(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    sgs.detect(path)

    def read() -> sgs.SigmaDump:
        dump = sgs.read_sigmastar_dump(path)
        assert_picklable(dump)
        for tensor in dump.tensors:
            values = sgs.read_values(tensor)
            assert values.shape == tensor.shape
            real = sgs.real_values(tensor).dtype
            assert real == (np.float64 if tensor.is_quantized else np.float32)
        return dump

    returns_or_names_error(read)


def test_sgs_seeds_read(work: Path) -> None:
    for data in sgs_seeds():
        path = work / "seed.bin"
        path.write_bytes(data)
        dump = sgs.read_sigmastar_dump(path)
        assert len(dump.tensors) in (3, 4)


@budget(500)
@given(data=st.one_of(mutated_bytes(sgs_seeds()), st.binary(max_size=80)))
def test_sgs_mutated_bytes(work: Path, data: bytes) -> None:
    _sgs_read(work / "sigma_outtensor_dump.bin", data)


@budget(400)
@given(text=mutated_text([seed.decode("latin-1") for seed in sgs_seeds()]))
def test_sgs_mutated_text(work: Path, text: str) -> None:
    _sgs_read(work / "sigma_outtensor_dump.bin", text.encode("utf-8", "surrogatepass"))
