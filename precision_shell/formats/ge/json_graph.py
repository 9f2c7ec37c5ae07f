"""The JSON form of a GE dump, as `atc --mode=5` writes it (GE's `Pb2Json`).

What atc writes (read from GE's `common/convert/pb2json.cc` and `ModelSaver`):
field names as in the .proto; a field only when set (repeated: non-empty; messages:
non-empty, an empty element of a repeated message field is `null`); maps as their
entry lists `[{"key": ..., "value": {...}}]`; enums as names; int64 as JSON numbers;
a singular `float` as a string formatted with "%g"; a singular `bytes` field C-escaped
(octal for non-printable and non-ASCII bytes); repeated `bytes` raw; the fields
`output, data_offset, data, workspace, workspace_bytes, memory_size, weight_size,
size, bt, quantize_factor` left out; keys sorted (nlohmann::json), indent 2.
The reader also takes maps as JSON objects, lowerCamelCase names, numbers given as
strings and enums given as numbers; unknown fields are skipped.
"""

from __future__ import annotations

import json
from typing import Any

from google.protobuf import text_encoding
from google.protobuf.descriptor import FieldDescriptor

from precision_shell.errors import FormatError
from precision_shell.formats.ge import proto as ge_proto
from precision_shell.formats.ge.message import model_from_message, model_to_message
from precision_shell.formats.ge.model import MAX_NESTING_DEPTH, ModelDef
from precision_shell.formats.json_limits import nesting_problem, without_lone_surrogates

ATC_BLACK_FIELDS = frozenset(
    {
        "output",
        "data_offset",
        "data",
        "workspace",
        "workspace_bytes",
        "memory_size",
        "weight_size",
        "size",
        "bt",
        "quantize_factor",
    }
)
_INT_TYPES = {
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_INT32,
    FieldDescriptor.TYPE_UINT32,
    FieldDescriptor.TYPE_UINT64,
}
_FLOAT_TYPES = {FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE}
# (lowest, highest) of each integer type, enums being int32.
_INT_RANGES = {
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_ENUM: (-(2**31), 2**31 - 1),
}
# A message level is at most three JSON levels (a map's entry list, the entry, its value).
MAX_JSON_DEPTH = 3 * MAX_NESTING_DEPTH + 1


def parse_ge_json(text: str, source: str = "<json>") -> ModelDef:
    """Parse the atc JSON form of a GE dump; errors name `source` and where it went wrong."""
    problem = nesting_problem(text, MAX_JSON_DEPTH)
    if problem is not None:
        raise FormatError(source, f"{problem}; no GE graph nests so deep")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(source, f"line {exc.lineno}, column {exc.colno}: {exc.msg}") from exc
    except ValueError as exc:  # Python's int() refuses numbers of over 4,300 digits
        raise FormatError(
            source, "a number has more than 4300 digits; no GE graph field holds one"
        ) from exc
    if not isinstance(document, dict):
        raise FormatError(source, "expected a JSON object (a GE ModelDef) at the top level")
    message = ge_proto.ModelDef()
    _JsonReader(source).fill(message, document, "$")
    return model_from_message(message)


def model_to_json(model: ModelDef) -> str:
    """`model` as `atc --mode=5` would write it (see the module docstring for the rules)."""
    return json.dumps(
        _message_json(model_to_message(model)), indent=2, sort_keys=True, ensure_ascii=False
    )


def _message_json(message: Any) -> dict[str, Any]:
    document: dict[str, Any] = {}
    for field, value in message.ListFields():
        if field.name in ATC_BLACK_FIELDS:
            continue
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            document[field.name] = [_entry_json(key, value[key]) for key in sorted(value)]
        elif field.is_repeated:
            document[field.name] = [_value_json(field, item, repeated=True) for item in value]
        elif field.message_type is None or value.ByteSize():
            document[field.name] = _value_json(field, value, repeated=False)
    return document


def _entry_json(key: str, value: Any) -> dict[str, Any] | None:
    # a map entry is a message like any other: unset fields left out, empty -> null
    entry: dict[str, Any] = {}
    if key:
        entry["key"] = key
    if value.ByteSize():
        entry["value"] = _message_json(value)
    return entry or None


def _value_json(field: Any, value: Any, repeated: bool) -> Any:
    if field.message_type is not None:
        return _message_json(value) if value.ByteSize() else None
    if field.enum_type is not None:
        number = field.enum_type.values_by_number.get(value)
        return number.name if number is not None else value
    if field.type == FieldDescriptor.TYPE_BYTES:
        if repeated:
            return value.decode("utf-8", errors="replace")
        return text_encoding.CEscape(value, as_utf8=False)
    if field.type in _FLOAT_TYPES and not repeated:
        return f"{value:g}"  # C printf "%g", as atc formats a float
    return value


