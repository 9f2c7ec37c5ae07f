"""ShellContext keeps its index current: checked once per command, re-read when files changed;
and opening a workspace never ends in a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import precision_shell.shell.context as context_module
from precision_shell.errors import PrecisionError
from precision_shell.formats.benchmark import write_benchmark
from precision_shell.settings import Settings
from precision_shell.shell.context import ShellContext
from precision_shell.shell.dispatcher import Dispatcher
from tests.shell.fake_commands import make_registry
from tests.workspace.file_times import settle


class CountingContext:
    def __init__(self) -> None:
        self.begun = 0

    def begin_command(self) -> None:
        self.begun += 1


def test_the_dispatcher_announces_each_command_that_runs_to_the_context() -> None:
    ctx = CountingContext()
    dispatcher = Dispatcher(context=ctx, registry=make_registry())
    assert dispatcher.execute("ls -n x").ok
    assert dispatcher.execute("list").ok
    assert ctx.begun == 2
    for line in ("", "# comment", "ls --bogus", "nope"):
        dispatcher.execute(line)
    assert ctx.begun == 2  # nothing ran: nothing to check


def _workspace(tmp_path: Path) -> tuple[ShellContext, Path]:
    benchmark = tmp_path / "precision_data" / "tf" / "dump"
    benchmark.mkdir(parents=True)
    write_benchmark(benchmark, "a/b:0", np.zeros(3, "float32"), 1)
    settle(tmp_path)  # only the changes a test makes count, not the files just written
    ctx = ShellContext(tmp_path / "precision_data", Settings.load(), use_cache=False)
    return ctx, benchmark


def test_a_new_file_is_seen_by_the_next_command_not_midway(tmp_path: Path) -> None:
    ctx, benchmark = _workspace(tmp_path)
    ctx.begin_command()
    first = ctx.workspace
    assert len(first.benchmark.newest) == 1
    write_benchmark(benchmark, "c:0", np.ones(2, "float32"), 2)
    assert ctx.workspace is first  # one command sees one index
    ctx.begin_command()
    second = ctx.workspace
    assert second is not first
    assert sorted(second.benchmark.newest) == ["a_b.0", "c.0"]


def test_an_unchanged_workspace_is_kept_across_commands(tmp_path: Path) -> None:
    ctx, _ = _workspace(tmp_path)
    first = ctx.workspace
    for _ in range(3):
        ctx.begin_command()
        assert ctx.workspace is first


def test_reload_reads_again_even_when_nothing_changed(tmp_path: Path) -> None:
    ctx, _ = _workspace(tmp_path)
    first = ctx.workspace
    again = ctx.reload()
    assert again is not first and ctx.workspace is again
    assert sorted(again.benchmark.newest) == ["a_b.0"]


def test_reload_of_a_vanished_workspace_is_a_user_error(tmp_path: Path) -> None:
    ctx = ShellContext(tmp_path / "gone" / "precision_data", Settings.load())
    with pytest.raises(PrecisionError, match="no such directory"):
        ctx.reload()


def test_an_internal_error_while_opening_is_one_line_with_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx, _ = _workspace(tmp_path)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise KeyError("graph\nsecond line")

    monkeypatch.setattr(context_module.Workspace, "open", broken)
    assert ctx.try_open() is None
    message = ctx.open_error
    assert message is not None and "\n" not in message
    assert message.startswith(f"{ctx.workspace_path}: cannot open the workspace: internal error: ")
    assert "KeyError: 'graph" in message
    log = Path(message.rsplit("(traceback in ", 1)[1].rstrip(")"))
    assert "KeyError" in log.read_text()
