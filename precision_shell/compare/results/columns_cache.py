"""The columns cache of a result CSV: `ResultColumns`' arrays in one file under
`precision_data/temp/result_columns/`, so `vcs` and `report` on a 1M-row result read typed
arrays instead of parsing 250 MB of text each time.

The file is ours alone to trust. A workspace may come from someone else, so:
- it carries an HMAC-SHA256 of everything after it, made with the per-user key the index
  cache uses (kept outside the workspace): a file we did not write is never read, only rebuilt;
- it is keyed to its CSV (path, size, mtime_ns, inode, device) and to `SCHEMA`, and holds the
  CSV's header: any change rebuilds it;
- it holds no pickle and no Python object: a JSON header and raw little-endian arrays of a few
  allowed dtypes, each checked (dtype, length, bounds, offsets in order, codes in range)
  before use. Whatever is wrong, the CSV is parsed instead, with one line saying why.

Layout: MAGIC (8) | HMAC (32) | header length (u64 LE) | JSON header | pad to 64 | arrays,
each at a 64-byte aligned offset from the start of the array region. Written atomically
(`replace_output`); read through `mmap`, so only the pages a command touches are loaded.

Written by the first reader of a big CSV, or by `vc` itself from the rows it wrote
(`store_columns`), so the first `vcs` after a compare reads arrays too. Every write prunes the
dir (`prune_cache`): a file whose CSV is gone or changed goes, and of the rest only the newest
`MAX_CACHE_FILES`, at most `MAX_CACHE_BYTES` together, stay.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import mmap
import os
import re
import stat
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np

from precision_shell.compare.results.columns import ResultColumns, build_arrays
from precision_shell.compare.results.schema import RowLayout, iter_result_records
from precision_shell.errors import PrecisionError
from precision_shell.formats.bounded_read import file_kind
from precision_shell.workspace.index_cache import _user_key
from precision_shell.workspace.output_files import replace_output

SCHEMA = 1
MAGIC = b"PSCOLS\x00\x01"
CACHE_DIR = "result_columns"
SUFFIX = ".cols"
MIN_CACHED_BYTES = 2 * 2**20  # smaller CSVs parse in well under a second: not cached
_MAC_LEN = 32
_ALIGN = 64
_HEAD = len(MAGIC) + _MAC_LEN + 8
_MAX_HEADER = 256 * 2**20
_CHUNK = 2**20
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DTYPES = {"<i8", "<i4", "|i1", "|u1", "|b1", "<f8"}
ENV_DISABLE = "PRECISION_SHELL_NO_RESULT_CACHE"  # "1": parse the CSV every time (benchmarks)
# What the dir keeps after a write: the newest files, at most this many and this many bytes
# together (a 1M-row result's file is ~0.7 GB); the file just written always stays.
MAX_CACHE_FILES = 32
MAX_CACHE_BYTES = 4 * 2**30


class CacheInvalid(Exception):
    """The cache file cannot be used (why, in one line)."""


def cache_path(cache_dir: Path, csv_path: Path) -> Path:
    """The cache file of one CSV: named by its resolved path."""
    try:
        resolved = str(csv_path.resolve())
    except OSError:
        resolved = str(csv_path.absolute())
    digest = hashlib.sha1(resolved.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return cache_dir / f"{csv_path.stem[:40]}-{digest}{SUFFIX}"


def source_key(csv_path: Path, upto: int | None = None) -> dict[str, Any]:
    """What a cache file was made of: the CSV as it was (a cache of its whole rows is never
    one of its first `upto` bytes, nor the other way round)."""
    st = csv_path.stat()
    try:
        resolved = str(csv_path.resolve())
    except OSError:
        resolved = str(csv_path.absolute())
    key = {
        "path": resolved,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ino": st.st_ino,
        "dev": st.st_dev,
    }
    if upto is not None:
        key["upto"] = upto
    return key


# -- writing ------------------------------------------------------------------------------
def _pad(n: int) -> int:
    return -n % _ALIGN


def encode_cache(
    key: bytes, source: dict[str, Any], layout: RowLayout, warnings: list[str], arrays: dict
) -> list[bytes | memoryview]:
    """The file's pieces, in order (MAGIC and HMAC first)."""
    entries: dict[str, dict[str, Any]] = {}
    offset = 0
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        entries[name] = {"dtype": array.dtype.str, "offset": offset, "count": int(array.size)}
        offset += array.nbytes + _pad(array.nbytes)
    header = {
        "schema": SCHEMA,
        "source": source,
        "header": list(layout.header),
        "rows": int(len(arrays["line"])),
        "warnings": warnings,
        "arrays": entries,
    }
    head = json.dumps(header, ensure_ascii=True).encode("ascii")
    body: list[bytes | memoryview] = [struct.pack("<Q", len(head)), head]
    body.append(b"\x00" * _pad(_HEAD + len(head)))
    for array in arrays.values():
        data = np.ascontiguousarray(array).reshape(-1).view(np.uint8).data
        body.append(data)
        body.append(b"\x00" * _pad(len(data)))
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for piece in body:
        mac.update(piece)
    return [MAGIC, mac.digest(), *body]


