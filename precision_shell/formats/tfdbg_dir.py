"""Offline tfdbg dumps: the `run_*` directories of `DumpingDebugWrapperSession`.

Owns finding the run directories under a `tf_debug` root (FORMATS.md section 9) and
reading the tensors of one run through TensorFlow's own `DebugDumpDir`. TensorFlow is
imported only when a run is read, never when this module is imported.

Run directory names: `DumpingDebugWrapperSession.prepare_run_debug_urls` (and the
`DumpingDebugHook`, which shares it) creates `run_<epoch microseconds>_<run counter>`
for every `Session.run()`; that pair is the creation order.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from precision_shell.errors import FormatError, PrecisionError
from precision_shell.formats.bounded_read import read_bounded
from precision_shell.tf_config import RUN_FAILED_SUFFIX, RUN_IN_PROGRESS

_RUN_DIR = re.compile(r"^run_(\d+)_(\d+)$")
# Only DebugIdentity dumps hold the tensor itself; other debug ops hold summaries.
_TENSOR_DEBUG_OP = "DebugIdentity"


@dataclass(frozen=True)
class TfdbgTensor:
    """One dumped tensor of a tfdbg run."""

    node_name: str
    output_slot: int
    timestamp: int  # microseconds since the epoch
    dump_index: int  # k-th dump of the same tensor in this run (tfdbg's `pt -n k`)
    array: np.ndarray | None  # None: numpy cannot hold it (a resource handle, a variant)
    dtype_name: str = ""  # TensorFlow's name of its dtype when `array` is None

    @property
    def tensor_name(self) -> str:
        return f"{self.node_name}:{self.output_slot}"


def tensorflow_available() -> bool:
    """Whether TensorFlow can be imported (checked without importing it)."""
    try:
        return importlib.util.find_spec("tensorflow") is not None
    except (ImportError, ValueError):
        return False


def run_failure(run_dir: Path) -> str | None:
    """What `<run dir>.failed` says (`tf_config.sess_dump` writes it when the run raised),
    None when there is no such file."""
    marker = Path(run_dir).with_name(Path(run_dir).name + RUN_FAILED_SUFFIX)
    try:
        text = read_bounded(marker, 4096, follow_links=False).decode("utf-8", "replace")
    except FileNotFoundError:
        return _unfinished(Path(run_dir))
    except (OSError, FormatError):
        return f"{marker} says the run failed"
    return f"the run raised {text.strip() or 'an error'} ({marker.name})"


def _unfinished(run_dir: Path) -> str | None:
    """Why `run_dir` may not be whole when the mark of a run in progress is left beside it
    and does not list it (the script was stopped or killed as that run dumped: QA, a
    tf_dump CMD stopped at its timeout, then harvested by a plain tf_dump as whole)."""
    mark = run_dir.parent / RUN_IN_PROGRESS
    try:
        listed = read_bounded(mark, 1 << 20, follow_links=False).decode("utf-8", "replace")
    except FileNotFoundError:
        return None
    except (OSError, FormatError):
        return f"{mark} is no mark of ours; the run may not be whole"
    if run_dir.name in listed.splitlines():
        return None
    return (
        f"the run did not finish: the script was stopped or killed as it dumped, or runs "
        f"still ({mark.name} is left)"
    )


def list_run_dirs(tf_debug_dir: Path) -> list[Path]:
    """The `run_*` directories under `tf_debug_dir`, in creation order.

    `run_<timestamp>_<counter>` sorts by (timestamp, counter); any other `run_*` directory
    follows, by modification time then name.
    """
    tf_debug_dir = Path(tf_debug_dir)
    try:
        entries = [
            entry
            for entry in os.scandir(tf_debug_dir)
            if entry.name.startswith("run_") and entry.is_dir()
        ]
    except OSError as error:
        raise FormatError(tf_debug_dir, f"cannot list tfdbg dump root: {error.strerror}") from None
    named: list[tuple[int, int, str]] = []
    other: list[tuple[float, str]] = []
    for entry in entries:
        match = _RUN_DIR.match(entry.name)
        if match:
            named.append((int(match[1]), int(match[2]), entry.name))
        else:
            other.append((entry.stat().st_mtime, entry.name))
    ordered = [name for *_, name in sorted(named)] + [name for _, name in sorted(other)]
    return [tf_debug_dir / name for name in ordered]


def _debug_dump_dir_class() -> type:
    if not tensorflow_available():
        raise PrecisionError(
            "reading tfdbg dumps needs TensorFlow, but TensorFlow is not installed "
            "(pip install tensorflow)"
        )
    with _stderr_kept_back() as said:
        try:
            from tensorflow.python.debug.lib import debug_data
        except Exception as exc:  # noqa: BLE001 - a broken TensorFlow: say what it said
            tail = said().strip().splitlines()[-1:] or [f"{type(exc).__name__}: {exc}"]
            raise PrecisionError(f"TensorFlow failed to import: {tail[0]}") from None
    return debug_data.DebugDumpDir


@contextlib.contextmanager
def _stderr_kept_back() -> Iterator[Callable[[], str]]:
    """Stderr (the file descriptor: TensorFlow's C++ start-up lines, "All log messages before
    absl::InitializeLog()..." and oneDNN's, ignore TF_CPP_MIN_LOG_LEVEL) into a temp file while
    TensorFlow is imported: a CI job watching stderr sees only our lines (QA). Yields a reader
    of what was written."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield lambda: ""
        return
    with tempfile.TemporaryFile() as kept:
        os.dup2(kept.fileno(), 2)
        try:
            yield lambda: (kept.seek(0), kept.read().decode("utf-8", "replace"))[1]
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def iter_tfdbg_run(run_dir: Path) -> Iterator[TfdbgTensor]:
    """The tensors (DebugIdentity dumps) of one `run_*` directory, in dump order.

    The run is opened here, so a missing TensorFlow or a broken run directory raises at
    the call, not at the first tensor.
    """
    dump_dir_class = _debug_dump_dir_class()
    run_dir = Path(run_dir)
    try:
        # validate=False: a run that errored out has no partition graphs to check against.
        dump = dump_dir_class(str(run_dir), validate=False)
    except Exception as error:  # TF raises its own types (gfile, protobuf), not just OSError
        raise FormatError(run_dir, f"not a readable tfdbg run directory: {error}") from None
    return _tensors(dump)


def _tensors(dump: Any) -> Iterator[TfdbgTensor]:  # a tfdbg DebugDumpDir
    dumps_so_far: dict[tuple[str, int], int] = {}
    for datum in dump.dumped_tensor_data:
        if datum.debug_op != _TENSOR_DEBUG_OP:
            continue
        tensor = (datum.node_name, datum.output_slot)
        dump_index = dumps_so_far.get(tensor, 0)
        dumps_so_far[tensor] = dump_index + 1
        try:
            value = datum.get_tensor()
        except Exception as error:  # as above: TF's own error types
            raise FormatError(datum.file_path, f"unreadable tfdbg tensor dump: {error}") from None
        array = value if isinstance(value, np.ndarray) else None
        yield TfdbgTensor(
            node_name=datum.node_name,
            output_slot=datum.output_slot,
            timestamp=datum.timestamp,
            dump_index=dump_index,
            array=array,
            # tfdbg returns an InconvertibleTensorProto for tensors numpy cannot hold
            dtype_name="" if array is not None else _dtype_name(value),
        )


def _dtype_name(value: Any) -> str:
    """TensorFlow's name of the dtype of a tensor numpy cannot hold ("resource", "variant")."""
    proto = getattr(value, "_tensor_proto", None)  # InconvertibleTensorProto keeps it private
    try:
        from tensorflow.python.framework import dtypes

        return str(dtypes.as_dtype(proto.dtype).name) if proto is not None else "non-numeric"
    except Exception:  # noqa: BLE001 - an unknown dtype number: still no numbers
        return "non-numeric"
