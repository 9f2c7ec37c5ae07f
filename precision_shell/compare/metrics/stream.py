"""Tensors streamed in float32 chunks and reduced in numpy 1.x's order, for `metrics`.

numpy 1.x (what CANN's msaccucmp runs on) sums a contiguous array pairwise inside blocks of 8192
elements and adds the block sums in sequence; the numpy 2.4 we run on sums the whole array
pairwise, which changes float32 sums in the last bits. Chunks here hold whole 8192-element blocks,
so each chunk yields exactly the block sums numpy 1.x adds up. Chunks are small enough (64k
elements) for a pass's temporaries to stay in the CPU's L2 cache, large enough for numpy's
per-call overhead not to matter; the buffers are reused from call to call (`Scratch`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from functools import lru_cache

import numpy as np

BLOCK = 8192  # numpy 1.x reduction buffer, in elements
CHUNK = 8 * BLOCK
# Up to this many elements, a side converted to float32 (and KL's normalised tensors) are kept
# whole, so the later passes read them instead of computing them again: at most 4 MB per array.
RESIDENT = 1 << 20

_Converter = Callable[[np.ndarray, np.ndarray], None]


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
        parts = self._parts[0] if len(self._parts) == 1 else np.concatenate(self._parts)
        # numpy 1.x starts the reduction from +0, which turns an all -0.0 sum into +0.0.
        return np.add.accumulate(parts)[-1] + zero


class Extremes:
    """The max and min over chunks; NaN anywhere makes both NaN, as ndarray.max/min do."""

    def __init__(self) -> None:
        self._seen: list[np.floating] = []

    def add(self, value: np.floating) -> None:
        self._seen.append(value)

    @property
    def seen(self) -> bool:
        return bool(self._seen)

    def max(self) -> np.floating:
        return np.max(np.array(self._seen))

    def min(self) -> np.floating:
        return np.min(np.array(self._seen))


def chunk_bounds(n: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, CHUNK):
        yield start, min(start + CHUNK, n)


class Scratch:
    """Buffers one thread reuses from call to call, grown on demand and never shrunk.

    Fresh pages cost about 1 ns per float32 element to fault in, as much as an elementwise op,
    so allocating a call's buffers anew made every call pay for them again. A thread keeps
    about 1 MB of chunk buffers plus up to 4 MB for each of the (at most four) arrays kept whole
    (RESIDENT); a thread pool's threads free theirs when they exit.
    """

    def __init__(self) -> None:
        self._buffers: dict[str, np.ndarray] = {}

    def get(self, name: str, size: int, dtype: type[np.generic]) -> np.ndarray:
        """The buffer `name` (`size` elements of `dtype`); its previous content is garbage."""
        buffer = self._buffers.get(name)
        if buffer is None or buffer.shape[0] < size:
            buffer = self._buffers[name] = np.empty(size, dtype)
        return buffer[:size]


_THREAD = threading.local()


def thread_scratch() -> Scratch:
    """This thread's Scratch: one metrics computation at a time per thread uses it."""
    scratch = getattr(_THREAD, "scratch", None)
    if scratch is None:
        scratch = _THREAD.scratch = Scratch()
    return scratch


def resident_size(n: int) -> int:
    """Elements of a buffer kept whole for n elements, or a chunk's worth when n is too big."""
    return n if n <= RESIDENT else CHUNK


class Float32Pairs:
    """Both flat tensors as float32 chunks, with this thread's scratch buffers for the passes.

    A float32 side is read in place; another dtype is converted once per chunk, and only once
    in all when the tensor has at most RESIDENT elements.
    """

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self.n = int(x.size)
        self.scratch = scratch = thread_scratch()
        self._x, self._y = _Float32Side(x, "x", scratch), _Float32Side(y, "y", scratch)
        # Shared by every pass; each pass overwrites them.
        size = min(CHUNK, self.n)
        self.a = scratch.get("a", size, np.float32)
        self.b = scratch.get("b", size, np.float32)
        self.mask = scratch.get("mask", size, np.bool_)
        self.wide = scratch.get("wide", size, np.float64)

    def chunks(self) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(start, x chunk, y chunk) in order; the chunks are read-only to the caller."""
        for start, stop in chunk_bounds(self.n):
            yield start, self._x.chunk(start, stop), self._y.chunk(start, stop)


class _Float32Side:
    def __init__(self, src: np.ndarray, name: str, scratch: Scratch) -> None:
        n = int(src.size)
        self._src = src
        self._convert = None if src.dtype == np.float32 else _converter(src.dtype)
        self._whole = src if self._convert is None else None
        if self._convert is not None:
            self._buf = scratch.get(name, resident_size(n), np.float32)

    def chunk(self, start: int, stop: int) -> np.ndarray:
        if self._whole is not None:
            return self._whole[start:stop]
        resident = self._buf.shape[0] == self._src.shape[0]
        out = self._buf[start:stop] if resident else self._buf[: stop - start]
        assert self._convert is not None  # only a float32 source is read whole from the start
        self._convert(self._src[start:stop], out)
        if resident and stop == self._src.shape[0]:
            self._whole = self._buf  # every chunk is converted now
        return out


def _converter(dtype: np.dtype) -> _Converter:
    """msaccucmp's `np.array(data).astype("float32")`, as a function filling a float32 chunk."""
    table = lookup_table(dtype) if dtype.itemsize <= 2 and dtype != np.bool_ else None
    if table is None:
        return _cast
    index_type = np.uint16 if dtype.itemsize == 2 else np.uint8

    def look_up(src: np.ndarray, out: np.ndarray) -> None:
        # numpy's float16 cast branches per element (slow on mixed zeros and normals); a table
        # of the cast's own results for every bit pattern gives the same floats, branch-free.
        np.take(table, src.view(index_type), out=out, mode="clip")

    return look_up


def _cast(src: np.ndarray, out: np.ndarray) -> None:
    np.copyto(out, src, casting="unsafe")


@lru_cache(maxsize=16)
def lookup_table(dtype: np.dtype) -> np.ndarray | None:
    """float32 of every bit pattern of a 1- or 2-byte dtype, or None if it has no float cast."""
    patterns = np.arange(
        1 << (8 * dtype.itemsize), dtype=np.uint16 if dtype.itemsize == 2 else np.uint8
    )
    try:
        with np.errstate(all="ignore"):
            table = patterns.view(dtype).astype(np.float32)
    except (TypeError, ValueError):
        return None
    table.flags.writeable = False  # shared by every thread
    return table
