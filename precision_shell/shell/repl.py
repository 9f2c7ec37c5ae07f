"""Interactive mode: a prompt_toolkit session with history and threaded completion."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer, ThreadedCompleter
from prompt_toolkit.history import FileHistory, History, InMemoryHistory

from precision_shell.render.output import PROMPT, Renderer
from precision_shell.shell.dispatcher import Dispatcher


def history_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "precision_shell" / "history"


def _history() -> History:
    path = history_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
        return FileHistory(str(path))
    except OSError:
        return InMemoryHistory()


def make_session(completer: Completer, **io: Any) -> PromptSession:
    return PromptSession(
        PROMPT,
        history=_history(),
        completer=ThreadedCompleter(completer),
        complete_while_typing=False,
        **io,
    )


def run_repl(session: PromptSession, dispatcher: Dispatcher, renderer: Renderer) -> int:
    """Prompt until Ctrl-D, `exit` or `quit`; Ctrl-C at the prompt clears the line."""
    while True:
        try:
            line = session.prompt()
        except KeyboardInterrupt:
            continue
        except EOFError:
            return 0
        outcome = dispatcher.execute(line)
        try:
            renderer.outcome(outcome)
        except KeyboardInterrupt:
            # Ctrl-C while a long table prints: stop printing, keep the shell.
            renderer.error("interrupted")
        if outcome.exit_requested:
            return 0
