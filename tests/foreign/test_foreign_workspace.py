"""`precision-shell DIR_OR_FILE` on MegEngine / SigmaStar dumps: ls, ni, pt, cp, dc, vc, ac -c."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from precision_shell.cli import _foreign_root
from precision_shell.errors import PrecisionError
from precision_shell.foreign.explore import (
    ForeignDecoded,
    ForeignListing,
    ForeignNode,
    ForeignSummaries,
    ForeignTensorCompare,
)
from precision_shell.foreign.run import ForeignCompareResult
from precision_shell.foreign.workspace import (
    FRAMEWORK_IS_BENCHMARK,
    NAME_ORDER,
    foreign_layout,
    open_foreign_workspace,
)
from precision_shell.formats.sigmastar_dump import dequantize
from precision_shell.settings import Settings
from precision_shell.shell.context import ShellContext
from precision_shell.shell.dispatcher import Dispatcher
from tests.commands.shell_fixture import rendered, run_fail, run_ok
from tests.foreign.fixtures import (
    OPS,
    PLANTED,
    SCALE,
    SIGMA_BAD,
    SIGMA_LAYERS,
    ZERO,
    write_megengine,
    write_sigmastar_pair,
)
from tests.foreign.oracles import expected

REPO = Path(__file__).resolve().parents[2]
FIXED, FLOAT = "sigma_outtensor_dump.bin", "onnx_NHWC_outtensor_dump.bin"


def _listing(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under `root` with its size and mtime (links not followed)."""
    found = {}
    for base, dirs, files in os.walk(root):
        for name in dirs + files:
            st = os.lstat(os.path.join(base, name))
            found[os.path.relpath(os.path.join(base, name), root)] = (st.st_size, st.st_mtime_ns)
    return found


@pytest.fixture
def meg_dir(tmp_path: Path) -> tuple[Path, dict, dict]:
    root = tmp_path / "meg"
    _, bad = write_megengine(root / "runA", planted=True)
    _, good = write_megengine(root / "runB")
    return root, bad, good


@pytest.fixture
def sigma_dir(tmp_path: Path) -> tuple[Path, dict, dict]:
    root = tmp_path / "sigma"
    root.mkdir()
    _, _, fixed, real = write_sigmastar_pair(root)
    return root, fixed, real


def _shell(path: Path) -> Dispatcher:
    """A dispatcher opened on `path` the way the CLI opens it."""
    foreign, root = _foreign_root(path)
    assert foreign is not None and root is not None
    settings = Settings.load(user_file=path.parent / "no-user-settings.toml")
    ctx = ShellContext(root, settings, use_cache=False)
    ctx.foreign_path = foreign
    return Dispatcher(ctx)


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("foreign_home")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "PYTEST"))}
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"):
        env[name] = str(home / name.lower())
    env["PYTHONPATH"] = str(REPO)
    env["COLUMNS"] = "200"
    env.pop("FORCE_COLOR", None)
    return env


def _cli(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "precision_shell", *args],
        input="",
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


# ---------------------------------------------------------------------------- recognition


def test_layouts_and_the_left_right_rule(meg_dir, sigma_dir, tmp_path: Path) -> None:
    meg, _, _ = meg_dir
    layout = foreign_layout(meg)
    assert layout is not None and layout.rule == NAME_ORDER and layout.root == meg.resolve()
    assert [e.name for e in layout.entries] == ["runA", "runB"]
    single = foreign_layout(meg / "runB")
    assert single is not None and len(single.entries) == 1 and single.root == meg.resolve()
    # one var file of a --bin-io-dump dir: outputs beside the dir, never in it (QA Q25 #11:
    # a precision_data/ made in runB would break compare_binary_iodump's same-names check)
    var = next(p for p in sorted((meg / "runB").iterdir()) if p.is_file())
    alone = foreign_layout(var)
    assert alone is not None and alone.root == meg.resolve()
    looked = run_ok(_shell(var), f"pt {int(var.name, 16)}")
    (item,) = looked.items
    assert Path(item.text_file).parent == meg.resolve() / "precision_data" / "temp" / "pt"
    assert sorted(p.name for p in (meg / "runB").iterdir()) == sorted(
        p.name for p in (meg / "runA").iterdir()
    )
    sigma, _, _ = sigma_dir
    layout = foreign_layout(sigma)
    assert layout is not None and layout.rule == FRAMEWORK_IS_BENCHMARK
    assert [e.name for e in layout.entries] == [FIXED, FLOAT]  # the onnx one is the right
    one = foreign_layout(sigma / FLOAT)
    assert one is not None and one.root == sigma.resolve()
    # not foreign: the Ascend path is untouched
    (tmp_path / "ws" / "precision_data" / "npu").mkdir(parents=True)
    assert foreign_layout(tmp_path / "ws") is None
    assert open_foreign_workspace(tmp_path / "ws") is None
    junk = tmp_path / "junk"
    (junk / "sub").mkdir(parents=True)
    (junk / "a.bin").write_bytes(b"\x00" * 64)
    (junk / "000001").write_bytes(b"var={id:1}" * 10)
    assert foreign_layout(junk) is None


