"""What every command handler gets: the workspace (opened lazily), settings and the mode."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from precision_shell.errors import PrecisionError
from precision_shell.progress import ProgressFactory, ProgressLabels, ProgressSink
from precision_shell.settings import Settings
from precision_shell.workspace.workspace import Workspace


@dataclass
class ShellContext:
    workspace_path: Path
    settings: Settings
    interactive: bool = False
    use_cache: bool = True
    # Live progress for long commands (vc); set by the REPL, None (quiet) in script mode.
    progress_factory: ProgressFactory | None = None
    _workspace: Workspace | None = field(default=None, repr=False)
    _open_error: str | None = field(default=None, repr=False)

    @property
    def workspace(self) -> Workspace:
        """The workspace index, opened on first use (a bad path is reported once per use)."""
        if self._workspace is None:
            self._workspace = Workspace.open(self.workspace_path, use_cache=self.use_cache)
        return self._workspace

    def forget_workspace(self) -> None:
        """Drop the opened index (after a command added files); the next use re-opens it,
        which reloads only what changed through the on-disk cache."""
        self._workspace = None
        self._open_error = None

    def workspace_if_open(self) -> Workspace | None:
        return self._workspace

    def try_open(self) -> Workspace | None:
        try:
            return self.workspace
        except PrecisionError as exc:
            self._open_error = str(exc)
            return None

    @property
    def open_error(self) -> str | None:
        return self._open_error

    def progress(self, title: str, units: str = "files", items: str = "") -> ProgressSink:
        """A live display at the prompt, the quiet default elsewhere."""
        if self.progress_factory is None:
            return ProgressSink()
        return self.progress_factory(ProgressLabels(title, units, items))