class _JsonReader:
    """Fills protobuf messages from decoded JSON, naming the JSON path on errors."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, problem: str) -> FormatError:
        return FormatError(self.source, f"{where}: {problem}")

    def fill(self, message: Any, document: Any, where: str, depth: int = 0) -> None:
        if depth > MAX_NESTING_DEPTH:
            raise self.fail(
                where, f"messages nested more than {MAX_NESTING_DEPTH} deep; no GE graph nests so"
            )
        if document is None:
            message.SetInParent()
            return
        if not isinstance(document, dict):
            raise self.fail(where, f"expected an object, got {type(document).__name__}")
        descriptor = message.DESCRIPTOR
        for key, value in document.items():
            field = descriptor.fields_by_name.get(key) or descriptor.fields_by_camelcase_name.get(
                key
            )
            if field is None or value is None:
                continue  # unknown fields are skipped, as protobuf readers do
            path = f"{where}.{key}"
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                self.fill_map(getattr(message, field.name), value, path, depth + 1)
            elif field.is_repeated:
                items = value if isinstance(value, list) else [value]
                target = getattr(message, field.name)
                for index, item in enumerate(items):
                    item_path = f"{path}[{index}]"
                    if field.message_type is not None:
                        self.fill(target.add(), item, item_path, depth + 1)
                    elif item is not None:
                        scalar = self.scalar(field, item, item_path, repeated=True)
                        if scalar is not None:
                            target.append(scalar)
            elif field.message_type is not None:
                self.fill(getattr(message, field.name), value, path, depth + 1)
            else:
                scalar = self.scalar(field, value, path, repeated=False)
                if scalar is not None:
                    setattr(message, field.name, scalar)

    def fill_map(self, target: Any, value: Any, where: str, depth: int) -> None:
        if isinstance(value, dict):
            entries = [{"key": key, "value": item} for key, item in value.items()]
        elif isinstance(value, list):
            entries = value
        else:
            raise self.fail(where, "expected a list of {key, value} entries")
        for index, entry in enumerate(entries):
            if entry is None:
                continue
            if not isinstance(entry, dict):
                raise self.fail(f"{where}[{index}]", "expected a {key, value} entry")
            key = entry.get("key", "")
            if not isinstance(key, str):
                raise self.fail(f"{where}[{index}].key", "expected a string")
            key = without_lone_surrogates(key)
            self.fill(target[key], entry.get("value"), f"{where}[{index}].value", depth + 1)

    def scalar(self, field: Any, value: Any, where: str, repeated: bool) -> Any:
        """The protobuf value of one JSON scalar; None for an enum name we do not know."""
        try:
            if field.enum_type is not None:
                if isinstance(value, str) and value in field.enum_type.values_by_name:
                    return field.enum_type.values_by_name[value].number
                if isinstance(value, str) and not value.lstrip("-").isdigit():
                    return None  # a name from a newer GE: skipped like an unknown field
                return self.integer(field, value, where)
            if field.type == FieldDescriptor.TYPE_BOOL:
                if isinstance(value, str):
                    return {"true": True, "false": False}[value.lower()]
                if not isinstance(value, (bool, int)):
                    raise TypeError(value)
                return bool(value)
            if field.type in _INT_TYPES:
                return self.integer(field, value, where)
            if field.type in _FLOAT_TYPES:
                if isinstance(value, bool):
                    raise TypeError(value)
                return float(value)
            if not isinstance(value, str):
                raise TypeError(value)
            value = without_lone_surrogates(value)
            if field.type == FieldDescriptor.TYPE_BYTES:
                # atc C-escapes singular bytes but writes repeated ones raw
                return value.encode("utf-8") if repeated else text_encoding.CUnescape(value)
            return value
        except (ValueError, TypeError, KeyError, UnicodeError, OverflowError) as exc:
            raise self.fail(where, f"expected {_expected(field)}, got {_shown(value)}") from exc

    def integer(self, field: Any, value: Any, where: str) -> int:
        """An integer field's value: a JSON integer, an integral float or a numeric string,
        in the field's range. Raises ValueError (or OverflowError) for anything else."""
        if isinstance(value, bool) or isinstance(value, float) and not value.is_integer():
            raise ValueError(value)
        if isinstance(value, str) and len(value.lstrip("+-")) > _MAX_INT_DIGITS:
            raise ValueError(value)  # past every range (and int() refuses 4,300 digits)
        number = int(value)
        low, high = _INT_RANGES[field.type]
        if not low <= number <= high:
            raise self.fail(where, f"integer {_shown(value)} is out of range {low}..{high}")
        return number


_SHOWN_LENGTH = 40
# Digits of the longest integer of any field (uint64).
_MAX_INT_DIGITS = 20


def _shown(value: Any) -> str:
    """A JSON value as error messages quote it; a long one is cut."""
    text = repr(value)
    if len(text) <= _SHOWN_LENGTH:
        return text
    return f"{text[:_SHOWN_LENGTH]}... ({len(text)} characters)"


def _expected(field: Any) -> str:
    if field.enum_type is not None:
        return f"a {field.enum_type.name} name or number"
    if field.type == FieldDescriptor.TYPE_BOOL:
        return "true or false"
    if field.type in _INT_TYPES:
        return "an integer"
    if field.type in _FLOAT_TYPES:
        return "a number"
    return "a string"
