"""The op index of one GE graph dump: ops by name, substring, type, fusion pass and kernel.

The index keeps a compact, columnar record per op (what `ls`, completion and the matcher need)
and the full `OpDef` of each op as a pickled blob that is only unpickled when asked for
(`ni`, compare). That keeps a 50k-op index small and quick to load from the on-disk cache.
"""

from __future__ import annotations

import pickle
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass

from precision_shell.formats.dump_names import sanitize_dump_name
from precision_shell.formats.ge.graph import ModelDef, OpDef

# ops an upstream walk visits at most: a bound on a crafted graph, far above real fan-in
_WALK_LIMIT = 10_000

# Bump when the record layout changes, so old caches are rebuilt rather than misread.
RECORD_VERSION = 2


@dataclass(frozen=True, slots=True)
class OpRecord:
    """What the index knows about an op without unpickling its full definition."""

    position: int  # execution order within the model (by id, then file order)
    name: str
    type: str
    id: int
    graph: str
    pass_name: str | None
    kernel_name: str | None
    original_names: tuple[str, ...] | None  # None: attr absent; (): no benchmark counterpart
    data_inputs: tuple[tuple[str, int], ...]
    control_inputs: tuple[str, ...]
    output_origins: tuple[tuple[str | None, int], ...]  # per output desc: (origin name, index)
    l1_group: int | None  # `_L1_fusion_sub_graph_no`


@dataclass(frozen=True, slots=True)
class Consumer:
    """An edge from a producer's output to a consumer's input."""

    op: str
    input_index: int
    output_index: int


def _record_tuple(op: OpDef, graph: str) -> tuple:
    originals = op.original_op_names
    origins = []
    for k, desc in enumerate(op.output_descs):
        idx = desc.origin_output_index
        origins.append((desc.origin_name, k if idx is None else idx))
    return (
        op.name,
        op.type,
        op.id,
        graph,
        op.pass_name,
        op.kernel_name,
        tuple(originals) if originals is not None else None,
        tuple(op.data_inputs),
        tuple(op.control_inputs),
        tuple(origins),
        op.l1_fusion_group,
    )


