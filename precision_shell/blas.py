"""Load numpy with one OpenBLAS thread: we never need more, and each one costs at start.

numpy's OpenBLAS starts a thread per core (up to its build's maximum, 64 for the wheels) when
numpy is imported, and each thread spins on its core for ~0.1 s before it sleeps. Measured on
a 2-core VM: 0.1 s of CPU per process that imports numpy (the shell, its compare workers'
server), taken from the imports that run beside it; on a many-core server, that many threads.
Nothing here needs threaded BLAS: the metrics are our own passes, and `replay`'s matmuls are
one op's, fast on one core.

`single_blas_thread()` sets OPENBLAS_NUM_THREADS=1 while numpy loads (OpenBLAS reads it then)
and while the compare's worker server starts (it inherits the environment), unless the user
set it or GOTO_NUM_THREADS or OMP_NUM_THREADS (which OpenBLAS reads after it), and puts the
environment back afterwards: a program the shell starts later (`run`, tfdbg) gets the user's
environment as it was.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

VARIABLE = "OPENBLAS_NUM_THREADS"
# what OpenBLAS reads for its thread count, in its order: a user who set any of them chose
USER_CHOICES = (VARIABLE, "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


@contextmanager
def single_blas_thread() -> Iterator[None]:
    added = not any(name in os.environ for name in USER_CHOICES)
    if added:
        os.environ[VARIABLE] = "1"
    try:
        yield
    finally:
        if added:
            os.environ.pop(VARIABLE, None)
