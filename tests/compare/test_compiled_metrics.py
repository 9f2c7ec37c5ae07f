"""The compiled metric passes (metrics/compiled.py) equal the numpy passes bit for bit.

Every total each pass yields is compared as bits (NaN with NaN), on data chosen to hit every
branch of numpy's pairwise summation (leaf sizes around 8 and 128, whole and partial 8192-element
blocks, several chunks), the widening tables (float16, bfloat16, int8), NaN/inf/-0.0, zero and
constant tensors; then every printed cell of whole rows.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import math
import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from precision_shell.compare.metrics import compiled
from precision_shell.compare.metrics import float32 as f32path
from precision_shell.compare.metrics.cells import csv_values
from precision_shell.compare.metrics.compute import compute_metrics
from precision_shell.compare.metrics.stream import RESIDENT, Float32Pairs


@pytest.fixture(autouse=True)
def _compiled() -> None:
    if compiled.available():
        return
    # scripts/test sets this where a C compiler is: the extension must have been built there
    assert os.environ.get("PRECISION_SHELL_REQUIRE_COMPILED") != "1", "extension not built"
    pytest.skip("the compiled extension is not built (no C compiler at install time)")


SIZES = (0, 1, 7, 8, 9, 15, 127, 128, 129, 136, 1000, 8191, 8192, 8193, 65536 + 8192 + 17, 150001)


def _data(kind: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "normal":
        return rng.standard_normal(n) * 10.0 ** rng.uniform(-4, 4, n)
    if kind == "special":
        values = rng.standard_normal(n)
        picks = rng.integers(0, n, size=max(1, n // 50)) if n else []
        for k, i in enumerate(picks):
            values[i] = (np.nan, np.inf, -np.inf, -0.0, 0.0)[k % 5]
        return values
    if kind == "zeros":
        return np.zeros(n)
    if kind == "negzero":
        return np.full(n, -0.0)
    if kind == "constant":
        return np.full(n, 3.25)
    if kind == "positive":
        return rng.uniform(0, 2, n)
    raise AssertionError(kind)


def _same(a: object, b: object) -> bool:
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    if a_arr.dtype != b_arr.dtype:
        return False
    if a_arr.dtype.kind == "f" and np.isnan(a_arr) and np.isnan(b_arr):
        return True
    return a_arr.tobytes() == b_arr.tobytes()


def _all_passes(passes: object, n: int) -> dict[str, object]:
    first = passes.first(True)  # type: ignore[attr-defined]
    found: dict[str, object] = {f"first.{k}": v for k, v in vars(first).items()}
    if n == 0:
        return found
    norms = (np.sqrt(first.xx_sum), np.sqrt(first.yy_sum))
    kl_shape = (
        f32path._kl_span(first.x_min, first.x_max),
        f32path._kl_span(first.y_min, first.y_max),
    )
    means = (f32path._mean(first.x_wide_sum, n), f32path._mean(first.y_wide_sum, n))
    second = passes.second(norms, kl_shape, means)  # type: ignore[attr-defined]
    found.update({f"second.{k}": v for k, v in vars(second).items()})
    found["kl"] = passes.kl_sum(kl_shape, second.px_sum, second.qy_sum)  # type: ignore[attr-defined]
    # a pass asked for only part of its work yields the same parts
    only_std = passes.second(None, None, means)  # type: ignore[attr-defined]
    found["std_only.x_var"] = only_std.x_var
    return found


CASES = [
    (np.float16, np.float32, "normal", "normal"),
    (np.float32, np.float32, "normal", "special"),
    (np.float16, np.float16, "special", "normal"),
    (np.float32, np.float16, "zeros", "normal"),
    (np.float16, np.float32, "negzero", "negzero"),
    (np.float32, np.float32, "constant", "positive"),
    (ml_dtypes.bfloat16, np.float32, "normal", "positive"),
    (np.int8, np.float32, "positive", "normal"),
    (np.float64, np.int32, "normal", "positive"),
]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize(("x_type", "y_type", "x_kind", "y_kind"), CASES)
def test_compiled_totals_equal_numpy_totals_bit_for_bit(
    n: int, x_type: type, y_type: type, x_kind: str, y_kind: str
) -> None:
    with np.errstate(all="ignore"):
        x = _data(x_kind, n, 1).astype(x_type)
        y = (_data(y_kind, n, 2) * 0.9).astype(y_type)
        if x_kind == y_kind == "normal":
            y = (x.astype(np.float64) * 1.001).astype(y_type)  # close pairs: tiny errors
        expected = _all_passes(f32path._NumpyPasses(Float32Pairs(x, y)), n)
        found = _all_passes(compiled.CompiledPasses(x, y), n)
    assert expected.keys() == found.keys()
    wrong = {k: (expected[k], found[k]) for k in expected if not _same(expected[k], found[k])}
    assert not wrong


LONE = [(np.nan, 1.0), (1.0, np.nan), (np.inf, np.inf), (-np.inf, -np.inf), (np.inf, -np.inf)]


@pytest.mark.parametrize("position", [0, 5, 127, 128, 131, 8191, 8192 + 3, 8192 + 136])
@pytest.mark.parametrize(("x_value", "y_value"), LONE)
def test_a_lone_non_finite_pair_flags_the_same_extremes(
    position: int, x_value: float, y_value: float
) -> None:
    """One non-finite pair anywhere (a leaf's body or its rest, any block): the extremes it
    makes NaN (the compiled pass flags NaN from each leaf's sums) are numpy's, bit for bit.
    A pair of infinities of one sign makes only |x - y| and the relative error NaN."""
    n = 8192 + 137
    rng = np.random.default_rng(11)
    x = rng.standard_normal(n).astype(np.float32)
    y = (x * np.float32(1.001)).astype(np.float32)
    x[position], y[position] = x_value, y_value
    with np.errstate(all="ignore"):
        expected = _all_passes(f32path._NumpyPasses(Float32Pairs(x, y)), n)
        found = _all_passes(compiled.CompiledPasses(x, y), n)
    assert {k for k in expected if not _same(expected[k], found[k])} == set()
    extremes = ("abs_max", "rel_max", "x_max", "x_min", "y_max", "y_min")
    nan = {k for k in extremes if np.isnan(found[f"first.{k}"])}
    if np.isnan(x_value):
        assert nan == {"abs_max", "rel_max", "x_max", "x_min"}
    elif np.isnan(y_value):  # a NaN benchmark value has no relative error (as |y| <= eps)
        assert nan == {"abs_max", "y_max", "y_min"}
    elif x_value == y_value:
        assert nan == {"abs_max", "rel_max"}


@pytest.mark.parametrize("x_kind", ["normal", "special"])
def test_tensors_too_big_to_keep_for_kl_give_the_same_bits(x_kind: str) -> None:
    """Above RESIDENT elements the second pass keeps nothing and KL's last pass normalises
    again from the data: the same totals either way."""
    n = RESIDENT + 8192 + 13
    with np.errstate(all="ignore"):
        x = _data(x_kind, n, 3).astype(np.float16)
        y = (x.astype(np.float64) * 1.001 + _data("normal", n, 4) * 1e-3).astype(np.float32)
        expected = _all_passes(f32path._NumpyPasses(Float32Pairs(x, y)), n)
        found = _all_passes(compiled.CompiledPasses(x, y), n)
    assert {k for k in expected if not _same(expected[k], found[k])} == set()


def test_one_block_sums_like_numpy() -> None:
    # within one 8192-element block numpy sums a contiguous float32 array pairwise
    rng = np.random.default_rng(5)
    for n in (1, 8, 129, 1000, 4097, 8192):
        x = (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)).astype(np.float32)
        pairs = compiled.CompiledPasses(x, np.ones(n, np.float32))
        assert _same(pairs.first(True).xx_sum, np.add.reduce(x * x))


@pytest.mark.parametrize("n", (3, 1000, 70001))
def test_printed_rows_equal_with_and_without_the_extension(
    n: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n,)).astype(np.float16)
    y = x.astype(np.float32) + rng.standard_normal(n).astype(np.float32) * 0.01
    y[::97] = 0.0  # benchmark zeros: KL is inf, relative errors skip them
    fast = compute_metrics(x, y)
    monkeypatch.setattr(compiled, "available", lambda: False)
    plain = compute_metrics(x, y)
    assert csv_values(fast) == csv_values(plain)
    assert fast.reasons == plain.reasons
    for name in ("sqnr_db", "ratio_rel_err_below_0_001", "ratio_rel_err_below_0_005"):
        a, b = getattr(fast, name), getattr(plain, name)
        assert a == b or (math.isnan(a) and math.isnan(b))


def test_bad_arguments_raise_and_never_read_out_of_bounds() -> None:
    c = compiled._module()
    assert c is not None
    x, t = np.ones(10, np.float32), np.zeros(0, np.float32)
    table16 = np.zeros(1 << 16, np.float32)
    limits = (2.0**-52, 1e-3, 5e-3)
    with pytest.raises(ValueError, match="as many elements"):
        c.first(x, t, 4, 0, np.ones(9, np.float32), t, 4, 0, *limits)
    with pytest.raises(ValueError, match="width"):
        c.first(x, t, 3, 0, x, t, 4, 0, *limits)
    with pytest.raises(ValueError, match="lookup table"):  # a 2-byte side needs 65536 entries
        c.first(np.ones(20, np.uint8), table16[:100], 2, 0, x, t, 4, 0, *limits)
    with pytest.raises(ValueError, match="2 for a half"):  # an IEEE half is 2 bytes wide
        c.first(x, t, 4, 1, x, t, 4, 0, *limits)
    with pytest.raises(ValueError, match="width"):  # 3 bytes are not whole float32 values
        c.first(np.ones(3, np.uint8), t, 4, 0, np.ones(3, np.uint8), t, 4, 0, *limits)
    p, r = np.empty(8, np.float32), np.empty(8, np.float32)
    kl = (0.0, 1.0, 0.0, 1.0, 1e-7, 1.0, 1.0)
    with pytest.raises(ValueError, match="same span"):  # elements 5..13 of 10
        c.kl_ratio(x, t, 4, 0, x, t, 4, 0, 5, *kl, p, r)
    with pytest.raises(ValueError, match="same span"):
        c.kl_ratio(x, t, 4, 0, x, t, 4, 0, -1, *kl, p, r)
    with pytest.raises(ValueError, match="one length"):
        c.kl_terms(p, np.empty(7, np.float32), 0.0)
    read_only = np.zeros(8, np.float32)
    read_only.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):  # kl_ratio_kept writes in place
        c.kl_ratio_kept(p, read_only, 1.0, 1.0)
    with pytest.raises(ValueError, match="one length"):
        c.kl_ratio_kept(p, np.empty(7, np.float32), 1.0, 1.0)
    second = (0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1e-7, 0.0, 0.0)
    with pytest.raises(ValueError, match="all n float32 values, or none"):  # kept: 10 values
        c.second(x, t, 4, 0, x, t, 4, 0, 2, *second[1:], p, p)
    with pytest.raises(ValueError, match="read-only"):
        c.second(x, t, 4, 0, x, t, 4, 0, 2, *second[1:], read_only, read_only)


def test_first_pass_not_needed_gives_the_numpy_paths_empty_totals() -> None:
    x, y = np.ones(5, np.float16), np.ones(5, np.float32)
    expected = vars(f32path._NumpyPasses(Float32Pairs(x, y)).first(False))
    found = vars(compiled.CompiledPasses(x, y).first(False))
    assert all(_same(expected[k], found[k]) for k in expected)


def _cpu_has(flag: str) -> bool:
    try:
        return flag in Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False


# no clones and no F16C: the plain loops, halves widened through the table; and the AVX2 build
BUILDS = {
    "plain": ["-DPRECISION_SHELL_NO_CLONES", "-DPRECISION_SHELL_NO_F16C"],
    "x86-64-v3": ["-DPRECISION_SHELL_NO_CLONES", "-march=x86-64-v3"],
}


@pytest.mark.parametrize("build_name", sorted(BUILDS))
def test_other_builds_give_the_same_bits_as_the_installed_one(
    tmp_path: Path, build_name: str
) -> None:
    """The installed extension may run its AVX-512 build; the plain x86-64 (or other CPU) build
    and the AVX2 one of the same source must give the same totals."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    if build_name == "x86-64-v3" and not (
        _cpu_has("avx2") and _cpu_has("fma") and _cpu_has("f16c") and _cpu_has("bmi2")
    ):
        pytest.skip("this CPU cannot run an x86-64-v3 build")
    source = Path(compiled.__file__).with_name("_passes.c")
    plain = tmp_path / ("_passes" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    include = sysconfig.get_paths()["include"]
    flags = ["-O3", "-ffp-contract=off", "-fno-trapping-math", "-fPIC", "-shared"]
    build = [cc, *flags, *BUILDS[build_name], f"-I{include}", str(source), "-o"]
    subprocess.run([*build, str(plain)], check=True, capture_output=True, timeout=120)
    loader = importlib.machinery.ExtensionFileLoader("_passes", str(plain))
    spec = importlib.util.spec_from_file_location("_passes", plain, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    rng = np.random.default_rng(9)
    n = 3 * 8192 + 1001
    with np.errstate(all="ignore"):
        x = (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)).astype(np.float16)
        y = x.astype(np.float32) * np.float32(1.0007)
        y[::101] = np.nan
        y[::53] = 0.0
    installed = _all_passes(compiled.CompiledPasses(x, y), n)
    passes = compiled.CompiledPasses(x, y)
    passes._c = module
    found = _all_passes(passes, n)
    assert {k for k in installed if not _same(installed[k], found[k])} == set()
