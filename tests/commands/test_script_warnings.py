"""The workspace's warnings reach a script too (QA: `-e "ac -c"` on a card missing an op's
dump said "the network matches" and never printed the index's warning), once each, on
stderr, and a warning that appears mid-session (a file deleted by `run`) is shown when the
index notices it."""

from __future__ import annotations

from pathlib import Path

from precision_shell.cli import main
from tests.commands.shell_fixture import CONV2
from tests.commands.test_second_dump_dir import _add, _step_dir

MISSING = CONV2.replace("/", "_")


def _dump_of(step: Path, op_file_part: str) -> Path:
    (found,) = [p for p in step.iterdir() if f".{op_file_part}." in p.name]
    return found


def test_index_warnings_print_once_in_a_script_and_new_ones_when_they_appear(
    tiny_demo, capsys, monkeypatch
):
    root, _ = tiny_demo
    rank, new_step = _add(root, "step")  # step 1 hard-linked from step 0
    step0 = _step_dir(root)
    step1 = step0.parent / new_step
    _dump_of(step1, MISSING).unlink()
    monkeypatch.setenv("COLUMNS", "400")
    gone = _dump_of(step0, "conv1_Conv2Drelu1_Relu")
    status = main([str(root), "--no-cache", "-e", f"ls; ls; run rm {gone}; ls; ls"])
    out, err = capsys.readouterr()
    warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert warnings == [
        f"warning: {step1}: step {new_step} has dump files of 13 of the 14 ops its other steps "
        f"dump; missing {MISSING}",
        f"warning: {step0}: step 0 has dump files of 13 of the 14 ops its other steps dump; "
        "missing conv1_Conv2Drelu1_Relu",
    ]
    assert status == 0 and "warning: " not in out  # stdout keeps the results only
    # the first shows before the first command's result, the second after the `run`
    assert err.index(warnings[0]) < err.index(warnings[1])
