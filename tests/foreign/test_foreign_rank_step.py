"""`--rank` / `--step` on MegEngine / SigmaStar dumps: every command refuses them with one
line (they select an Ascend workspace's dump dirs), none reads the dumps ignoring them (QA
F10: vc and pt ran as if they were not given)."""

from __future__ import annotations

from pathlib import Path

import pytest

from precision_shell.cli import _foreign_root
from precision_shell.foreign.run import ForeignCompareResult
from precision_shell.settings import Settings
from precision_shell.shell.context import ShellContext
from precision_shell.shell.dispatcher import Dispatcher
from tests.commands.shell_fixture import open_shell, run_fail, run_ok
from tests.foreign.fixtures import PLANTED, write_megengine

WHY = (
    "not for MegEngine / SigmaStar dumps (--rank and --step select an Ascend workspace's "
    "<device_id> and step dump dirs; these dumps have none)"
)


@pytest.fixture
def meg_root(tmp_path: Path) -> Path:
    write_megengine(tmp_path / "meg" / "runA", planted=True)
    write_megengine(tmp_path / "meg" / "runB")
    return tmp_path / "meg"


def _opened_on(path: Path) -> Dispatcher:
    """A dispatcher opened on foreign dumps the way the CLI opens it."""
    foreign, root = _foreign_root(path)
    assert foreign is not None and root is not None
    ctx = ShellContext(root, Settings.load(user_file=path.parent / "none.toml"), use_cache=False)
    ctx.foreign_path = foreign
    return Dispatcher(ctx)


@pytest.mark.parametrize(
    ("line", "flags"),
    [
        ("vc --rank 1", "--rank"),
        ("vc --step 0", "--step"),
        ("ac -c --rank 0", "--rank"),
        (f"pt {PLANTED} --step 2", "--step"),
        (f"cp {PLANTED} --rank 1", "--rank"),
        (f"dc {PLANTED} --step 1", "--step"),
        (f"ni {PLANTED} --rank 3", "--rank"),
        ("ls --rank 0 --step 0", "--rank, --step"),
    ],
)
def test_every_command_on_opened_dumps_refuses_rank_and_step(
    meg_root: Path, line: str, flags: str
) -> None:
    shell = _opened_on(meg_root)
    outcome = run_fail(shell, line)
    assert outcome.error == f"{line.split()[0]}: {flags}: {WHY}"
    assert not (meg_root / "precision_data" / "temp").exists()  # nothing was read or written


@pytest.mark.parametrize("command", ["vc", "ac -c"])
def test_a_foreign_pair_on_an_ascend_workspace_refuses_rank_and_step(
    meg_root: Path, tmp_path: Path, command: str
) -> None:
    (tmp_path / "ws" / "precision_data").mkdir(parents=True)
    shell = open_shell(tmp_path / "ws")
    pair = f"-lt {meg_root / 'runA'} -rt {meg_root / 'runB'}"
    outcome = run_fail(shell, f"{command} {pair} --step 1")
    assert outcome.error == f"{command.split()[0]}: --step: {WHY}"
    result = run_ok(shell, f"{command} {pair}")  # without it, the same pair compares
    assert isinstance(result, ForeignCompareResult)
    assert [r.op_name for r in result.failing] == [PLANTED, "cast2", "reduce1"]
