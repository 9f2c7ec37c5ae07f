"""Vars a MegEngine `--io-dump` text prints in part (5 values and `...`, then min, max, mean,
l2): judged on what both sides printed, failed only when that proves the rule's limit crossed,
never passed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from precision_shell.cli import _foreign_root
from precision_shell.compare.results.schema import read_result_csv
from precision_shell.foreign.dumps import Printed, open_foreign
from precision_shell.foreign.explore import ForeignTensorCompare
from precision_shell.foreign.metrics import partial_compare, print_error
from precision_shell.foreign.run import ForeignCompareResult, run_foreign_compare
from precision_shell.formats.megengine_dump import TextSpec, write_io_dump_text
from precision_shell.settings import Settings
from precision_shell.shell.context import ShellContext
from precision_shell.shell.dispatcher import Dispatcher
from tests.commands.shell_fixture import open_shell, rendered, run_ok
from tests.foreign.fixtures import (
    TEXT_SAME,
    TEXT_SHIFT,
    TEXT_SMALL,
    TEXT_SWAP,
    TEXT_TAIL,
    write_text_pair,
)
from tests.foreign.oracles import expected

REL = "MegEngineRelativeError"
AT_LEAST = "MegEngineRelativeErrorAtLeast"
NOT_JUDGED = "partial values, not judged"

# MegEngineRelativeErrorAtLeast worked out by hand from the printed text (docs/FORMATS-OTHER.md
# 1.2): a value printed %.4g is within half a unit of its 4th digit, a statistic (%.3g) of its
# 3rd; the denominator is the largest magnitude either side can hold, at least 1.
HAND = {
    # 5th printed value: -1.304 vs -1.054, each +-0.0005
    TEXT_SHIFT: (1.304 - 1.054 - 0.001) / 1.3045,
    # 1st printed value: 0 (exact) vs 0.9583 (+-0.00005); statistics equal
    TEXT_SWAP: 0.9583 - 0.00005,
    # max: 0.958 (+-0.0005) vs 3.96 (+-0.005); over max |x| <= 3.965
    TEXT_TAIL: (3.96 - 0.958 - 0.0055) / 3.965,
}


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path, dict]:
    return write_text_pair(tmp_path / "dumps")


def _rows(result: ForeignCompareResult) -> dict[str, object]:
    return {r.op_name: r for r in read_result_csv(result.csv_path).rows}


def test_the_text_prints_part_of_the_values(pair) -> None:
    left, _, values = pair
    dump = open_foreign(left)
    by_name = {t.op_name: t for t in dump.tensors}
    shift = by_name[TEXT_SHIFT]
    assert shift.partial and shift.printed is not None
    assert shift.printed.count == 24 and shift.printed.values.tolist() == [
        -2.0,
        -1.826,
        -1.652,
        -1.478,
        -1.304,
    ]
    assert (shift.printed.min, shift.printed.max, shift.printed.l2) == (-2.0, 2.0, 1.2)
    assert not by_name[TEXT_SMALL].partial  # 4 values: all printed
    assert by_name[TEXT_SMALL].values().tolist() == values[TEXT_SMALL][0].tolist()


def test_vc_judges_partial_vars_on_what_both_printed(pair, tmp_path: Path) -> None:
    left, right, values = pair
    (tmp_path / "ws").mkdir()
    result = run_foreign_compare(tmp_path / "ws", str(left), str(right))
    rows = _rows(result)
    for name, bound in HAND.items():
        row = rows[name]
        assert row.compared, name
        assert math.isclose(row.metrics[AT_LEAST], bound, rel_tol=1e-9), (name, row.metrics)
        # a lower bound: the truth (all 24 values) is at least as large
        assert row.metrics[AT_LEAST] <= expected(*values[name])[REL]
        # nothing claimed over values that were not printed
        for column in (REL, "CosineSimilarity", "MaxAbsoluteError", "MeanSquaredError"):
            assert row.texts[column] == "NaN", (name, column)
        assert row.reason.startswith("the dumps show left 5 of 24, right 5 of 24 values; ")
        assert row.reason.endswith("whatever the values not shown are: partial values")
    assert "min/max/mean differ by up to 0.25, l2 by 2.439%" in rows[TEXT_SHIFT].reason
    assert "the 5 leading values by up to 0.9583" in rows[TEXT_SWAP].reason
    assert "min/max/mean differ by up to 0," in rows[TEXT_SWAP].reason  # equal statistics
    # equal as far as printed: not judged (a row not compared), not passed
    same = rows[TEXT_SAME]
    assert not same.compared and same.reason.endswith(NOT_JUDGED)
    assert f"so {REL} >= 0, which crosses no limit" in same.reason
    # printed in full: compared value by value as before
    small = rows[TEXT_SMALL]
    assert small.metrics[REL] == 0.0 and small.metrics["CosineSimilarity"] == 1.0
    assert small.texts[AT_LEAST] == "NaN"
    assert {r.op_name for r in result.failing} == set(HAND)
    summary = json.loads(result.summary_path.read_text())
    assert summary["failing_outputs"] == 3 and summary["compared"] == 4
    text = rendered(result, 200)
    assert "(partial)" in text and ">= 0.9582" in text


def test_a_looser_limit_leaves_unproven_vars_not_judged(pair, tmp_path: Path) -> None:
    """With --max-err 0.8, only `swap` is proven to cross; `shift` and `tail`, which fail
    the default rule, become not judged: never passed on values nobody saw."""
    left, right, _ = pair
    (tmp_path / "ws" / "precision_data").mkdir(parents=True)
    shell = open_shell(tmp_path / "ws")
    out = tmp_path / "loose"
    result = run_ok(shell, f"vc -lt {left} -rt {right} --max-err 0.8 -o {out}")
    rows = _rows(result)
    assert {r.op_name for r in result.failing} == {TEXT_SWAP}
    for name in (TEXT_SHIFT, TEXT_TAIL, TEXT_SAME):
        assert not rows[name].compared and rows[name].reason.endswith(NOT_JUDGED), name
    assert rows[TEXT_SMALL].compared  # the only var that passes
    # vcs judges the CSV by the recorded rule and agrees
    summary = json.loads((out / "summary.json").read_text())
    assert summary["thresholds"] == {REL: 0.8, AT_LEAST: 0.8}
    assert run_ok(shell, f"vcs -f {out}").failing_total == 1
    # the default rule fails all three, and vcs reads that back too
    strict = run_ok(shell, f"vc -lt {left} -rt {right} -o {tmp_path / 'strict'}")
    assert {r.op_name for r in strict.failing} == set(HAND)
    assert run_ok(shell, f"vcs -f {tmp_path / 'strict'}").failing_total == 3


def test_a_binary_side_counts_in_full(pair, tmp_path: Path) -> None:
    """Text against exact values: the exact side's statistics and values carry no rounding."""
    left, _, values = pair
    text = {t.op_name: t for t in open_foreign(left).tensors}
    for name, (lv, rv) in values.items():
        printed = text[name].printed
        assert printed is not None
        found = partial_compare(printed, Printed.exact(rv))
        assert found.at_least <= expected(lv, rv)[REL], name
    exact = partial_compare(text[TEXT_SWAP].printed, Printed.exact(values[TEXT_SWAP][1]))
    # a printed 0 is exactly 0; the right's first value is float32(23/24), exactly: no slack
    assert exact.at_least == float(np.float32(23 / 24))
    assert exact.common == 5


