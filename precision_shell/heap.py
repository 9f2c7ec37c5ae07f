"""Keep Python's garbage collector off the long-lived heap while a compare runs.

A shell holds its workspace index (hundreds of thousands of objects) for the whole session.
A compare allocates fast enough to trigger a full collection, which walks all of them: 25-35 ms
on the large demo, a third of its plan. `settled()` leaves the objects alive on entry out of
every collection until it exits (gc.freeze, then gc.unfreeze: both O(1)); what the compare
itself creates is collected as usual, and everything is collectable again once it is done,
so an index replaced later in the session is freed as before.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_depth = 0  # nested scopes: the outermost one freezes and unfreezes


@contextmanager
def settled() -> Iterator[None]:
    global _depth
    if _depth == 0:
        gc.freeze()
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            gc.unfreeze()
