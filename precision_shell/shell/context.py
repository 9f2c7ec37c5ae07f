"""What every command handler gets: the workspace (opened lazily), settings and the mode.

The index follows the files: the first use of the workspace in each command checks (a few
stats) whether what it was built from changed, and if so re-reads just the changed pieces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from precision_shell.errors import PrecisionError
from precision_shell.progress import ProgressFactory, ProgressLabels, ProgressSink
from precision_shell.settings import Settings
from precision_shell.shell.dispatcher import write_traceback_log
from precision_shell.workspace.workspace import Workspace

if TYPE_CHECKING:
    from precision_shell.foreign.workspace import ForeignWorkspace


@dataclass
class ShellContext:
    workspace_path: Path
    settings: Settings
    interactive: bool = False
    use_cache: bool = True
    # Live progress for long commands (vc); set by the REPL, None (quiet) in script mode.
    progress_factory: ProgressFactory | None = None
    # `precision-shell DIR_OR_FILE` on MegEngine / SigmaStar dumps: what was given (opened
    # lazily as `foreign`); `workspace_path` is then the dir our outputs go under.
    foreign_path: Path | None = None
    _foreign: ForeignWorkspace | None = field(default=None, repr=False)
    _workspace: Workspace | None = field(default=None, repr=False)
    _open_error: str | None = field(default=None, repr=False)
    _check_pending: bool = field(default=False, repr=False)
    _warned: set[str] = field(default_factory=set, repr=False)  # warnings already shown

    @property
    def workspace(self) -> Workspace:
        """The workspace index, opened on first use (a bad path is reported once per use),
        and brought up to date on the first use in each command."""
        if self.foreign_path is not None:
            raise PrecisionError(
                f"{self.foreign_path}: foreign dumps, not an Ascend workspace (precision_data/);"
                " here: ls, ni, pt, cp, dc, vc, ac -c"
            )
        if self._workspace is None:
            self._workspace = Workspace.open(self.workspace_path, use_cache=self.use_cache)
            self._check_pending = False
        elif self._check_pending:
            self._check_pending = False
            if self._workspace.is_stale():
                self._workspace = Workspace.open(
                    self.workspace_path, use_cache=self.use_cache, previous=self._workspace
                )
        return self._workspace

    @property
    def foreign(self) -> ForeignWorkspace | None:
        """The MegEngine / SigmaStar dumps opened (first use reads them), or None for an Ascend
        workspace. A malformed dump is a PrecisionError on each use."""
        if self.foreign_path is None:
            return None
        if self._foreign is None:
            from precision_shell.foreign.workspace import open_foreign_workspace

            opened = open_foreign_workspace(self.foreign_path)
            if opened is None:
                raise PrecisionError(f"{self.foreign_path}: no MegEngine or SigmaStar dump here")
            self._foreign = opened
        return self._foreign

    def compare_results(self) -> Path:
        """Where `vc` puts its results and `vcs`/`report` look for the newest: the
        workspace's `temp/vector_compare/`, or under the opened foreign dumps' root."""
        foreign = self.foreign
        if foreign is not None:
            return foreign.root / "precision_data" / "temp" / "vector_compare"
        return self.workspace.output_dir("vector_compare")

    def new_warnings(self) -> list[str]:
        """The open workspace's warnings not shown yet in this session (then marked shown):
        the index's when it was opened or brought up to date, and those a command added."""
        if self._workspace is None:
            return []
        new = [w for w in dict.fromkeys(self._workspace.warnings) if w not in self._warned]
        self._warned.update(new)
        return new

    def begin_command(self) -> None:
        """Called by the dispatcher before each command: the files may have changed since."""
        self._check_pending = True

    def reload(self) -> Workspace:
        """Read every file again, ignoring the index in memory and the on-disk cache."""
        if self.foreign_path is not None:
            self._foreign = None  # the dumps are read again on their next use
            return self.workspace  # says what the foreign dumps are
        self._workspace = None
        self._workspace = Workspace.open(self.workspace_path, use_cache=self.use_cache, reread=True)
        self._check_pending = False
        self._open_error = None
        self._warned.update(self._workspace.warnings)  # `reload` shows every one itself
        return self._workspace

    def forget_workspace(self) -> None:
        """Drop the opened index (after a command added files); the next use re-opens it,
        which reloads only what changed through the on-disk cache."""
        self._workspace = None
        self._open_error = None

    def foreign_if_open(self) -> ForeignWorkspace | None:
        return self._foreign

    def workspace_if_open(self) -> Workspace | None:
        return self._workspace

    def try_open(self) -> Workspace | None:
        """The workspace, or None with `open_error` set: one line, never a traceback."""
        try:
            return self.workspace
        except PrecisionError as exc:
            self._open_error = str(exc)
        except Exception as exc:  # the banner must not become a traceback; the log keeps it
            log = write_traceback_log(f"open {self.workspace_path}")
            first = (str(exc).strip().splitlines() or [""])[0]
            self._open_error = (
                f"{self.workspace_path}: cannot open the workspace: internal error: "
                f"{type(exc).__name__}: {first} (traceback in {log})"
            )
        return None

    @property
    def open_error(self) -> str | None:
        return self._open_error

    def progress(self, title: str, units: str = "files", items: str = "") -> ProgressSink:
        """A live display at the prompt, the quiet default elsewhere."""
        if self.progress_factory is None:
            return ProgressSink()
        return self.progress_factory(ProgressLabels(title, units, items))