def test_symlinks_out_of_the_dir_are_not_followed(meg_dir, tmp_path: Path) -> None:
    meg, _, _ = meg_dir
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "runA").symlink_to(meg / "runA")
    (lone / "runB").symlink_to(meg / "runB")
    assert foreign_layout(lone) is None
    (lone / "real").symlink_to(meg / "runA")
    write_megengine(lone / "runC")
    layout = foreign_layout(lone)
    assert layout is not None and [e.name for e in layout.entries] == ["runC"]


def test_three_runs_are_a_one_line_error(meg_dir) -> None:
    meg, _, _ = meg_dir
    write_megengine(meg / "runC")
    with pytest.raises(PrecisionError, match="holds 3 MegEngine io dumps") as caught:
        foreign_layout(meg)
    assert "\n" not in str(caught.value)
    # what it advises works
    advice = str(caught.value).split("open one and compare two: ", 1)[1]
    opened, command = advice.split(" -e ")
    assert opened == f"precision-shell {meg / 'runA'}"
    shell = _shell(meg / "runA")
    result = run_ok(shell, command.strip("'"))
    assert (Path(result.left), Path(result.right)) == (meg / "runA", meg / "runB")
    assert result.rows and result.csv_path.is_file()


# ---------------------------------------------------------------------------- commands


