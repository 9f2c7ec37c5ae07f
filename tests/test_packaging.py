"""Packaging: every package dir is listed in setup.cfg, and a built wheel carries the defaults."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]


def _setup_cfg() -> configparser.ConfigParser:
    cfg = configparser.ConfigParser()
    cfg.read(PROJECT / "setup.cfg", encoding="utf-8")
    return cfg


def _package_dirs() -> set[str]:
    root = PROJECT / "precision_shell"
    return {
        ".".join(init.parent.relative_to(PROJECT).parts)
        for init in root.rglob("__init__.py")
        if "__pycache__" not in init.parts
    }


def _listed_packages() -> set[str]:
    return set(_setup_cfg()["options"]["packages"].split())


def test_every_package_dir_is_listed_in_setup_cfg() -> None:
    dirs = _package_dirs()
    assert "precision_shell.shell" in dirs
    assert dirs - _listed_packages() == set()


def test_listed_packages_exist() -> None:
    listed = _listed_packages() - {"precision_shell.defaults"}
    assert listed - _package_dirs() == set()


def test_defaults_package_maps_to_config_dir() -> None:
    options = _setup_cfg()["options"]
    assert "precision_shell.defaults" in _listed_packages()
    assert options["package_dir"].split() == ["precision_shell.defaults", "=", "config"]
    assert (PROJECT / "config" / "__init__.py").is_file()
    assert (PROJECT / "config" / "default.toml").is_file()
    assert _setup_cfg()["options.package_data"]["precision_shell.defaults"].strip() == "*.toml"


def test_wheel_contains_every_package_and_the_default_config(tmp_path: Path) -> None:
    # Build from a copy: pip builds in-tree and would leave build/ and egg-info in the project.
    src = tmp_path / "src"
    src.mkdir()
    for name in ("setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy2(PROJECT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(PROJECT / "config", src / "config", ignore=ignore)
    shutil.copytree(PROJECT / "precision_shell", src / "precision_shell", ignore=ignore)
    out = tmp_path / "wheels"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = out.glob("precision_shell-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        default_toml = archive.read("precision_shell/defaults/default.toml")
    assert default_toml == (PROJECT / "config" / "default.toml").read_bytes()
    for package in _package_dirs():
        assert f"{package.replace('.', '/')}/__init__.py" in names
    assert "precision_shell/shell/dispatcher.py" in names
