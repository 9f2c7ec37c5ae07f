"""Bounds on what JSON files may hold, checked before and after Python's decoder sees them.

Python's `json` recurses once per nesting level and raises RecursionError near 1,000 levels;
it also turns `\\ud800` escapes into lone surrogates, which no UTF-8 terminal, file or protobuf
string can take. The JSON readers (`ge.json_graph`, `fusion_result`) measure the nesting
first and replace lone surrogates in what they keep.
"""

from __future__ import annotations

import re

import numpy as np

# Strings (whose brackets do not nest), runs of anything else but brackets and quotes, and
# the quote of an unterminated string.
_STRING_OR_NOT_A_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[^\[\]{}"]+|"', re.DOTALL)
_DEPTH_STEP = np.zeros(256, dtype=np.int8)
_DEPTH_STEP[[ord("["), ord("{")]] = 1
_DEPTH_STEP[[ord("]"), ord("}")]] = -1
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def json_nesting_depth(text: str) -> int:
    """The deepest bracket nesting of a JSON text, not counting brackets inside strings.

    Runs at C speed (one regex pass and a cumulative sum), so it costs little next to the
    decoding it guards. Unbalanced or broken text gives some depth; the decoder then says
    what is broken.
    """
    brackets = _STRING_OR_NOT_A_BRACKET.sub("", text)
    if not brackets:
        return 0
    steps = _DEPTH_STEP[np.frombuffer(brackets.encode("ascii"), dtype=np.uint8)]
    return int(np.cumsum(steps, dtype=np.int64).max())


def nesting_problem(text: str, limit: int) -> str | None:
    """Why `text` nests too deep to decode, or None."""
    depth = json_nesting_depth(text)
    if depth > limit:
        return f"JSON nested {depth} levels deep; at most {limit} are read"
    return None


def without_lone_surrogates(text: str) -> str:
    """`text` with each lone surrogate (from a `\\ud800`-style escape) replaced by U+FFFD."""
    if text.isascii():
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)