def test_megengine_pair_commands_in_process(meg_dir) -> None:
    meg, bad, good = meg_dir
    before = _listing(meg / "runA"), _listing(meg / "runB")
    shell = _shell(meg)
    ctx = shell.context
    assert ctx.foreign.describe() == (
        "MegEngine io dumps: runA (10 vars) vs runB (10 vars) [right = benchmark: name order]"
    )
    listing = run_ok(shell, "ls")
    assert isinstance(listing, ForeignListing)
    assert [r.key for r in listing.rows] == [str(i) for i in range(1, 11)]
    assert [r.name for r in run_ok(shell, "ls -n split").rows] == ["split1:0", "split1:1"]

    node = run_ok(shell, "ni cast1")
    assert isinstance(node, ForeignNode)
    assert node.op_type == "TypeCvt" and [t.key for t in node.outputs] == ["5"]
    assert [(e.key, e.op_name) for e in node.inputs] == [("4", "relu1")]
    assert node.consumer_ops == ["split1"] and [e.key for e in node.consumers] == ["6", "7"]
    assert node.runs == ["runA", "runB"]
    mul = run_ok(shell, f"ni {PLANTED}")
    assert [(e.key, e.op_name) for e in mul.inputs] == [("6", "split1"), ("7", "split1")]
    assert mul.consumer_ops == ["cast2"]
    by_id = run_ok(shell, "ni var8")
    assert by_id.kind == "var" and by_id.op_name == PLANTED
    # every consumer the fixture graph has
    for var_id in OPS:
        want = sorted({o.name for i, (o, _) in OPS.items() if var_id in o.inputs})
        got = run_ok(shell, f"ni {var_id}").consumer_ops
        assert sorted(got) == want, var_id

    summaries = run_ok(shell, "pt mul1:0 --run runA")
    assert isinstance(summaries, ForeignSummaries) and len(summaries.items) == 1
    stats = summaries.items[0].stats
    assert stats.max == float(bad[8].max()) and stats.min == float(bad[8].min())
    assert math.isclose(stats.mean, float(bad[8].astype(np.float64).mean()), rel_tol=1e-12)
    assert stats.nan_count == 0 and stats.inf_count == 0
    assert len(run_ok(shell, "pt split1").items) == 4  # two outputs in two runs

    for var_id, (op, slot) in OPS.items():
        result = run_ok(shell, f"cp {op.name}:{slot}")
        assert isinstance(result, ForeignTensorCompare)
        want = expected(bad[var_id], good[var_id])
        assert result.metrics["CosineSimilarity"] == pytest.approx(
            want["CosineSimilarity"], rel=1e-12
        )
        a, b = bad[var_id].astype(np.float64).ravel(), good[var_id].astype(np.float64).ravel()
        numpy_cos = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
        assert math.isclose(result.metrics["CosineSimilarity"], numpy_cos, rel_tol=1e-12)
        assert result.fails == (op.name in {PLANTED, "cast2", "reduce1"})
    assert "outputs" in run_fail(shell, "cp split1").error

    decoded = run_ok(shell, "dc mul1:0")
    assert isinstance(decoded, ForeignDecoded)
    assert Path(decoded.out_dir) == meg.resolve() / "precision_data/temp/decode"
    files = {run: np.load(path) for run, _, path, _, _ in decoded.files}
    np.testing.assert_array_equal(files["runA"], bad[8])
    np.testing.assert_array_equal(files["runB"], good[8])
    assert files["runA"].dtype == np.float16
    again = run_ok(shell, "dc mul1:0 --run runA")
    assert again.files[0][2] != decoded.files[0][2]  # never overwritten
    np.testing.assert_array_equal(np.load(decoded.files[0][2]), bad[8])
    assert "dump dir" in run_fail(shell, f"dc mul1:0 -o {meg / 'runA' / 'x'}").error

    vc = run_ok(shell, "vc")
    assert isinstance(vc, ForeignCompareResult)
    assert {r.op_name for r in vc.failing} == {PLANTED, "cast2", "reduce1"}
    assert vc.csv_path.parent.parent == meg.resolve() / "precision_data/temp/vector_compare"
    swapped = run_ok(shell, "vc -lt runB -rt runA")
    assert swapped.left == str(meg / "runB")
    ac = run_ok(shell, "ac -c")
    assert isinstance(ac, ForeignCompareResult) and ac.causes and ac.causes[0].op == PLANTED

    for line in ("ni nosuch_zzz", "pt nosuch_zzz", "ls -k x", "replay mul1", "pt mul1 --run runZ"):
        run_fail(shell, line)
    # vcs reads the pair's results (see below); replay needs an Ascend dump and its GE graph
    assert "not an Ascend workspace" in run_fail(shell, "replay mul1").error
    assert "not an Ascend workspace" in run_fail(shell, "reload").error
    assert (_listing(meg / "runA"), _listing(meg / "runB")) == before


def test_cp_says_how_a_pair_of_swapped_var_ids_was_found(tmp_path: Path) -> None:
    write_megengine(tmp_path / "meg" / "runA")
    write_megengine(tmp_path / "meg" / "runB", renumber={**{i: i for i in OPS}, 6: 7, 7: 6})
    shell = _shell(tmp_path / "meg")
    swapped = run_ok(shell, "cp split1:1")
    assert (swapped.left, swapped.right, swapped.method) == (
        "var7 split1:1",
        "var6 split1:1",
        "op name + slot",
    )
    assert swapped.metrics["MaxAbsoluteError"] == 0.0 and not swapped.fails
    assert run_ok(shell, "cp mul1:0").method == "var id"


