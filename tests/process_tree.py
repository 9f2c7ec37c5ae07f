"""The processes below a pid, and whether one still lives (Linux /proc): for tests that
check no process outlives the one that started it."""

from __future__ import annotations

import os
from pathlib import Path


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(ppid, state, start time) of a live process; None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), fields[0], int(fields[19])


def descendants(root: int) -> dict[int, int]:
    """pid -> start time of every process below `root`."""
    children: dict[int, list[int]] = {}
    starts: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st is not None:
                children.setdefault(st[0], []).append(int(entry))
                starts[int(entry)] = st[2]
    found: dict[int, int] = {}
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found[child] = starts[child]
            todo.append(child)
    return found


def alive(pid: int, start: int) -> bool:
    st = _stat(pid)
    # a zombie has ended; whether its new parent reaps it is not ours to decide
    return st is not None and st[2] == start and st[1] != "Z"