def write_cache(path: Path, pieces: list[bytes | memoryview]) -> None:
    def write(fh: IO[Any]) -> None:
        for piece in pieces:
            fh.write(piece)

    replace_output(path, write)


# -- reading ------------------------------------------------------------------------------
def _expect(ok: bool, why: str) -> None:
    if not ok:
        raise CacheInvalid(why)


def _mac_of(fd: int, size: int, key: bytes) -> bytes:
    mac = hmac.new(key, digestmod=hashlib.sha256)
    pos = len(MAGIC) + _MAC_LEN
    while pos < size:
        piece = os.pread(fd, min(_CHUNK, size - pos), pos)
        if not piece:
            break
        mac.update(piece)
        pos += len(piece)
    return mac.digest()


def _array(region: memoryview, entry: Any, name: str) -> np.ndarray:
    _expect(isinstance(entry, dict), f"array {name}: not described")
    dtype, offset, count = entry.get("dtype"), entry.get("offset"), entry.get("count")
    _expect(dtype in _DTYPES, f"array {name}: dtype {dtype!r} not allowed")
    _expect(
        type(offset) is int and type(count) is int and offset >= 0 and count >= 0,
        f"array {name}: bad offset or length",
    )
    dt = np.dtype(dtype)
    _expect(offset % _ALIGN == 0, f"array {name}: unaligned")
    _expect(offset + count * dt.itemsize <= len(region), f"array {name}: past the end")
    return np.frombuffer(region, dtype=dt, count=count, offset=offset)


def _check_strings(arrays: dict[str, np.ndarray], name: str, rows: int) -> None:
    blob, offsets = arrays.get(f"{name}.blob"), arrays.get(f"{name}.offsets")
    codes = arrays.get(f"{name}.codes")
    _expect(blob is not None and offsets is not None, f"column {name}: missing")
    assert blob is not None and offsets is not None
    _expect(blob.dtype == np.uint8 and offsets.dtype == np.int64, f"column {name}: dtypes")
    _expect(len(offsets) >= 1, f"column {name}: no offsets")
    _expect(offsets[0] == 0 and offsets[-1] == len(blob), f"column {name}: offsets out of range")
    _expect(bool(np.all(offsets[1:] >= offsets[:-1])), f"column {name}: offsets out of order")
    if codes is None:
        _expect(len(offsets) == rows + 1, f"column {name}: {len(offsets) - 1} cells, not {rows}")
        return
    _expect(codes.dtype == np.int32 and len(codes) == rows, f"column {name}: codes shape")
    if rows:
        _expect(
            int(codes.min()) >= 0 and int(codes.max()) < len(offsets) - 1,
            f"column {name}: codes out of range",
        )


