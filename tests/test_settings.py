"""Settings: packaged defaults, the user's file under XDG_CONFIG_HOME, and its errors."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from precision_shell.errors import PrecisionError
from precision_shell.settings import Settings, user_config_path


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    return tmp_path


def _user_file(config_home: Path, text: str | bytes) -> Path:
    path = config_home / "precision_shell" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_defaults_load(config_home: Path) -> None:
    settings = Settings.load()
    assert settings.sources == ["defaults"]
    assert set(settings.data) == {"thresholds", "parallelism", "display"}
    assert settings.get("thresholds.cosine") == 0.98
    assert settings.get("thresholds.relative_euclidean_distance") == 0.05
    assert settings.get("thresholds.max_relative_error") == math.inf
    assert settings.get("thresholds.fp16_overflow") == 65504.0
    assert settings.get("parallelism.workers") == 0
    assert settings.get("display.preview") == 20


def test_user_file_path_follows_xdg_config_home(config_home: Path) -> None:
    assert user_config_path() == config_home / "precision_shell" / "config.toml"


def test_user_file_overrides_one_key_and_keeps_the_rest(config_home: Path) -> None:
    path = _user_file(config_home, "[thresholds]\ncosine = 0.99\n")
    settings = Settings.load()
    assert settings.get("thresholds.cosine") == 0.99
    assert settings.get("thresholds.max_relative_error") == math.inf
    assert settings.get("display.preview") == 20
    assert settings.sources == ["defaults", str(path)]


def test_an_integer_is_accepted_for_a_float_setting(config_home: Path) -> None:
    _user_file(config_home, "[thresholds]\ncosine = 1\n")
    value = Settings.load().get("thresholds.cosine")
    assert value == 1.0 and isinstance(value, float)


def test_flag_override_wins(config_home: Path) -> None:
    _user_file(config_home, "[thresholds]\ncosine = 0.99\n")
    settings = Settings.load()
    settings.override("thresholds.cosine", 0.5)
    assert settings.get("thresholds.cosine") == 0.5


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[thresholds]\ncosin = 0.9\n", "unknown setting 'thresholds.cosin'"),
        ("[nope]\nx = 1\n", "unknown setting 'nope'"),
        ('[parallelism]\nworkers = "four"\n', "'parallelism.workers' must be int, got 'four'"),
        ("[parallelism]\nworkers = 1.5\n", "'parallelism.workers' must be int, got 1.5"),
        ("[thresholds]\ncosine = true\n", "'thresholds.cosine' must be float, got True"),
        ("[parallelism]\nbackend = 3\n", "'parallelism.backend' must be str, got 3"),
        ("thresholds = 3\n", "'thresholds' must be a table"),
        (
            '[parallelism]\nbackend = "bogus"\n',
            "'parallelism.backend' must be one of auto, threads, processes, got 'bogus'",
        ),
        (
            "[parallelism]\nworkers = -3\n",
            "'parallelism.workers' must be >= 0 (0 = one per CPU core), got -3",
        ),
        ("[display]\npreview = -5\n", "'display.preview' must be >= 0, got -5"),
        ("[thresholds.cosine]\nx = 1\n", "'thresholds.cosine' must be float, got {'x': 1}"),
    ],
)
def test_bad_setting_names_file_and_key(config_home: Path, text: str, problem: str) -> None:
    path = _user_file(config_home, text)
    with pytest.raises(PrecisionError) as err:
        Settings.load()
    assert str(err.value) == f"{path}: {problem}"


def test_broken_toml_names_the_file_and_line(config_home: Path) -> None:
    path = _user_file(config_home, "[thresholds]\ncosine = \n")
    with pytest.raises(PrecisionError) as err:
        Settings.load()
    assert str(err.value).startswith(f"{path}: not valid TOML: ")
    assert "line 2" in str(err.value)


def test_unreadable_file_is_a_precision_error(config_home: Path) -> None:
    path = _user_file(config_home, b"[thresholds]\ncosine = 0.9 # \xff\xfe\n")
    with pytest.raises(PrecisionError) as err:
        Settings.load()
    assert str(err.value).startswith(f"{path}: cannot read the settings file: ")
    assert "utf-8" in str(err.value)


def test_explicit_user_file_argument(tmp_path: Path, config_home: Path) -> None:
    _user_file(config_home, "[display]\npreview = 7\n")
    other = tmp_path / "other.toml"
    other.write_text("[display]\npreview = 9\n", encoding="utf-8")
    assert Settings.load(other).get("display.preview") == 9
