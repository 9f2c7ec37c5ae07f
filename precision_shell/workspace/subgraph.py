"""The neighbourhood of an op: ops within N edges upstream and downstream (for `ni -s`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from precision_shell.workspace.graph_index import GraphIndex, OpRecord


@dataclass
class Subgraph:
    center: str
    depth: int
    nodes: dict[str, OpRecord]
    edges: list[tuple[str, int, str, int, bool]]  # (src, out idx, dst, in idx, is_control)
    node_marks: dict[str, str] = field(default_factory=dict)  # op -> "root_cause" etc.
    node_colors: dict[str, str] = field(default_factory=dict)  # op -> fill color
    title: str = ""  # the graph's label: whose dump and compare (`debug_0 rank 2 step 0`)


@dataclass(frozen=True)
class SubgraphFiles:
    gv: str
    svg: str | None
    nodes: int
    edges: int
    note: str | None = None  # why no svg (dot missing, dot failed)


def neighbourhood(graph: GraphIndex, center: str, depth: int) -> Subgraph:
    """Breadth-first over data and control edges, both directions, up to `depth` hops."""
    nodes: dict[str, OpRecord] = {}
    rec = graph.get(center)
    if rec is None:
        return Subgraph(center, depth, {}, [])
    nodes[center] = rec
    frontier = [center]
    for _ in range(depth):
        nxt = []
        for name in frontier:
            r = nodes[name]
            neighbours = [src for src, _ in r.data_inputs] + list(r.control_inputs)
            neighbours += [c.op for c in graph.consumers(name)]
            neighbours += graph.control_consumers(name)
            for other in neighbours:
                if other not in nodes:
                    other_rec = graph.get(other)
                    if other_rec is not None:
                        nodes[other] = other_rec
                        nxt.append(other)
        frontier = nxt
    edges = []
    for name, r in nodes.items():
        for k, (src, idx) in enumerate(r.data_inputs):
            if src in nodes:
                edges.append((src, idx, name, k, False))
        for src in r.control_inputs:
            if src in nodes:
                edges.append((src, -1, name, -1, True))
    return Subgraph(center, depth, nodes, edges)
