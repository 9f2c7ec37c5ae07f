"""Shared fixtures: isolated XDG dirs for every test, and demo workspaces built by code."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory, monkeypatch):
    """No test reads or writes the real user's config, cache, state or history."""
    base = tmp_path_factory.getbasetemp() / "xdg"
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"):
        path = base / name.lower()
        path.mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv(name, str(path))


@pytest.fixture(scope="session")
def tiny_demo_pristine(tmp_path_factory):
    """A tiny demo workspace built once per session; copy it before changing anything."""
    from precision_shell.demo.builder import build_demo
    from precision_shell.demo.spec import DemoSpec

    root = tmp_path_factory.mktemp("tiny_demo")
    manifest = build_demo(root, DemoSpec(size="tiny"))
    return root, manifest


@pytest.fixture
def tiny_demo(tiny_demo_pristine, tmp_path):
    """A private copy of the tiny demo workspace: (root dir, manifest)."""
    root, manifest = tiny_demo_pristine
    copy = tmp_path / "ws"
    shutil.copytree(root, copy, symlinks=True)
    return copy, manifest


def rel(manifest_path: str, manifest_root: str, new_root: Path) -> Path:
    """Translate a path from the pristine demo to its copy."""
    return new_root / Path(manifest_path).relative_to(manifest_root)


@pytest.fixture(scope="module")
def tiny_demo_shared(tiny_demo_pristine, tmp_path_factory):
    """One copy of the tiny demo per test module, for tests that only write under temp/."""
    root, manifest = tiny_demo_pristine
    copy = tmp_path_factory.mktemp("tiny_demo_shared") / "ws"
    shutil.copytree(root, copy, symlinks=True)
    return copy, manifest
