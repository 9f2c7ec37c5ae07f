"""Settings: the packaged commented defaults merged with the user's file; flags win over both."""

from __future__ import annotations

import importlib.resources
import os
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from precision_shell.errors import FormatError, PrecisionError
from precision_shell.formats.bounded_read import read_bounded_text

USER_FILE_NAME = "config.toml"
MAX_SETTINGS_BYTES = 1 << 20  # a settings file is a few KB


def user_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "precision_shell" / USER_FILE_NAME


def _backend_problem(value: Any) -> str | None:
    from precision_shell.compare.pipeline.engine import BACKENDS  # its owner; only when set

    return None if value in BACKENDS else f"must be one of {', '.join(BACKENDS)}"


def _workers_problem(value: Any) -> str | None:
    return None if value >= 0 else "must be >= 0 (0 = one per CPU core)"


def _preview_problem(value: Any) -> str | None:
    return None if value >= 0 else "must be >= 0"


# Values a type alone does not rule out: each says what is wrong, or None.
_VALUE_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "parallelism.backend": _backend_problem,
    "parallelism.workers": _workers_problem,
    "display.preview": _preview_problem,
}


def _merge(base: dict[str, Any], override: dict[str, Any], source: str, prefix: str = "") -> None:
    for key, value in override.items():
        where = f"{prefix}{key}"
        if key not in base:
            raise PrecisionError(f"{source}: unknown setting {where!r}")
        if isinstance(base[key], dict):
            if not isinstance(value, dict):
                raise PrecisionError(f"{source}: {where!r} must be a table")
            _merge(base[key], value, source, where + ".")
        elif (
            isinstance(base[key], float)
            and isinstance(value, int | float)
            and not isinstance(value, bool)
        ):
            base[key] = float(value)
        elif type(value) is not type(base[key]):
            raise PrecisionError(
                f"{source}: {where!r} must be {type(base[key]).__name__}, got {value!r}"
            )
        else:
            check = _VALUE_CHECKS.get(where)
            problem = check(value) if check is not None else None
            if problem is not None:
                raise PrecisionError(f"{source}: {where!r} {problem}, got {value!r}")
            base[key] = value


class Settings:
    """Nested settings with dotted access: `settings.get("thresholds.cosine")`."""

    def __init__(self, data: dict[str, Any], sources: list[str]) -> None:
        self.data = data
        self.sources = sources

    @classmethod
    def load(cls, user_file: Path | None = None) -> Settings:
        text = (
            importlib.resources.files("precision_shell.defaults")
            .joinpath("default.toml")
            .read_text()
        )
        data = tomllib.loads(text)
        sources = ["defaults"]
        path = user_file or user_config_path()
        if path.is_file():
            try:
                text = read_bounded_text(path, MAX_SETTINGS_BYTES)
            except FormatError as exc:  # a FIFO, a device, a huge file
                raise PrecisionError(f"{exc}; not read as the settings file") from None
            except (OSError, UnicodeDecodeError) as exc:
                raise PrecisionError(f"{path}: cannot read the settings file: {exc}") from None
            try:
                user = tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:
                raise PrecisionError(f"{path}: not valid TOML: {exc}") from None
            _merge(data, user, str(path))
            sources.append(str(path))
        return cls(data, sources)

    def get(self, dotted: str) -> Any:
        node: Any = self.data
        for part in dotted.split("."):
            node = node[part]
        return node

    def override(self, dotted: str, value: Any) -> None:
        """A command-line flag wins over both files."""
        *parents, last = dotted.split(".")
        node = self.data
        for part in parents:
            node = node[part]
        node[last] = value
