"""Command line entry: argv -> workspace -> (for now) the workspace summary."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from precision_shell.errors import PrecisionError


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
        "workspace", nargs="?", default=".",
        help="dir holding precision_data/, or precision_data/ itself (default: current dir)",
    )
    parser.add_argument("--demo", action="store_true", help="build (once) and open the demo workspace")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the index cache")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from rich.console import Console

    err = Console(stderr=True, highlight=False)
    out = Console(highlight=False)
    try:
        workspace_path: Path | str = args.workspace
        if args.demo:
            from precision_shell.demo.builder import ensure_demo

            manifest = ensure_demo(default_demo_root())
            workspace_path = manifest.workspace
        from precision_shell.render.summary import render_summary
        from precision_shell.workspace.workspace import Workspace

        ws = Workspace.open(workspace_path, use_cache=not args.no_cache)
        render_summary(out, ws.summary(), ws.warnings)
        if not sys.stdin.isatty():
            # The command shell arrives with the next issue; piped input is read and ignored for now.
            sys.stdin.read()
    except PrecisionError as exc:
        err.print(f"[red]error:[/] {exc}")
        return 1
    return 0
