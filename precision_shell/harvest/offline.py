"""`tf_dump`: harvest the `run_*` dirs a dumping wrapper wrote under `precision_data/tf/tf_debug/`.

Fast path (TensorFlow importable here): read a run with `DebugDumpDir` and write the
arrays directly. Otherwise (or when asked): open the run in tfdbg's offline analyzer,
`python -m tensorflow.python.debug.cli.offline_analyzer --ui_type=readline --dump_dir=DIR`,
and harvest at its prompt like a live session. Either way the dump files' names give the
total, the real timestamps, and which dumps could not be written.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from precision_shell.errors import FormatError, PrecisionError
from precision_shell.formats.tfdbg_dir import iter_tfdbg_run, list_run_dirs
from precision_shell.harvest.benchmark_writer import BenchmarkDirWriter, NoValues, TensorNotSaved
from precision_shell.harvest.child_env import child_env
from precision_shell.harvest.dump_root import first_timestamp, indexed_tensor_dumps, scan_dump_root
from precision_shell.harvest.outcome import HarvestOutcome, MissedTensor
from precision_shell.harvest.prompt_harvest import harvest_at_prompt
from precision_shell.harvest.session_scope import tfdbg_harvest
from precision_shell.harvest.shadowed import shadowed_tensors
from precision_shell.harvest.tfdbg_session import Timeouts
from precision_shell.progress import ProgressSink, Tick

ANALYZER_MODULE = "tensorflow.python.debug.cli.offline_analyzer"


@dataclass(frozen=True)
class OfflineOptions:
    overwrite: bool = False
    python: str = sys.executable  # the interpreter that runs the analyzer (needs TensorFlow)
    timeouts: Timeouts = field(default_factory=Timeouts)
    # The analyzer's argv before `--dump_dir=DIR`; None: `python -m offline_analyzer ...`.
    analyzer: tuple[str, ...] | None = None


def analyzer_argv(options: OfflineOptions, run_dir: Path) -> list[str]:
    base = list(options.analyzer or (options.python, "-m", ANALYZER_MODULE, "--ui_type=readline"))
    # validate_graph off: a run that failed lacks some partition graphs; we read what is there.
    return [*base, f"--dump_dir={run_dir}", "--validate_graph=false"]


def select_runs(tf_debug_dir: Path, run: str | None, all_runs: bool) -> list[Path]:
    """The run dirs to harvest: the last one, `run` (index, negative from the end, or name), or all."""
    runs = list_run_dirs(tf_debug_dir)
    if not runs:
        raise PrecisionError(f"{tf_debug_dir}: no run_* dirs to harvest")
    if all_runs:
        return runs
    if run is None:
        return [runs[-1]]
    by_name = {path.name: path for path in runs}
    if run in by_name:
        return [by_name[run]]
    try:
        return [runs[int(run)]]
    except (ValueError, IndexError):
        names = ", ".join(f"{i}={p.name}" for i, p in enumerate(runs))
        raise PrecisionError(f"no run {run!r} in {tf_debug_dir}; runs: {names}") from None


def run_user_script(
    argv: list[str], workspace_root: Path, timeout: float, log_path: Path, cwd: str | None = None
) -> tuple[str, int]:
    """Run the user's script (no shell) with its output in `log_path`: (its exit description,
    its exit status). It runs in a process group of its own, and whatever of that group is
    left when it ends, is stopped or is interrupted goes with it (QA: a launcher script
    stopped at the timeout left the python it started running, writing run dirs later)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        try:
            proc = subprocess.Popen(
                argv,
                env=child_env(workspace_root),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except FileNotFoundError:
            raise PrecisionError(f"cannot start {argv[0]!r}: no such program") from None
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop_process_group(proc)
            raise PrecisionError(
                f"{' '.join(argv)}: still running after {timeout:g} s; stopped (output: {log_path})"
            ) from None
        except BaseException:
            stop_process_group(proc)
            raise
        stop_process_group(proc)  # what it started and left behind
    return f"exit status {code}", code


_GROUP_GRACE_S = 3.0


def stop_process_group(proc: subprocess.Popen) -> None:
    """SIGTERM to `proc`'s process group (its own: `start_new_session`), SIGKILL to what is
    left after a grace period; `proc` is reaped. A group already gone is fine."""

    def signal_group(sig: int) -> bool:
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    if not signal_group(signal.SIGTERM):
        proc.wait()
        return
    deadline = time.monotonic() + _GROUP_GRACE_S
    while time.monotonic() < deadline:
        if proc.poll() is not None and not signal_group(0):
            return
        time.sleep(0.05)
    signal_group(signal.SIGKILL)
    proc.wait()


def harvest_run_fast(
    run_dir: Path, out_dir: Path, overwrite: bool = False, progress: ProgressSink | None = None
) -> HarvestOutcome:
    """Read `run_dir` with TensorFlow in this process and write its tensors into `out_dir`."""
    started = time.perf_counter()
    progress = progress or ProgressSink()
    report = HarvestOutcome("offline", str(run_dir), str(out_dir))
    expected = indexed_tensor_dumps(scan_dump_root(run_dir))
    report.total = len(expected)
    # TF reads this at import; the user's own setting wins.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    tensors = iter_tfdbg_run(run_dir)
    writer = BenchmarkDirWriter(out_dir, [dump.tensor_name for dump in expected], overwrite)
    report.collisions = writer.collisions
    written: set[tuple[str, int]] = set()
    progress.start(report.total, 0)
    try:
        for tensor in tensors:
            name = tensor.tensor_name
            if tensor.array is None:
                why = f"a {tensor.dtype_name} tensor, not numbers"
                report.no_values.append(MissedTensor(name, tensor.dump_index, why))
                written.add((name, tensor.dump_index))
                continue
            try:
                report.saved.append(
                    writer.save_array(name, tensor.dump_index, tensor.timestamp, tensor.array)
                )
            except NoValues as error:
                report.no_values.append(MissedTensor(name, tensor.dump_index, str(error)))
            except TensorNotSaved as error:
                report.missed.append(MissedTensor(name, tensor.dump_index, str(error)))
            # accounted for only now: one Ctrl-C cut in its write is "not harvested" (QA:
            # "113 of 6003 saved, 5889 not saved", the one being written in neither)
            written.add((name, tensor.dump_index))
            progress.advance(Tick(bytes=tensor.array.nbytes))
    except KeyboardInterrupt:
        report.aborted = "interrupted"
    except FormatError as error:  # one unreadable dump file ends TF's reader
        report.aborted = str(error)
    finally:
        progress.stop()
        mapping = writer.close(finished=report.aborted is None)
        report.mapping_csv = str(mapping) if mapping else None
        report.shadowed = shadowed_tensors(writer.out_dir, report.saved)
    why = "TensorFlow cannot turn this dump into a numpy array"
    if report.aborted:
        why = f"not harvested: {report.aborted}"
    report.missed.extend(
        MissedTensor(d.tensor_name, d.dump_index, why)
        for d in expected
        if (d.tensor_name, d.dump_index) not in written
    )
    report.total = max(report.total, len(report.saved) + len(report.missed) + len(report.no_values))
    report.elapsed = time.perf_counter() - started
    return report


def harvest_run_pexpect(
    run_dir: Path,
    workspace_root: Path,
    out_dir: Path,
    options: OfflineOptions,
    progress: ProgressSink | None = None,
    transcript: Path | None = None,
) -> HarvestOutcome:
    """Open `run_dir` in tfdbg's offline analyzer and harvest it at the prompt."""
    report = HarvestOutcome("offline-pexpect", str(run_dir), str(out_dir))
    report.transcript = str(transcript) if transcript else None
    argv = analyzer_argv(options, run_dir)
    with tfdbg_harvest(report, argv, workspace_root, transcript) as (session, scratch):
        session.wait_prompt(options.timeouts.startup, f"opening {run_dir} in tfdbg")
        harvest_at_prompt(
            session,
            report,
            options.timeouts,
            progress or ProgressSink(),
            scratch,
            lambda: first_timestamp(scan_dump_root(run_dir)),
            options.overwrite,
        )
        if report.aborted is None:
            report.child_status = session.exit(options.timeouts.command)
    return report
