"""How the shell stops on Ctrl-C and on SIGTERM, and what it says then.

SIGTERM is raised in the main thread as `Terminated`, a KeyboardInterrupt: whatever stops a
command on Ctrl-C (its workers stopped, a partial summary written, the journal closed) stops
it on SIGTERM the same way. The shell then says `terminated (SIGTERM): ...` in one line and
ends with 143 (128 + 15), where Ctrl-C outside a command ends it with 130. A second SIGTERM
while it stops is ignored, so that it does not cut the clean-up short (SIGKILL still ends it).

Imports nothing heavy: the entry point (`entry`) installs this before anything else.
"""

from __future__ import annotations

import _thread
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import FrameType
from typing import Any

EXIT_INTERRUPTED = 128 + signal.SIGINT
EXIT_TERMINATED = 128 + signal.SIGTERM

_received = False
# what stopped a run recorded earlier (summary.json), for text about it made now (`recorded_stop`)
_recorded: ContextVar[str | None] = ContextVar("recorded_stop", default=None)
_told = False  # a line naming SIGTERM was made (a command it cut says so itself)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be."""


# The prompt's application while it waits for a line: SIGTERM then ends it from its own event
# loop (raised in the middle of the loop, prompt_toolkit could catch it and print "Press ENTER
# to continue...").
_prompt_app: Any = None


def at_prompt(app: Any) -> None:
    """The prompt `app` waits for a line (None: no longer)."""
    global _prompt_app
    _prompt_app = app


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    global _received
    if _received:
        return
    _received = True
    app = _prompt_app
    loop = getattr(app, "loop", None) if app is not None else None
    if loop is not None and getattr(app, "is_running", False):
        loop.call_soon_threadsafe(_end_prompt, app)
        return
    raise Terminated


def _end_prompt(app: Any) -> None:
    if app.is_running and not app.is_done:
        app.exit(exception=Terminated())


def install() -> None:
    """Raise `Terminated` on SIGTERM from now on (in the main thread, as Python does Ctrl-C),
    and deliver again a Ctrl-C or SIGTERM that landed where Python can only print it."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    sys.unraisablehook = _unraisable


_default_unraisable = sys.unraisablehook


def _unraisable(info: Any) -> None:
    """A KeyboardInterrupt raised where nothing can catch it (a weakref callback of the import
    machinery's module locks, at start-up) is printed by Python as "Exception ignored in ...
    Traceback" and lost (one run in ~20 of a Ctrl-C 0.15 s after start): it is raised again in
    the main thread instead, where the shell says it in one line. Anything else as Python
    would."""
    if isinstance(info.exc_value, KeyboardInterrupt):
        signum = signal.SIGTERM if isinstance(info.exc_value, Terminated) else signal.SIGINT
        _thread.interrupt_main(signum)
        return
    _default_unraisable(info)


@contextmanager
def deferred() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait for the end of the block (a step that must not stop halfway: a
    worker process forked but not yet known to its pool would outlive it and print a
    traceback), then act as they would have. Only the main thread receives signals: elsewhere
    the block just runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        held.append(signum)

    before: dict[int, Any] = {
        signum: signal.signal(signum, hold) for signum in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
        if held:
            _act(held[0], before[held[0]])


def _act(signum: int, handler: Any) -> None:
    """What `handler` (a signal's handler before `deferred`) does with `signum`, now."""
    if callable(handler):
        handler(signum, None)
    elif handler == signal.SIG_DFL:
        os.kill(os.getpid(), signum)


def received() -> bool:
    """Whether SIGTERM came: the shell stops after the command it cut."""
    return _received


def stop_name() -> str:
    """What stopped the shell's work: `SIGTERM` once it came, else `Ctrl-C`; inside
    `recorded_stop(name)`, that name."""
    recorded = _recorded.get()
    if recorded is not None:
        return recorded
    return "SIGTERM" if _received else "Ctrl-C"


@contextmanager
def recorded_stop(name: str) -> Iterator[None]:
    """Text made in the block (`stop_name`) names `name` as what stopped the work: a run
    stopped earlier, maybe by another process, whose record kept what stopped it."""
    token = _recorded.set(name)
    try:
        yield
    finally:
        _recorded.reset(token)


def stopped_text(error: str | None = None) -> str:
    """The line of a command (or the shell) stopped by Ctrl-C (its own `error`, else
    `interrupted`) or by SIGTERM (`terminated (SIGTERM)`, then its error if any)."""
    global _told
    if not _received:
        return error or "interrupted"
    _told = True
    return f"terminated (SIGTERM): {error}" if error else "terminated (SIGTERM)"


def told() -> bool:
    """Whether a line naming SIGTERM was made since it came."""
    return _told


def stopped_status() -> int:
    """The exit status of a shell stopped by SIGTERM (143) or Ctrl-C (130)."""
    return EXIT_TERMINATED if _received else EXIT_INTERRUPTED


def ignore_from_now() -> None:
    """The shell is ending: neither Ctrl-C nor SIGTERM cuts its last clean-up (a traceback)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
