"""Discovery of the `precision_data/` layout: which runs, dump dirs, graphs and benchmark dirs exist.

Nothing here reads file contents; it only looks at names, so it is cheap and can run on every start.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from precision_shell.errors import PrecisionError
from precision_shell.formats.dir_entries import cannot_list, list_dir, listing, odd_entry_warnings
from precision_shell.workspace.benchmark_dirs import ScopedDirs, find_scoped_dirs
from precision_shell.workspace.index_cache import FileStamp, file_fingerprint

WORKSPACE_DIR_NAME = "precision_data"
_GRAPH_FILE = re.compile(r"^ge_proto_(\d+)_(.+)\.txt$")
_RUN_DIR = re.compile(r"^debug_(\d+)$")


DirStamp = tuple[Path, FileStamp | None]


def stamp(path: Path) -> DirStamp:
    """A dir with its (size, mtime): taken before listing it, so a later change shows."""
    return (path, file_fingerprint(path))


def newest_numbered_dir(parent: Path, warnings: list[str]) -> Path | None:
    """The child dir whose whole name is digits and numerically largest (FORMATS.md section 1);
    a `parent` that is there but cannot be listed is a warning."""
    names = _numbered_dirs(parent, warnings)
    return parent / max(names, key=lambda name: (int(name), name)) if names else None


def _numbered_dirs(parent: Path, warnings: list[str]) -> list[str] | None:
    """The names of the child dirs whose whole name is digits (dump session dirs); None, and a
    warning saying why, when `parent` is there but cannot be listed."""
    entries = listing(parent, warnings)
    return None if entries is None else [e.name for e in entries if e.name.isdigit() and e.is_dir()]


@dataclass(frozen=True)
class GraphFile:
    """A GE graph dump `ge_proto_<N>_<stage>.txt`."""

    path: Path
    number: int
    stage: str


@dataclass(frozen=True)
class GraphDumpDir:
    """The dump files of one graph: `<ts>/<device_id>/<graph_name>/<model_id>/<step>/`."""

    graph_name: str
    device_id: str
    model_id: str
    step: str
    path: Path


@dataclass
class DeviceRun:
    """One `npu/debug_N` run: its graphs, its newest dump session dir, and the graph dump
    dirs of every session (`dump/<ts>/...`, oldest session first)."""

    name: str
    root: Path
    dump_dir: Path | None
    graph_files: list[GraphFile]
    graph_dump_dirs: list[GraphDumpDir]

    @property
    def build_graphs(self) -> list[GraphFile]:
        """Only the `Build` stage is used for comparison; ordered by number."""
        return [g for g in self.graph_files if g.stage == "Build"]


@dataclass
class WorkspaceLayout:
    """Where everything of one workspace lives; the only owner of workspace paths."""

    root: Path
    runs: list[DeviceRun]
    benchmark_dir: Path | None
    tf_debug_dir: Path | None
    overflow_dir: Path | None
    fusion_json: Path | None
    warnings: list[str] = field(default_factory=list)
    # tf/dump/rank<R>/, step<S>/ and rank<R>/step<S>/: benchmarks of one rank or step
    benchmark_scopes: ScopedDirs = field(default_factory=lambda: ScopedDirs({}, ()))
    # Dirs whose listing decided this layout (some may not exist), each with its (size, mtime)
    # taken before it was listed: a change in one means the layout must be discovered again.
    watched_dirs: list[DirStamp] = field(default_factory=list)

    @property
    def temp_dir(self) -> Path:
        return self.root / "temp"

    def run(self, name: str) -> DeviceRun | None:
        return next((r for r in self.runs if r.name == name), None)


def resolve_workspace_root(path: str | Path) -> Path:
    """Accept the dir holding `precision_data/` or `precision_data/` itself."""
    base = Path(path).expanduser()
    if not base.exists():
        raise PrecisionError(f"{base}: no such directory")
    if not base.is_dir():
        raise PrecisionError(f"{base}: not a directory (give the dir holding precision_data/)")
    if base.name == WORKSPACE_DIR_NAME or (base / "npu").is_dir() or (base / "tf").is_dir():
        return base.resolve()
    inner = base / WORKSPACE_DIR_NAME
    if inner.is_dir():
        return inner.resolve()
    raise PrecisionError(
        f"{base}: no {WORKSPACE_DIR_NAME}/ here; give the dir that holds it or the dir itself"
    )


def workspace_root_or_new(path: str | Path) -> Path:
    """The workspace root, or where `precision_data/` will be made in an existing dir that has
    none yet (tf_run/tf_dump create it); a missing or non-dir path is still an error."""
    try:
        return resolve_workspace_root(path)
    except PrecisionError:
        base = Path(path).expanduser()
        if base.is_dir():
            return (base / WORKSPACE_DIR_NAME).resolve()
        raise


def _graph_files(run_root: Path, warnings: list[str]) -> list[GraphFile]:
    """The `graph/ge_proto_*_Build.txt`-style files of a device run. One named so that is no
    regular file (a FIFO, a link to a device) is a warning naming it; a run with none named
    so is a warning too."""
    graph_dir = run_root / "graph"
    found: list[GraphFile] = []
    if graph_dir.is_dir():
        try:
            names, others = list_dir(graph_dir)
        except OSError as exc:
            warnings.append(f"{graph_dir}: cannot list the graph dir: {exc.strerror}")
            return found
        for name in names:
            m = _GRAPH_FILE.match(name)
            if m:
                found.append(GraphFile(graph_dir / name, int(m.group(1)), m.group(2)))
        odd = odd_entry_warnings(graph_dir, others, lambda name: bool(_GRAPH_FILE.match(name)))
        warnings.extend(odd)
        if odd and not found:
            return found
    if not found:
        warnings.append(f"{run_root}: no graph/ge_proto_*_Build.txt graph dump")
    found.sort(key=lambda g: (g.number, g.stage))
    return found


def _subdirs(path: Path, warnings: list[str]) -> list[os.DirEntry] | None:
    """The sub-dirs of `path` by name; None (and a warning) when it cannot be listed."""
    entries = listing(path, warnings)
    return None if entries is None else sorted((e for e in entries if e.is_dir()), key=_name)


def _name(entry: os.DirEntry) -> str:
    return entry.name


def graph_dump_dirs(
    dump_dir: Path, warnings: list[str], walked: list[DirStamp] | None = None
) -> list[GraphDumpDir]:
    """Walk `<device_id>/<graph_name>/<model_id>/<step>/` under one timestamped dump dir.

    `walked` collects every dir listed on the way (the step dirs excluded), stamped first.
    A symlinked dir is followed (a rank dir linked in from elsewhere is a way to assemble a
    workspace) unless it leads back to a dir of this walk or an ancestor of one: a loop, or
    the same dumps twice; it is skipped with a warning naming it.
    """
    seen: list[DirStamp] = [] if walked is None else walked
    seen.append(stamp(dump_dir))
    found: list[GraphDumpDir] = []
    top = (str(dump_dir), os.path.realpath(dump_dir))
    visited = {top[1]}
    for device, device_real in _walked_subdirs(top, visited, warnings) or []:
        seen.append(stamp(Path(device.path)))
        graphs = _walked_subdirs((device.path, device_real), visited, warnings)
        if graphs == []:
            warnings.append(f"{device.path}: empty device dir, expected <graph_name>/ inside")
        for graph, graph_real in graphs or []:
            seen.append(stamp(Path(graph.path)))
            for model, model_real in (
                _walked_subdirs((graph.path, graph_real), visited, warnings) or []
            ):
                seen.append(stamp(Path(model.path)))
                steps = _walked_subdirs((model.path, model_real), visited, warnings)
                for step, _ in steps or []:
                    found.append(
                        GraphDumpDir(
                            graph.name, device.name, model.name, step.name, Path(step.path)
                        )
                    )
                if steps == []:
                    warnings.append(f"{model.path}: no <step>/ dir inside the model dir")
    return found


def _walked_subdirs(
    parent: tuple[str, str], visited: set[str], warnings: list[str]
) -> list[tuple[os.DirEntry, str]] | None:
    """The sub-dirs of `parent` (its path, and its real path) with their real paths, but a
    symlink to a dir `visited` holds or to an ancestor of `parent` (a warning each); every
    sub-dir kept joins `visited`. None (and a warning) when `parent` cannot be listed."""
    path, real = parent
    entries = _subdirs(Path(path), warnings)
    if entries is None:
        return None
    # real sub-dirs claim their paths first, so a link to a sibling is skipped whatever its
    # name (`0 -> 1` sorts before `1`); no syscall: a real path is its parent's plus the name
    own = {e.name: os.path.join(real, e.name) for e in entries if not e.is_symlink()}
    visited.update(own.values())
    kept: list[tuple[os.DirEntry, str]] = []
    for entry in entries:
        if entry.name in own:
            target = own[entry.name]
        else:
            target = os.path.realpath(entry.path)
            if target in visited or real.startswith(target.rstrip(os.sep) + os.sep):
                warnings.append(_repeated_dir(entry.path, target))
                continue
            visited.add(target)
        kept.append((entry, target))
    return kept


def _repeated_dir(link: str, target: str) -> str:
    return (
        f"{link}: a symlink to {target}, a dir this dump tree already holds (a loop, or the "
        "same dumps twice); skipped"
    )


def _dump_sessions(dump_root: Path, warnings: list[str]) -> list[str] | None:
    """The names of the dump session dirs (`dump/<timestamp>/`) of a device run, oldest first.

    As below a session (`_walked_subdirs`), a symlinked session is followed unless it leads
    to another session of the run or to an ancestor (the same dumps twice, or a loop): that
    one is skipped with a warning naming it. None (and a warning) when `dump_root` cannot be
    listed."""
    entries = listing(dump_root, warnings)
    if entries is None:
        return None
    numbered = sorted(
        (e for e in entries if e.name.isdigit() and e.is_dir()), key=lambda e: (int(e.name), e.name)
    )
    real = os.path.realpath(dump_root)
    held = {os.path.join(real, e.name) for e in numbered if not e.is_symlink()}
    kept: list[str] = []
    for entry in numbered:
        if entry.is_symlink():
            target = os.path.realpath(entry.path)
            if target in held or (real + os.sep).startswith(target.rstrip(os.sep) + os.sep):
                warnings.append(_repeated_dir(entry.path, target))
                continue
            held.add(target)
        kept.append(entry.name)
    return kept


def graph_dump_dir_at(session: Path, directory: str | Path) -> GraphDumpDir | None:
    """`directory` as the `<device_id>/<graph_name>/<model_id>/<step>/` dir of the dump
    session dir `session` (as `graph_dump_dirs` finds them); None when it sits elsewhere."""
    try:
        parts = Path(directory).relative_to(session).parts
    except ValueError:
        return None
    if len(parts) != 4:
        return None
    device, graph, model, step = parts
    return GraphDumpDir(graph, device, model, step, Path(directory))


def _device_runs(root: Path, warnings: list[str], watched: list[DirStamp]) -> list[DeviceRun]:
    npu = root / "npu"
    watched.append(stamp(npu))
    runs: list[DeviceRun] = []
    if not npu.is_dir():
        return runs
    try:
        entries = [e for e in os.scandir(npu) if e.is_dir() and _RUN_DIR.match(e.name)]
    except OSError as exc:
        warnings.append(f"{npu}: cannot list the device runs: {exc.strerror}")
        return runs
    entries.sort(key=lambda e: int(e.name.split("_")[1]))
    for entry in entries:
        run_root = Path(entry.path)
        watched.extend(stamp(d) for d in (run_root, run_root / "dump", run_root / "graph"))
        # every dump session, oldest first: a later session's file of the same op and step
        # sorts after (and is compared before) an earlier one's
        listed = _dump_sessions(run_root / "dump", warnings)
        sessions = listed or []
        dump_dir = run_root / "dump" / sessions[-1] if sessions else None
        dirs = [
            d
            for session in sessions
            for d in graph_dump_dirs(run_root / "dump" / session, warnings, watched)
        ]
        if listed == []:  # None: the dump dir cannot be listed, a warning says why
            warnings.append(f"{run_root}: no dump/<timestamp>/ dir")
        graphs = _graph_files(run_root, warnings)
        runs.append(DeviceRun(entry.name, run_root, dump_dir, graphs, dirs))
    return runs


def discover(path: str | Path) -> WorkspaceLayout:
    """Find the runs, dump dirs, graphs, benchmark, overflow and fusion files of a workspace."""
    root = resolve_workspace_root(path)
    warnings: list[str] = []
    benchmark = root / "tf" / "dump"
    tf_debug = root / "tf" / "tf_debug"
    fusion = root / "fusion" / "fusion_result.json"
    watched = [stamp(root), stamp(root / "tf"), stamp(root / "overflow"), stamp(fusion.parent)]
    watched.append(stamp(root / "overflow" / "dump"))
    runs = _device_runs(root, warnings, watched)
    overflow_dump = newest_numbered_dir(root / "overflow" / "dump", warnings)
    watched.append(stamp(benchmark))
    scopes = find_scoped_dirs(benchmark, warnings)
    watched.extend(scopes.listed)
    return WorkspaceLayout(
        root=root,
        runs=runs,
        benchmark_dir=benchmark if benchmark.is_dir() else None,
        tf_debug_dir=tf_debug if tf_debug.is_dir() else None,
        overflow_dir=overflow_dump,
        fusion_json=fusion if fusion.is_file() else None,
        warnings=warnings,
        watched_dirs=watched,
        benchmark_scopes=scopes,
    )


def leaf_dirs(root: Path, warnings: list[str], walked: list[DirStamp] | None = None) -> list[Path]:
    """Every dir under `root` (itself included) that directly holds files, sorted; a dir
    that cannot be listed is a warning naming it (its files would go unseen).

    `walked` collects every dir visited, leaves or not.
    """
    leaves = []

    def unlisted(exc: OSError) -> None:
        warnings.append(cannot_list(exc.filename, exc))

    for dirpath, _dirs, files in os.walk(root, onerror=unlisted):
        if walked is not None:
            walked.append(stamp(Path(dirpath)))
        if files:
            leaves.append(Path(dirpath))
    return sorted(leaves)
