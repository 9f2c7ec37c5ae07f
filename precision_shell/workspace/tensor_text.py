"""A tensor's values as a text file (`pt`, on a workspace or on MegEngine / SigmaStar dumps).

`# key: value` header lines (source, tensor, shape, dtype...), then one value per line, flat
(C order), with enough digits that each reads back to the same number of its dtype (integers
as integers; other kinds as float64). Written whole (`replace_output`): a repeated `pt` of one
tensor replaces its own earlier file. At most `TEXT_MAX_VALUES` values: a bigger tensor's file
holds its first ones and a `values:` header line says so (text of a 900 M-element tensor
would be ~20 GB and take minutes; `dc` decodes a whole tensor to `.npy`).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import IO

import numpy as np

from precision_shell.workspace.output_files import replace_output

TEXT_MAX_VALUES = 1 << 22  # ~4 M values: ~60 MB of text, a few seconds


def write_tensor_text(path: Path, values: np.ndarray, header: dict[str, str]) -> Path:
    """Write `values` (at most TEXT_MAX_VALUES of them) to `path` under `header` (key ->
    value, in order), atomically."""
    size = int(np.asarray(values).size)
    if size > TEXT_MAX_VALUES:
        header = {
            **header,
            "values": f"the first {TEXT_MAX_VALUES:,} of {size:,} (dc decodes the whole tensor)",
        }
        values = np.asarray(values).reshape(-1)[:TEXT_MAX_VALUES]
    text = "\n".join(f"{key}: {value}" for key, value in header.items())
    return replace_output(path, partial(_write_text, values=values, header=text), text=True)


def _write_text(fh: IO[str], values: np.ndarray, header: str) -> None:
    flat = np.asarray(values).reshape(-1)
    if flat.dtype.kind == "c":  # real and imaginary part of each element, one line each (QA)
        parts = np.column_stack((flat.real, flat.imag))
        np.savetxt(fh, parts, header=header, fmt=_round_trip_format(parts.dtype))
        return
    if flat.dtype.kind not in "biuf":
        flat = flat.astype(np.float64)
    np.savetxt(fh, flat, header=header, fmt=_round_trip_format(flat.dtype))


def _round_trip_format(dtype: np.dtype) -> str:
    """Enough digits that each value reads back to the same number of its dtype."""
    if dtype.kind != "f":
        return "%d"
    return "%.17g" if dtype.itemsize > 4 else "%.9g"
