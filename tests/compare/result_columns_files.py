"""Shared pieces of the columns cache tests: a result CSV with every odd cell the reader
handles, and helpers that take a cache file apart and put it back together, signed with the
test user's key (so a crafted file reaches the structural checks, not just the HMAC)."""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
from pathlib import Path
from typing import Any

from precision_shell.compare.results import columns_cache as cc
from precision_shell.compare.results.schema import csv_header
from precision_shell.compare.results.thresholds import SLICED_NONFINITE_MARK, ZERO_BENCHMARK_MARK
from precision_shell.workspace.index_cache import _user_key

HEADER = ",".join(csv_header(overflow=True))


def row(
    index: str,
    op_type: str,
    npu: str,
    tensor: str,
    cos: str,
    red: str = "0.010000",
    reason: str = "",
    mae: str = "0.001000",
) -> str:
    metrics = [cos, mae, "0.5", red, "0.1", '"(0.1;0.2),(0.1;0.2)"', "0.1", "0.1", "1.0", "0.1"]
    return ",".join(
        [index, op_type, npu, "float16", "NaN", npu, "float32", tensor, "[2]", "NO"]
        + metrics
        + [reason]
    )


ODD_LINES = [
    HEADER,
    row("0", "Data", "in/x", "in/x:output:0", "1.000000"),
    row("1", "Conv2D", '"conv,with comma"', '"conv,with comma:input:0"', "0.999000"),
    row("1", "Conv2D", '"conv,with comma"', "conv:input:1", "NaN", "NaN", "w: constant input"),
    row("1", "Conv2D", '"conv,with comma"', '"conv,with comma:output:0"', "0.900000"),
    row("2", "Ünïcode", "relu/激活", "relu/激活:output:0", "0.999900", "0.200000"),
    row("3", "Sum", '"say ""hi"""', '"say ""hi"":output:0"', "nan", "inf"),
    row("4", "Mul", "zero", "zero:output:0", "NaN", "0.000000", "all zero"),
    # an all-zero benchmark fails the rule whatever its cells print (thresholds.zero_benchmark)
    row("4", "Mul", "zero", "zero:output:1", "NaN", "0.000000", ZERO_BENCHMARK_MARK),
    "",  # a blank record
    row("5", "Odd", "odd", "odd_tensor_index", "0.5", "0.3"),
    row("x", "NoIndex", "noidx", "noidx:output:0", "0.999999", "0.0"),
    row("²", "Super", "sup", "sup:output:0", "-inf", "NaN"),
    row("6", "Line", '"multi\nline"', '"multi\nline:output:0"', "0.97", "0.01"),
    row("7", "Same", "same", "same:output:0", "1.0", "0.0") + ",extra,cells",
    # NaN/inf cut off a device tensor larger than its benchmark fail it too
    row(
        "10",
        "Pool",
        "pool",
        "pool:output:0",
        "1.000000",
        "0.000100",
        f'"x; {SLICED_NONFINITE_MARK}"',
    ),
    "8,Short,short,float16",  # short: padded, with a warning
    row("9", "Relu", "after", "after:output:0", "0.999", "0.001"),
]


def write_odd_csv(path: Path) -> Path:
    path.write_text("\n".join(ODD_LINES) + "\n", encoding="utf-8")
    return path


def split_cache(data: bytes) -> tuple[dict[str, Any], bytes]:
    """(JSON header, array region) of a cache file."""
    (head_len,) = struct.unpack("<Q", data[cc._HEAD - 8 : cc._HEAD])
    meta = json.loads(data[cc._HEAD : cc._HEAD + head_len])
    start = cc._HEAD + head_len + cc._pad(cc._HEAD + head_len)
    return meta, data[start:]


def signed(body: bytes, key: bytes | None = None) -> bytes:
    """MAGIC + HMAC + `body` (everything after the HMAC), signed with the user's key."""
    key = key if key is not None else _user_key()
    assert key is not None
    return cc.MAGIC + hmac.new(key, body, hashlib.sha256).digest() + body


def join_cache(meta: dict[str, Any], region: bytes) -> bytes:
    head = json.dumps(meta).encode("ascii")
    body = struct.pack("<Q", len(head)) + head + b"\x00" * cc._pad(cc._HEAD + len(head)) + region
    return signed(body)


def resign(data: bytes) -> bytes:
    return signed(data[cc._HEAD - 8 :])
