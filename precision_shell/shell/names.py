"""Completion name sources drawn from the workspace index, built once per opened workspace
(on MegEngine / SigmaStar dumps: their op and var / tensor names)."""

from __future__ import annotations

import os

from precision_shell.shell.completer import NameSource
from precision_shell.shell.context import ShellContext


class NameSources:
    def __init__(self, ctx: ShellContext) -> None:
        self.ctx = ctx
        self._for: object | None = None
        self._ops: NameSource | None = None
        self._tensors: NameSource | None = None

    def _refresh(self) -> bool:
        foreign = self.ctx.foreign_if_open()
        if foreign is not None:
            if foreign is not self._for:
                self._for = foreign
                tensors = [t for run in foreign.runs for t in run.tensors]
                self._ops = NameSource([*(t.op_name for t in tensors), *(t.name for t in tensors)])
                self._tensors = NameSource(t.name for t in tensors)
            return True
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
            for benchmarks in ws.benchmark_indexes():
                files.extend(os.path.basename(g.path) for g in benchmarks.newest.values())
            self._tensors = NameSource(files)
        return True

    def ops(self) -> NameSource | None:
        return self._ops if self._refresh() else None

    def tensors(self) -> NameSource | None:
        return self._tensors if self._refresh() else None
