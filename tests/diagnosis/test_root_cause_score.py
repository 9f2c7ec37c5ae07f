"""The quality target: `ac -c` names the injected op first in >= 95% of the fault workspaces.

Also scores the baseline older tools use ("first op in execution order whose output cosine is
below 0.98") on the same suite, and prints both with the per-case table.
"""

from __future__ import annotations

import pytest

import precision_shell.commands  # noqa: F401  (registers the commands)
from precision_shell.settings import Settings
from precision_shell.shell.context import ShellContext
from precision_shell.shell.dispatcher import Dispatcher
from tests.diagnosis.cases import CASES, build_case

TARGET = 0.95


def _diagnose(tmp_path_factory, case) -> tuple[str | None, str | None]:  # noqa: ANN001
    root = tmp_path_factory.mktemp(case.name)
    manifest = build_case(case, root)
    ctx = ShellContext(root / "precision_data", Settings.load())
    outcome = Dispatcher(ctx).execute("ac -c")
    assert outcome.result is not None, outcome.error
    assert manifest is not None
    diagnosis = outcome.result.diagnosis
    first = diagnosis.causes[0].op if diagnosis.causes else None
    return first, diagnosis.baseline


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    table = []
    for case in CASES:
        first, baseline = _diagnose(tmp_path_factory, case)
        table.append((case, first, baseline))
    return table


def test_root_cause_is_named_first_in_at_least_95_percent(results, capsys):
    hits = sum(1 for case, first, _ in results if first == case.expected_device_op)
    baseline_hits = sum(1 for case, _, base in results if base == case.expected_device_op)
    n = len(results)
    with capsys.disabled():
        print(
            f"\nroot cause named first: {hits}/{n} = {hits / n:.0%} (target {TARGET:.0%}); "
            f"baseline 'first op below cosine 0.98': {baseline_hits}/{n} = {baseline_hits / n:.0%}"
        )
        for case, first, base in results:
            mark = "ok " if first == case.expected_device_op else "MISS"
            print(
                f"  {mark} {case.name:32s} expected {case.expected_device_op!r:40s} "
                f"ours {first!r:40s} baseline {base!r}"
            )
    assert n >= 20
    assert hits / n >= TARGET
