"""Compare worker processes keep the memory of a freed tensor for the next one.

glibc's malloc serves each large allocation (above 128 KiB at first, up to 32 MiB as it adapts)
with pages fresh from the OS and returns them when it is freed, or trims them off the top of
its heap. Every tensor a worker reads, converts to the benchmark layout or copies then faults
its pages in again, and a fault is dear: measured on a 2-core VM, 3.2 us per 4 KiB page, i.e.
0.8 ns per byte, about what one metric pass costs per element. On the distinct-tensor bench
workspace (239 MB of dumps) the two workers took ~72k faults for their tasks.

A worker lives for one compare and holds a few files' tensors at a time, so it keeps freed
memory in its heap instead (`mallopt`: allocations below 1 GiB come from the heap; free space
at its top is kept up to 1 GiB) and the next tensor reuses it. Its peak memory is unchanged,
it is only no longer given back before the worker ends. Not for the shell process: it lives
for the whole session.
"""

from __future__ import annotations

import ctypes
import platform
from contextlib import suppress

# mallopt parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
KEEP_BYTES = 2**30


def reuse_freed_memory() -> bool:
    """Keep freed allocations below KEEP_BYTES in this process's heap. False where the C
    library is not glibc (nothing is changed there) or refuses."""
    if platform.libc_ver()[0] != "glibc":
        return False
    with suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        # mmap first: setting either one fixes both (no more adapting to freed sizes)
        return bool(
            libc.mallopt(_M_MMAP_THRESHOLD, KEEP_BYTES)
            and libc.mallopt(_M_TRIM_THRESHOLD, KEEP_BYTES)
        )
    return False
