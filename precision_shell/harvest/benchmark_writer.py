"""Publishing harvested tensors into one benchmark dir without ever overwriting silently.

Every tensor is first written (or placed by tfdbg) in a private staging dir inside the
benchmark dir, checked to be a plain `.npy` file, then hard-linked under its final name:
a link never replaces an existing file, so a name that is taken is detected atomically and
the tensor goes to a fresh name (a later timestamp) unless `--overwrite` asked to replace
it. A crash leaves no half-written benchmark file behind, only the staging dir.
"""

from __future__ import annotations

import csv
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from precision_shell.errors import FormatError, PrecisionError
from precision_shell.formats.benchmark import (
    HARVEST_CUT_NAME,
    MAPPING_FILE_NAME,
    PickledTensor,
    benchmark_key,
    parse_benchmark_name,
    read_mapping_csv,
    read_npy_header,
)
from precision_shell.harvest.naming import (
    TargetName,
    UnsafeTensorName,
    checked_stem,
    colliding_groups,
    target_name,
)
from precision_shell.harvest.outcome import SavedTensor

# How many later timestamps a re-harvest tries before giving up on a tensor.
_MAX_FRESH_TRIES = 1000


class TensorNotSaved(Exception):
    """One tensor could not be written; the message is the reason shown to the user."""


class NoValues(TensorNotSaved):
    """The tensor holds no numbers to compare (a resource handle, a variant, strings): not
    written, and no failure of the harvest."""


