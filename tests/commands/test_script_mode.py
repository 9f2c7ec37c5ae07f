"""Script mode end to end: `python -m precision_shell WS --script FILE` / `-e` as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.commands.shell_fixture import CONV1, CONV2, CONV3, POOL

REPO = Path(__file__).resolve().parents[2]
ANSI = "\x1b["


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("script_home")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "PYTEST"))}
    env.update({name: str(home / name.lower()) for name in (
        "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME")})  # fmt: skip
    env["PYTHONPATH"] = str(REPO)
    env["COLUMNS"] = "120"
    env.pop("FORCE_COLOR", None)
    env.pop("NO_COLOR", None)
    return env


def _shell(env, cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "precision_shell", *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


SCRIPT = f"""# look around the fused conv
ls -t Conv

ni no_such_op_zzz
ni {POOL}
"""


def _ordered(text: str, *parts: str) -> bool:
    at = 0
    for part in parts:
        found = text.find(part, at)
        if found < 0:
            return False
        at = found + len(part)
    return True


def test_script_file_echoes_each_command_reports_the_failing_line_and_exits_1(
    tiny_demo_shared, env, tmp_path
):
    root, _ = tiny_demo_shared
    script = tmp_path / "checks.txt"
    script.write_text(SCRIPT)
    proc = _shell(env, tmp_path, str(root), "--script", str(script))
    out, err = proc.stdout, proc.stderr
    assert proc.returncode == 1, err
    echoes = [ln for ln in out.splitlines() if ln.startswith("PrecisionTool > ")]
    assert echoes == [
        "PrecisionTool > ls -t Conv",
        "PrecisionTool > ni no_such_op_zzz",
        f"PrecisionTool > ni {POOL}",
    ]
    assert "# look around" not in out
    assert _ordered(
        out,
        "PrecisionTool > ls -t Conv\n",
        f"] {CONV1}\n",
        f"] {CONV2}\n",
        f"] {CONV3}\n",
        "6 op(s) match type~'Conv'\n",
        "PrecisionTool > ni no_such_op_zzz\n",
        f"PrecisionTool > ni {POOL}\n",
        f"─ {POOL} ─",
        "te_maxpool_",
        "benchmark tensors",
    )
    assert err == "error: line 4: ni: no op named or containing 'no_such_op_zzz'; try ls -n PART\n"
    assert ANSI not in out and ANSI not in err


def test_stop_on_error_skips_the_commands_after_the_failure(tiny_demo_shared, env, tmp_path):
    root, _ = tiny_demo_shared
    script = tmp_path / "checks.txt"
    script.write_text(SCRIPT)
    proc = _shell(env, tmp_path, str(root), "--script", str(script), "--stop-on-error")
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[-1] == "PrecisionTool > ni no_such_op_zzz"
    assert f"ni {POOL}" not in proc.stdout and "te_maxpool_" not in proc.stdout
    assert "line 4" in proc.stderr


def test_e_runs_semicolon_separated_commands_plain_or_colored(tiny_demo_shared, env, tmp_path):
    root, _ = tiny_demo_shared
    proc = _shell(env, tmp_path, str(root), "-e", f"ls; ni {CONV2}")
    assert proc.returncode == 0 and proc.stderr == ""
    assert _ordered(proc.stdout, "PrecisionTool > ls\n", "Conv2D", "total",
                    f"PrecisionTool > ni {CONV2}\n", "ConvBatchnormFusionPass")  # fmt: skip
    assert ANSI not in proc.stdout
    colored = _shell(env, tmp_path, str(root), "-e", f"ni {CONV2}", "--color")
    assert colored.returncode == 0 and ANSI in colored.stdout


def test_commands_piped_on_stdin_run_like_a_script(tiny_demo_shared, env, tmp_path):
    root, _ = tiny_demo_shared
    proc = _shell(env, tmp_path, str(root), stdin="run echo hi\nrun false\nhelp ni\n")
    assert proc.returncode == 1
    assert _ordered(proc.stdout, "PrecisionTool > run echo hi\nhi\n", "PrecisionTool > run false\n",
                    "PrecisionTool > help ni\n", "-a [ATTR], --attrs [ATTR]")  # fmt: skip
    assert proc.stderr == "error: line 2: run: 'false' exited with status 1\n"
    assert list(tmp_path.iterdir()) == []  # nothing written in the cwd
