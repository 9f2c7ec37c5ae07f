"""Files that are not what their names promise, for tests of the readers: a FIFO (whose
open blocks until a writer comes), a link to /dev/zero (endless), a sparse file of many GB
(cheap on disk, not in memory); and a guard that fails a test that blocks instead of hanging
the suite."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any


def make_fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def link_to_dev_zero(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to("/dev/zero")


def make_sparse(path: Path, size: int = 20 << 30) -> None:
    """`path` (its bytes kept, when it exists) grown to `size` bytes by a hole."""
    path.touch()
    os.truncate(path, size)


def within(seconds: float, call: Callable[[], Any], fifos: list[Path]) -> Any:
    """`call()`'s value; a failed test when it has not returned after `seconds` (blocked on
    one of `fifos`, which are then opened for writing once, so that the call ends)."""
    done = threading.Event()
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the test
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, daemon=True).start()
    if not done.wait(seconds):
        for fifo in fifos:  # a reader blocked in open() or read() returns at the writer's close
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        done.wait(seconds)
        raise AssertionError(f"blocked for {seconds} s (on a FIFO?)")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
