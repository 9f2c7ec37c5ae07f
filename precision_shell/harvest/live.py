"""`tf_run`: harvest benchmark tensors from a live tfdbg session around the user's script.

The script wraps its session in `LocalCLIDebugWrapperSession(sess, ui_type="readline")`
(or `precision_shell.tf_config.sess_dump_live`). We wait for `tfdbg> `, send `run` (`run -t N`
runs N steps and stops after the N-th), harvest at the run-end prompt, send `exit` and
wait for the child. tfdbg's `exit` makes the wrapper call `sys.exit(1)` at the script's
next `run()`, so exit status 1 after a harvest is normal.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from precision_shell.harvest.dump_root import find_live_dump_root, first_timestamp, scan_dump_root
from precision_shell.harvest.outcome import HarvestOutcome
from precision_shell.harvest.prompt_harvest import harvest_at_prompt
from precision_shell.harvest.session_scope import tfdbg_harvest
from precision_shell.harvest.tfdbg_session import TfdbgExited, Timeouts
from precision_shell.harvest.tfdbg_text import parse_run_error
from precision_shell.progress import ProgressSink

_NOT_WRAPPED_HINT = (
    "no tfdbg prompt: tf_run needs the session wrapped with "
    "precision_shell.tf_config.sess_dump_live(sess) (LocalCLIDebugWrapperSession with "
    "ui_type='readline'); sess_dump(sess), as precision_tool's, dumps offline for tf_dump"
)


@dataclass(frozen=True)
class LiveOptions:
    steps: int = 1  # the harvested run is the steps-th `Session.run()` of the script
    overwrite: bool = False
    timeouts: Timeouts = field(default_factory=Timeouts)


def run_command(steps: int) -> str:
    """The tfdbg command that runs `steps` steps and stops at the end of the last one."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    return "run" if steps == 1 else f"run -t {steps}"


def harvest_live(
    argv: list[str],
    workspace_root: Path,
    out_dir: Path,
    options: LiveOptions,
    progress: ProgressSink | None = None,
    transcript: Path | None = None,
    cwd: str | None = None,
) -> HarvestOutcome:
    """Run `argv` under tfdbg and write the dumps of the chosen step into `out_dir`."""
    report = HarvestOutcome("live", shlex.join(argv), str(out_dir))
    report.transcript = str(transcript) if transcript else None
    timeouts = options.timeouts
    with tfdbg_harvest(report, argv, workspace_root, transcript, cwd) as (session, child_temp):
        try:
            session.wait_prompt(timeouts.startup, "starting the script")
        except TfdbgExited as exited:
            raise TfdbgExited(f"{exited.reason}; {_NOT_WRAPPED_HINT}", exited.tail) from None
        screen = session.command(
            run_command(options.steps), timeouts.run, f"running {options.steps} step(s)"
        )
        report.run_error = parse_run_error(screen)

        def live_t0() -> int | None:
            root = find_live_dump_root(child_temp)
            return first_timestamp(scan_dump_root(root)) if root else None

        harvest_at_prompt(
            session,
            report,
            timeouts,
            progress or ProgressSink(),
            child_temp,
            live_t0,
            options.overwrite,
        )
        if report.aborted is None:
            report.child_status = session.exit(timeouts.command)
    if report.timestamps_estimated:
        report.notes.append(
            "the dump dir was not visible (dump_root set in the script?): timestamps are "
            "estimated from the clock; their order is exact"
        )
    return report