def test_the_bound_never_exceeds_the_truth(tmp_path: Path) -> None:
    """Random pairs printed by the documented text format: the bound stays under the true
    MegEngineRelativeError, for equal, nearly equal, shuffled and different values alike."""
    rng = np.random.default_rng(17)
    lefts, rights = [], []
    for scale in (1e-4, 0.3, 1.0, 7.0, 1e3, 1e6):
        a = (rng.standard_normal(40) * scale).astype(np.float32)
        lefts += [a] * 5
        rights += [
            a.copy(),
            (a * np.float32(1 + 1e-6)).astype(np.float32),
            rng.permutation(a),
            (a + rng.standard_normal(40).astype(np.float32) * np.float32(scale * 1e-3)),
            (a + np.float32(scale)).astype(np.float32),
        ]
    for side, name in ((lefts, "l.txt"), (rights, "r.txt")):
        specs = [TextSpec(i + 1, v, f"op{i}", "Elemwise", i + 1) for i, v in enumerate(side)]
        write_io_dump_text(tmp_path / name, specs)
    ld, rd = open_foreign(tmp_path / "l.txt"), open_foreign(tmp_path / "r.txt")
    proven = 0
    for lt, rt, a, b in zip(ld.tensors, rd.tensors, lefts, rights, strict=True):
        assert lt.printed is not None and rt.printed is not None
        truth = expected(a, b)[REL]
        found = partial_compare(lt.printed, rt.printed)
        assert found.at_least <= truth, (lt.op_name, found, truth)
        proven += found.at_least > 1e-3
    assert proven >= 6  # the `+ scale` pairs of every scale at least


