"""Outputs never follow links, replace atomically, race safely and clean up on a full disk."""

from __future__ import annotations

import errno
import os
import threading

import pytest

from precision_shell.errors import PrecisionError
from precision_shell.workspace.output_files import (
    OutputError,
    create_output_file,
    create_unique_dir,
    ensure_dir,
    replace_output,
    write_bytes_output,
)


def _fill_then_fail(fh, data: bytes | str) -> None:
    """What a full disk does to a writer: some bytes land, then ENOSPC."""
    fh.write(data)
    fh.flush()
    raise OSError(errno.ENOSPC, "No space left on device")


def test_ensure_dir_makes_each_component(tmp_path):
    made = ensure_dir(tmp_path, "temp", "decode/sub")
    assert made == tmp_path / "temp" / "decode" / "sub" and made.is_dir()
    assert ensure_dir(tmp_path, "temp", "decode/sub") == made  # existing dirs are fine


def test_ensure_dir_refuses_a_symlinked_component_and_writes_nothing_there(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "temp").symlink_to(outside)
    with pytest.raises(OutputError) as err:
        ensure_dir(ws, "temp", "decode")
    assert str(err.value) == (
        f"{ws / 'temp'}: is a symbolic link; outputs are never written through links "
        "(remove it, or give another output dir)"
    )
    assert list(outside.iterdir()) == []


def test_ensure_dir_refuses_a_dangling_link_and_a_file(tmp_path):
    (tmp_path / "temp").mkdir()
    (tmp_path / "temp" / "decode").symlink_to(tmp_path / "nowhere")
    with pytest.raises(OutputError, match="is a symbolic link"):
        ensure_dir(tmp_path, "temp", "decode")
    assert not (tmp_path / "nowhere").exists()
    (tmp_path / "temp" / "pt").write_text("x")
    with pytest.raises(OutputError) as err:
        ensure_dir(tmp_path, "temp", "pt")
    assert str(err.value) == f"{tmp_path / 'temp' / 'pt'}: exists and is not a directory"


def test_ensure_dir_refuses_dot_dot(tmp_path):
    with pytest.raises(OutputError, match="not a plain dir name"):
        ensure_dir(tmp_path, "temp", "../escape")
    assert not (tmp_path.parent / "escape").exists()


def test_replace_output_replaces_its_own_earlier_file_and_leaves_no_temp(tmp_path):
    target = tmp_path / "a.txt"
    replace_output(target, lambda fh: fh.write("one\n"), text=True)
    replace_output(target, lambda fh: fh.write("two\n"), text=True)
    assert target.read_text() == "two\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


@pytest.mark.parametrize("dangling", [True, False])
def test_replace_output_refuses_a_link_at_the_name_and_keeps_its_target(tmp_path, dangling):
    outside = tmp_path / "outside.txt"
    if not dangling:
        outside.write_text("user data")
    link = tmp_path / "out" / "a.gv"
    link.parent.mkdir()
    link.symlink_to(outside)
    with pytest.raises(OutputError) as err:
        write_bytes_output(link, b"digraph {}")
    assert str(err.value) == (
        f"{link}: is a symbolic link; outputs are never written through links (remove it)"
    )
    assert link.is_symlink() and os.readlink(link) == str(outside)
    if dangling:
        assert not outside.exists()
    else:
        assert outside.read_text() == "user data"
    assert sorted(p.name for p in link.parent.iterdir()) == ["a.gv"]


def test_replace_output_on_a_full_disk_says_so_and_keeps_the_old_file(tmp_path):
    target = tmp_path / "x.bin"
    target.write_bytes(b"old")
    with pytest.raises(OutputError) as err:
        replace_output(target, lambda fh: _fill_then_fail(fh, b"a" * 100_000))
    assert isinstance(err.value, PrecisionError)
    assert str(err.value) == f"no space left on {target}"
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.bin"]  # the temp file is gone


def test_replace_output_failing_writer_removes_the_temp_and_reraises(tmp_path):
    def boom(fh):
        fh.write(b"partial")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        replace_output(tmp_path / "y.bin", boom)
    assert list(tmp_path.iterdir()) == []


def test_create_output_file_never_overwrites_nor_follows_a_link(tmp_path):
    existing = tmp_path / "r.csv"
    existing.write_text("keep")
    with pytest.raises(OutputError) as err, create_output_file(existing):
        pass
    assert str(err.value) == f"{existing}: already exists; not overwritten"
    assert existing.read_text() == "keep"
    link = tmp_path / "l.csv"
    link.symlink_to(tmp_path / "elsewhere.csv")
    with pytest.raises(OutputError), create_output_file(link):
        pass
    assert not (tmp_path / "elsewhere.csv").exists()


def test_create_output_file_full_disk_removes_the_partial_file(tmp_path):
    path = tmp_path / "result.csv"
    with pytest.raises(OutputError) as err, create_output_file(path) as fh:
        _fill_then_fail(fh, "a,b\n" * 50_000)
    assert str(err.value) == f"no space left on {path}"
    assert not path.exists()


def test_create_output_file_keeps_rows_written_before_an_interrupt(tmp_path):
    path = tmp_path / "result.csv"
    with pytest.raises(KeyboardInterrupt), create_output_file(path) as fh:
        fh.write("a,b\n")
        raise KeyboardInterrupt
    assert path.read_text() == "a,b\n"


def test_create_unique_dir_racing_threads_get_distinct_dirs(tmp_path):
    made: list = []
    errors: list = []
    start = threading.Barrier(8)

    def make():
        start.wait()
        try:
            made.append(create_unique_dir(tmp_path, "20240101120000"))
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=make) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(p.name for p in made) == ["20240101120000"] + [
        f"20240101120000_{n}" for n in range(1, 8)
    ]


def test_concurrent_replace_of_one_name_leaves_one_whole_file(tmp_path):
    target = tmp_path / "t.bin"
    start = threading.Barrier(8)
    errors: list = []

    def write(k: int):
        start.wait()
        try:
            replace_output(target, lambda fh: fh.write(bytes([k]) * 200_000))
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    data = target.read_bytes()
    assert len(data) == 200_000 and len(set(data)) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.bin"]
