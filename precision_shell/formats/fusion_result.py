"""GE's `fusion_result.json`: how often each graph-fusion and UB-fusion pass matched and
took effect, per session graph.

Two shapes exist in the wild, and both are read:
- current CANN (documented with `export_compile_stat`): one JSON object,
  `{"session_and_graph_id_<session>_<graph>": {"graph_fusion": {PASS: COUNTS},
  "ub_fusion": {PASS: COUNTS}}, ...}`;
- older GE (`FusionStatisticWriter`): one object per graph,
  `{"graph_fusion": {...}, "session_and_graph_id": "<session>_<graph>", "ub_fusion": {...}}`,
  appended to the file one after another, so the file is several JSON documents in a row
  (precision_tool splits them by brace counting; some builds say `graphId`).
COUNTS is `{"effect_times": "1", "match_times": "2"}` (numbers as strings; UB fusion may add
`"repository_hit_times"`). The graph id (`"0_1"`) matches the GE graph attribute
`_session_graph_id`. The writer writes the current shape.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precision_shell.errors import FormatError
from precision_shell.formats.bounded_read import read_bounded_text
from precision_shell.formats.json_limits import nesting_problem, without_lone_surrogates

FUSION_KINDS = ("graph_fusion", "ub_fusion")
_GRAPH_KEY_PREFIX = "session_and_graph_id_"
_GRAPH_ID_FIELDS = ("session_and_graph_id", "graphId")
_COUNT_FIELDS = ("match_times", "effect_times")
# GE writes each count from a 64-bit int; more is not a count.
_MAX_COUNT = 2**63 - 1
_MAX_COUNT_DIGITS = 40
# Real files nest four levels (file, graph, kind, pass, counts); newer keys may add a few.
MAX_JSON_DEPTH = 64
# A pass is ~100 bytes: 256 MiB is millions of them; a larger file is no fusion result.
MAX_FUSION_RESULT_BYTES = 256 << 20


@dataclass(frozen=True)
class FusionPass:
    """The statistics of one fusion pass in one graph."""

    graph_id: str
    kind: str  # "graph_fusion" | "ub_fusion"
    name: str
    match_times: int
    effect_times: int
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. repository_hit_times


def _json_documents(path: str | Path, text: str) -> Iterator[Any]:
    problem = nesting_problem(text, MAX_JSON_DEPTH)
    if problem is not None:
        raise FormatError(path, problem)
    decoder = json.JSONDecoder()
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            return
        try:
            document, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            raise FormatError(
                path, f"broken JSON at line {error.lineno} column {error.colno}: {error.msg}"
            ) from None
        except ValueError:  # Python's int() refuses numbers of over 4,300 digits
            raise FormatError(
                path, "a number has more than 4300 digits; no count is so large"
            ) from None
        yield document


def _count(path: str | Path, where: str, counts: dict[str, Any], name: str) -> int:
    value = counts.get(name, 0)
    try:
        # Longer digit strings are past any count (and int() refuses 4,300 digits).
        number = -1 if isinstance(value, str) and len(value) > _MAX_COUNT_DIGITS else int(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: a float inf
        number = -1
    if isinstance(value, bool) or not 0 <= number <= _MAX_COUNT:
        shown = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:40]}..."
        raise FormatError(path, f"{where}: {name} {shown} is not a count")
    return number


def _text(value: str) -> str:
    return without_lone_surrogates(value)


def _extra_value(value: Any) -> Any:
    """An extra count as kept: scalars as they are (text without lone surrogates); anything
    else as its compact JSON text."""
    if isinstance(value, str):
        return _text(value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return _text(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _graph_passes(path: str | Path, graph_id: str, graph: dict[str, Any]) -> Iterator[FusionPass]:
    for kind in FUSION_KINDS:
        passes = graph.get(kind) or {}
        if not isinstance(passes, dict):
            raise FormatError(path, f"graph {graph_id}: {kind} is not an object")
        for raw_name, counts in passes.items():
            name = _text(raw_name)
            where = f"graph {graph_id} {kind} pass {name}"
            if not isinstance(counts, dict):
                raise FormatError(path, f"{where}: expected an object of counts")
            yield FusionPass(
                graph_id=graph_id,
                kind=kind,
                name=name,
                match_times=_count(path, where, counts, "match_times"),
                effect_times=_count(path, where, counts, "effect_times"),
                extra={
                    _text(key): _extra_value(value)
                    for key, value in counts.items()
                    if key not in _COUNT_FIELDS
                },
            )


def read_fusion_result(path: str | Path) -> list[FusionPass]:
    """All fusion passes of a `fusion_result.json`, in file order (graph, kind, pass)."""
    try:
        text = read_bounded_text(path, MAX_FUSION_RESULT_BYTES)
    except OSError as error:
        raise FormatError(path, f"cannot read: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise FormatError(path, f"not UTF-8 text: {error.reason} at byte {error.start}") from None
    passes: list[FusionPass] = []
    for number, document in enumerate(_json_documents(path, text)):
        if not isinstance(document, dict):
            raise FormatError(path, f"JSON document {number} is not an object")
        if any(kind in document for kind in FUSION_KINDS):  # older GE: one graph per document
            graph_id = next(
                (_text(str(document[key])) for key in _GRAPH_ID_FIELDS if key in document), ""
            )
            passes.extend(_graph_passes(path, graph_id, document))
            continue
        for key, graph in document.items():
            if not isinstance(graph, dict):
                continue  # not a graph entry; newer files may add such keys
            graph_id = _text(key.removeprefix(_GRAPH_KEY_PREFIX))
            passes.extend(_graph_passes(path, graph_id, graph))
    return passes


def write_fusion_result(path: str | Path, graph_id: str, passes: Sequence[FusionPass]) -> None:
    """Write `passes` as graph `graph_id` of a `fusion_result.json` in the current shape.

    Other graphs already in the file are kept; an earlier entry of `graph_id` is replaced.
    """
    path = Path(path)
    existing = read_fusion_result(path) if path.exists() else []
    kept = [(p.graph_id, p) for p in existing if p.graph_id != graph_id]
    graphs: dict[str, dict[str, dict[str, dict[str, str]]]] = {}
    for pass_graph_id, fusion_pass in [*kept, *((graph_id, p) for p in passes)]:
        if fusion_pass.kind not in FUSION_KINDS:
            raise ValueError(f"fusion kind {fusion_pass.kind!r} is not one of {FUSION_KINDS}")
        graph = graphs.setdefault(_GRAPH_KEY_PREFIX + pass_graph_id, {})
        # GE writes every value as a string (std::to_string).
        graph.setdefault(fusion_pass.kind, {})[fusion_pass.name] = {
            "effect_times": str(fusion_pass.effect_times),
            "match_times": str(fusion_pass.match_times),
            **{key: str(value) for key, value in fusion_pass.extra.items()},
        }
    path.write_text(json.dumps(graphs, indent=4, sort_keys=True) + "\n", encoding="utf-8")