def test_sigmastar_pair_commands_in_process(sigma_dir) -> None:
    sigma, fixed, real = sigma_dir
    dumps = {name: (sigma / name).stat() for name in (FIXED, FLOAT)}
    shell = _shell(sigma)
    assert [r.name for r in run_ok(shell, "ls").rows] == list(SIGMA_LAYERS)
    node = run_ok(shell, f"ni {SIGMA_BAD}")
    assert node.kind == "tensor" and node.runs == [FIXED, FLOAT]
    result = run_ok(shell, f"cp {SIGMA_BAD}")
    left = dequantize(fixed[SIGMA_BAD], SCALE, ZERO)
    want = expected(left, real[SIGMA_BAD])
    for name, value in want.items():
        assert math.isclose(result.metrics[name], value, rel_tol=1e-12), name
    assert result.fails
    # cp takes vc's rule flags: limits wide enough pass the same tensor
    loose = run_ok(shell, f"cp {SIGMA_BAD} --cos-min -1 --rmse-max 1e9")
    assert not loose.fails and loose.metrics == result.metrics
    assert "1e+09" in loose.rule and "-1" in loose.rule
    assert "--max-err" in run_fail(shell, f"cp {SIGMA_BAD} --max-err 0.5").error
    decoded = run_ok(shell, f"dc {SIGMA_BAD}")
    files = {run: np.load(path) for run, _, path, _, _ in decoded.files}
    np.testing.assert_array_equal(files[FLOAT], real[SIGMA_BAD])
    np.testing.assert_array_equal(files[FIXED], left)
    assert "dump dir" in run_fail(shell, f"dc {SIGMA_BAD} -o {sigma}").error
    ac = run_ok(shell, "ac -c")
    assert ac.causes[0].op == SIGMA_BAD
    for name, st in dumps.items():
        after = (sigma / name).stat()
        assert (after.st_size, after.st_mtime_ns) == (st.st_size, st.st_mtime_ns)


def _pt_text(path: Path) -> tuple[dict[str, str], np.ndarray]:
    """The `# key: value` header and the values of a text file `pt` saved."""
    lines = path.read_text().splitlines()
    header = dict(ln[2:].split(": ", 1) for ln in lines if ln.startswith("# "))
    return header, np.loadtxt(path, dtype=np.float64, comments="#", ndmin=1)


def test_pt_saves_each_runs_values_as_text_beside_the_pairs_results(meg_dir) -> None:
    meg, bad, good = meg_dir
    before = _listing(meg / "runA"), _listing(meg / "runB")
    shell = _shell(meg)
    result = run_ok(shell, "pt mul1:0")
    assert [i.run for i in result.items] == ["runA", "runB"]
    text = rendered(result, 400)
    out_dir = meg.resolve() / "precision_data" / "temp" / "pt"
    for item, want in zip(result.items, (bad[8], good[8]), strict=True):
        path = Path(item.text_file)
        assert path == out_dir / f"{item.run}.var8_mul1_0.txt" and path.is_file()
        header, values = _pt_text(path)
        assert header["run"] == item.run and header["tensor"] == "var8 mul1:0"
        assert header["source"] == str(meg / item.run)
        assert header["shape"] == str(list(want.shape)) and header["dtype"] == "float16"
        # float16 values, written with enough digits to read back exactly
        np.testing.assert_array_equal(values.astype(np.float16), want.reshape(-1))
        assert f"  saved {path}\n" in text
    # a repeated pt replaces its own file; an op name saves every output of it
    first = Path(result.items[0].text_file)
    first.write_text("stale")
    again = run_ok(shell, "pt mul1:0 --run runA")
    assert again.items[0].text_file == str(first)
    np.testing.assert_array_equal(_pt_text(first)[1].astype(np.float16), bad[8].reshape(-1))
    split = run_ok(shell, "pt split1 --run runB")
    assert [Path(i.text_file).name for i in split.items] == [
        "runB.var6_split1_0.txt",
        "runB.var7_split1_1.txt",
    ]
    split_values = _pt_text(Path(split.items[1].text_file))[1]
    np.testing.assert_array_equal(split_values.astype(np.float16), good[7].ravel())
    assert sorted(p.name for p in out_dir.iterdir()) == sorted(
        ["runA.var8_mul1_0.txt", "runB.var8_mul1_0.txt"]
        + [Path(i.text_file).name for i in split.items]
    )
    assert (_listing(meg / "runA"), _listing(meg / "runB")) == before


