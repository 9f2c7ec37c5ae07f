"""Names listed in one line of prose: the first few, then how many more; a path as a
workspace's own."""

from __future__ import annotations

from collections.abc import Sequence


def some_of(names: Sequence[str], shown: int = 3) -> str:
    """`a, b, c and 2 more`: the first `shown` of `names`, and a count of the rest."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def in_workspace(path: str) -> str:
    """A path as `tf/dump/x.npy` when it is inside a workspace (`.../precision_data/`), else
    as given."""
    return path.partition("/precision_data/")[2] or path
