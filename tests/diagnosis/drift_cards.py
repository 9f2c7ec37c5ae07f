"""A multi-card workspace under float16 drift with a small fault on one card: the 60-block
drift stack (tests.replay.test_isolated._deep) laid out on ranks x steps, every slice a hard
link of the drift-only dumps but one, whose block40/conv2 filter is 1% off (no heuristic
candidate covers it; only a replay finds it), or which holds the faults given."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from precision_shell.demo.spec import WRONG_CONSTANT, Fault
from precision_shell.shell.dispatcher import Dispatcher
from tests.commands.shell_fixture import open_shell, rendered
from tests.commands.test_second_dump_dir import _link_copy, _step_dir
from tests.replay.test_isolated import _deep

FAULTY = "block40/conv2/Conv2Dblock40/relu2/Relu"
ONE_PERCENT_FILTER = Fault(WRONG_CONSTANT, "block40/conv2/Conv2D", 0.01)
DRIFT_FIRST = "block44/conv2/Conv2Dblock44/relu2/Relu"  # where drift alone fails first


def drift_layout(
    tmp_path_factory,  # noqa: ANN001
    ranks: int,
    steps: int,
    faulty_at: tuple[str, str] | None = None,
    faults: tuple[Fault, ...] = (ONE_PERCENT_FILTER,),
    faults_at: Mapping[tuple[str, str], tuple[Fault, ...]] | None = None,
    blocks: int = 60,
) -> Path:
    """The workspace root: ranks 0..ranks-1 x steps 0..steps-1, `faults` (the 1% filter) on
    `faulty_at` (rank, step), and each (rank, step) `faults_at` names (rank 0 step 0 too)
    with its faults; the others drift alone. `blocks` below ~40: drift fails no threshold."""
    placed = dict(faults_at or {})
    if faulty_at is not None:
        placed[faulty_at] = faults
    root = _deep(tmp_path_factory.mktemp("drift"), blocks=blocks)
    step = _step_dir(root)
    device = step.parents[2]  # <ts>/0/<graph>/<model>/<step>
    built: dict[tuple[Fault, ...], Path] = {(): step}

    def dumps(held: tuple[Fault, ...]) -> Path:
        if held not in built:
            built[held] = _step_dir(_deep(tmp_path_factory.mktemp("faulty"), *held, blocks=blocks))
        return built[held]

    for rank in map(str, range(ranks)):
        for n in map(str, range(steps)):
            if (rank, n) != ("0", "0"):
                src = dumps(placed.get((rank, n), ()))
                _link_copy(src, device.parent / rank / step.parent.relative_to(device) / n)
    if placed.get(("0", "0")):  # last: the others linked the drift-only files first
        faulty = dumps(placed[("0", "0")])
        for f in step.iterdir():
            f.unlink()
        for f in faulty.iterdir():
            os.link(f, step / f.name)
    return root


def private_shell(pristine: Path, tmp_path: Path) -> Dispatcher:
    """A shell over a private copy of the workspace `pristine` (a module fixture's)."""
    root = tmp_path / "ws"
    shutil.copytree(pristine, root, symlinks=True)
    return open_shell(root)


def replay_line(check: object) -> str:
    """The replay line `ac -c` printed for `check`, unwrapped."""
    return next(ln for ln in rendered(check, 2000).splitlines() if ln.startswith("replay ("))
