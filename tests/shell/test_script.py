"""Script mode: `-e` splitting and `run_lines` (echo, order, line numbers, exit status)."""

from __future__ import annotations

from pathlib import Path

import pytest

from precision_shell.render.output import Renderer, make_console
from precision_shell.shell.dispatcher import Dispatcher
from precision_shell.shell.script import run_lines, split_commands
from tests.shell.fake_commands import make_registry


@pytest.mark.parametrize(
    ("text", "commands"),
    [
        ('a; b "c;d"; e', ["a", 'b "c;d"', "e"]),
        ("ls -n 'x;y'; ni z", ["ls -n 'x;y'", "ni z"]),
        (r"ls -n a\;b; ni", [r"ls -n a\;b", "ni"]),
        (" ;a;; b ; ", ["a", "b"]),
        ('ls -n "it\'s;fine"', ['ls -n "it\'s;fine"']),
        ("", []),
    ],
)
def test_split_commands(text: str, commands: list[str]) -> None:
    assert split_commands(text) == commands


def _renderer() -> Renderer:
    # Built inside the test so the consoles write to pytest's captured stdout/stderr.
    return Renderer(make_console(False), make_console(False, stderr=True))


SCRIPT = [
    "ls -n a",
    "",
    "# a comment",
    "plainfail",
    "ls -n 'b c' -a",
]


def test_run_lines_echoes_in_order_and_reports_line_numbers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = run_lines(SCRIPT, Dispatcher(None, make_registry()), _renderer())
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "PrecisionTool > ls -n a",
        "listed name=a count=None all=False",
        "PrecisionTool > plainfail",
        "PrecisionTool > ls -n 'b c' -a",
        "listed name=b c count=None all=True",
    ]
    assert err == "error: line 4: it broke\n"
    assert "\x1b" not in out + err
    assert (report.commands, report.failures, report.exit_status) == (3, 1, 1)


def test_run_lines_all_good_is_status_zero(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_lines(["ls", "ni x"], Dispatcher(None, make_registry()), _renderer())
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "PrecisionTool > ls",
        "listed name=None count=None all=False",
        "PrecisionTool > ni x",
        "node x",
    ]
    assert err == ""
    assert report.exit_status == 0


def test_stop_on_error_stops_at_the_first_failure(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_lines(SCRIPT, Dispatcher(None, make_registry()), _renderer(), stop_on_error=True)
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "PrecisionTool > ls -n a",
        "listed name=a count=None all=False",
        "PrecisionTool > plainfail",
    ]
    assert err == "error: line 4: it broke\n"
    assert (report.commands, report.failures, report.exit_status) == (2, 1, 1)


def test_exit_ends_the_script(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_lines(
        ["ls -n a", "quit", "ls -n b"], Dispatcher(None, make_registry()), _renderer()
    )
    out, _ = capsys.readouterr()
    assert out.splitlines()[-1] == "PrecisionTool > quit"
    assert "name=b" not in out
    assert report.exit_status == 0


def test_ctrl_c_in_a_command_stops_the_script(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_lines(["ctrlc", "ls -n b"], Dispatcher(None, make_registry()), _renderer())
    out, err = capsys.readouterr()
    assert out.splitlines() == ["PrecisionTool > ctrlc"]
    assert err == "error: line 1: interrupted\n"
    assert report.exit_status == 1


def test_internal_error_line_names_the_log(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    report = run_lines(["ls", "boom"], Dispatcher(None, make_registry()), _renderer())
    _, err = capsys.readouterr()
    prefix = "error: line 2: internal error: ValueError: boom went the handler (traceback in "
    assert err.startswith(prefix) and err.endswith(".log)\n")
    log = err[len(prefix) : -len(")\n")]
    assert "ValueError: boom went the handler" in Path(log).read_text(encoding="utf-8")
    assert report.failures == 1


def test_long_lines_and_brackets_are_printed_verbatim(capsys: pytest.CaptureFixture[str]) -> None:
    long_name = "scope/" * 40 + "[odd]\\name"
    run_lines(
        [f"ls -n '{long_name}'", "bad -f '[bold]x\\[y]'"],
        Dispatcher(None, make_registry()),
        _renderer(),
    )
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        f"PrecisionTool > ls -n '{long_name}'",
        f"listed name={long_name} count=None all=False",
        "PrecisionTool > bad -f '[bold]x\\[y]'",
    ]
    assert err == "error: line 2: [bold]x\\[y]: truncated after 12 of 64 bytes\n"
