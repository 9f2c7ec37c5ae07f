"""Tensors streamed in float32 chunks and reduced in numpy 1.x's order, for `metrics`.

numpy 1.x (what CANN's msaccucmp runs on) sums a contiguous array pairwise inside blocks of 8192
elements and adds the block sums in sequence; the numpy 2.4 we run on sums the whole array
pairwise, which changes float32 sums in the last bits. Chunks here hold whole 8192-element blocks, so each chunk
yields exactly the block sums numpy 1.x adds up, and temporaries stay a few MB.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

BLOCK = 8192  # numpy 1.x reduction buffer, in elements
CHUNK = 16 * BLOCK


class BlockSums:
    """A sum in numpy 1.x order: pairwise inside each 8192-element block, blocks in sequence.

    Every chunk but the last must hold whole blocks.
    """

    def __init__(self, dtype: type[np.floating]) -> None:
        self._dtype = dtype
        self._parts: list[np.ndarray] = []

    def add(self, chunk: np.ndarray) -> None:
        whole = chunk.shape[0] // BLOCK * BLOCK
        if whole:
            self._parts.append(np.add.reduce(chunk[:whole].reshape(-1, BLOCK), axis=1))
        if whole < chunk.shape[0]:
            self._parts.append(np.add.reduce(chunk[whole:], keepdims=True))

    def total(self) -> np.floating:
        zero = self._dtype(0)
        if not self._parts:
            return zero
        # numpy 1.x starts the reduction from +0, which turns an all -0.0 sum into +0.0.
        return np.add.accumulate(np.concatenate(self._parts))[-1] + zero


class Extremes:
    """The max and min over chunks; NaN anywhere makes both NaN, as ndarray.max/min do."""

    def __init__(self) -> None:
        self._seen: list[np.generic] = []

    def add(self, value: np.generic) -> None:
        self._seen.append(value)

    def max(self) -> np.generic:
        return np.max(np.array(self._seen))

    def min(self) -> np.generic:
        return np.min(np.array(self._seen))


def chunk_bounds(n: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, CHUNK):
        yield start, min(start + CHUNK, n)


class Float32Pairs:
    """Both flat tensors as float32 chunks: views when already float32, else cast per chunk."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self.n = int(x.size)
        size = min(CHUNK, self.n)
        self._x, self._y = x, y
        self._x_buf = None if x.dtype == np.float32 else np.empty(size, np.float32)
        self._y_buf = None if y.dtype == np.float32 else np.empty(size, np.float32)
        # Scratch shared by every pass; each pass overwrites it.
        self.a = np.empty(size, np.float32)
        self.b = np.empty(size, np.float32)
        self.mask = np.empty(size, np.bool_)
        self.wide = np.empty(size, np.float64)

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for start, stop in chunk_bounds(self.n):
            yield (
                _as_float32(self._x, self._x_buf, start, stop),
                _as_float32(self._y, self._y_buf, start, stop),
            )


def _as_float32(src: np.ndarray, buf: np.ndarray | None, start: int, stop: int) -> np.ndarray:
    if buf is None:
        return src[start:stop]
    out = buf[: stop - start]
    # msaccucmp: np.array(data).astype("float32"); the same C cast, one chunk at a time.
    np.copyto(out, src[start:stop], casting="unsafe")
    return out


def fp16_overflow(x: np.ndarray) -> bool | None:
    """msaccucmp's `np.absolute(data).max() >= 65504`, on the float16 bit patterns.

    Any NaN makes that max NaN, so a tensor holding a NaN is "NO" even beside an inf.
    """
    if x.dtype != np.float16:
        return None
    bits = x.view(np.uint16)
    magnitude = np.empty(min(CHUNK, x.size), np.uint16)
    top = 0  # largest |x| bit pattern: 0x7BFF is 65504, 0x7C00 inf, above that NaN
    for start, stop in chunk_bounds(int(x.size)):
        part = np.bitwise_and(bits[start:stop], 0x7FFF, out=magnitude[: stop - start])
        top = max(top, int(part.max()))
    return 0x7BFF <= top <= 0x7C00
