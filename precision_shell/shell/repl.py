"""Interactive mode: a prompt_toolkit session with history and threaded completion."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer, ThreadedCompleter
from prompt_toolkit.history import FileHistory, History, InMemoryHistory

from precision_shell import termination
from precision_shell.render.output import PROMPT, Renderer
from precision_shell.shell.dispatcher import Dispatcher
from precision_shell.termination import EXIT_TERMINATED, Terminated


def history_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "precision_shell" / "history"


def open_history() -> tuple[History, str | None]:
    """The history file, or (when it cannot be read or appended to) an in-memory history and
    the one-line warning saying why. prompt_toolkit reads the file in its event loop, where a
    failure is a traceback at every prompt and eats the first command typed."""
    path = history_path()
    try:
        with open(path, "rb"):
            pass
    except FileNotFoundError:
        pass  # made below
    except OSError as exc:
        return InMemoryHistory(), f"history disabled: cannot read {path}: {_reason(exc)}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab"):
            pass
    except OSError as exc:
        return InMemoryHistory(), f"history disabled: cannot write {path}: {_reason(exc)}"
    return FileHistory(str(path)), None


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def make_session(
    completer: Completer, warn: Callable[[str], None] | None = None, **io: Any
) -> PromptSession:
    """The prompt; `warn` gets the one line saying why history is off, when it is."""
    history, problem = open_history()
    if problem is not None and warn is not None:
        warn(problem)
    return PromptSession(
        PROMPT,
        history=history,
        completer=ThreadedCompleter(completer),
        complete_while_typing=False,
        **io,
    )


def run_repl(session: PromptSession, dispatcher: Dispatcher, renderer: Renderer) -> int:
    """Prompt until Ctrl-D, `exit` or `quit`; Ctrl-C at the prompt clears the line (and,
    the first time, says how to leave: precision_tool's users leave with Ctrl-C)."""
    hinted = False
    while True:
        try:
            termination.at_prompt(session.app)
            try:
                line = session.prompt()
            finally:
                termination.at_prompt(None)
        except Terminated:
            raise  # SIGTERM at the prompt: the shell ends (`entry`)
        except KeyboardInterrupt:
            if not hinted:
                hinted = True
                renderer.note("Ctrl-C clears the line; Ctrl-D, exit or quit leaves the shell")
            continue
        except EOFError:
            return 0
        outcome = dispatcher.execute(line)
        try:
            renderer.outcome(outcome)
        except Terminated:
            raise
        except KeyboardInterrupt:
            # Ctrl-C while a long table prints: stop printing, keep the shell.
            renderer.error("interrupted")
        if outcome.terminated:
            return EXIT_TERMINATED
        if outcome.exit_requested:
            return 0
