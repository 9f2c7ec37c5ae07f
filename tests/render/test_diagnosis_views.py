"""`ac -c`'s Advisor and root-cause lines: what each number and op cell says."""

from __future__ import annotations

import math
import re

from precision_shell.compare.diagnosis.root_cause import RootCause
from precision_shell.render.diagnosis_views import other_candidates_text
from tests.commands.shell_fixture import open_shell, rendered, run_ok
from tests.diagnosis.cases import CASES, build_case


def _cause(op: str, drop_db: float, input_db: float) -> RootCause:
    return RootCause(op, "Op", 3, 3, "estimate", drop_db, input_db, input_db - drop_db, 1.0, 0.5)


def test_other_candidates_say_the_number_is_the_quality_lost():
    shown = _cause("l2_loss/Square", math.inf, -41.2)
    network_input = _cause("input", 61.6, 60.0)
    assert other_candidates_text([shown, network_input]) == (
        "other candidates: input (at least 61.6 dB lost)"  # its input at the 60 dB cap
    )
    assert other_candidates_text([shown, _cause("input", 21.6, 50.0)]) == (
        "other candidates: input (21.6 dB lost)"
    )
    assert other_candidates_text([shown]) is None


def test_the_advisor_names_the_network_input_without_an_index(tmp_path):
    build_case(next(c for c in CASES if c.name == "corrupt_input-channels"), tmp_path)
    text = rendered(run_ok(open_shell(tmp_path / "precision_data"), "ac -c --replay none"))
    row = next(line for line in text.splitlines() if "input inconsistency" in line)
    assert re.search(r"input inconsistency\s*│ input\s*│", row), row
    assert "None" not in text
