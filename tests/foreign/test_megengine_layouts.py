"""Non-contiguous MegEngine vars in `--bin-io-dump` files (docs/FORMATS-OTHER.md 1.1).

MegEngine copies a var to a fresh contiguous tensor before it writes it, so the payload is
always prod(dims) values in C order of the header's dims, whatever strides the title's layout
shows (those describe the var on the device). A payload of another size is a malformed file:
a one-line error naming it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from precision_shell.errors import PrecisionError
from precision_shell.foreign.dumps import open_foreign
from precision_shell.formats.megengine_dump import (
    VarSpec,
    dump_tensor_bytes,
    title_text,
    var_info_of,
    write_bin_io_dump,
)
from tests.commands.shell_fixture import open_shell, run_fail, run_ok

VALUES = np.arange(6, dtype=np.float32).reshape(3, 2) * np.float32(1.5)


def _strided_file(path: Path, layout: str, payload: bytes | None = None) -> Path:
    """Var 5 of shape (3, 2) whose title shows `layout`; the payload as MegEngine writes it
    (contiguous) unless `payload` is given."""
    info = dataclasses.replace(var_info_of(5, VALUES, "t", "Dimshuffle"), layout=layout)
    data = dump_tensor_bytes(title_text(info, ()), VALUES)
    if payload is not None:
        data = data[: len(data) - VALUES.nbytes] + payload
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_title_strides_do_not_change_how_the_payload_reads(tmp_path: Path) -> None:
    # a transposed view: (3, 2) with strides (1, 3) on the device
    path = _strided_file(tmp_path / "run" / "000005", "{3(1),2(3) Float32}")
    dump = open_foreign(path.parent)
    (tensor,) = dump.tensors
    assert tensor.shape == (3, 2)
    assert tensor.values().tolist() == VALUES.astype(np.float64).tolist()


def test_a_strided_var_compares_with_its_contiguous_twin(tmp_path: Path) -> None:
    _strided_file(tmp_path / "left" / "000005", "{3(1),2(3) Float32}")
    write_bin_io_dump(tmp_path / "right", [VarSpec(5, VALUES, "t", "Dimshuffle")])
    (tmp_path / "ws" / "precision_data").mkdir(parents=True)
    shell = open_shell(tmp_path / "ws")
    result = run_ok(shell, f"vc -lt {tmp_path / 'left'} -rt {tmp_path / 'right'}")
    (row,) = result.rows
    assert row.metrics["MegEngineRelativeError"] == 0.0 and result.failing == []


@pytest.mark.parametrize(
    ("layout", "kept"),
    [
        ("{3(0),2(1) Float32}", 2),  # a broadcast var's span: 2 values
        ("{3(4),2(1) Float32}", 10),  # a padded row pitch's span: 10 values
    ],
)
def test_a_payload_of_the_span_is_a_one_line_error(tmp_path: Path, layout: str, kept: int) -> None:
    """What a writer of the raw span would leave: refused as malformed, never read as if it
    were strided (MegEngine's writer never writes one)."""
    payload = np.arange(kept, dtype=np.float32).tobytes()
    path = _strided_file(tmp_path / "run" / "000005", layout, payload)
    with pytest.raises(PrecisionError) as err:
        open_foreign(path.parent)
    message = str(err.value)
    assert message.startswith(f"{path}: var 5: shape [3, 2] of Float32 needs 24 bytes")
    assert f"the file holds {4 * kept} after the title" in message and "\n" not in message
    assert "the file is truncated or not MegEngine's" in message
    write_bin_io_dump(tmp_path / "right", [VarSpec(5, VALUES, "t", "Dimshuffle")])
    (tmp_path / "ws" / "precision_data").mkdir(parents=True)
    out = run_fail(open_shell(tmp_path / "ws"), f"vc -lt {path.parent} -rt {tmp_path / 'right'}")
    assert str(path) in (out.error or "")


def test_a_title_with_a_nested_lowbits_layout_parses(tmp_path: Path) -> None:
    """MegEngine prints a 4-bit var's layout with a nested brace: `{.. @ LOWBITS{4,8} ..}`."""
    path = _strided_file(tmp_path / "run" / "000005", "{3(2),2(1) @ LOWBITS{4,8} Float32}")
    (tensor,) = open_foreign(path.parent).tensors
    assert tensor.shape == (3, 2)
    assert tensor.values().tolist() == VALUES.astype(np.float64).tolist()


def test_quantized_s1_reads_one_byte_a_value(tmp_path: Path) -> None:
    values = np.array([[0, 1, 1], [0, 0, 1]], np.int8)
    write_bin_io_dump(tmp_path / "run", [VarSpec(7, values, "q", "TypeCvt", dtype=100006)])
    (tensor,) = open_foreign(tmp_path / "run").tensors
    assert tensor.values().tolist() == values.tolist()
