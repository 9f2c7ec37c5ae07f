"""What a new user sees from `precision-shell`: whole paths and numbers at any width, script
output without trailing spaces, exit status of an ambiguous name, usage errors, the banner."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from precision_shell.cli import main, show_banner
from precision_shell.render.numbers import fmt_num
from precision_shell.render.output import Renderer, make_console
from precision_shell.settings import Settings
from precision_shell.shell.context import ShellContext
from precision_shell.shell.dispatcher import Dispatcher
from tests.commands.shell_fixture import CONV2, open_shell, run_ok

FAILING_METRICS = ("CosineSimilarity", "RelativeEuclideanDistance", "MaxAbsoluteError")


def _script(capsys, monkeypatch, root: Path, width: int, commands: str) -> tuple[int, str, str]:
    monkeypatch.setenv("COLUMNS", str(width))
    status = main([str(root), "--no-cache", "-e", commands])
    out, err = capsys.readouterr()
    return status, out, err


def _whole(text: str, number: str) -> bool:
    """`number` appears with no digit or point glued to either side (not cut, not merged)."""
    return re.search(rf"(?<![\d.]){re.escape(number)}(?![\d.])", text) is not None


def _benchmark_csv(root: Path) -> Path:
    """The device-vs-benchmark result CSV of the one `vc` run (not the debug_0-vs-1 one)."""
    (path,) = [
        p
        for p in (root / "precision_data/temp/vector_compare").glob("*/result_*.csv")
        if re.fullmatch(r"result_\d+\.csv", p.name)
    ]
    return path


def _csv_texts(path: Path) -> dict[str, set[str]]:
    """Every text each metric column of the result CSV holds."""
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return {metric: {row[metric] for row in rows} for metric in FAILING_METRICS}


@pytest.mark.parametrize("width", [80, 200])
def test_vc_prints_the_whole_csv_path_and_whole_numbers_at_any_width(
    tiny_demo, capsys, monkeypatch, width
):
    root, _ = tiny_demo
    status, out, err = _script(capsys, monkeypatch, root, width, "vc")
    assert (status, err) == (0, "")
    path = _benchmark_csv(root)
    assert f" csv {path}\n" in out  # on one line, never cut with an ellipsis
    assert "…" not in out
    texts = _csv_texts(path)
    table = out[out.index("first outputs failing") : out.index("vc: device vs device")]
    body = [line.split("│") for line in table.splitlines() if "│" in line]
    rows = [cells for cells in body if cells[0].strip()]  # a row's first line holds its Index
    assert len(rows) >= 3  # the demo's wrong constant and its overflow fail
    for cells in body:
        # cosine, rel euclid, max abs err: each a whole value of the CSV, or blank below it
        shown = [c.strip() for c in cells[-3:]]
        if cells in rows:
            assert [shown[k] in texts[m] for k, m in enumerate(FAILING_METRICS)] == [True] * 3
        else:
            assert shown == ["", "", ""], cells


@pytest.mark.parametrize("width", [80, 200])
def test_ni_numbers_stay_whole_at_any_width(tiny_demo_shared, width):
    root, _ = tiny_demo_shared
    result = run_ok(open_shell(root), f"ni {CONV2}")
    buffer = io.StringIO()
    console = make_console(False, width=width, file=buffer)
    Renderer(console, console).result(result)
    text = buffer.getvalue()
    (info,) = result.nodes
    numbers = [
        fmt_num(value)
        for row in (*info.dump_tensors, *info.benchmarks)
        for value in (row.stats.max, row.stats.min, row.stats.mean)
    ]
    assert len(numbers) == 18
    for number in numbers:
        assert _whole(text, number), (number, text)
    assert "…" not in text
    assert all(len(line) <= width for line in text.splitlines())


def test_script_output_has_no_trailing_spaces(tiny_demo, capsys, monkeypatch):
    root, _ = tiny_demo
    status, out, err = _script(
        capsys, monkeypatch, root, 120, f"ls; ls -t Conv; ni {CONV2}; vc; vcs"
    )
    assert (status, err) == (0, "")
    assert "┃" in out and "╭" in out  # tables and panels were printed
    assert [line for line in out.splitlines() if line != line.rstrip()] == []


def test_an_ambiguous_ni_in_a_script_exits_1_with_one_line_of_candidates(
    tiny_demo_shared, capsys, monkeypatch
):
    root, _ = tiny_demo_shared
    status, out, err = _script(capsys, monkeypatch, root, 120, "ni Conv2Drelu")
    assert status == 1
    assert err == (
        "error: line 1: ni: no op named 'Conv2Drelu'; 2 op(s) contain it: "
        "conv1/Conv2Drelu1/Relu, conv2/Conv2Drelu2/Relu\n"
    )
    assert "possible ops:" in out


def test_demo_with_a_workspace_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--demo", str(tmp_path), "-e", "ls"])
    assert exited.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("usage: precision-shell ")
    assert err.endswith(
        f"precision-shell: error: --demo opens the demo workspace: drop {str(tmp_path)!r} "
        "or --demo\n"
    )
    assert not (tmp_path / "precision_data").exists()


def test_the_prompt_on_a_dir_without_precision_data_says_what_to_do_once(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    renderer = Renderer(make_console(False, file=out), make_console(False, file=err))
    ctx = ShellContext(tmp_path / "precision_data", Settings.load(), interactive=True)
    show_banner(ctx, renderer)
    dispatcher = Dispatcher(ctx)
    for line in ("ls", "ni x"):
        renderer.outcome(dispatcher.execute(line))
    hint = (
        f"{tmp_path}: no precision_data/ here; run tf_run/tf_dump to create it, "
        "or open a workspace dir (precision-shell DIR)"
    )
    assert out.getvalue().splitlines() == [
        hint,
        "Type help for the commands, Tab to complete, Ctrl-D to leave.",
    ]
    assert err.getvalue().count("precision_data") == 2  # each command's own one-line error
    assert hint not in err.getvalue()
