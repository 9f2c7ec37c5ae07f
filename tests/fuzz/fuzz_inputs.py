"""Shared pieces of the reader fuzz tests: byte and text mutations of valid seed files, the
settings that keep every campaign deterministic and bounded, and the property itself.

The property of every reader: for any input it returns a value or raises `PrecisionError`
(one line naming the file); nothing else escapes. The campaigns are derandomized, so CI runs
the same examples every time, and each has a fixed example budget (no clock).
"""

from __future__ import annotations

import pickle
import struct
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from precision_shell.errors import PrecisionError

T = TypeVar("T")

# The autouse XDG fixture is function-scoped but the same for every example.
FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def budget(examples: int) -> settings:
    """The fuzz settings with an example budget."""
    return settings(FUZZ, max_examples=examples)


# Integers at the edges readers get wrong: sizes, counts and dims near the type limits.
EDGE_INTEGERS = (
    0,
    1,
    7,
    8,
    64,
    65,
    2**31 - 1,
    2**31,
    2**32 - 1,
    2**32,
    2**63 - 1,
    2**63,
    2**64 - 1,
)

# Text spellings that broke the text readers: Python's 4,300-digit limit, ints past int64,
# floats past double, lone surrogate escapes, deep nesting, stray quotes and escapes.
EDGE_TOKENS = (
    "1" * 4301,
    "-" + "9" * 4400,
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551616",
    "1e400",
    "-1e400",
    "nan",
    "inf",
    '"\\ud800"',
    '"\\udfff\\ud800"',
    "\\ud800",
    '"\\x"',
    "'",
    '"',
    "{" * 300,
    "[" * 300,
    "}" * 3,
    "]",
    "\x00",
    "\udc80",
    "-0",
    "0x7fffffffffffffffff",
    "true",
    "null",
    ":",
    ",",
)


def varint(value: int) -> bytes:
    """`value` as a protobuf varint."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


@st.composite
def mutated_bytes(draw: st.DrawFn, seeds: Sequence[bytes], max_steps: int = 4) -> bytes:
    """One of `seeds` after 1..max_steps byte mutations (flip, set, truncate, insert, delete,
    splice, an edge integer as u32 / u64 / varint)."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, max_steps))):
        at = draw(st.integers(0, len(data)))
        step = draw(
            st.sampled_from(
                ["flip", "set", "truncate", "insert", "delete", "splice", "u64", "u32", "varint"]
            )
        )
        if step == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif step == "set" and at < len(data):
            data[at] = draw(st.sampled_from([0, 1, 0x7F, 0x80, 0xFF, draw(st.integers(0, 255))]))
        elif step == "truncate":
            del data[at:]
        elif step == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif step == "delete":
            del data[at : at + draw(st.integers(1, 64))]
        elif step == "splice":
            other = draw(st.sampled_from(seeds))
            start = draw(st.integers(0, len(other)))
            data[at:at] = other[start : start + draw(st.integers(1, 256))]
        elif step == "u64":
            value = draw(st.sampled_from(EDGE_INTEGERS)) % 2**64
            data[at : at + 8] = struct.pack("<Q", value)
        elif step == "u32":
            value = draw(st.sampled_from(EDGE_INTEGERS)) % 2**32
            data[at : at + 4] = struct.pack("<I", value)
        else:
            data[at:at] = varint(draw(st.sampled_from(EDGE_INTEGERS)) % 2**64)
    return bytes(data)


@st.composite
def mutated_text(draw: st.DrawFn, seeds: Sequence[str], max_steps: int = 4) -> str:
    """One of `seeds` after 1..max_steps text mutations (an edge token inserted or replacing a
    token, characters inserted or deleted, truncation, a splice of another seed)."""
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, max_steps))):
        at = draw(st.integers(0, len(text)))
        step = draw(st.sampled_from(["token", "replace", "chars", "delete", "truncate", "splice"]))
        if step == "token":
            text = text[:at] + draw(st.sampled_from(EDGE_TOKENS)) + text[at:]
        elif step == "replace":
            # Replace the word or number at `at` by an edge token.
            end = at
            while end < len(text) and (text[end].isalnum() or text[end] in "_.-+"):
                end += 1
            text = text[:at] + draw(st.sampled_from(EDGE_TOKENS)) + text[end:]
        elif step == "chars":
            text = text[:at] + draw(st.text(min_size=1, max_size=8)) + text[at:]
        elif step == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 32)) :]
        elif step == "truncate":
            text = text[:at]
        else:
            other = draw(st.sampled_from(seeds))
            start = draw(st.integers(0, len(other)))
            text = text[:at] + other[start : start + draw(st.integers(1, 400))] + text[at:]
    return text


def returns_or_names_error(read: Callable[[], T]) -> T | None:
    """`read()`'s value, or None when it raised a one-line PrecisionError. Anything else
    escapes and fails the test."""
    try:
        return read()
    except PrecisionError as error:
        message = str(error)
        assert message, "a PrecisionError without a message"
        assert "\n" not in message, f"a PrecisionError of several lines: {message!r}"
        return None


def assert_picklable(value: Any) -> None:
    """The workspace index cache pickles what the readers return."""
    assert pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)) is not None
