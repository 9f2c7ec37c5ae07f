"""A multi-card workspace under float16 drift with a small fault on one card: the 60-block
drift stack (tests.replay.test_isolated._deep) laid out on ranks x steps, every slice a hard
link of the drift-only dumps but one, whose block40/conv2 filter is 1% off (no heuristic
candidate covers it; only a replay finds it), or which holds the faults given."""

from __future__ import annotations

import shutil
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
    tmp_path_factory,
    ranks: int,
    steps: int,
    faulty_at: tuple[str, str],  # noqa: ANN001
    faults: tuple[Fault, ...] = (ONE_PERCENT_FILTER,),
) -> Path:
    """The workspace root: ranks 0..ranks-1 x steps 0..steps-1, `faults` (the 1% filter) on
    `faulty_at` (rank, step)."""
    root = _deep(tmp_path_factory.mktemp("drift"))
    faulty = _deep(tmp_path_factory.mktemp("faulty"), *faults)
    step = _step_dir(root)
    device = step.parents[2]  # <ts>/0/<graph>/<model>/<step>
    for rank in map(str, range(ranks)):
        for n in map(str, range(steps)):
            if (rank, n) == ("0", "0"):
                continue
            src = _step_dir(faulty) if (rank, n) == faulty_at else step
            _link_copy(src, device.parent / rank / step.parent.relative_to(device) / n)
    return root


def private_shell(pristine: Path, tmp_path: Path) -> Dispatcher:
    """A shell over a private copy of the workspace `pristine` (a module fixture's)."""
    root = tmp_path / "ws"
    shutil.copytree(pristine, root, symlinks=True)
    return open_shell(root)


def replay_line(check: object) -> str:
    """The replay line `ac -c` printed for `check`, unwrapped."""
    return next(ln for ln in rendered(check, 2000).splitlines() if ln.startswith("replay ("))
