"""Completion name sources drawn from the workspace index, built once per opened workspace."""

from __future__ import annotations

import os

from precision_shell.shell.completer import NameSource
from precision_shell.shell.context import ShellContext
from precision_shell.workspace.workspace import Workspace


class NameSources:
    def __init__(self, ctx: ShellContext) -> None:
        self.ctx = ctx
        self._for: Workspace | None = None
        self._ops: NameSource | None = None
        self._tensors: NameSource | None = None

    def _refresh(self) -> bool:
        ws = self.ctx.workspace_if_open()
        if ws is None:
            return False
        if ws is not self._for:
            self._for = ws
            # Original TF names too: `ni` and `ls -n` find a fused op by any of them.
            self._ops = NameSource(
                n
                for run in ws.runs
                for g in run.graphs
                for names in (g.names(), g.original_names())
                for n in names
            )
            files = [n for run in ws.runs for n in (run.all_dumps or run.dumps).file_names()]
            if ws.benchmark is not None:
                files.extend(os.path.basename(g.path) for g in ws.benchmark.newest.values())
            self._tensors = NameSource(files)
        return True

    def ops(self) -> NameSource | None:
        return self._ops if self._refresh() else None

    def tensors(self) -> NameSource | None:
        return self._tensors if self._refresh() else None
