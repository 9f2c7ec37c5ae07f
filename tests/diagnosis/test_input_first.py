"""A network input fed other data is the root cause, before an overflow it leads to.

QA: a corrupted input whose values later overflow float16 at l2_loss/Square was diagnosed as
"the replay proves an overflow born there" at the Square, the input only a candidate, in every
replay mode. The overflow follows from the input: the input comes first, as measured.
"""

from __future__ import annotations

import json

import pytest

from precision_shell.compare.diagnosis.root_cause import INPUT_EVIDENCE
from precision_shell.demo.builder import build_demo
from precision_shell.demo.spec import CORRUPT_INPUT, DemoSpec, Fault
from tests.commands.shell_fixture import open_shell, rendered, run_ok

SQUARE = "l2_loss/Square"


@pytest.fixture(scope="module")
def shifted_input(tmp_path_factory):
    root = tmp_path_factory.mktemp("shifted_input")
    spec = DemoSpec(size="tiny", faults=(Fault(CORRUPT_INPUT, "input", 30.0, variant="mean"),))
    build_demo(root, spec)
    return root


@pytest.mark.parametrize("mode", ["", " --replay all", " --replay none"])
def test_the_input_is_named_before_the_overflow_it_leads_to(shifted_input, mode):
    check = run_ok(open_shell(shifted_input), f"ac -c{mode}")
    causes = check.diagnosis.causes
    assert causes[0].op == "input" and causes[0].input_differs
    assert SQUARE in [c.op for c in causes[1:]]  # the overflow is still named, after it
    saved = json.loads(check.compare.summary_path.read_text(encoding="utf-8"))
    first = saved["diagnosis"]["root_causes"][0]
    assert (first["op"], first["evidence"]) == ("input", "input")
    text = rendered(check)
    assert INPUT_EVIDENCE in text
