"""Writer of NPU dump files (v2 and inline layouts), for the demo builder and the tests.

The files it writes are read back by `npu_dump`; see that module for the layouts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from google.protobuf.message import Message

from precision_shell.formats import dump_proto
from precision_shell.formats.dtypes import code_for_numpy, encode_values
from precision_shell.formats.layouts import DumpFormat
from precision_shell.formats.npu_dump import LENGTH_PREFIX


@dataclass
class TensorSpec:
    """A tensor to write into a dump, already in its device layout."""

    array: np.ndarray
    dtype: int | None = None  # DumpDataType code; default from the array's numpy dtype
    format: int = DumpFormat.ND
    original_shape: tuple[int, ...] | None = None
    original_op: tuple[str, int] | None = None  # outputs only
    original_format: int | None = None  # outputs only


def _fill_entry(entry: Message, spec: TensorSpec, kind: str, inline: bool) -> bytes:
    array = np.asarray(spec.array)
    code = spec.dtype if spec.dtype is not None else code_for_numpy(array.dtype)
    payload = encode_values(array, code)
    entry.data_type = code
    entry.format = spec.format
    entry.shape.dim.extend(array.shape)
    entry.size = len(payload)
    if spec.original_shape is not None:
        entry.original_shape.dim.extend(spec.original_shape)
    if spec.original_op is not None or spec.original_format is not None:
        if kind != "output":
            raise ValueError("only outputs record an original op and format in a dump")
        name, output_index = spec.original_op or ("", 0)
        entry.original_op.SetInParent()
        entry.original_op.name = name
        entry.original_op.output_index = output_index
        entry.original_op.data_type = code
        if spec.original_format is not None:
            entry.original_op.format = spec.original_format
    if inline:
        entry.data = payload
    return payload


def write_dump(
    path: str | Path,
    op_name: str,
    inputs: Sequence[TensorSpec] = (),
    outputs: Sequence[TensorSpec] = (),
    buffers: Sequence[bytes] = (),
    dump_time: int = 0,
    inline: bool = False,
    version: str = "2.0",
) -> None:
    """Write a dump file in the v2 layout (or the old inline one). Arrays are written as given:
    convert them to their device layout first with `layouts.from_origin_layout`."""
    message = dump_proto.DumpData(version=version, dump_time=dump_time, op_name=op_name)
    payloads: list[bytes] = []
    for spec in inputs:
        payloads.append(_fill_entry(message.input.add(), spec, "input", inline))
    for spec in outputs:
        payloads.append(_fill_entry(message.output.add(), spec, "output", inline))
    for data in buffers:
        buffer = message.buffer.add(size=len(data))
        if inline:
            buffer.data = bytes(data)
        payloads.append(bytes(data))
    header = message.SerializeToString()
    with open(path, "wb") as stream:
        if inline:
            stream.write(header)
            return
        stream.write(LENGTH_PREFIX.pack(len(header)))
        stream.write(header)
        for payload in payloads:
            stream.write(payload)
