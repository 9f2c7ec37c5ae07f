"""The live progress bar the REPL gives long commands."""

from __future__ import annotations

import io

from rich.console import Console

from precision_shell.compare.worker import FileResult
from precision_shell.render.progress import live_progress_factory


def test_live_progress_counts_files_and_tensors():
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system=None)
    sink = live_progress_factory(console)("vc")
    sink.start(3, 3000)
    for seq in range(3):
        sink.advance(FileResult(seq, [], 1000))
    sink.stop()
    text = out.getvalue()
    assert "vc" in text and "3/3 files" in text


def test_the_prompt_wires_live_progress(tmp_path, monkeypatch):
    from precision_shell import cli
    from precision_shell.render.output import Renderer
    from precision_shell.settings import Settings
    from precision_shell.shell import repl
    from precision_shell.shell.context import ShellContext
    from precision_shell.shell.dispatcher import Dispatcher

    seen = {}
    monkeypatch.setattr(repl, "make_session", lambda completer: object())
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
