"""The Dask worker preload of our local cluster (`vc --cluster local`): what each of its
worker processes does when it starts, the first ones and those a nanny restarts alike.

A user's own cluster (`vc --scheduler`) is never given it: its workers are not ours."""

from __future__ import annotations

import signal
import threading
from typing import Any


def dask_setup(worker: Any) -> None:
    """Ignore Ctrl-C (see dask_backend._workers_ignore_ctrl_c). The first workers inherit that
    from the shell; a worker its nanny restarts mid-compare is born when the shell takes Ctrl-C
    again, with SIGINT only blocked (the mask of the cluster's threads). Dask runs this on the
    worker's event loop, which a nanny's worker process runs in its main thread, the only one
    that may set a handler; elsewhere nothing changes."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
