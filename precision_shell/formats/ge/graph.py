"""GE graph dumps (`ge_proto_<N>_<stage>.txt`, or atc's JSON form): load, parse and write.

The public face of the GE graph layer. The model lives in `ge_model` (re-exported
here), the fast text parser in `ge_text`, the atc JSON form in `ge_json`, and the
protobuf message conversion in `ge_message`.
"""

from __future__ import annotations

import re
from pathlib import Path

from google.protobuf import text_format

from precision_shell.errors import FormatError
from precision_shell.formats.bounded_read import read_bounded
from precision_shell.formats.ge.json_graph import model_to_json, parse_ge_json
from precision_shell.formats.ge.message import model_from_message, model_to_message
from precision_shell.formats.ge.model import (
    DataTypeName,
    GraphDef,
    ModelDef,
    OpDef,
    TensorDesc,
    split_input,
)
from precision_shell.formats.ge.text import parse_ge_text

_FIRST_NON_SPACE = re.compile(r"\S")
# Real Build graphs of large models reach a few hundred MB of text; protobuf caps a binary
# message at 2 GiB, and a file this large (a link to /dev/zero, a sparse file) is refused.
MAX_GRAPH_BYTES = 2 << 30

__all__ = [
    "DataTypeName",
    "GraphDef",
    "ModelDef",
    "OpDef",
    "TensorDesc",
    "load_ge_graph",
    "model_from_message",
    "model_to_json",
    "model_to_message",
    "model_to_text",
    "parse_ge_json",
    "parse_ge_text",
    "split_input",
]


def load_ge_graph(path: str | Path) -> ModelDef:
    """Read a GE graph dump, protobuf text or atc JSON (told apart by the first character)."""
    path = Path(path)
    try:
        data = read_bounded(path, MAX_GRAPH_BYTES)
    except OSError as exc:
        raise FormatError(path, f"cannot read the file ({exc.strerror or exc})") from exc
    # Bytes that are not UTF-8 only occur inside strings; they decode as U+FFFD, as
    # the bytes attribute values they belong to would.
    text = data.decode("utf-8", errors="replace")
    del data  # only the text is held while parsing
    if text.startswith("\ufeff"):
        text = text[1:]
    first = _FIRST_NON_SPACE.search(text)
    if first is not None and first.group() in "{[":
        return parse_ge_json(text, str(path))
    return parse_ge_text(text, str(path))


def model_to_text(model: ModelDef) -> str:
    """`model` in protobuf text format, exactly as protobuf prints a `ge.proto.ModelDef`.

    Non-ASCII text is written as octal escapes, as GE's C++ printer does by default.
    """
    return text_format.MessageToString(model_to_message(model), as_utf8=False)
