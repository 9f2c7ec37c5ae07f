"""The progress protocol of every long job (compare, harvest, ...), owned by no domain.

A job says how much work there is (`start(units, bytes)`), reports each finished unit as a
`Tick`, and says when it is done (`stop()`). The shell supplies a live bar at the prompt and
the quiet default everywhere else; a job never knows which.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Tick:
    """One finished unit of a job (a dump file compared, a tensor harvested)."""

    units: int = 1
    bytes: int = 0  # bytes read or written for it, for the rate
    items: int = 0  # finer items inside it (rows of a compared file), 0 when none


def _ignore_start(units: int, total_bytes: int) -> None:
    return None


def _ignore_tick(tick: Tick) -> None:
    return None


def _ignore_stop() -> None:
    return None


@dataclass
class ProgressSink:
    """Where a job reports progress; every callback defaults to doing nothing."""

    start: Callable[[int, int], None] = _ignore_start
    advance: Callable[[Tick], None] = _ignore_tick
    stop: Callable[[], None] = _ignore_stop


@dataclass(frozen=True)
class ProgressLabels:
    """How a live display names a job's units and items (`files`/`tensors`)."""

    title: str
    units: str = "files"
    items: str = ""


ProgressFactory = Callable[[ProgressLabels], ProgressSink]
