"""A dump file name or a workspace path whose bytes are not UTF-8 (an old NFS share, a Latin-1
name): every command works, every output is whole, and the name round-trips where our own
readers read it back (QA findings F1, F2)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
from pathlib import Path

from precision_shell.compare.pipeline.journal import JOURNAL_NAME
from precision_shell.compare.results.columns import load_result_columns
from precision_shell.compare.results.schema import read_result_csv
from precision_shell.render.output import Renderer, make_console
from tests.commands.shell_fixture import CONV1, dump_path, open_shell, run_ok
from tests.commands.test_vc_resume import Engine, _csvs

ODD = b"Conv2D.caf\xe9_\xff.5.1.1795320000000000"  # dumped first: the first task of its compare


def _add_odd_dump(root: Path, manifest, name: bytes = ODD) -> Path:
    """A copy of conv1's dump under a non-UTF-8 name; its path as Python names it."""
    source = dump_path(root, manifest, CONV1)
    target = os.path.join(os.fsencode(source.parent), name)
    shutil.copyfile(os.fsencode(source), target)
    return Path(os.fsdecode(target))


def _strict_render(result: object) -> str:
    """What the render layer prints for `result` on a strict UTF-8 stdout (the usual locale)."""
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8", errors="strict", write_through=True)
    Renderer(make_console(False, file=stream, width=200), make_console(False)).result(result)
    stream.flush()
    return raw.getvalue().decode("utf-8")


def _summary(out_dir: Path) -> dict:
    return json.loads((out_dir / "summary.json").read_bytes().decode("utf-8"))


def test_a_dump_file_named_in_latin1_is_compared_and_its_rows_name_it(tiny_demo):
    root, manifest = tiny_demo
    odd = _add_odd_dump(root, manifest)
    shell = open_shell(root)
    vc = run_ok(shell, "vc")
    out_dir = vc.out_dir
    assert not (out_dir / JOURNAL_NAME).exists()
    assert _summary(out_dir)["files_done"] == vc.primary.tasks
    # the device-vs-device CSV holds the file's own bytes, and reads back to its name
    second = vc.secondary.csv_path
    assert b"caf\xe9_\xff" in second.read_bytes()
    rows = [r for r in read_result_csv(second).rows if "caf" in r.npu_dump]
    assert [r.npu_dump for r in rows] == ["caf\udce9_\udcff"] * 4
    assert {r.tensor_index.rsplit(":", 2)[0] for r in rows} == {"caf\udce9_\udcff"}
    columns = load_result_columns(second)  # vcs and report read these
    assert [r.npu_dump for r in columns.rows] == [r.npu_dump for r in read_result_csv(second).rows]
    assert "e.g. Conv2D.caf\\xe9_\\xff.5.1.1795320000000000: no op caf\\xe9_\\xff" in (
        _strict_render(vc)
    )
    vcs = run_ok(shell, f"vcs -f {second}")
    assert vcs.path == second
    ac = run_ok(shell, "ac -c")
    assert _summary(ac.compare.out_dir)["files_done"] == vc.primary.tasks
    pt = run_ok(shell, f"pt {odd}")
    text = Path(pt.items[0].text_file)
    assert text.read_bytes().startswith(b"# source: " + os.fsencode(odd) + b"\n")
    dc = run_ok(shell, f"dc {odd}")
    names = [Path(npy).name for _, npy, _, _ in dc.files]  # .npy names are made safe
    # and tagged with the real name, so another name made safe alike cannot take its place
    assert re.fullmatch(
        r"Conv2D\.caf___\.5\.1\.1795320000000000~[0-9a-f]{8}\.input\.0\.NC1HWC0\.npy", names[0]
    )
    assert all(Path(npy).is_file() for _, npy, _, _ in dc.files) and len(names) == 4


def test_a_latin1_name_in_a_resumed_csv_reads_back_byte_for_byte(tiny_demo, monkeypatch):
    root, manifest = tiny_demo
    _add_odd_dump(root, manifest)
    _add_odd_dump(root, manifest, b"Conv2D.na\xefve.5.1.1795320000000001")
    reference = run_ok(open_shell(root), "vc")
    n, second = reference.primary.tasks, reference.secondary.tasks
    # Ctrl-C before the device-vs-device compare's last task: ops not in the graph come last,
    # so the caf\xe9 row is written and journaled, the na\xefve one is not
    Engine(monkeypatch, n + second - 1)
    cut = open_shell(root).execute("vc").result.out_dir
    journal = (cut / JOURNAL_NAME).read_bytes()
    assert b'/Conv2D.caf\\udce9_\\udcff.5.1.1795320000000000","offset":' in journal
    journal.decode("utf-8")  # valid UTF-8 JSON
    cut_csv = next(cut.glob("*_vs_*.csv")).read_bytes()
    assert b"caf\xe9_\xff" in cut_csv and b"na\xefve" not in cut_csv
    engine = Engine(monkeypatch)
    resumed = run_ok(open_shell(root), "vc --resume")  # reads the caf\xe9 rows back
    assert resumed.out_dir == cut and engine.given == [0, 1]
    assert _csvs(cut) == _csvs(reference.out_dir)
    assert _summary(cut)["device_compare"]["resumed_from_files"] == second - 1


def test_a_workspace_under_a_latin1_path_works_end_to_end(tiny_demo, tmp_path):
    root, _ = tiny_demo
    odd_root = Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), b"ws_caf\xe9")))
    os.rename(os.fsencode(root), os.fsencode(odd_root))
    shell = open_shell(odd_root)
    pt = run_ok(shell, f"pt {CONV1}")
    source = pt.items[0].path
    text = Path(pt.items[0].text_file).read_bytes()
    assert text.startswith(b"# source: " + os.fsencode(source) + b"\n")
    assert b"/ws_caf\xe9/" in text.splitlines()[0]
    cp = run_ok(shell, f"cp {CONV1} {CONV1} -s")
    assert Path(cp.saved).read_bytes().startswith(b"# left: ")
    run_ok(shell, f"dc {CONV1}")
    vc = run_ok(shell, "vc")
    summary = _summary(vc.out_dir)  # valid UTF-8 JSON, the path escaped in it
    assert b"ws_caf\\udce9" in (vc.out_dir / "summary.json").read_bytes()
    assert summary["workspace"] == str(odd_root / "precision_data")
    assert summary["results"][0]["csv"] == str(vc.primary.csv_path)
    vcs = run_ok(shell, "vcs")
    assert vcs.path == vc.primary.csv_path and vcs.rows == vc.primary.tally.rows
    run_ok(shell, "ac -c")
    report = run_ok(shell, "report")
    page = report.path.read_bytes().decode("utf-8")
    assert "/ws_caf\\xe9/precision_data" in page
    assert "/ws_caf\\xe9/" in _strict_render(report)
