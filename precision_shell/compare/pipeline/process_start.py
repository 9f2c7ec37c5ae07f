"""How compare worker processes start: forked from a server that imported the compare once.

A `forkserver` (where the OS has one) forks the workers, so no lock held by one of our threads
(the REPL's completer, say) is ever copied into a worker. It imports `PRELOAD` before it forks
anything, so a worker starts ready: a pool of two in ~20 ms instead of ~0.2 s while each
imports numpy and ours itself. The server lives as long as this process and ends with it
(it reads a pipe only this process holds), so only its first start costs; the shell starts it
early (`warm_processes`), while it imports its own modules or the user reads the banner.

This module imports nothing heavy: the shell calls it before it imports the commands.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Iterable
from contextlib import suppress
from multiprocessing.context import BaseContext

PRELOAD = ["precision_shell.compare.pipeline.engine"]
# the commands that may run a compare on processes (`vc`, and `ac` through it)
COMPARE_COMMANDS = frozenset({"vc", "ac"})
_started = False


def process_context() -> BaseContext:
    """The context compare worker processes start from (see the module doc)."""
    global _started
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)  # read when the server starts, not after
    _started = True
    return context


def processes_warm() -> bool:
    """Whether this process has started its preloaded forkserver (a pool ran, or
    `warm_processes`): a process pool then starts in ms."""
    return _started


def warm_processes() -> None:
    """Start the preloaded forkserver now, in the background. Nothing on one core (processes
    are never picked there) or where there is no forkserver."""
    if (os.cpu_count() or 1) < 2 or "forkserver" not in multiprocessing.get_all_start_methods():
        return
    from multiprocessing import forkserver

    process_context()
    # Started with Ctrl-C ignored, which it keeps (an ignored signal stays so across exec, and
    # python then installs no handler): a Ctrl-C to the shell's process group while the server
    # imports `PRELOAD` would print its traceback (it ignores Ctrl-C only once that is done).
    # The shell's own start-up takes Ctrl-C again right after this spawn.
    ctrl_c = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        # best effort: a server that cannot start now (no fds left, or called while a child
        # process imports its main module) is started, or reported, by the first pool
        with suppress(OSError, RuntimeError, ValueError):
            forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, ctrl_c if ctrl_c is not None else signal.SIG_DFL)


def runs_a_compare(lines: Iterable[str]) -> bool:
    """Whether a script's lines hold a command that may compare on processes."""
    return any(line.split(maxsplit=1)[0] in COMPARE_COMMANDS for line in lines if line.strip())
