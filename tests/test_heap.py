"""heap.settled: what is alive on entry is left out of collections until the scope exits, and
is collectable again afterwards; scopes nest; a compare runs inside one."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

from precision_shell import heap
from precision_shell.compare import runner as compare_runner
from precision_shell.compare.results.thresholds import ThresholdRule
from tests.commands.shell_fixture import open_shell


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the collector frees it


def test_objects_alive_on_entry_are_frozen_until_the_scope_exits() -> None:
    assert gc.get_freeze_count() == 0
    node = _Node()
    ref = weakref.ref(node)
    with heap.settled():
        assert gc.get_freeze_count() > 0
        del node
        gc.collect()
        assert ref() is not None  # frozen: the full collection did not look at it
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert ref() is None  # collectable again once the scope is done


def test_a_cycle_made_inside_the_scope_is_collected_inside_it() -> None:
    with heap.settled():
        node = _Node()
        ref = weakref.ref(node)
        del node
        gc.collect()
        assert ref() is None


def test_nested_scopes_unfreeze_once_the_outermost_exits_even_on_an_error() -> None:
    with pytest.raises(KeyboardInterrupt), heap.settled():
        with heap.settled():
            pass
        assert gc.get_freeze_count() > 0  # the inner exit left the outer's freeze alone
        raise KeyboardInterrupt
    assert gc.get_freeze_count() == 0


def test_a_compare_runs_settled(tiny_demo: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = tiny_demo
    shell = open_shell(root)
    ws = shell.context.workspace
    seen: list[int] = []
    real = compare_runner._run

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.get_freeze_count())
        return real(*args, **kwargs)

    monkeypatch.setattr(compare_runner, "_run", spy)
    result = compare_runner.run(ws, compare_runner.CompareRequest(rule=ThresholdRule.default()))
    assert result.primary.tally.rows > 0
    assert seen and seen[0] > 0  # the workspace index was frozen while it compared
    assert gc.get_freeze_count() == 0
