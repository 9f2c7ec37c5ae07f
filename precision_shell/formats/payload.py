"""One tensor's bytes from a file, as a read-only array: read when small, mapped when large.

Threads that fault in pages of memory-mapped files serialize on the process's mapping lock:
on the large demo, touching every page of the compare's files took 0.22 s on one thread and
0.26 s on two, while `read()` into arrays took 0.20 s and 0.12 s. So a payload up to
READ_LIMIT bytes is read into a private array (RSS: at most that much per tensor in flight);
a larger one is memory-mapped, so a tensor of many GB never needs as much RAM.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

import numpy as np

READ_LIMIT = 64 * 2**20


class ShortRead(OSError):
    """The file ended before the payload did (it shrank after its header was read)."""


def read_payload(
    path: str | Path,
    offset: int,
    dtype: np.dtype,
    shape: tuple[int, ...],
    order: Literal["C", "F"] = "C",
) -> np.ndarray:
    """`shape` values of `dtype` at byte `offset` of `path`, read-only. OSError (ShortRead
    when the file is shorter than that) or ValueError from numpy's mapping."""
    nbytes = math.prod(shape) * dtype.itemsize  # exact (np.prod: 40 ms of GIL per compare)
    if nbytes == 0:
        empty = np.zeros(shape, dtype=dtype, order=order)
        empty.flags.writeable = False
        return empty
    if nbytes > READ_LIMIT:
        return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape, order=order)
    buffer = np.empty(nbytes, np.uint8)
    view = buffer.data
    done = 0
    with open(path, "rb", buffering=0) as handle:
        handle.seek(offset)
        while done < nbytes:
            got = handle.readinto(view[done:])
            if not got:
                raise ShortRead(f"the file ends {nbytes - done} bytes before the payload does")
            done += got
    values = buffer.view(dtype).reshape(shape, order=order)
    values.flags.writeable = False
    return values
