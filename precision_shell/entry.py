"""The process's entry point (`precision-shell`, `python -m precision_shell`).

SIGTERM handling is installed before the shell's modules are imported; a Ctrl-C or SIGTERM
that reaches this far (during start-up: the imports, the workspace's index; at the prompt;
between a script's commands) is one line on stderr and exit status 130 or 143, never a
traceback. A command cut by either is stopped by the shell itself (`Dispatcher`).
"""

from __future__ import annotations

import contextlib
import sys

from precision_shell import termination


def main(argv: list[str] | None = None) -> int:
    termination.install()
    try:
        from precision_shell.cli import main as run_shell

        status = run_shell(argv)
    except KeyboardInterrupt:
        termination.ignore_from_now()
        _say(termination.stopped_text())
        return termination.stopped_status()
    if termination.received():  # after the command it cut, which said so; or after the last
        termination.ignore_from_now()
        if not termination.told():
            _say(termination.stopped_text())
        return termination.EXIT_TERMINATED
    return status


def _say(message: str) -> None:
    with contextlib.suppress(OSError, ValueError):  # stderr closed or gone
        sys.stderr.write(f"error: {message}\n")
        sys.stderr.flush()
