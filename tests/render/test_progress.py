"""The live progress bar the REPL gives long commands."""

from __future__ import annotations

import io

from rich.console import Console

from precision_shell.progress import ProgressLabels, Tick
from precision_shell.render.progress import live_progress_factory


def test_live_progress_counts_files_and_tensors():
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system=None)
    sink = live_progress_factory(console)(ProgressLabels("vc", "files", "tensors"))
    sink.start(3, 3000)
    for _ in range(3):
        sink.advance(Tick(bytes=1000, items=2))
    sink.stop()
    text = out.getvalue()
    assert "vc" in text and "3/3 files, 6 tensors" in text


def test_live_progress_takes_harvest_ticks_too():
    """tf_run/tf_dump at the prompt report one Tick per tensor (it once broke after one)."""
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system=None)
    sink = live_progress_factory(console)(ProgressLabels("tf_run", "tensors"))
    sink.start(4, 0)
    for _ in range(4):
        sink.advance(Tick(bytes=16))
    sink.stop()
    assert "4/4 tensors" in out.getvalue()


def test_the_prompt_wires_live_progress(tmp_path, monkeypatch):
    from precision_shell import cli
    from precision_shell.render.output import Renderer
    from precision_shell.settings import Settings
    from precision_shell.shell import repl
    from precision_shell.shell.context import ShellContext
    from precision_shell.shell.dispatcher import Dispatcher

    seen = {}
    monkeypatch.setattr(repl, "make_session", lambda completer, **_: object())
    monkeypatch.setattr(
        repl,
        "run_repl",
        lambda session, dispatcher, renderer: seen.setdefault("ctx", dispatcher.context) and 0,
    )
    ctx = ShellContext(tmp_path / "precision_data", Settings.load())
    assert ctx.progress_factory is None  # script mode: quiet
    console = Console(file=io.StringIO())
    cli._interactive(ctx, Dispatcher(ctx), Renderer(console, console))
    assert seen["ctx"] is ctx and ctx.progress_factory is not None
