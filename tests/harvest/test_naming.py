"""File names of harvested tensors: canonical rule, unsafe names, long names, collisions."""

from __future__ import annotations

import numpy as np
import pytest

from precision_shell.formats.benchmark import benchmark_key, parse_benchmark_name
from precision_shell.harvest.naming import (
    MAX_FILE_NAME_BYTES,
    UnsafeTensorName,
    checked_stem,
    colliding_groups,
    target_name,
)

TS = 1619492699305998


def test_canonical_name_follows_formats_section_4() -> None:
    target = target_name("dense/BiasAdd:0", TS)
    assert target.disk_name == f"dense_BiasAdd.0.{TS}.npy"
    assert target.real_name == target.disk_name
    assert target.mapped is False


@pytest.mark.parametrize(
    ("name", "disk"),
    [("../x:0", f".._x.0.{TS}.npy"), ("../../etc/passwd:3", f".._.._etc_passwd.3.{TS}.npy")],
)
def test_traversal_names_stay_one_file_name(name: str, disk: str) -> None:
    target = target_name(name, TS)
    assert target.disk_name == disk
    assert "/" not in target.disk_name


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("no_slot", "is not of the form 'op:slot'"),
        ("x:0\n", "control characters"),
        ("x:", "is not of the form"),
        ("a\x00b:0", "control characters"),
        ("a\tb:0", "control characters"),
    ],
)
def test_unsafe_names_are_refused_with_the_reason(name: str, fragment: str) -> None:
    with pytest.raises(UnsafeTensorName) as error:
        checked_stem(name)
    assert fragment in str(error.value)


def test_collisions_group_distinct_names_sharing_a_lookup_key() -> None:
    names = ["a/b:0", "a_b:0", "a/b:0", "a/b:1", "c:0", "bad", "x/y/z:2", "x_y/z:2", "x/y_z:2"]
    assert colliding_groups(names) == [["a/b:0", "a_b:0"], ["x/y/z:2", "x/y_z:2", "x_y/z:2"]]
    # QA: `dup.x` has another file stem than `dup/x` and `dup_x`, but the same key
    assert colliding_groups(["dup/x:0", "dup_x:0", "dup.x:0"]) == [
        ["dup.x:0", "dup/x:0", "dup_x:0"]
    ]


def test_ops_whose_names_meet_in_one_key_each_read_their_own_file(tmp_path) -> None:  # noqa: ANN001
    """QA: `pt`/`vc` read the newest of `dup/x`, `dup_x` and `dup.x` for all three."""
    from precision_shell.formats.benchmark import scan_benchmark_dir

    names = ["dup/x:0", "dup_x:0", "dup.x:0"]
    rows = []
    for k, name in enumerate(names):
        target = target_name(name, TS + k, collides=True)
        np.save(tmp_path / target.disk_name, np.full(2, k, np.float32))
        rows.append(f"{target.disk_name},{target.real_name}")
    (tmp_path / "mapping.csv").write_text("\n".join(rows) + "\n")
    index = scan_benchmark_dir(tmp_path)
    for k, name in enumerate(names):
        op, slot = name.rsplit(":", 1)
        found = index.lookup(op, int(slot))
        assert found is not None and np.load(found.path)[0] == k, name
    # an op mapping.csv does not name takes none of the files it names with another op
    assert np.load(index.lookup("dup:x", 0).path)[0] == 1  # dup_x's: the key's own spelling
    # without mapping.csv (another tool's dir): the newest of the key, as before
    (tmp_path / "mapping.csv").unlink()
    assert np.load(scan_benchmark_dir(tmp_path).lookup("dup/x", 0).path)[0] == 2


def test_a_colliding_name_is_mapped_to_its_real_op_name() -> None:
    target = target_name("a/b:0", TS, collides=True)
    assert target.disk_name == f"a_b.0.{TS}.npy"
    assert target.real_name == f"a/b.0.{TS}.npy"
    assert target.mapped is True
    parsed = parse_benchmark_name(target.real_name)
    assert parsed is not None and parsed.key == benchmark_key("a/b", 0)


def test_a_long_name_goes_to_a_digest_mapped_to_the_canonical_name() -> None:
    name = "scope_" * 40 + "/MatMul:0"
    target = target_name(name, TS)
    assert target.mapped is True
    assert target.real_name == f"{'scope_' * 40}_MatMul.0.{TS}.npy"
    assert len(target.disk_name) == 36 and target.disk_name.endswith(".npy")
    assert parse_benchmark_name(target.real_name).key == benchmark_key(name[:-2], 0)
    # The digest name is not a benchmark name by itself (a lost mapping.csv is noticed).
    with pytest.raises(ValueError):
        parse_benchmark_name(target.disk_name)
    # Just short enough keeps its canonical name.
    short = "s" * (MAX_FILE_NAME_BYTES - len(f".0.{TS}.npy")) + ":0"
    assert target_name(short, TS).disk_name == f"{short[:-2]}.0.{TS}.npy"


def test_a_reharvest_without_a_collision_of_its_own_still_reads_its_own_file(tmp_path) -> None:  # noqa: ANN001
    """QA: harvest 1 mapped dup/x, dup_x and dup.x; harvest 2 (dup_x alone, newer) wrote no
    mapping row, and lookups of dup_x preferred harvest 1's mapped file over its own."""
    from precision_shell.formats.benchmark import scan_benchmark_dir
    from precision_shell.harvest.benchmark_writer import BenchmarkDirWriter

    first = ["dup/x:0", "dup_x:0", "dup.x:0"]
    writer = BenchmarkDirWriter(tmp_path, first)
    for k, name in enumerate(first):
        writer.save_array(name, 0, TS + k, np.full(2, k, np.float32))
    writer.close()
    again = BenchmarkDirWriter(tmp_path, ["dup_x:0"])
    again.save_array("dup_x:0", 0, TS + 100, np.full(2, 20, np.float32))
    again.close()
    index = scan_benchmark_dir(tmp_path)
    assert np.load(index.lookup("dup_x", 0).path)[0] == 20
    assert np.load(index.lookup("dup/x", 0).path)[0] == 0  # the first harvest's, still its own