def _check_arrays(arrays: dict[str, np.ndarray], layout: RowLayout, rows: int) -> None:
    def typed(name: str, dtype: Any) -> np.ndarray:
        array = arrays.get(name)
        _expect(array is not None, f"array {name}: missing")
        assert array is not None
        _expect(array.dtype == np.dtype(dtype) and len(array) == rows, f"array {name}: shape")
        return array

    typed("line", np.int64)
    kind = typed("kind", np.int8)
    _expect(not rows or (int(kind.min()) >= 0 and int(kind.max()) <= 2), "kind out of range")
    for name in ("compared", "constant"):
        flags = typed(name, bool).view(np.uint8)
        _expect(not rows or int(flags.max()) <= 1, f"array {name}: not booleans")
    ops = arrays.get("op")
    _expect(ops is not None and ops.dtype == np.int32 and len(ops) == rows, "op codes shape")
    arrays["op.codes"] = arrays.pop("op")
    _check_strings(arrays, "op", rows)
    arrays["op"] = arrays.pop("op.codes")
    for j in range(len(layout.header)):
        _check_strings(arrays, f"c{j}", rows)
    for k in range(len(layout.metric_idx)):
        typed(f"m{k}.value", np.float64)
        flags = typed(f"m{k}.nonfinite", bool).view(np.uint8)
        _expect(not rows or int(flags.max()) <= 1, f"m{k}.nonfinite: not booleans")


