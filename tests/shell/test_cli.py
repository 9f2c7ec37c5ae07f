"""`precision_shell.cli.main`: argv -> mode and exit status (0 ok, 1 a command failed, 2 usage)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from precision_shell.cli import main


@pytest.fixture(autouse=True)
def private_homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "precision_data").mkdir(parents=True)
    return root


def test_bad_option_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--bogus"])
    assert exited.value.code == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_e_and_script_together_exit_2(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([str(workspace), "-e", "help", "--script", "x.txt"])
    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_missing_workspace_exits_2_naming_the_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no such [dir]"
    assert main([str(missing), "-e", "help"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"error: {missing}: no such directory\n"


def test_dir_without_precision_data_opens_for_harvesting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # an existing dir with no precision_data/ yet: tf_run/tf_dump will create it
    assert main([str(tmp_path), "-e", "help"]) == 0
    assert main([str(tmp_path), "-e", "ls"]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'precision_data'}: no such directory" in err
    assert not (tmp_path / "precision_data").exists()  # nothing made until a harvest


def test_missing_dir_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "nope"), "-e", "help"]) == 2
    assert f"{tmp_path / 'nope'}: no such directory" in capsys.readouterr().err


def test_e_help_on_an_empty_workspace(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(workspace), "-e", "help"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("PrecisionTool > help\n")
    assert "help CMD shows every flag of CMD." in out
    rows = {line.split()[0] for line in out.splitlines()[2:] if line.strip()}
    assert {"cp", "dc", "ls", "ni", "pt", "run", "exit"} <= rows
    assert "\x1b" not in out
    assert err == ""


def test_help_explains_exit_and_quit(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`help` lists exit (quit), and `help CMD` explains every command it lists (QA)."""
    assert main([str(workspace), "-e", "help exit; help quit"]) == 0
    out, err = capsys.readouterr()
    assert out.count("usage: exit | quit | Ctrl-D") == 2 and err == ""


def test_e_with_a_failing_command_exits_1(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(workspace), "-e", "help ls; lss; !echo after"]) == 1
    out, err = capsys.readouterr()
    echoed = [line for line in out.splitlines() if line.startswith("PrecisionTool > ")]
    assert echoed == [
        "PrecisionTool > help ls",
        "PrecisionTool > lss",
        "PrecisionTool > !echo after",
    ]
    assert out.endswith("PrecisionTool > !echo after\nafter\n")
    assert err == "error: line 2: unknown command 'lss'; did you mean ls?\n"


def test_script_file_with_stop_on_error(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "checks.txt"
    script.write_text("# checks\n\n!echo one\n!exit 4\n!echo never\n", encoding="utf-8")
    assert main([str(workspace), "--script", str(script), "--stop-on-error"]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == ["PrecisionTool > !echo one", "one", "PrecisionTool > !exit 4"]
    assert err == "error: line 4: run: 'exit 4' exited with status 4\n"


def test_missing_script_file_exits_2(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = workspace / "nope.txt"
    assert main([str(workspace), "--script", str(missing)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {missing}: cannot read the script: ")


def test_broken_user_config_exits_2_naming_the_file(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "xdg_config_home" / "precision_shell" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[thresholds]\ncosinus = 0.9\n", encoding="utf-8")
    assert main([str(workspace), "-e", "help"]) == 2
    assert capsys.readouterr().err == (f"error: {config}: unknown setting 'thresholds.cosinus'\n")


def test_color_flag_emits_ansi(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(workspace), "--color", "-e", "nope"]) == 1
    _, err = capsys.readouterr()
    assert "\x1b[" in err
    assert "unknown command 'nope'" in err


def test_forget_workspace_reopens_the_index_with_new_files(tmp_path: Path) -> None:
    from precision_shell.formats.benchmark import write_benchmark
    from precision_shell.settings import Settings
    from precision_shell.shell.context import ShellContext

    benchmark = tmp_path / "precision_data" / "tf" / "dump"
    benchmark.mkdir(parents=True)
    write_benchmark(benchmark, "a/b:0", np.zeros(3, "float32"), 1)
    ctx = ShellContext(tmp_path / "precision_data", Settings.load())
    assert len(ctx.workspace.benchmark.newest) == 1
    write_benchmark(benchmark, "c:0", np.ones(2, "float32"), 2)
    assert len(ctx.workspace.benchmark.newest) == 1  # the opened index is kept...
    ctx.forget_workspace()
    assert len(ctx.workspace.benchmark.newest) == 2  # ...until a command says files changed


@pytest.mark.parametrize(
    ("commands", "warmed"), [("help; ls", False), ("help; vc -r nosuchrun", True)]
)
def test_a_script_that_compares_starts_the_worker_server_first(
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    commands: str,
    warmed: bool,
) -> None:
    import precision_shell.cli as cli

    calls: list[bool] = []
    monkeypatch.setattr(cli, "warm_processes", lambda: calls.append(True))
    main([str(workspace), "-e", commands])
    capsys.readouterr()
    assert calls == ([True] if warmed else [])
