"""Subgraphs as graphviz files: always a `.gv`, and an `.svg` when `dot` is installed.

Never opens a viewer. Node names are sanitised for file names and can't leave the output dir.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from precision_shell.workspace.output_files import write_bytes_output
from precision_shell.workspace.subgraph import Subgraph, SubgraphFiles

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_DOT_TIMEOUT_S = 60
_LABEL_MAX = 60  # longer op names are shortened in the box; the tooltip keeps the full name


def safe_file_stem(name: str, limit: int = 120) -> str:
    stem = _UNSAFE.sub("_", name).strip("._") or "op"
    return stem[:limit]


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _quote(text: str) -> str:
    return '"' + _escape(text) + '"'


def subgraph_to_dot(sub: Subgraph) -> str:
    lines = [
        f"digraph {_quote('subgraph of ' + sub.center)} {{",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fillcolor="#f5f5f5", fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=8];',
    ]
    if sub.title:
        lines += [f"  label={_quote(sub.title)};", "  labelloc=t;", '  fontname="Helvetica";']
    for name, rec in sub.nodes.items():
        shown = name if len(name) <= _LABEL_MAX else f"{name[:28]}...{name[-28:]}"
        parts = [rec.type, shown] + ([f"[{rec.pass_name}]"] if rec.pass_name else [])
        # dot's own line break escape, between parts that are escaped individually
        attrs = ['label="' + "\\n".join(_escape(p) for p in parts) + '"']
        attrs.append(f"tooltip={_quote(name)}")
        color = sub.node_colors.get(name)
        if color:
            attrs.append(f"fillcolor={_quote(color)}")
        if name == sub.center:
            attrs.append("penwidth=2.5")
        if sub.node_marks.get(name):
            attrs.append(f"xlabel={_quote(sub.node_marks[name])}")
            attrs.append('color="#b00020"')
        lines.append(f"  {_quote(name)} [{', '.join(attrs)}];")
    for src, out_idx, dst, in_idx, control in sub.edges:
        if control:
            lines.append(f"  {_quote(src)} -> {_quote(dst)} [style=dashed, color=gray];")
        else:
            lines.append(
                f"  {_quote(src)} -> {_quote(dst)} [label={_quote(f'{out_idx}->{in_idx}')}];"
            )
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_subgraph(sub: Subgraph, out_dir: Path, prefix: str = "") -> SubgraphFiles:
    """The `.gv` (and `.svg`) of `sub` in `out_dir`, replacing this subgraph's earlier files.

    Both are written through output_files: a link at either name is refused, never followed.
    `dot` writes to a pipe, never to a path, for the same reason. Raises PrecisionError.
    """
    stem = safe_file_stem(
        f"{prefix}_{sub.center}_d{sub.depth}" if prefix else f"{sub.center}_d{sub.depth}"
    )
    gv = out_dir / f"{stem}.gv"
    dot_text = subgraph_to_dot(sub)
    write_bytes_output(gv, dot_text.encode("utf-8"))
    dot = shutil.which("dot")
    if dot is None:
        return SubgraphFiles(
            str(gv),
            None,
            len(sub.nodes),
            len(sub.edges),
            "graphviz `dot` not installed: wrote the .gv only",
        )
    svg = gv.with_suffix(".svg")
    try:
        done = subprocess.run(
            [dot, "-Tsvg"],
            input=dot_text.encode("utf-8"),
            check=True,
            capture_output=True,
            timeout=_DOT_TIMEOUT_S,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        return SubgraphFiles(str(gv), None, len(sub.nodes), len(sub.edges), f"dot failed: {exc}")
    write_bytes_output(svg, done.stdout)
    return SubgraphFiles(str(gv), str(svg), len(sub.nodes), len(sub.edges))
