"""Command line entry: argv -> interactive prompt, script (stdin / --script / -e) or --demo."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from precision_shell.blas import single_blas_thread
from precision_shell.compare.pipeline.process_start import runs_a_compare, warm_processes
from precision_shell.errors import PrecisionError

if TYPE_CHECKING:
    from precision_shell.render.output import Renderer
    from precision_shell.shell.context import ShellContext
    from precision_shell.shell.dispatcher import Dispatcher

EXIT_USAGE = 2


def default_demo_root() -> Path:
    """Where `--demo` builds its workspace once: the user's cache dir, never the cwd."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "precision_shell" / "demo"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="precision-shell",
        description="Interactive debugger shell that finds where a ported network loses accuracy.",
    )
    parser.add_argument(
        "workspace",
        nargs="?",
        help="dir holding precision_data/, or precision_data/ itself (default: current dir); "
        "or MegEngine / SigmaStar dumps: one dump (dir or file), or a dir holding two",
    )
    # Both given would silently drop one of them.
    source = parser.add_mutually_exclusive_group()
    source.add_argument("-e", dest="execute", metavar="CMDS", help='run "CMD; CMD" and exit')
    source.add_argument(
        "--script", type=Path, metavar="FILE", help="run the commands in FILE and exit"
    )
    parser.add_argument(
        "--demo", action="store_true", help="build (once) and open the demo workspace"
    )
    parser.add_argument(
        "--stop-on-error",
        action="store_true",
        help="in script mode, stop at the first failing command",
    )
    parser.add_argument(
        "--color",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="colored output (default: on in a terminal, off in script mode)",
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="do not read or write the index cache"
    )
    return parser


def _script_lines(args: argparse.Namespace) -> list[str] | None:
    from precision_shell.shell.script import split_commands

    if args.execute is not None:
        return split_commands(args.execute)
    if args.script is not None:
        try:
            return args.script.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise PrecisionError(f"{args.script}: cannot read the script: {exc}") from None
    if not sys.stdin.isatty():
        return sys.stdin.read().splitlines()
    return None


def load_commands(warm: bool) -> None:
    """Import the commands (which registers them) as the shell starts: with `warm`, start the
    compare's worker server first, so it imports on another core meanwhile; numpy and the
    server load with one BLAS thread (`blas`)."""
    with single_blas_thread():
        if warm:
            warm_processes()
        import numpy  # noqa: F401  (OpenBLAS reads its thread count when numpy loads)

        import precision_shell.commands  # noqa: F401


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.demo and args.workspace is not None:
        # Opening one would silently ignore the other.
        parser.error(f"--demo opens the demo workspace: drop {args.workspace!r} or --demo")
    from precision_shell.render.output import Renderer, make_console

    interactive = args.execute is None and args.script is None and sys.stdin.isatty()
    color = args.color if args.color is not None else (interactive and sys.stdout.isatty())
    renderer = Renderer(make_console(color), make_console(color, stderr=True))
    try:
        from precision_shell.settings import Settings
        from precision_shell.workspace.layout import workspace_root_or_new

        settings = Settings.load()
        workspace_path: Path | str = args.workspace if args.workspace is not None else "."
        if args.demo:
            from precision_shell.demo.builder import ensure_demo

            workspace_path = ensure_demo(default_demo_root()).workspace
        foreign_path, root = _foreign_root(workspace_path)
        if root is None:
            root = workspace_root_or_new(workspace_path)
        lines = _script_lines(args)
    except PrecisionError as exc:
        renderer.error(str(exc))
        return EXIT_USAGE
    load_commands(warm=lines is None or runs_a_compare(lines))
    from precision_shell.shell.context import ShellContext
    from precision_shell.shell.dispatcher import Dispatcher

    ctx = ShellContext(root, settings, interactive=interactive, use_cache=not args.no_cache)
    ctx.foreign_path = foreign_path
    dispatcher = Dispatcher(ctx)
    if lines is not None:
        from precision_shell.shell.script import run_lines

        report = run_lines(lines, dispatcher, renderer, stop_on_error=args.stop_on_error)
        return report.exit_status
    return _interactive(ctx, dispatcher, renderer)


def _foreign_root(path: Path | str) -> tuple[Path | None, Path | None]:
    """(the dumps given, the dir our outputs go under) when `path` holds MegEngine /
    SigmaStar dumps; (None, None) for a workspace; a one-line error for a file of neither."""
    from precision_shell.foreign.workspace import foreign_layout

    layout = foreign_layout(path)
    if layout is not None:
        return Path(path), layout.root
    if Path(path).expanduser().is_file():
        raise PrecisionError(
            f"{path}: not a workspace dir, nor a MegEngine io dump or SigmaStar DumpDebug dump"
        )
    return None, None


def _interactive(ctx: ShellContext, dispatcher: Dispatcher, renderer: Renderer) -> int:
    from precision_shell.render.progress import live_progress_factory
    from precision_shell.shell.completer import ShellCompleter
    from precision_shell.shell.names import NameSources
    from precision_shell.shell.repl import make_session, run_repl

    ctx.progress_factory = live_progress_factory(renderer.out)  # live bars only at the prompt
    show_banner(ctx, renderer)
    names = NameSources(ctx)
    completer = ShellCompleter(op_names=names.ops, tensor_names=names.tensors)
    return run_repl(make_session(completer, warn=renderer.note), dispatcher, renderer)


def show_banner(ctx: ShellContext, renderer: Renderer) -> None:
    """What the prompt opens on: the workspace summary, or one line saying what to do."""
    from precision_shell.render.summary import render_summary

    root = Path(ctx.workspace_path)
    if ctx.foreign_path is not None:
        try:
            foreign = ctx.foreign
        except PrecisionError as exc:
            renderer.error(str(exc))
        else:
            assert foreign is not None
            renderer.out.print(foreign.describe(), markup=False, soft_wrap=True)
    elif not root.exists():
        # A dir with no precision_data/ yet: not an error to repeat, a hint to give once.
        renderer.note(
            f"{root.parent}: no precision_data/ here; run tf_run/tf_dump to create it, "
            "or open a workspace dir (precision-shell DIR)"
        )
    else:
        ws = ctx.try_open()
        if ws is None:
            renderer.error(ctx.open_error or "cannot open the workspace")
        else:
            render_summary(renderer.out, ws.summary(), ctx.new_warnings())
    renderer.out.print("Type help for the commands, Tab to complete, Ctrl-D to leave.")