def test_pt_of_a_single_dump_file_saves_where_its_vc_writes(sigma_dir) -> None:
    sigma, fixed, _ = sigma_dir
    dumps = {n: (sigma / n).read_bytes() for n in (FIXED, FLOAT)}
    shell = _shell(sigma / FIXED)
    (item,) = run_ok(shell, f"pt {SIGMA_BAD}").items
    path = Path(item.text_file)
    assert path.name == f"{FIXED}.{SIGMA_BAD}.txt"
    header, values = _pt_text(path)
    # the fixed run's int8 values, dequantized with the record's scale and zero point
    want = dequantize(fixed[SIGMA_BAD], SCALE, ZERO)
    np.testing.assert_array_equal(values, want.reshape(-1))
    assert header["tensor"] == SIGMA_BAD and "SGS_S8" in header["stored as"]
    assert header["dtype"] == "float64"  # dequantized in float64, as vc compares them
    assert f"saved {path}" in rendered(run_ok(shell, f"pt {SIGMA_BAD}"), 400)
    vc = run_ok(shell, f"vc -rt {sigma / FLOAT}")
    temp = sigma.resolve() / "precision_data" / "temp"
    assert path.parent == temp / "pt" and vc.csv_path.parent.parent == temp / "vector_compare"
    assert {n: (sigma / n).read_bytes() for n in (FIXED, FLOAT)} == dumps
    assert sorted(p.name for p in sigma.iterdir()) == sorted([FIXED, FLOAT, "precision_data"])


def test_single_run_vc_needs_the_other_side(meg_dir) -> None:
    meg, _, _ = meg_dir
    shell = _shell(meg / "runA")
    assert len(run_ok(shell, "ls").rows) == 10
    assert "one run" in run_fail(shell, "vc").error
    result = run_ok(shell, f"vc -rt {meg / 'runB'}")
    assert {r.op_name for r in result.failing} == {PLANTED, "cast2", "reduce1"}
    assert "pair" in run_fail(shell, "cp mul1").error


# ---------------------------------------------------------------------------- the CLI


SCRIPT = "ls; ni cast1; pt mul1:0; cp mul1:0; dc mul1:0; vc; ac -c"


