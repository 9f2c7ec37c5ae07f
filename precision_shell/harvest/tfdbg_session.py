"""One tfdbg command-line session driven through pexpect: prompt, command, exit, termination.

The child runs on its own pseudo-terminal (tfdbg's readline UI needs one), so Ctrl-C in
the shell reaches us, not it; we terminate it. Everything it prints goes to a transcript
file; the last lines are kept in memory for error messages.
"""

from __future__ import annotations

import collections
import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import pexpect

from precision_shell.errors import PrecisionError
from precision_shell.harvest.tfdbg_text import PROMPT, clean_screen_text

# Wide enough that readline never wraps an echoed `pt NAME -n K -w PATH` line.
_TERMINAL_SIZE = (50, 4000)
_TAIL_CHARS = 4000


@dataclass(frozen=True)
class Timeouts:
    """Seconds to wait: for the first prompt, for the debugged run, for any other command."""

    startup: float = 600.0
    run: float = 3600.0
    command: float = 120.0


class TfdbgAborted(Exception):
    """The session ended early; `reason` is one line, `tail` the last output seen."""

    def __init__(self, reason: str, tail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.tail = tail


class TfdbgTimeout(TfdbgAborted):
    """No prompt within the timeout."""


class TfdbgExited(TfdbgAborted):
    """The tfdbg process ended before giving the prompt back."""


class _Transcript:
    """pexpect's log sink: the whole output to a file, its tail in memory."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._file: TextIO | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(path, "w", encoding="utf-8", errors="replace")  # noqa: SIM115
        self._tail: collections.deque[str] = collections.deque()
        self._tail_len = 0

    def write(self, text: str) -> None:
        if self._file is not None:
            self._file.write(text)
        self._tail.append(text)
        self._tail_len += len(text)
        while self._tail_len > _TAIL_CHARS and len(self._tail) > 1:
            self._tail_len -= len(self._tail.popleft())

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def tail(self, lines: int = 8) -> str:
        text = clean_screen_text("".join(self._tail))
        kept = [line for line in text.split("\n") if line.strip()]
        return "\n".join(kept[-lines:])


def describe_exit(exitstatus: int | None, signalstatus: int | None) -> str:
    if signalstatus is not None:
        return f"killed by signal {signalstatus}"
    if exitstatus is None:
        return "still running"
    return f"exit status {exitstatus}"


class TfdbgSession:
    """A spawned program that speaks tfdbg's `tfdbg> ` prompt protocol."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: str | None = None,
        transcript: Path | None = None,
    ) -> None:
        self.argv = argv
        self.transcript = _Transcript(transcript)
        try:
            # argv as a list: no shell ever sees the user's command or paths.
            self.child = pexpect.spawn(
                argv[0],
                argv[1:],
                env=env,
                cwd=cwd,
                encoding="utf-8",
                codec_errors="replace",
                dimensions=_TERMINAL_SIZE,
                timeout=None,
            )
        except pexpect.ExceptionPexpect as error:
            self.transcript.close()
            raise PrecisionError(f"cannot start {argv[0]!r}: {error}") from None
        self.child.logfile_read = self.transcript
        # pexpect sleeps 50 ms before every send (meant for password prompts); we always
        # wait for the prompt first, and 500 tensors would otherwise cost 25 s of sleep.
        self.child.delaybeforesend = None
        self._stopped = False

    @property
    def pid(self) -> int:
        return self.child.pid

    def wait_prompt(self, timeout: float, doing: str) -> str:
        """Everything printed until the next prompt; TfdbgAborted on timeout or exit."""
        index = self.child.expect_exact([PROMPT, pexpect.EOF, pexpect.TIMEOUT], timeout=timeout)
        if index == 0:
            return self.child.before
        if index == 1:
            self._reap()
            raise TfdbgExited(
                f"tfdbg ended while {doing} ({self.status()})", self.transcript.tail()
            )
        raise TfdbgTimeout(
            f"no tfdbg prompt {timeout:g} s after {doing}; the process was stopped",
            self.transcript.tail(),
        )

    def command(self, line: str, timeout: float, doing: str) -> str:
        """Send one command; its output (without the echoed command line)."""
        self.child.sendline(line)
        output = self.wait_prompt(timeout, doing)
        _echo, _newline, rest = output.partition("\n")
        return rest

    def exit(self, timeout: float) -> str:
        """Send `exit` and wait for the process to end (stopping it after `timeout`)."""
        if not self.child.isalive():
            self._reap()
            return self.status()
        self.child.sendline("exit")
        index = self.child.expect_exact([pexpect.EOF, pexpect.TIMEOUT], timeout=timeout)
        if index == 1:
            self.terminate()
            return f"{self.status()} (still running {timeout:g} s after exit)"
        self._reap()
        return self.status()

    def terminate(self) -> None:
        """Stop the process (and its pty) if it still runs; idempotent."""
        try:
            if self.child.isalive():
                self._stopped = True
                self.child.terminate(force=True)
            self._reap()
        finally:
            self.transcript.close()

    def status(self) -> str:
        """How the process ended: "exit status N", "killed by signal N", or "stopped" (by us)."""
        if self._stopped:
            return "stopped"
        return describe_exit(self.child.exitstatus, self.child.signalstatus)

    def tail(self) -> str:
        return self.transcript.tail()

    def _reap(self) -> None:
        if not self.child.closed:
            with contextlib.suppress(pexpect.ExceptionPexpect, OSError):
                self.child.close(force=True)
        self.transcript.flush()


def tfdbg_quoted(path: Path) -> str:
    """A path as a tfdbg command argument (tfdbg splits on blanks, honours double quotes)."""
    text = os.fspath(path)
    if '"' in text or ">" in text or "\n" in text:
        raise PrecisionError(f"{text}: tfdbg cannot take a path holding '\"', '>' or a newline")
    return f'"{text}"' if any(c.isspace() for c in text) else text
