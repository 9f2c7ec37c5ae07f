"""Fuzz the vc journal as a killed run leaves it (a result dir may come from someone else):
reading the dir (`journal_state`) gives a state or a one-line error naming the journal, and
`vcs -f DIR --rank R --step S` a result or a one-line error, never an internal error. The
seed is the journal of a real `vc --rank all --step all` cut short on two ranks x two steps,
whose header now names each compare's rank and step."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fuzz_inputs import budget, mutated_bytes, mutated_text
from hypothesis import given
from hypothesis import strategies as st

from precision_shell.compare.pipeline import engine as engine_module
from precision_shell.compare.pipeline import execute
from precision_shell.compare.pipeline.journal import JOURNAL_NAME
from precision_shell.compare.pipeline.journal_state import JournalState, journal_state
from precision_shell.errors import PrecisionError
from tests.commands.shell_fixture import open_shell
from tests.commands.test_cut_short_slices import CUT_AT, _killed, four_slices_pristine
from tests.commands.test_vc_resume import Engine

__all__ = ["four_slices_pristine"]  # the workspace fixture, shared with the cut-short tests


@pytest.fixture(scope="module")
def killed_run(four_slices_pristine, tmp_path_factory) -> tuple[Path, Path, bytes]:  # noqa: ANN001
    """(workspace, its killed result dir, the journal's bytes)."""
    root = tmp_path_factory.mktemp("journal_fuzz") / "ws"
    shutil.copytree(four_slices_pristine, root, symlinks=True)
    with pytest.MonkeyPatch.context() as patch:
        Engine(patch, CUT_AT)
        outcome = open_shell(root).execute("vc --rank all --step all")
        patch.setattr(execute, "run_tasks", engine_module.run_tasks)
    out_dir = outcome.result.out_dir
    _killed(out_dir)
    return root, out_dir, (out_dir / JOURNAL_NAME).read_bytes()


def _check(root: Path, out_dir: Path, content: bytes) -> None:
    (out_dir / JOURNAL_NAME).write_bytes(content)
    try:
        state = journal_state(out_dir)
    except PrecisionError as exc:
        assert "\n" not in str(exc) and JOURNAL_NAME in str(exc)
    else:
        assert state is None or isinstance(state, JournalState)
    shell = open_shell(root)
    for line in (f"vcs -f {out_dir}", f"vcs -f {out_dir} --rank 1 --step 0"):
        outcome = shell.execute(line)
        assert outcome.internal_log is None, f"{line}: {outcome.error}"
        assert "\n" not in (outcome.error or "")


@budget(60)
@given(data=st.data())
def test_mutated_journal_bytes(killed_run, data: st.DataObject) -> None:  # noqa: ANN001
    root, out_dir, seed = killed_run
    _check(root, out_dir, data.draw(mutated_bytes([seed])))


@budget(80)
@given(data=st.data())
def test_mutated_journal_text(killed_run, data: st.DataObject) -> None:  # noqa: ANN001
    root, out_dir, seed = killed_run
    text = data.draw(mutated_text([seed.decode("utf-8")]))
    _check(root, out_dir, text.encode("utf-8", "surrogateescape"))
