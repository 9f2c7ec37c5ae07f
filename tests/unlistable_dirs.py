"""A dir that cannot be listed, as an unreadable one (root reads any dir, so chmod will not do)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def refuse_listing(monkeypatch: pytest.MonkeyPatch, refused: Path) -> None:
    """os.scandir of `refused` fails as an unreadable dir does."""
    real_scandir = os.scandir

    def scandir(path):
        if Path(path) == refused:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