class GraphIndex:
    """Ops of one ModelDef (its root graph and its subgraphs) in execution order."""

    def __init__(self, source: str, graph_names: list[str], rows: list[tuple], blobs: list[bytes]):
        self.source = source
        self.graph_names = graph_names
        self._rows = rows
        self._blobs = blobs
        self._full: dict[int, OpDef] = {}
        self.by_name: dict[str, int] = {}
        self.duplicates: list[str] = []
        for i, row in enumerate(rows):
            if row[0] in self.by_name:
                self.duplicates.append(row[0])
            else:
                self.by_name[row[0]] = i
        self._by_type: dict[str, list[int]] | None = None
        self._by_sanitized: dict[str, int] | None = None
        self._by_original: dict[str, list[int]] | None = None
        self._consumers: dict[str, list[Consumer]] | None = None
        self._control_consumers: dict[str, list[str]] | None = None
        self._lower: dict[int, list[str | None]] = {}

    # -- construction and persistence -------------------------------------------------
    @classmethod
    def from_model(cls, model: ModelDef, source: str) -> GraphIndex:
        # Root graph first, subgraphs after it (ids restart per graph); by id, then file order.
        entries: list[tuple[int, int, int, OpDef, str]] = []
        for g, graph in enumerate(model.graphs):
            for order, op in enumerate(graph.ops):
                entries.append((g, op.id, order, op, graph.name))
        entries.sort(key=lambda e: e[:3])
        rows = [_record_tuple(op, graph) for *_, op, graph in entries]
        blobs = [pickle.dumps(op, protocol=pickle.HIGHEST_PROTOCOL) for *_, op, _ in entries]
        return cls(source, [g.name for g in model.graphs], rows, blobs)

    def to_state(self) -> dict:
        return {
            "version": RECORD_VERSION,
            "source": self.source,
            "graphs": self.graph_names,
            "rows": self._rows,
            "blobs": self._blobs,
        }

    @classmethod
    def from_state(cls, state: dict) -> GraphIndex:
        return cls(state["source"], state["graphs"], state["rows"], state["blobs"])

    # -- lookups ------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, name: str) -> bool:
        return name in self.by_name

    @property
    def root_graph(self) -> str:
        return self.graph_names[0] if self.graph_names else ""

    def record(self, i: int) -> OpRecord:
        return OpRecord(i, *self._rows[i])

    def get(self, name: str) -> OpRecord | None:
        i = self.by_name.get(name)
        return None if i is None else self.record(i)

    def op(self, name: str) -> OpDef | None:
        """The full op definition (descs, every attribute), unpickled on first use."""
        i = self.by_name.get(name)
        if i is None:
            return None
        full = self._full.get(i)
        if full is None:
            full = self._full[i] = pickle.loads(self._blobs[i])
        return full

    def records(self) -> Iterator[OpRecord]:
        for i in range(len(self._rows)):
            yield self.record(i)

    def names(self) -> list[str]:
        return [row[0] for row in self._rows]

    def search(
        self,
        name: str | None = None,
        op_type: str | None = None,
        pass_name: str | None = None,
        kernel: str | None = None,
        graph: str | None = None,
    ) -> list[OpRecord]:
        """Ops matching every given filter; each filter is a case-insensitive substring.

        `name` also matches the op's original (benchmark) names: a fused op is found by the
        TF name of any op fused into it."""
        filters = [
            (self._lower_column(column), value.lower())
            for column, value in ((1, op_type), (3, graph), (4, pass_name), (5, kernel))
            if value
        ]
        if name:
            filters.insert(0, (self._lower_names_and_originals(), name.lower()))
        if not filters:
            return list(self.records())
        (first, needle), rest = filters[0], filters[1:]
        hits = [i for i, text in enumerate(first) if text is not None and needle in text]
        for column, value in rest:
            hits = [i for i in hits if (cell := column[i]) is not None and value in cell]
        return [self.record(i) for i in hits]

    def _lower_names_and_originals(self) -> list[str | None]:
        """Per op, its lower-cased name and original names joined by NUL, which no name holds:
        a typed substring matches within one name, never across two."""
        cached = self._lower.get(-1)
        if cached is None:
            cached = ["\0".join((row[0], *(row[6] or ()))).lower() for row in self._rows]
            self._lower[-1] = cached
        return cached

    def by_original_name(self, name: str) -> list[OpRecord]:
        """Ops whose `_datadump_original_op_names` hold `name` exactly (the ops it was fused
        into, or the parts of a split op), in execution order."""
        return [self.record(i) for i in self._original_table().get(name, [])]

    def original_names(self) -> list[str]:
        """Every original (TF) name some op holds, once each (for completion)."""
        return list(self._original_table())

    def _original_table(self) -> dict[str, list[int]]:
        if self._by_original is None:
            table: dict[str, list[int]] = defaultdict(list)
            for i, row in enumerate(self._rows):
                for original in row[6] or ():
                    table[original].append(i)
            self._by_original = dict(table)
        return self._by_original

    def _lower_column(self, column: int) -> list[str | None]:
        """A lower-cased copy of one record column, made once, for substring filters."""
        cached = self._lower.get(column)
        if cached is None:
            cached = [None if row[column] is None else row[column].lower() for row in self._rows]
            self._lower[column] = cached
        return cached

    def names_containing(self, text: str, limit: int | None = None) -> list[str]:
        """Op names holding `text` (case-insensitive), prefix matches first."""
        needle = text.lower()
        prefix, inner = [], []
        for i, low in enumerate(self._lower_column(0)):
            assert low is not None  # column 0, the op name, is never None
            pos = low.find(needle)
            if pos == 0:
                prefix.append(self._rows[i][0])
            elif pos > 0:
                inner.append(self._rows[i][0])
            if limit is not None and len(prefix) >= limit:
                break
        found = prefix + inner
        return found[:limit] if limit is not None else found

    def by_type(self) -> dict[str, list[int]]:
        if self._by_type is None:
            groups: dict[str, list[int]] = defaultdict(list)
            for i, row in enumerate(self._rows):
                groups[row[1]].append(i)
            self._by_type = dict(groups)
        return self._by_type

    def type_counts(self) -> dict[str, int]:
        return {t: len(ix) for t, ix in sorted(self.by_type().items())}

    def by_dump_name(self, sanitized: str) -> OpRecord | None:
        """The op whose name, sanitized as dump file names are, equals `sanitized`."""
        if self._by_sanitized is None:
            self._by_sanitized = {}
            for i, row in enumerate(self._rows):
                self._by_sanitized.setdefault(sanitize_dump_name(row[0]), i)
        found = self._by_sanitized.get(sanitized)
        return None if found is None else self.record(found)

    def producers(self, name: str) -> list[tuple[str, int]]:
        rec = self.get(name)
        return list(rec.data_inputs) if rec else []

    def nearest_producers(self, name: str, among: Collection[str]) -> list[str]:
        """The ops of `among` nearest upstream of `name`: its producers, and through those not
        in `among` (a task-less Reshape, a Data op) theirs, to the first ones that are."""
        found: list[str] = []
        seen = {name}
        stack = [name]
        while stack and len(seen) < _WALK_LIMIT:
            for source, _k in self.producers(stack.pop()):
                if source in seen:
                    continue
                seen.add(source)
                if source in among:
                    found.append(source)
                else:
                    stack.append(source)
        return found

    def consumers(self, name: str) -> list[Consumer]:
        if self._consumers is None:
            table: dict[str, list[Consumer]] = defaultdict(list)
            for row in self._rows:
                for k, (src, idx) in enumerate(row[7]):
                    table[src].append(Consumer(row[0], k, idx))
            self._consumers = dict(table)
        return self._consumers.get(name, [])

    def control_consumers(self, name: str) -> list[str]:
        if self._control_consumers is None:
            table: dict[str, list[str]] = defaultdict(list)
            for row in self._rows:
                for src in row[8]:
                    table[src].append(row[0])
            self._control_consumers = dict(table)
        return self._control_consumers.get(name, [])

    def in_order(self, names: Iterable[str]) -> list[OpRecord]:
        recs = [self.get(n) for n in names]
        return sorted((r for r in recs if r is not None), key=lambda r: r.position)
