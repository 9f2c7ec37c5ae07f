"""A foreign dump (or a pair) opened as the shell's workspace: `precision-shell DIR_OR_FILE`.

What a path holds is recognised from contents, by the readers' own `detect` (never names):

- one dump: a MegEngine `--bin-io-dump` dir, one var file of it, an `--io-dump` text file, a
  SigmaStar DumpDebug file or a dir of per-tensor DumpDebug files: a single run;
- a dir holding exactly two dumps of one family (two MegEngine run dirs, two SigmaStar files,
  two `--io-dump` texts...): a pair, left (device / sample) and right (benchmark):
  - SigmaStar: the more original run is the right (`sigma_reference`): the framework's
    (a tflite / onnx / caffe name, or per-tensor files), then the float run (`isFloat: 1`),
    then the quantized one; two of one kind, name order. A dir of per-tensor files (no
    `isFloat:` line) is one run, whatever their number;
  - MegEngine: name order: the first name (sorted) is the left, the second the right.
  `vc -lt A -rt B` (paths or run names) overrides the pair.

A dir is not foreign (None: the Ascend path) when nothing in it is a dump, or when its
`precision_data/` holds anything but our own `temp/` (an Ascend workspace stays one).
Entries that are symbolic links are never followed; files of neither family are ignored;
the readers bound every size they read.

Outputs (`pt`, `dc`, `vc`) go to `<root>/precision_data/temp/`, `<root>` being the dir given when
it holds a pair, else the dir holding the dump: never inside a dump dir.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from precision_shell.errors import PrecisionError
from precision_shell.foreign.dumps import (
    MEGENGINE,
    SIGMASTAR,
    ForeignDump,
    ForeignTensor,
    detect_foreign,
    open_foreign,
)
from precision_shell.foreign.sigma_reference import FRAMEWORK, benchmark_rule, reference_rank
from precision_shell.formats import megengine_dump as meg
from precision_shell.formats import sigmastar_dump as sigma
from precision_shell.workspace.layout import WORKSPACE_DIR_NAME
from precision_shell.workspace.output_files import ensure_dir

FAMILY_TITLES = {MEGENGINE: "MegEngine io dumps", SIGMASTAR: "SigmaStar DumpDebug dumps"}
_MAX_ENTRIES = 4096  # a dir with more entries than this is scanned this far only
NAME_ORDER = "name order"
FRAMEWORK_IS_BENCHMARK = benchmark_rule(FRAMEWORK)


@dataclass(frozen=True)
class DumpEntry:
    """One dump found in the path given: where, what it is and its run name."""

    name: str
    path: Path
    family: str
    kind: str


@dataclass(frozen=True)
class ForeignLayout:
    """What a path holds, from detection only (cheap: nothing but headers is read)."""

    given: Path
    root: Path  # where precision_data/ (our outputs) goes
    family: str
    entries: tuple[DumpEntry, ...]  # one (single run) or two (left, right)
    rule: str  # how left and right were told apart ("" for a single run)


@dataclass
class ForeignRun:
    name: str
    path: Path
    dump: ForeignDump
    role: str  # "left" / "right" / "single"
    _by_key: dict[str, ForeignTensor] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._by_key = self.dump.by_key()

    @property
    def tensors(self) -> tuple[ForeignTensor, ...]:
        return self.dump.tensors

    def get(self, key: str) -> ForeignTensor | None:
        return self._by_key.get(key)

    def consumers(self, key: str) -> list[ForeignTensor]:
        """The tensors whose owner op reads `key` (MegEngine: the title's input edges)."""
        return [t for t in self.tensors if key in t.inputs]


@dataclass
class ForeignWorkspace:
    layout: ForeignLayout
    runs: list[ForeignRun]  # left first

    @property
    def family(self) -> str:
        return self.layout.family

    @property
    def root(self) -> Path:
        return self.layout.root

    def output_dir(self, *parts: str) -> Path:
        """A dir under `<root>/precision_data/temp/` (created, links refused): where `pt`, `dc`
        and `vc` write, never inside a dump dir nor beside a dump file given alone."""
        return ensure_dir(self.root, WORKSPACE_DIR_NAME, "temp", *parts)

    @property
    def is_pair(self) -> bool:
        return len(self.runs) == 2

    @property
    def left(self) -> ForeignRun:
        return self.runs[0]

    @property
    def right(self) -> ForeignRun | None:
        return self.runs[1] if self.is_pair else None

    def run(self, name: str | None) -> ForeignRun:
        if name is None:
            return self.left
        for run in self.runs:
            if run.name == name or run.role == name:
                return run
        names = ", ".join(r.name for r in self.runs)
        raise PrecisionError(f"no run named {name!r}; runs: {names}")

    def run_path(self, name: str | None) -> str | None:
        """A run's path when `name` is a run name (or left/right); else `name` unchanged."""
        if name is None:
            return None
        for run in self.runs:
            if name in (run.name, run.role):
                return str(run.path)
        return name

    def describe(self) -> str:
        """`MegEngine io dumps: runA (120 vars) vs runB (120 vars)`."""
        unit = "vars" if self.family == MEGENGINE else "tensors"
        parts = [f"{r.name} ({len(r.tensors)} {unit})" for r in self.runs]
        text = f"{FAMILY_TITLES[self.family]}: {' vs '.join(parts)}"
        return text + (f" [right = benchmark: {self.layout.rule}]" if self.is_pair else "")


# ---------------------------------------------------------------------------- detection


def _entries(directory: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(directory) as scan:
            found = []
            for n, entry in enumerate(scan):
                if n >= _MAX_ENTRIES:
                    break
                found.append(entry)
    except OSError:
        return []
    return sorted(found, key=lambda e: e.name)


def _is_ascend_workspace(directory: Path) -> bool:
    data = directory / WORKSPACE_DIR_NAME
    if directory.name == WORKSPACE_DIR_NAME:
        return True
    if not data.is_dir():
        return False
    return any(e.name != "temp" for e in _entries(data))


def _dump_in(entry: os.DirEntry) -> DumpEntry | None:
    """A dump held by one dir entry; links are never followed."""
    try:
        if entry.is_symlink():
            return None
        if not (entry.is_dir(follow_symlinks=False) or entry.is_file(follow_symlinks=False)):
            return None
    except OSError:
        return None
    if entry.name == WORKSPACE_DIR_NAME:
        return None
    found = detect_foreign(entry.path)
    if found is None or found[1] == meg.KIND_BIN_FILE:
        return None  # a loose var file: the dir itself is the dump
    return DumpEntry(entry.name, Path(entry.path), found[0], found[1])


def _float_line(path: str | Path) -> tuple[bool, bool | None]:
    """(readable, its `isFloat:` line) of a SigmaStar file; the line None when absent."""
    try:
        return True, sigma.read_sigmastar_dump(path).is_float
    except PrecisionError:
        return False, None


def _reference_rank(entry: DumpEntry) -> int | None:
    """How original a SigmaStar run is (`sigma_reference`), from its first file's `isFloat:`
    line, its name, and whether it is a per-tensor dir (files without the line)."""
    if entry.kind == sigma.KIND_DIR:
        files = [e for e in _entries(entry.path) if e.is_file(follow_symlinks=False)]
        paths = [Path(e.path) for e in files if sigma.detect(e.path) is not None]
    else:
        paths = [entry.path]
    readable, is_float = _float_line(paths[0]) if paths else (False, None)
    per_tensor = entry.kind == sigma.KIND_DIR and readable and is_float is None
    return reference_rank(entry.name, is_float, per_tensor)


def _per_tensor_files(dumps: list[DumpEntry]) -> bool:
    """Every dump is a SigmaStar file without an `isFloat:` line: the per-tensor files of one
    run (`dumpData/NHWC/`), not runs of their own (QA Q25 #9: a 2-layer run opened as a pair)."""
    return all(d.kind != sigma.KIND_DIR and _float_line(d.path) == (True, None) for d in dumps)


def _order_pair(family: str, pair: list[DumpEntry]) -> tuple[list[DumpEntry], str]:
    pair = sorted(pair, key=lambda e: e.name)
    if family == SIGMASTAR:
        left, right = (_reference_rank(e) for e in pair)
        if left is not None and right is not None and left != right:
            return (pair[::-1] if left > right else pair), benchmark_rule(max(left, right))
    return pair, NAME_ORDER


def _outputs_root(file: Path) -> Path:
    """Where our outputs go for one dump file opened by itself: beside it, unless it is a var
    of a `--bin-io-dump` dir, whose every entry `compare_binary_iodump` pairs by name: a
    `precision_data/` made in there would break the user's own compare, so beside the dir."""
    parent = file.resolve().parent
    inside = detect_foreign(parent)
    return parent.parent if inside is not None and inside[1] == meg.KIND_BIN_DIR else parent


def _no_unreadable_dump(given: Path) -> None:
    """A dir with no workspace and no dump that opens, but a file that starts as a SigmaStar
    dump: its problem, not "no precision_data" (QA Q25 #11)."""
    if (given / WORKSPACE_DIR_NAME).exists():
        return
    for entry in _entries(given)[:256]:
        if entry.is_file(follow_symlinks=False):
            problem = sigma.unreadable(entry.path)
            if problem is not None:
                raise PrecisionError(
                    f"{given}: no workspace and no dump that reads: a SigmaStar DumpDebug "
                    f"dump that does not read: {problem}"
                )


def foreign_layout(path: str | Path) -> ForeignLayout | None:
    """What `path` holds (see the module doc); None when it is not foreign. A PrecisionError
    (one line) for a dir holding foreign dumps in a way that names no run or pair."""
    given = Path(path).expanduser()
    if given.is_file():
        found = detect_foreign(given)
        if found is None:
            problem = sigma.unreadable(given)
            if problem is not None:  # QA Q25 #11: not "not a workspace", but what is wrong
                raise PrecisionError(f"a SigmaStar DumpDebug dump that does not read: {problem}")
            return None
        entry = DumpEntry(given.name, given, *found)
        return ForeignLayout(given, _outputs_root(given), found[0], (entry,), "")
    if not given.is_dir() or _is_ascend_workspace(given):
        return None
    itself = detect_foreign(given)
    if itself is not None and itself[1] == meg.KIND_BIN_DIR:
        entry = DumpEntry(given.resolve().name, given, *itself)
        return ForeignLayout(given, given.resolve().parent, itself[0], (entry,), "")
    dumps = [d for d in (_dump_in(e) for e in _entries(given)) if d is not None]
    if not dumps:
        _no_unreadable_dump(given)
        return None
    families = sorted({d.family for d in dumps})
    if len(families) > 1:
        raise PrecisionError(
            f"{given}: holds both MegEngine and SigmaStar dumps; open a dir holding one pair, "
            "or compare two with vc -lt A -rt B"
        )
    family = families[0]
    if family == SIGMASTAR and itself is not None and len(dumps) > 1 and _per_tensor_files(dumps):
        entry = DumpEntry(given.resolve().name, given, family, sigma.KIND_DIR)
        return ForeignLayout(given, given.resolve().parent, family, (entry,), "")
    if len(dumps) == 2:
        pair, rule = _order_pair(family, dumps)
        return ForeignLayout(given, given.resolve(), family, tuple(pair), rule)
    if len(dumps) == 1:
        return ForeignLayout(given, given.resolve(), family, tuple(dumps), "")
    names = ", ".join(d.name for d in dumps[:6]) + (", ..." if len(dumps) > 6 else "")
    a, b = (given / d.name for d in dumps[:2])
    # QA Q25 #10: "compare two with vc -lt A -rt B" could not be done in a shell that did
    # not open; one of them opens, and its vc compares any two
    raise PrecisionError(
        f"{given}: holds {len(dumps)} {FAMILY_TITLES[family]} ({names}), not one run or a "
        f"pair; open one and compare two: precision-shell {a} -e 'vc -lt {a} -rt {b}'"
    )


def open_layout(layout: ForeignLayout) -> ForeignWorkspace:
    roles = ("single",) if len(layout.entries) == 1 else ("left", "right")
    runs = [
        ForeignRun(e.name, e.path, open_foreign(e.path), role)
        for e, role in zip(layout.entries, roles, strict=True)
    ]
    return ForeignWorkspace(layout, runs)


def open_foreign_workspace(path: str | Path) -> ForeignWorkspace | None:
    """The foreign workspace at `path`, or None when `path` is not foreign (see the module doc).
    Raises a one-line PrecisionError for an ambiguous dir or a malformed dump."""
    layout = foreign_layout(path)
    return None if layout is None else open_layout(layout)