def read_cache(
    path: Path, key: bytes, source: dict[str, Any], layout: RowLayout
) -> tuple[list[str], dict[str, np.ndarray]]:
    """The CSV warnings and arrays of a cache file valid for `source` with `layout`'s header;
    CacheInvalid (stale, not ours, or malformed) otherwise."""
    try:
        # O_NONBLOCK: a FIFO put in its place must not block the open
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC)
    except FileNotFoundError:
        raise CacheInvalid("missing") from None
    except OSError as exc:
        raise CacheInvalid(f"unreadable: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        _expect(stat.S_ISREG(info.st_mode), f"{file_kind(info.st_mode)}, not a regular file")
        size = info.st_size
        head = os.pread(fd, _HEAD, 0)
        _expect(len(head) == _HEAD and head[: len(MAGIC)] == MAGIC, "not a columns cache")
        mac = head[len(MAGIC) : len(MAGIC) + _MAC_LEN]
        _expect(hmac.compare_digest(mac, _mac_of(fd, size, key)), "not written by this user")
        (head_len,) = struct.unpack("<Q", head[-8:])
        _expect(head_len <= min(size - _HEAD, _MAX_HEADER), "header past the end")
        try:
            meta = json.loads(os.pread(fd, head_len, _HEAD))
        except (ValueError, UnicodeDecodeError):
            raise CacheInvalid("header is not JSON") from None
        _expect(isinstance(meta, dict) and meta.get("schema") == SCHEMA, "stale: an older schema")
        _expect(meta.get("source") == source, "stale: the CSV changed")
        _expect(meta.get("header") == list(layout.header), "stale: the CSV header changed")
        rows, warnings = meta.get("rows"), meta.get("warnings")
        _expect(type(rows) is int and rows >= 0, "bad row count")
        _expect(
            isinstance(warnings, list) and all(isinstance(w, str) for w in warnings),
            "bad warnings",
        )
        entries = meta.get("arrays")
        _expect(isinstance(entries, dict), "no arrays")
        start = _HEAD + head_len + _pad(_HEAD + head_len)
        _expect(start <= size, "arrays past the end")
        if size == start:
            region = memoryview(b"")
        else:
            mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            region = memoryview(mapped)[start:]
        arrays = {str(name): _array(region, e, str(name)) for name, e in entries.items()}
        _check_arrays(arrays, layout, rows)
        return list(warnings), arrays
    except OSError as exc:
        raise CacheInvalid(f"unreadable: {exc.strerror or exc}") from None
    finally:
        os.close(fd)  # an mmap keeps its own reference to the file


def _header_layout(csv_path: Path) -> RowLayout:
    """The CSV's header (its first record read too, then the file closed)."""
    layout, records = iter_result_records(csv_path, [])
    next(records, None)
    records.close()
    return layout


def cached_columns(
    csv_path: Path, cache_dir: Callable[[], Path] | None, upto: int | None = None
) -> ResultColumns:
    """See `columns.load_result_columns`."""
    csv_path = Path(csv_path)
    try:
        size = csv_path.stat().st_size
    except OSError as exc:
        raise PrecisionError(f"{csv_path}: cannot open: {exc.strerror}") from None
    if (
        cache_dir is None
        or size < MIN_CACHED_BYTES
        or os.environ.get(ENV_DISABLE, "") not in ("", "0")
    ):
        return ResultColumns.from_csv(csv_path, upto)
    key = _user_key()
    if key is None:
        return ResultColumns.from_csv(csv_path, upto)
    notes: list[str] = []
    try:
        where = cache_path(cache_dir(), csv_path)
        source = source_key(csv_path, upto)
    except (PrecisionError, OSError):
        return ResultColumns.from_csv(csv_path, upto)
    layout = _header_layout(csv_path)
    try:
        warnings, arrays = read_cache(where, key, source, layout)
        return ResultColumns(csv_path, layout, warnings, arrays, source="cache")
    except CacheInvalid as exc:
        why = str(exc)
        if why != "missing" and not why.startswith("stale"):
            notes.append(f"{where}: columns cache ignored ({why}); read the CSV instead")
    layout, warnings, arrays = build_arrays(csv_path, upto)
    columns = ResultColumns(csv_path, layout, warnings, arrays, notes=notes)
    try:
        if source_key(csv_path, upto) == source:  # not rewritten while we read it
            write_cache(where, encode_cache(key, source, layout, warnings, arrays))
            prune_cache(where.parent, keep=where)
    except (PrecisionError, OSError) as exc:
        if not notes:  # one line at most
            notes.append(f"columns cache not written: {exc}")
    return columns


def caching_enabled() -> bool:
    return os.environ.get(ENV_DISABLE, "") in ("", "0") and _user_key() is not None


def store_columns(
    csv_path: Path,
    cache_dir: Callable[[], Path],
    layout: RowLayout,
    warnings: list[str],
    arrays: dict[str, np.ndarray],
) -> Path | None:
    """Cache `arrays`, built from the very records of `csv_path` (`vc`: from the rows it
    wrote), keyed to the CSV as it is now: the writer must have closed it for good. Returns the
    cache file, or None when the CSV is too small to be worth one, caching is off, or the file
    could not be written (the first reader builds it then)."""
    try:
        if csv_path.stat().st_size < MIN_CACHED_BYTES or not caching_enabled():
            return None
        key = _user_key()
        assert key is not None
        where = cache_path(cache_dir(), csv_path)
        source = source_key(csv_path)
        write_cache(where, encode_cache(key, source, layout, warnings, arrays))
        prune_cache(where.parent, keep=where)
    except (PrecisionError, OSError):
        return None
    return where


# -- pruning ------------------------------------------------------------------------------
def _header_of(fd: int, size: int) -> dict[str, Any] | None:
    """The JSON header of an open cache file (not authenticated: pruning only reads where it
    says its CSV is, never trusts its arrays), or None when it has none."""
    head = os.pread(fd, _HEAD, 0)
    if len(head) != _HEAD or head[: len(MAGIC)] != MAGIC:
        return None
    (head_len,) = struct.unpack("<Q", head[-8:])
    if head_len > min(size - _HEAD, _MAX_HEADER):
        return None
    try:
        meta = json.loads(os.pread(fd, head_len, _HEAD))
    except (ValueError, UnicodeDecodeError):
        return None
    return meta if isinstance(meta, dict) else None


def _still_valid(cache_dir: Path, name: str, meta: dict[str, Any] | None) -> bool:
    """The file is named for its CSV, of this schema, and that CSV is still what it cached."""
    if meta is None or meta.get("schema") != SCHEMA:
        return False
    source = meta.get("source")
    if not isinstance(source, dict) or not isinstance(source.get("path"), str):
        return False
    csv_path = Path(source["path"])
    try:
        upto = source.get("upto")
        if upto is not None and type(upto) is not int:
            return False
        return cache_path(cache_dir, csv_path).name == name and source_key(csv_path, upto) == source
    except (OSError, ValueError):  # the CSV is gone (or its path is no path)
        return False


def _identity(st: os.stat_result) -> tuple[int, ...]:
    # an inode number is reused at once: a file written since has another mtime or ctime
    return (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _remove(path: Path, checked: os.stat_result) -> None:
    """Unlink `path` if it is still the file that was checked (another shell may have just
    replaced it with a fresh one); a file already gone is fine."""
    try:
        if _identity(os.lstat(path)) == _identity(checked):
            os.unlink(path)
    except OSError:
        pass


# `.NAME.cols.PID.N.tmp`: output_files.replace_output's temp file of a cache being written
_TEMP_NAME = re.compile(r"\.[^/]+" + re.escape(SUFFIX) + r"\.(\d{1,10})\.\d{1,6}\.tmp")
ORPHAN_TEMP_AGE_S = 600.0  # a writer of 1M rows takes ~30 s; one on another host is alive


def _orphan_temp(cache_dir: Path, name: str) -> bool:
    """Remove a writer's temp file left by a process that is gone (SIGKILL, the OOM killer:
    QA found a 127 MB one kept for good, outside every limit); True when removed. Only a
    regular file older than ORPHAN_TEMP_AGE_S whose writer's PID is not running here."""
    match = _TEMP_NAME.fullmatch(name)
    if match is None:
        return False
    path = cache_dir / name
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or time.time() - st.st_mtime < ORPHAN_TEMP_AGE_S:
            return False
        os.kill(int(match[1]), 0)
        return False  # its writer still runs (or a process of that PID does)
    except ProcessLookupError:
        pass
    except (OSError, OverflowError):
        return False  # gone meanwhile, or a PID of another user's: not ours to judge
    try:
        _remove(path, st)
    except OSError:
        return False
    return True


def prune_cache(
    cache_dir: Path,
    keep: Path | None = None,
    max_files: int | None = None,
    max_bytes: int | None = None,
) -> list[Path]:
    """Drop the cache files of `cache_dir` whose CSV is gone or changed (or that are no cache
    file of this schema), then the oldest (mtime) beyond `max_files` files or `max_bytes`
    bytes together; `keep` (the file just written) always stays. Only regular `*.cols` files
    directly in `cache_dir` are looked at (links never, nor a writer's temp files but those of
    a writer gone long since, `_orphan_temp`: nothing is followed, nothing else removed); a file that goes away meanwhile (another shell pruning)
    is skipped. Returns what was removed."""
    max_files = MAX_CACHE_FILES if max_files is None else max_files
    max_bytes = MAX_CACHE_BYTES if max_bytes is None else max_bytes
    removed: list[Path] = []
    live: list[tuple[Path, os.stat_result]] = []
    try:
        names = os.listdir(cache_dir)
    except OSError:
        return removed
    for name in names:
        if _orphan_temp(cache_dir, name):
            removed.append(cache_dir / name)
            continue
        if not name.endswith(SUFFIX) or name.startswith("."):
            continue
        path = cache_dir / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC)
        except OSError:  # gone, a link (ELOOP), unreadable: not ours to judge
            continue
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                continue
            meta = _header_of(fd, st.st_size)
        except OSError:
            continue
        finally:
            os.close(fd)
        if keep is not None and path == keep or _still_valid(cache_dir, name, meta):
            live.append((path, st))
        else:
            _remove(path, st)
            removed.append(path)
    live.sort(key=lambda item: (item[0] != keep, -item[1].st_mtime_ns, item[0].name))
    total = 0
    for n, (path, st) in enumerate(live):
        total += st.st_size
        if path != keep and (n >= max_files or total > max_bytes):
            _remove(path, st)
            removed.append(path)
    return removed
