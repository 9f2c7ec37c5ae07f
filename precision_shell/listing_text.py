"""Names listed in one line of prose: the first few, then how many more."""

from __future__ import annotations

from collections.abc import Sequence


def some_of(names: Sequence[str], shown: int = 3) -> str:
    """`a, b, c and 2 more`: the first `shown` of `names`, and a count of the rest."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")