class BenchmarkDirWriter:
    """Writes the tensors of one harvest into `out_dir` and keeps its `mapping.csv`."""

    def __init__(self, out_dir: Path, tensor_names: Iterable[str], overwrite: bool = False) -> None:
        # Absolute: staged paths are handed to a tfdbg process that may run elsewhere.
        self.out_dir = Path(out_dir).absolute()
        self.overwrite = overwrite
        try:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self.staging = Path(tempfile.mkdtemp(prefix=".harvest-", dir=self.out_dir))
        except OSError as error:
            raise PrecisionError(
                f"{self.out_dir}: cannot create the benchmark dir: {error.strerror}"
            ) from None
        # until close() says the harvest finished: a kill leaves it, and every reader warns
        self._cut_mark = self.out_dir / HARVEST_CUT_NAME
        self._made_mark = _make_mark(self._cut_mark)
        self.collisions = colliding_groups(tensor_names)
        self._collided = {name for group in self.collisions for name in group}
        # keys an earlier harvest's mapping.csv names files of by their ops: a file of ours
        # there is mapped too, or lookups would prefer those (QA: a re-harvest of dup_x read
        # the first harvest's dup_x, mapped, over its own newer file, not)
        self._mapped_keys = _mapped_keys(self.out_dir / MAPPING_FILE_NAME)
        self._mapping_rows: list[tuple[str, str]] = []
        self._written: set[Path] = set()
        self._staged = 0

    def staging_path(self) -> Path:
        """A fresh file name in the staging dir (for tfdbg's `pt -w`)."""
        self._staged += 1
        return self.staging / f"{self._staged:07d}.npy"

    def save_array(
        self, tensor_name: str, dump_index: int, timestamp: int, array: np.ndarray
    ) -> SavedTensor:
        """Write `array` as dump `dump_index` of `tensor_name`."""
        self._check_name(tensor_name)
        if array.dtype.hasobject:
            raise NoValues(f"{array.dtype} values need pickling; not a plain .npy tensor")
        staged = self.staging_path()
        try:
            with open(staged, "xb") as handle:
                np.save(handle, array, allow_pickle=False)
        except (OSError, ValueError) as error:
            staged.unlink(missing_ok=True)
            raise TensorNotSaved(f"cannot write {staged}: {error}") from None
        return self._publish(tensor_name, dump_index, timestamp, staged)

    def publish_file(
        self, tensor_name: str, dump_index: int, timestamp: int, staged: Path
    ) -> SavedTensor:
        """Move a `.npy` file written into the staging dir to its benchmark name."""
        self._check_name(tensor_name)
        try:
            read_npy_header(staged)
        except PickledTensor:
            staged.unlink(missing_ok=True)
            raise NoValues("Python objects, not numbers") from None
        except FormatError as error:
            staged.unlink(missing_ok=True)
            raise TensorNotSaved(error.problem) from None
        return self._publish(tensor_name, dump_index, timestamp, staged)

    def close(self, finished: bool = True) -> Path | None:
        """Append the mapping rows (if any) to `mapping.csv`, drop the staging dir, and the
        cut-short mark when the harvest `finished` (it ran over every tensor)."""
        shutil.rmtree(self.staging, ignore_errors=True)
        # a harvest stopped before it wrote anything changed nothing (its mark goes; an
        # earlier harvest's stays)
        if finished or (self._made_mark and not self._written):
            self._cut_mark.unlink(missing_ok=True)
        if not self._mapping_rows:
            return None
        path = self.out_dir / MAPPING_FILE_NAME
        try:
            needs_newline = path.is_file() and not path.read_bytes().endswith(b"\n")
            with open(path, "a", newline="", encoding="utf-8") as handle:
                if needs_newline and path.stat().st_size:
                    handle.write("\n")
                csv.writer(handle, lineterminator="\n").writerows(self._mapping_rows)
        except OSError as error:
            raise PrecisionError(
                f"{path}: cannot write the name mapping: {error.strerror}"
            ) from None
        self._mapping_rows.clear()
        return path

    def _check_name(self, tensor_name: str) -> None:
        try:
            checked_stem(tensor_name)
        except UnsafeTensorName as error:
            raise TensorNotSaved(str(error)) from None

    def _publish(
        self, tensor_name: str, dump_index: int, timestamp: int, staged: Path
    ) -> SavedTensor:
        op, _, slot = tensor_name.rpartition(":")
        collides = tensor_name in self._collided or (
            slot.isdigit() and benchmark_key(op, int(slot)) in self._mapped_keys
        )
        try:
            for bump in range(_MAX_FRESH_TRIES):
                target = target_name(tensor_name, timestamp + bump, collides)
                final = self._final_path(target)
                # --overwrite replaces an earlier harvest's file, never one of this harvest,
                # so re-harvesting a run reproduces the names of the first harvest.
                if self.overwrite and final not in self._written and final.exists():
                    os.replace(staged, final)
                    return self._saved(
                        tensor_name, dump_index, timestamp, final, target, bump, True
                    )
                if _link_exclusive(staged, final):
                    return self._saved(tensor_name, dump_index, timestamp, final, target, bump)
        except OSError as error:
            raise TensorNotSaved(f"cannot write into {self.out_dir}: {error.strerror}") from None
        finally:
            staged.unlink(missing_ok=True)
        raise TensorNotSaved(f"{_MAX_FRESH_TRIES} names after the dump's own are all taken")

    def _final_path(self, target: TargetName) -> Path:
        final = self.out_dir / target.disk_name
        # Belt and braces: naming already refuses separators; the file must sit in out_dir.
        if final.parent != self.out_dir or final.name != target.disk_name:
            raise TensorNotSaved(f"file name {target.disk_name!r} leaves {self.out_dir}")
        return final

    def _saved(
        self,
        tensor_name: str,
        dump_index: int,
        timestamp: int,
        final: Path,
        target: TargetName,
        bump: int,
        replaced: bool = False,
    ) -> SavedTensor:
        self._written.add(final)
        if target.mapped:
            self._mapping_rows.append((target.disk_name, target.real_name))
        return SavedTensor(
            tensor_name, dump_index, timestamp, str(final), fresh_name=bump > 0, replaced=replaced
        )


def _mapped_keys(mapping_csv: Path) -> set[str]:
    """The lookup keys of the files an existing `mapping.csv` names (none when it has none or
    cannot be read: its own reader warns of that)."""
    if not mapping_csv.is_file():
        return set()
    try:
        mapping, _ = read_mapping_csv(mapping_csv)
    except (OSError, FormatError):
        return set()
    keys = set()
    for real in mapping.values():
        try:
            parsed = parse_benchmark_name(real)
        except ValueError:  # a name that is none of ours: the dir's readers warn of it
            continue
        if parsed is not None:
            keys.add(parsed.key)
    return keys


def _make_mark(path: Path) -> bool:
    """Create `path` (never through a link, never over a file: one already there, an earlier
    harvest's mark, stays); whether this made it. A dir that cannot take it says so through
    the tensors."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except OSError:
        return False
    try:
        os.write(fd, b"a harvest is writing into this dir\n")
    except OSError:
        pass
    finally:
        os.close(fd)
    return True


def _link_exclusive(source: Path, final: Path) -> bool:
    """Give `source` the name `final` unless that name exists; False when it does."""
    try:
        os.link(source, final)
        return True
    except FileExistsError:
        return False
    except OSError:
        pass  # a file system without hard links: claim the name, then move over the claim
    try:
        os.close(os.open(final, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return False
    os.replace(source, final)
    return True
