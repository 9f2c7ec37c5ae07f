"""One tfdbg session's lifetime around a harvest: start it in a private scratch dir, turn a
stop (timeout, crash, Ctrl-C) into the report's `aborted`, and always clean up."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from precision_shell.errors import PrecisionError
from precision_shell.harvest.child_env import child_env
from precision_shell.harvest.outcome import HarvestOutcome
from precision_shell.harvest.tfdbg_session import TfdbgAborted, TfdbgSession


@contextmanager
def tfdbg_harvest(
    report: HarvestOutcome,
    argv: list[str],
    workspace_root: Path,
    transcript: Path | None = None,
    cwd: str | None = None,
) -> Iterator[tuple[TfdbgSession, Path]]:
    """Yield (session, scratch dir). What was written stays whatever ends the session; the
    child is terminated, its status and the elapsed time land in `report`."""
    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="precision_shell_tfdbg_"))
    try:
        session = TfdbgSession(
            argv, child_env(workspace_root, scratch), cwd=cwd, transcript=transcript
        )
    except PrecisionError:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    try:
        yield session, scratch
    except TfdbgAborted as stop:
        report.aborted = stop.reason
        if stop.tail:
            report.notes.append(f"last output: {stop.tail}")
    except KeyboardInterrupt:
        report.aborted = "interrupted"
    finally:
        session.terminate()
        report.child_status = report.child_status or session.status()
        shutil.rmtree(scratch, ignore_errors=True)
        report.elapsed = time.perf_counter() - started
