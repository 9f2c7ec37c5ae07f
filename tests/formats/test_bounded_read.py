"""`read_bounded`: a regular file within the bound is read whole; a FIFO, a device, a dir, a
file over the bound or (when asked) a symlink is a FormatError naming it, at once."""

from __future__ import annotations

import pytest

from precision_shell.errors import FormatError
from precision_shell.formats.bounded_read import read_bounded, read_bounded_text
from tests.hostile_files import link_to_dev_zero, make_fifo, make_sparse, within


def test_a_regular_file_within_the_bound_is_read_whole(tmp_path):
    path = tmp_path / "mapping.csv"
    path.write_bytes(b"a,b\n" * 100)
    assert read_bounded(path, 400) == b"a,b\n" * 100
    assert read_bounded_text(path, 400).count("a,b") == 100


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "mapping.csv"
    make_fifo(fifo)
    with pytest.raises(FormatError) as caught:
        within(10, lambda: read_bounded(fifo, 1 << 20), [fifo])
    assert str(caught.value) == f"{fifo}: not a regular file (a FIFO)"


def test_a_link_to_dev_zero_is_refused_unread(tmp_path):
    link = tmp_path / "summary.json"
    link_to_dev_zero(link)
    with pytest.raises(FormatError) as caught:
        read_bounded(link, 1 << 20)
    assert str(caught.value) == f"{link}: not a regular file (a character device)"


def test_a_dir_is_refused(tmp_path):
    with pytest.raises(FormatError, match=r"not a regular file \(a directory\)$"):
        read_bounded(tmp_path, 1 << 20)


def test_a_sparse_file_over_the_bound_is_refused_by_its_size(tmp_path):
    path = tmp_path / "graph.txt"
    make_sparse(path, 20 << 30)
    with pytest.raises(FormatError) as caught:
        read_bounded(path, 64 << 20)
    assert str(caught.value) == (f"{path}: 20 GiB, larger than such a file can be (at most 64 MiB)")


def test_one_byte_over_the_bound_is_too_much(tmp_path):
    path = tmp_path / "x"
    path.write_bytes(b"x" * 1025)
    assert read_bounded(path, 1025) == b"x" * 1025
    with pytest.raises(FormatError, match=r": 1\.0 KiB, larger .* \(at most 1 KiB\)$"):
        read_bounded(path, 1024)


def test_a_symlink_is_refused_when_links_are_not_followed(tmp_path):
    target = tmp_path / "real"
    target.write_bytes(b"ok")
    link = tmp_path / "entry.pkl"
    link.symlink_to(target)
    assert read_bounded(link, 10) == b"ok"
    with pytest.raises(FormatError, match=r"entry\.pkl: a symlink, not followed$"):
        read_bounded(link, 10, follow_links=False)


def test_a_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_bounded(tmp_path / "none", 10)
