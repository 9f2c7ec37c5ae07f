"""Subgraph files: dot text, safe file names, and the .svg when `dot` exists (faked here)."""

from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path

import pytest

from precision_shell.errors import PrecisionError
from precision_shell.workspace.graph_index import OpRecord
from precision_shell.workspace.subgraph import Subgraph
from precision_shell.workspace.subgraph_files import safe_file_stem, subgraph_to_dot, write_subgraph


def _rec(name: str, op_type: str, pass_name: str | None = None) -> OpRecord:
    # by field name: fields the dot writer does not read stay None, whatever the index adds
    values = dict.fromkeys((f.name for f in dataclasses.fields(OpRecord)), None)
    values.update(name=name, type=op_type, pass_name=pass_name, data_inputs=(), control_inputs=())
    return OpRecord(**values)


@pytest.fixture
def sub() -> Subgraph:
    center = 'conv"1\\x'
    return Subgraph(
        center=center,
        depth=1,
        nodes={center: _rec(center, "Conv2D", "FusionPass"), "src": _rec("src", "Data")},
        edges=[("src", 0, center, 0, False), ("src", -1, center, -1, True)],
        node_marks={center: "root_cause"},
        node_colors={"src": "#ffcccc"},
    )


def test_dot_text_escapes_names_and_draws_data_and_control_edges(sub):
    text = subgraph_to_dot(sub)
    lines = text.splitlines()
    assert lines[0] == 'digraph "subgraph of conv\\"1\\\\x" {'
    assert (
        '  "conv\\"1\\\\x" [label="Conv2D\\nconv\\"1\\\\x\\n[FusionPass]", '
        'tooltip="conv\\"1\\\\x", penwidth=2.5, xlabel="root_cause", color="#b00020"];'
    ) in lines
    assert '  "src" [label="Data\\nsrc", tooltip="src", fillcolor="#ffcccc"];' in lines
    assert '  "src" -> "conv\\"1\\\\x" [label="0->0"];' in lines
    assert '  "src" -> "conv\\"1\\\\x" [style=dashed, color=gray];' in lines
    assert lines[-1] == "}"


@pytest.mark.parametrize(
    ("name", "stem"),
    [
        ("../../etc/passwd", "etc_passwd"),
        ("a/b c[1]", "a_b_c_1"),
        ("...", "op"),
        ("x" * 300, "x" * 120),
    ],
)
def test_safe_file_stem_never_leaves_the_dir(name, stem):
    assert safe_file_stem(name) == stem
    assert "/" not in safe_file_stem(name) and not safe_file_stem(name).startswith(".")


def _fake_dot(bin_dir: Path, body: str) -> None:
    bin_dir.mkdir()
    dot = bin_dir / "dot"
    dot.write_text("#!/bin/sh\n" + body)
    dot.chmod(dot.stat().st_mode | stat.S_IEXEC)


def test_write_subgraph_runs_dot_for_the_svg(sub, tmp_path, monkeypatch):
    # a stand-in `dot` that records its argv and stdin and answers on stdout: it is never
    # given a path to write, so it cannot follow a link planted at the .svg name
    record = tmp_path / "argv.txt"
    _fake_dot(tmp_path / "bin", f'echo "$@" > {record}\ncat > {record}.in\necho "<svg/>"\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "out"
    out.mkdir()
    files = write_subgraph(sub, out, "debug_0")
    gv = out / "debug_0_conv_1_x_d1.gv"
    assert files.gv == str(gv) and gv.read_text() == subgraph_to_dot(sub)
    assert files.svg == str(gv.with_suffix(".svg")) and files.note is None
    assert Path(files.svg).read_text() == "<svg/>\n"
    assert (files.nodes, files.edges) == (2, 2)
    assert record.read_text().split() == ["-Tsvg"]
    assert Path(f"{record}.in").read_text() == subgraph_to_dot(sub)
    # a second write replaces the first files: no copies pile up
    write_subgraph(sub, out, "debug_0")
    assert sorted(p.name for p in out.iterdir()) == [gv.name, gv.with_suffix(".svg").name]


@pytest.mark.parametrize("suffix", [".gv", ".svg"])
def test_write_subgraph_never_writes_through_a_link_at_its_names(
    sub, tmp_path, monkeypatch, suffix
):
    _fake_dot(tmp_path / "bin", 'echo "<svg/>"\n')
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    user_file = tmp_path / "user.txt"
    user_file.write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    link = out / f"debug_0_conv_1_x_d1{suffix}"
    link.symlink_to(user_file)
    with pytest.raises(PrecisionError) as err:
        write_subgraph(sub, out, "debug_0")
    assert str(err.value) == (
        f"{link}: is a symbolic link; outputs are never written through links (remove it)"
    )
    assert user_file.read_text() == "precious" and os.readlink(link) == str(user_file)


def test_write_subgraph_keeps_the_gv_when_dot_fails_or_is_missing(sub, tmp_path, monkeypatch):
    _fake_dot(tmp_path / "bin", "exit 3\n")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    files = write_subgraph(sub, tmp_path, "")
    assert files.svg is None and files.note.startswith("dot failed: ")
    assert Path(files.gv).name == "conv_1_x_d1.gv" and Path(files.gv).is_file()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    files = write_subgraph(sub, tmp_path, "")
    assert files.svg is None and files.note == "graphviz `dot` not installed: wrote the .gv only"