def test_print_error_covers_the_rounding() -> None:
    rng = np.random.default_rng(3)
    samples = list(np.exp(rng.uniform(-30, 30, 2000)) * rng.choice([-1, 1], 2000))
    samples += [0.99995, 9.9995, 999.95, 0.0099995, 1.0, 10.0, 1e-5, 123456.0, -0.5]
    for x in samples:
        for digits in (3, 4):
            printed = float(f"{x:.{digits}g}")
            assert abs(x - printed) <= print_error(printed, digits), (x, digits)
    assert print_error(0.0, 3) == 0.0 and print_error(2.5, None) == 0.0
    assert print_error(math.inf, 3) == 0.0 and math.isclose(print_error(1.7e308, 3), 5e305)
    assert math.isclose(print_error(1.0, 4), 0.0005) and math.isclose(print_error(3.96, 3), 0.005)


def test_a_nan_printed_fails_the_var(tmp_path: Path) -> None:
    """MegEngine's rule fails any var holding nan/inf; a nan mean shows one is there."""
    a = np.linspace(0, 1, 12, dtype=np.float32)
    b = a.copy()
    b[9] = np.nan  # not among the 5 printed values: only the statistics show it
    write_io_dump_text(tmp_path / "l.txt", [TextSpec(1, a, "x", "Elemwise", 1)])
    write_io_dump_text(tmp_path / "r.txt", [TextSpec(1, b, "x", "Elemwise", 1)])
    (tmp_path / "ws").mkdir()
    result = run_foreign_compare(tmp_path / "ws", str(tmp_path / "l.txt"), str(tmp_path / "r.txt"))
    (row,) = result.rows
    assert row.texts[AT_LEAST] == "nan" and result.failing == [row]
    assert "one side shows nan/inf" in row.reason


def _shell(path: Path) -> Dispatcher:
    foreign, root = _foreign_root(path)
    assert foreign is not None and root is not None
    ctx = ShellContext(
        root, Settings.load(user_file=path / "no-user-settings.toml"), use_cache=False
    )
    ctx.foreign_path = foreign
    return Dispatcher(ctx)


def test_cp_shows_the_bound_or_why_not_judged(pair) -> None:
    left, _, _ = pair
    shell = _shell(left.parent)
    swap = run_ok(shell, f"cp {TEXT_SWAP}")
    assert isinstance(swap, ForeignTensorCompare)
    assert list(swap.metrics) == [AT_LEAST] and swap.fails
    assert math.isclose(swap.metrics[AT_LEAST], HAND[TEXT_SWAP], rel_tol=1e-9)
    same = run_ok(shell, f"cp {TEXT_SAME}")
    assert same.metrics == {} and not same.fails and same.note.endswith(NOT_JUDGED)
