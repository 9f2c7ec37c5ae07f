"""Which (rank, step) dump dir a dump file's path lies in, and whether a `--rank`/`--step`
given beside the path names another: one rule for every command that takes a path (QA: `ni
PATH` of rank 2 step 5's file read rank 0 step 0's file of that name; `pt PATH --rank 0`
read the path's file and dropped the flag without a word)."""

from __future__ import annotations

from precision_shell.workspace.workspace import DumpSlice, Workspace


def dump_slice_at(ws: Workspace, path: str) -> DumpSlice | None:
    """The (rank, step) dump dir holding the dump file at `path`, when its run has several;
    None for a run of one dir, or a path that is no dump file of a run."""
    for run in ws.runs:
        found = run.file_at(path)
        if found is not None:
            return found[0] if len(run.slices) > 1 else None
    return None


def conflicting_flag(name: str, where: DumpSlice, rank: str | None, step: str | None) -> str | None:
    """`X is a dump file of rank 2 step 5, not --rank 0`: the first of `--rank`/`--step`
    given that names another dir than `where`, the file's; None when they agree or were not
    given."""
    for flag, given, own in (("rank", rank, where.rank), ("step", step, where.step)):
        if given is not None and str(given) != own:
            return f"{name} is a dump file of {where.label}, not --{flag} {given}"
    return None
