"""page_reuse: a process worker keeps freed tensor memory, so the next tensor of that size
faults no pages in; without it, every one does (the control, so the test can fail)."""

from __future__ import annotations

import platform
import resource
import subprocess
import sys

import numpy as np
import pytest

from precision_shell.compare.pipeline.engine import run_tasks
from precision_shell.compare.pipeline.page_reuse import reuse_freed_memory
from precision_shell.compare.pipeline.plan import FileTask
from precision_shell.compare.pipeline.worker import CompareOptions, FileResult

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")

_TENSORS, _SIZE = 8, 2**20  # a file's worth of 1 MiB tensors, held together
_PAGES = _TENSORS * _SIZE // 4096


def _a_file_of_tensors() -> None:
    held = [np.ones(_SIZE, np.uint8) for _ in range(_TENSORS)]  # made, written...
    del held  # ...and freed together, as a worker does with one file's tensors


def faults_of_a_second_file() -> int:
    """Minor page faults taken while a file's tensors are made and freed, after a first
    file's were. By default glibc trims that much freed memory off its heap top (above twice
    the largest size it has seen freed from a mapping), so each file faults its pages in."""
    _a_file_of_tensors()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    _a_file_of_tensors()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


_PROBE = """
import sys
from precision_shell.compare.pipeline.page_reuse import reuse_freed_memory
from tests.compare.test_page_reuse import faults_of_a_second_file
if sys.argv[1] == "reuse":
    assert reuse_freed_memory()
print(faults_of_a_second_file())
"""


def _faults_in_a_new_process(mode: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, check=True
    )
    return int(out.stdout)


def test_freed_memory_is_reused_by_the_next_tensor_only_when_asked() -> None:
    assert _faults_in_a_new_process("default") >= _PAGES * 0.9  # fresh pages, every one
    assert _faults_in_a_new_process("reuse") < _PAGES * 0.05


def _probe_task(task: FileTask, options: CompareOptions) -> FileResult:
    return FileResult(task.seq, [], faults_of_a_second_file())


def test_process_workers_reuse_freed_memory() -> None:
    tasks = [FileTask(k, k, f"op{k}", "Relu", "unused", (), ()) for k in range(2)]
    results = list(
        run_tasks(tasks, CompareOptions(), 2, work=_probe_task, backend="processes", readahead=0)
    )
    assert [r.seq for r in results] == [0, 1]
    assert all(r.bytes_read < _PAGES * 0.05 for r in results)


def test_reuse_is_refused_quietly_off_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "libc_ver", lambda: ("musl", "1.2"))
    assert reuse_freed_memory() is False
