"""Entries that are no readable file are warnings naming them and what is wrong: a dangling
symlink or a dir where a dump file or a benchmark `.npy` is expected, a dump dir that cannot
be listed. The rest of the workspace still loads, and the warnings come back from the index
cache and from `reload`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from precision_shell.formats.dir_entries import store_object_name
from precision_shell.workspace.workspace import Workspace
from tests.commands.shell_fixture import (
    CONV1,
    benchmark_path,
    dump_path,
    open_shell,
    rendered,
    run_ok,
)
from tests.commands.test_second_dump_dir import _step_dir
from tests.unlistable_dirs import refuse_listing
from tests.workspace.file_times import settle


def _dangling(path: Path) -> None:
    path.symlink_to("/nonexistent/target")


def _dir(path: Path) -> None:
    path.mkdir()
    (path / "x").write_text("x")


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (_dangling, "a dangling symlink (to /nonexistent/target: no such file)"),
        (_dir, "a directory, not a file"),
    ],
)
def test_an_entry_named_like_a_dump_file_that_is_no_file_is_a_warning(tiny_demo, make, problem):
    root, manifest = tiny_demo
    dump = dump_path(root, manifest, CONV1)
    dumped = len(Workspace.open(root, use_cache=False).run().dumps)
    dump.unlink()
    make(dump)
    settle(root)  # else the index is not cached (a file changed within a clock tick)
    expected = [f"{dump}: {problem}; skipped"]
    cold = Workspace.open(root)
    assert cold.warnings == expected
    assert len(cold.run().dumps) == dumped - 1
    assert cold.dump_files(cold.run(), CONV1) == []
    warm = Workspace.open(root)
    assert warm.cache.hits > 0 and warm.cache.misses == 0
    assert warm.warnings == expected


def test_reload_names_a_dangling_dump_file_link(tiny_demo):
    root, manifest = tiny_demo
    dump = dump_path(root, manifest, CONV1)
    shell = open_shell(root)
    run_ok(shell, "ls")
    dump.unlink()
    _dangling(dump)
    result = run_ok(shell, "reload")
    assert result.warnings == [
        f"{dump}: a dangling symlink (to /nonexistent/target: no such file); skipped"
    ]
    assert result.summary.warnings == 1


def test_a_dir_named_like_a_benchmark_tensor_is_a_warning_and_other_dirs_are_not(tiny_demo):
    root, _ = tiny_demo
    npy = benchmark_path(root, "relu1/Relu")
    tensors = Workspace.open(root, use_cache=False).summary().benchmark_tensors
    npy.unlink()
    npy.mkdir()
    (npy.parent / "run_1").mkdir()  # tf_dump --all's run dirs are no benchmark tensors
    settle(root)
    expected = [f"{npy}: a directory, not a file; skipped"]
    cold = Workspace.open(root)
    assert cold.warnings == expected
    assert cold.summary().benchmark_tensors == tensors - 1
    warm = Workspace.open(root)
    assert warm.cache.misses == 0 and warm.warnings == expected


def test_a_benchmark_linked_to_a_file_not_named_npy_is_a_warning(tiny_demo, tmp_path):
    """QA Q7 F6: `relu1_Relu.0.<ts>.npy -> /etc/passwd` was indexed without a word (its row
    then "not a .npy file"); a link to a `.npy` elsewhere is a benchmark as before."""
    root, _ = tiny_demo
    npy = benchmark_path(root, "relu1/Relu")
    tensors = Workspace.open(root, use_cache=False).summary().benchmark_tensors
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    kept = outside / "linked_in.0.1795327200000001.npy"
    shutil.copy(npy, kept)
    npy.unlink()
    npy.symlink_to(outside / "passwd")
    linked = npy.parent / "elsewhere.0.1795327200000002.npy"
    linked.symlink_to(kept)  # a .npy under another name: a benchmark
    settle(root)
    expected = [
        f"{npy}: a symlink to {outside / 'passwd'}, not named like a benchmark tensor (.npy); "
        "skipped"
    ]
    cold = Workspace.open(root)
    assert cold.warnings == expected
    assert cold.summary().benchmark_tensors == tensors  # one skipped, one linked in
    assert cold.benchmark.lookup("relu1/Relu", 0) is None
    assert cold.benchmark.lookup("elsewhere", 0).path == str(linked)
    warm = Workspace.open(root)
    assert warm.cache.misses == 0 and warm.warnings == expected


def _run_dump_dir(data: Path) -> Path:
    return data / "npu" / "debug_1" / "dump"


def _device_dir(data: Path) -> Path:
    (session,) = _run_dump_dir(data).iterdir()
    return session / "0"


@pytest.mark.parametrize("unlistable", [_run_dump_dir, _device_dir])
def test_a_dump_dir_that_cannot_be_listed_is_a_warning_saying_why(
    tiny_demo, monkeypatch, unlistable
):
    root, _ = tiny_demo
    refused = unlistable(Workspace.open(root, use_cache=False).root)
    refuse_listing(monkeypatch, refused)
    ws = Workspace.open(root, use_cache=False)
    # not "no dump/<timestamp>/ dir" or "empty device dir": the dir is there, unreadable
    assert ws.warnings == [f"{refused}: cannot list: Permission denied"]
    assert ws.run("debug_1").slices == []
    assert len(ws.run("debug_0").dumps) > 0


def test_an_overflow_dump_sub_dir_that_cannot_be_listed_is_a_warning_naming_it(
    tiny_demo, monkeypatch
):
    root, _ = tiny_demo
    ws = Workspace.open(root, use_cache=False)
    assert len(ws.overflow_files()) == 1 and ws.warnings == []
    (session,) = (ws.root / "overflow" / "dump").iterdir()
    refused = session / "0"  # the device dir: the Opdebug file is below it
    refuse_listing(monkeypatch, refused)
    ws = Workspace.open(root, use_cache=False)
    assert ws.warnings == [f"{refused}: cannot list: Permission denied"]
    assert ws.overflow_files() == []


def _slices(ws: Workspace) -> list[tuple[str, str, int]]:
    return [(s.rank, s.step, len(s.dumps)) for s in ws.run().slices]


def test_symlinked_dirs_that_lead_back_into_the_dump_tree_are_skipped_with_a_warning(tiny_demo):
    root, _ = tiny_demo
    step = _step_dir(root)  # <ts>/<rank>/<graph>/<model>/<step>
    files = len(Workspace.open(root, use_cache=False).run().dumps)
    ts, graph = step.parents[3], step.parents[1]
    (ts / "5").symlink_to(".")  # a rank dir that is the session dir
    (step.parent / "7").symlink_to("..")  # a step dir that is the graph dir
    (graph / f"{graph.name}_loop").symlink_to("../..")  # a model dir that is the session dir
    ws = Workspace.open(root, use_cache=False)
    assert _slices(ws) == [("0", step.name, files)]
    held = "a dir this dump tree already holds (a loop, or the same dumps twice); skipped"
    assert sorted(ws.warnings) == sorted(
        [
            f"{ts / '5'}: a symlink to {ts}, {held}",
            f"{step.parent / '7'}: a symlink to {graph}, {held}",
            f"{graph / (graph.name + '_loop')}: a symlink to {ts}, {held}",
        ]
    )


def test_a_rank_dir_linked_in_from_elsewhere_is_read_once(tiny_demo, tmp_path):
    root, _ = tiny_demo
    step = _step_dir(root)
    rank_dir = step.parents[2]
    files = len(Workspace.open(root, use_cache=False).run().dumps)
    outside = tmp_path / "elsewhere" / "rank"
    shutil.copytree(rank_dir, outside)
    (rank_dir.parent / "1").symlink_to(outside)  # a way to assemble a workspace
    ws = Workspace.open(root, use_cache=False)
    assert _slices(ws) == [("0", step.name, files), ("1", step.name, files)]
    assert ws.warnings == []
    (rank_dir.parent / "2").symlink_to(outside)  # the same dumps again
    ws = Workspace.open(root, use_cache=False)
    assert _slices(ws) == [("0", step.name, files), ("1", step.name, files)]
    assert ws.warnings == [
        f"{rank_dir.parent / '2'}: a symlink to {outside}, a dir this dump tree already holds "
        "(a loop, or the same dumps twice); skipped"
    ]


def test_a_rank_link_to_a_sibling_is_skipped_whatever_its_name_sorts_as(tiny_demo):
    """`0 -> 1` sorts before the real `1`: it was walked, and so was `1`, the same dumps twice
    with no warning."""
    root, _ = tiny_demo
    step = _step_dir(root)
    rank_dir = step.parents[2]  # rank 0
    files = len(Workspace.open(root, use_cache=False).run().dumps)
    real = rank_dir.parent / "1"
    rank_dir.rename(real)
    (rank_dir.parent / "0").symlink_to("1")
    ws = Workspace.open(root, use_cache=False)
    assert _slices(ws) == [("1", step.name, files)]
    assert ws.warnings == [
        f"{rank_dir}: a symlink to {real}, a dir this dump tree already holds "
        "(a loop, or the same dumps twice); skipped"
    ]


def test_a_symlink_named_like_a_dump_file_to_a_file_named_otherwise_is_no_dump(tiny_demo, tmp_path):
    root, manifest = tiny_demo
    real = dump_path(root, manifest, CONV1)
    step = real.parent
    dumped = len(Workspace.open(root, use_cache=False).run().dumps)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    evil = step / "Conv2D.evil_link.99.1.1795329000199999"
    evil.symlink_to(outside / "passwd")
    kept = outside / "MatMulV2.linked_in.98.1.1795329000199998"  # a dump linked in: counted
    shutil.copy(real, kept)
    (step / kept.name).symlink_to(kept)
    settle(root)
    expected = [f"{evil}: a symlink to {outside / 'passwd'}, not named like a dump file; skipped"]
    cold = Workspace.open(root)
    assert cold.warnings == expected
    assert len(cold.run().dumps) == dumped + 1
    assert cold.run().dumps.for_op("evil_link") == []
    assert [r.file_name for r in cold.run().dumps.for_op("linked_in")] == [kept.name]
    warm = Workspace.open(root)
    assert warm.cache.misses == 0 and warm.warnings == expected
    listed = rendered(run_ok(open_shell(root), "ls")).splitlines()
    counts = next(ln.split() for ln in listed if ln.startswith(" tensor dumps"))
    assert counts[3] == str(dumped + 1)  # debug_0's column


def test_a_dump_session_linked_to_another_of_the_run_is_skipped_with_a_warning(tiny_demo):
    root, _ = tiny_demo
    session = _step_dir(root).parents[3]  # dump/<ts>
    files = len(Workspace.open(root, use_cache=False).run().dumps)
    later = session.parent / str(int(session.name) + 1)
    later.symlink_to(session.name)  # sorts last: it was taken for the newest session
    up = session.parent / str(int(session.name) + 2)
    up.symlink_to("..")  # the run dir: a loop
    ws = Workspace.open(root, use_cache=False)
    held = "a dir this dump tree already holds (a loop, or the same dumps twice); skipped"
    assert ws.warnings == [
        f"{later}: a symlink to {session}, {held}",
        f"{up}: a symlink to {session.parent.parent}, {held}",
    ]
    assert len(ws.run().dumps) == files
    assert ws.layout.runs[0].dump_dir == session  # what vc names as `left`


@pytest.mark.parametrize(
    ("name", "is_object"),
    [
        ("0f" * 15, True),  # DVC: .dvc/cache/files/md5/ab/<30 hex>
        ("a" * 40, True),  # Hugging Face hub blob (sha1)
        ("0123456789abcdef" * 4, True),  # sha256
        ("SHA256E-s1048576--" + "ab" * 32 + ".npy", True),  # git-annex key
        ("MD5-s12--" + "cd" * 16, True),
        ("passwd", False),
        ("0f" * 14, False),  # too short for a hash
        ("ABCDEF" * 6, False),  # upper case: no store writes that
        ("notes.txt", False),
    ],
)
def test_content_addressed_store_object_names(name, is_object):
    assert store_object_name(name) is is_object


def _into_store(root: Path, files: list[Path]) -> None:
    """Each file moved into a DVC-like cache under its content's hash, and a symlink to it left
    in its place (DVC's `cache.type symlink`)."""
    import hashlib

    store = root / ".dvc" / "cache" / "files" / "md5"
    for f in files:
        digest = hashlib.md5(f.read_bytes()).hexdigest()
        target = store / digest[:2] / digest[2:]
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            f.rename(target)
        else:
            f.unlink()
        f.symlink_to(target)


def test_dumps_and_benchmarks_linked_from_a_dvc_cache_are_read(tiny_demo, tmp_path):
    """Files kept by data version control are symlinks to objects named by their hash: they are
    dump files and benchmark tensors like any other (the name rule above refused every one)."""
    root, manifest = tiny_demo
    before = run_ok(open_shell(root), "vc")
    step = dump_path(root, manifest, CONV1).parent
    bench = benchmark_path(root, "relu1/Relu").parent
    dumps = [f for f in step.iterdir() if f.is_file()]
    tensors = [f for f in bench.iterdir() if f.suffix == ".npy"]
    _into_store(root, dumps + tensors)
    assert all(f.is_symlink() for f in dumps + tensors)
    settle(root)
    ws = Workspace.open(root, use_cache=False)
    assert ws.warnings == []
    after = run_ok(open_shell(root), "vc")
    assert (
        after.primary.csv_path.read_bytes().splitlines()[1:]
        == before.primary.csv_path.read_bytes().splitlines()[1:]
    )
