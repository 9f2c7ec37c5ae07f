"""The exception types the shell shows to users as one line."""

from __future__ import annotations

from pathlib import Path


class PrecisionError(Exception):
    """A user-facing error: shown as one red line, never with a traceback."""


class FormatError(PrecisionError):
    """A file that does not follow its format; the message names the file and the problem."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")