def test_cli_script_on_a_megengine_pair(meg_dir, env, tmp_path: Path) -> None:
    meg, bad, good = meg_dir
    before = _listing(meg / "runA"), _listing(meg / "runB")
    proc = _cli(env, tmp_path, str(meg), "-e", SCRIPT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    out = proc.stdout
    echoes = [ln for ln in out.splitlines() if ln.startswith("PrecisionTool > ")]
    assert echoes == [f"PrecisionTool > {c.strip()}" for c in SCRIPT.split(";")]
    assert "split1: var6 split1:0, var7 split1:1" in out  # ni cast1's consumers
    assert "CosineSimilarity" in out and "root causes" in out
    cause_line = next(ln for ln in out.splitlines() if "fails while none of its inputs" in ln)
    assert f" {PLANTED} " in cause_line
    decode = meg / "precision_data" / "temp" / "decode"
    np.testing.assert_array_equal(np.load(decode / "runA.var8_mul1_0.npy"), bad[8])
    np.testing.assert_array_equal(np.load(decode / "runB.var8_mul1_0.npy"), good[8])
    assert (_listing(meg / "runA"), _listing(meg / "runB")) == before
    assert [p.name for p in tmp_path.iterdir()] == ["meg"]  # nothing written in the cwd


def test_cli_script_on_a_sigmastar_pair(sigma_dir, env, tmp_path: Path) -> None:
    sigma, fixed, real = sigma_dir
    before = {n: (sigma / n).read_bytes() for n in (FIXED, FLOAT)}
    script = f"ls; ni {SIGMA_BAD}; pt {SIGMA_BAD}; cp {SIGMA_BAD}; dc {SIGMA_BAD}; vc; ac -c"
    proc = _cli(env, tmp_path, str(sigma), "-e", script)
    assert proc.returncode == 0, proc.stderr
    cause_line = next(ln for ln in proc.stdout.splitlines() if "first failing layer" in ln)
    assert f" {SIGMA_BAD} " in cause_line
    decode = sigma / "precision_data" / "temp" / "decode"
    np.testing.assert_array_equal(np.load(decode / f"{FLOAT}.{SIGMA_BAD}.npy"), real[SIGMA_BAD])
    assert {n: (sigma / n).read_bytes() for n in (FIXED, FLOAT)} == before
    assert sorted(p.name for p in sigma.iterdir()) == sorted([FIXED, FLOAT, "precision_data"])


def test_cli_one_line_errors_on_junk(env, tmp_path: Path) -> None:
    junk_file = tmp_path / "junk.bin"
    junk_file.write_bytes(os.urandom(256))
    proc = _cli(env, tmp_path, str(junk_file), "-e", "ls")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "nor a MegEngine io dump" in proc.stderr
    junk_dir = tmp_path / "junk"
    (junk_dir / "sub").mkdir(parents=True)
    (junk_dir / "x.bin").write_bytes(os.urandom(128))
    proc = _cli(env, tmp_path, str(junk_dir), "-e", "ls")
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: line 1:")
    assert sorted(p.name for p in junk_dir.iterdir()) == ["sub", "x.bin"]


def test_banner_says_what_was_opened_and_names_complete(meg_dir, tmp_path: Path) -> None:
    import io

    from precision_shell.cli import show_banner
    from precision_shell.render.output import Renderer, make_console
    from precision_shell.shell.names import NameSources

    meg, _, _ = meg_dir
    shell = _shell(meg)
    out, err = io.StringIO(), io.StringIO()
    renderer = Renderer(make_console(False, file=out, width=200), make_console(False, file=err))
    show_banner(shell.context, renderer)
    assert out.getvalue().splitlines()[0] == (
        "MegEngine io dumps: runA (10 vars) vs runB (10 vars) [right = benchmark: name order]"
    )
    assert err.getvalue() == ""
    names = NameSources(shell.context)
    ops = names.ops()
    assert ops is not None and PLANTED in ops.names and "split1:1" in ops.names
    broken = tmp_path / "broken"
    write_megengine(broken / "runA")
    (broken / "runA" / "000003").write_bytes((broken / "runA" / "000003").read_bytes()[:50])
    bad_shell = _shell(broken)
    out, err = io.StringIO(), io.StringIO()
    renderer = Renderer(make_console(False, file=out, width=200), make_console(False, file=err))
    show_banner(bad_shell.context, renderer)
    assert err.getvalue().count("\n") == 1 and "000003" in err.getvalue()


def test_vcs_and_report_find_the_newest_result_of_the_opened_pair(meg_dir) -> None:
    root, _, _ = meg_dir
    shell = _shell(root)
    run_ok(shell, "ac -c")  # writes under <root>/precision_data/temp/vector_compare
    summary = run_ok(shell, "vcs")  # no -f: the newest result there
    assert PLANTED in {v.op for v in summary.ops}
    written = run_ok(shell, "report")
    assert written.path.is_file()
    assert written.path.is_relative_to(root / "precision_data" / "temp" / "report")


def test_the_opened_pairs_vc_takes_the_rule_flags(meg_dir) -> None:
    root, _, _ = meg_dir
    shell = _shell(root)
    result = run_ok(shell, "vc --max-err 0.06")
    assert result.summary.rule.to_json() == {
        "MegEngineRelativeError": 0.06,
        "MegEngineRelativeErrorAtLeast": 0.06,
    }
    assert {r.op_name for r in result.failing} == {PLANTED, "cast2"}
    summary = run_ok(shell, "vcs")  # the newest result, judged by the rule it recorded
    assert {v.op for v in summary.ops} == {PLANTED, "cast2"}
    assert "--max-err" in run_fail(shell, "ac -c --cos-min 0.5").error


def test_a_sigmastar_file_that_does_not_read_says_why(tmp_path: Path) -> None:
    """QA Q25 #11: a malformed DumpDebug file, opened or in the dir opened, gave "not a
    workspace" / "no precision_data" rather than what is wrong with it."""
    bad = tmp_path / "sigma_outtensor_dump.bin"
    bad.write_bytes(
        b"isFloat: 1\n//out 0 s: 0.000000 z: 0 type: float name: x bConstant:0 shape:[3] "
        b"dims:2\nop_out[0] CONV_2D = {\n//buffer data size: 12\n" + b"\x00" * 12
    )
    why = f"{bad}: record 0 (byte 11): dims:2 but the shape has 1 dims"
    with pytest.raises(PrecisionError) as file_error:
        foreign_layout(bad)
    assert str(file_error.value) == f"a SigmaStar DumpDebug dump that does not read: {why}"
    with pytest.raises(PrecisionError) as dir_error:
        foreign_layout(tmp_path)
    assert str(dir_error.value).endswith(why)
    assert str(dir_error.value).startswith(f"{tmp_path}: no workspace and no dump that reads")
    # other files are still not foreign, and say nothing
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("isFloat is a word\n")
    assert foreign_layout(other) is None
