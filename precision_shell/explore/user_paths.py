"""Where a path the user typed points: the cwd first, then the workspace.

Users copy paths from the tool's own output, which are relative to `precision_data/`
(`npu/debug_0/...`, `tf/dump/...`) or to the dir holding it (`precision_data/temp/...`),
while the shell may have been started anywhere.
"""

from __future__ import annotations

from pathlib import Path


def find_user_file(text: str, workspace_root: Path | None) -> Path | None:
    """The existing file `text` names: as given (absolute, `~`, or relative to the cwd), else
    relative to `precision_data/`, else to the dir holding it; None when none exists."""
    given = Path(text).expanduser()
    candidates = [given]
    if not given.is_absolute() and workspace_root is not None:
        candidates += [workspace_root / given, workspace_root.parent / given]
    for candidate in candidates:
        try:
            if candidate.is_file():
                return candidate
        except OSError:  # a name too long for the file system is no file, not a crash
            continue
    return None
