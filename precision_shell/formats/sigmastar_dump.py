"""Reader (and the tests' writer) of SigmaStar IPU DumpDebug dumps (docs/FORMATS-OTHER.md part 2).

`sigma_outtensor_dump.bin` (the simulator), `{caffe,onnx}_NHWC_outtensor_dump.bin` and
`tflite_outtensor_dump.bin` (the reference writers), their string forms (`dumpasstring`, the
python writers' `.txt`) and the per-tensor files `dumpData/NHWC/<name>#(<shape>)` share one
framing:

    isFloat: 1                          (once; absent in the per-tensor files)
    //out 0 s: 0.000239 z: 0 type: SGS_S16 name: 215 bConstant:0 shape:[1, 3, 197, 64] dims:4
    op_out[3] CONV_2D = {               (op_in[..] / input[..] for inputs)
    //buffer data size: <N bytes>
    <payload: N raw bytes, or the values as text>
    <end marker: none, "};\\n" or "\\n};\\n"; text forms "\\n}\\n" or "\\n};\\n">

4-D tensors are NHWC. A payload may be longer than its shape (alignment padding): the first
prod(shape) values are the tensor. Binary payload values are read lazily (`read_values`); a
string form's values are parsed when the file is read.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np

from precision_shell.errors import FormatError
from precision_shell.formats.shapes import MAX_DIMS, shape_problem

KIND_BIN = "sigmastar_bin"
KIND_TEXT = "sigmastar_text"
KIND_DIR = "sigmastar_dir"

FORM_BINARY = "binary"
FORM_STRING = "string"

MAX_LINE = 64 << 10  # a header line; a longer one is not a header
MAX_RECORDS = 1 << 20
MAX_TEXT_PAYLOAD = 1 << 30  # characters of one string-form tensor
_SEPARATORS = b"\r\n\t };"

# type token -> numpy storage of an integer (isFloat: 0) payload. The vendor's readers know
# SGS_S16 and SGS_S8 and read anything else as uint8; we refuse tokens we do not know.
INT_TYPES: dict[str, str] = {
    "SGS_S8": "int8",
    "SGS_U8": "uint8",
    "SGS_S16": "int16",
    "SGS_U16": "uint16",
    "SGS_S32": "int32",
    "SGS_BOOL": "uint8",
    "float": "float32",
    "SGS_F32": "float32",
}

_HEADER = re.compile(
    r"//(out|in) ([0-9]{1,9}) s: (\S{1,64}) z: (\S{1,64}) type: (\S{1,64}) name: (.*) "
    r"bConstant: ?([01]) shape: ?\[([^\]]{0,1024})\] dims: ?([0-9]{1,3})"
)
_OP_LINE = re.compile(r"(op_out|op_in|input)\[([0-9]{1,9})\] ?(.*) = \{")
_SIZE_LINE = re.compile(r"//buffer data size: ?([0-9]{1,19})")
_IS_FLOAT = re.compile(rb"isFloat: ?([01])\r?\n")
_DIM = re.compile(r"[0-9]{1,12}")
_TEXT_VALUES = re.compile(rb"[0-9eE+\-.,naifNAIF};{ \t\r\n]*")


@dataclass(frozen=True)
class SigmaTensor:
    """One record of a DumpDebug file."""

    path: str
    index: int  # position in the file
    name: str
    shape: tuple[int, ...]  # NHWC for 4-D
    dtype: str  # the `type:` token: "float", "SGS_S16", "SGS_S8", "SGS_U8"...
    scale: float
    zero_point: int
    constant: bool
    is_input: bool
    slot: int  # k of `//out k` (always 0 from the caffe/onnx writers)
    op_index: int  # i of `op_out[i]`
    op_label: str  # X of `op_out[i] X`: op type (sigma, tflite) or layer / node name
    storage: str  # numpy dtype of the stored values
    form: str  # FORM_BINARY | FORM_STRING
    offset: int = -1  # binary payload offset
    nbytes: int = 0  # binary payload bytes (>= the shape's, padding included)
    _text_values: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def count(self) -> int:
        return math.prod(self.shape)

    @property
    def is_quantized(self) -> bool:
        """Integer payload with quantization parameters: real = scale * (q - zero_point)."""
        return np.dtype(self.storage).kind in "iu" and self.scale > 0

    @property
    def key(self) -> tuple[str, int]:
        """Pairing key: tensor name, output slot as tie-breaker."""
        return (self.name, self.slot)


@dataclass(frozen=True)
class SigmaDump:
    path: str
    is_float: bool | None  # the `isFloat:` line; None when the file has none
    form: str
    tensors: tuple[SigmaTensor, ...]

    @property
    def outputs(self) -> list[SigmaTensor]:
        """The records to compare: not inputs, not constants."""
        return [t for t in self.tensors if not t.is_input and not t.constant]

    def by_name(self) -> dict[str, list[SigmaTensor]]:
        """Compared records by tensor name, each list by slot (then file order)."""
        found: dict[str, list[SigmaTensor]] = {}
        for tensor in self.outputs:
            found.setdefault(tensor.name, []).append(tensor)
        return {k: sorted(v, key=lambda t: (t.slot, t.index)) for k, v in found.items()}


class _Reader:
    """Line and byte access to a dump file with every length bounded."""

    def __init__(self, stream: BinaryIO, path: str, size: int) -> None:
        self.stream, self.path, self.size = stream, path, size

    def fail(self, problem: str) -> FormatError:
        return FormatError(self.path, problem)

    def line(self, what: str) -> str:
        at = self.stream.tell()
        raw = self.stream.readline(MAX_LINE + 1)
        if len(raw) > MAX_LINE:
            raise self.fail(f"byte {at}: a line longer than {MAX_LINE} bytes where {what} was due")
        if not raw:
            raise self.fail(f"the file ends where {what} was due (truncated)")
        try:
            return raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError:
            raise self.fail(f"byte {at}: binary data where {what} was due") from None

    def skip_separators(self) -> bool:
        """Skip end markers and blank space; False at the end of the file."""
        while True:
            at = self.stream.tell()
            chunk = self.stream.read(64)
            if not chunk:
                return False
            kept = len(chunk) - len(chunk.lstrip(_SEPARATORS))
            if kept < len(chunk):
                self.stream.seek(at + kept)
                return True

    def followed_by_record(self, at: int) -> bool:
        """Whether end markers then a record header or the end of the file come at `at`."""
        if at > self.size:
            return False
        self.stream.seek(at)
        if not self.skip_separators():
            return True
        return self.stream.read(6).startswith((b"//out ", b"//in "))

    def binary_payload(self, offset: int, nbytes: int) -> bool:
        """Whether the record whose payload starts at `offset` is in the binary form: its
        `nbytes` are followed by an end marker and the next record (or the end of the file),
        and they do not read as a string form's values. Both string forms start their values
        on a new line (`\n1.000000, 2.000000, `), so bytes that merely spell numbers (QA Q25
        #8) stay binary."""
        if not self.followed_by_record(offset + nbytes):
            return False
        self.stream.seek(offset)
        head = self.stream.read(min(nbytes, 4096))
        text = head.startswith((b"\n", b"\r\n")) and b"," in head
        return not (text and _TEXT_VALUES.fullmatch(head) is not None)


def _header(line: str, where: str) -> tuple[str, int, float, int, str, str, bool, tuple[int, ...]]:
    match = _HEADER.fullmatch(line.rstrip())
    if match is None:
        raise ValueError(
            f"{where}: {line[:60]!r} is not a '//out k s: .. z: .. type: .. name: .. "
            "bConstant:. shape:[..] dims:.' header"
        )
    kind, slot, scale_text, zp_text, dtype, name, const, shape_text, dims = match.groups()
    try:
        scale = float(scale_text)
        zero = float(zp_text)
    except ValueError:
        raise ValueError(
            f"{where}: s: {scale_text[:20]!r} z: {zp_text[:20]!r} are not numbers"
        ) from None
    if not math.isfinite(scale) or scale < 0:
        raise ValueError(f"{where}: scale {scale_text[:20]!r} is not a finite scale")
    if not (math.isfinite(zero) and zero.is_integer() and abs(zero) < 1 << 31):
        raise ValueError(f"{where}: zero point {zp_text[:20]!r} is not an integer")
    parts = [p.strip() for p in shape_text.split(",")] if shape_text.strip() else []
    if len(parts) > MAX_DIMS or not all(_DIM.fullmatch(p) for p in parts):
        raise ValueError(f"{where}: shape [{shape_text[:40]}] is not a list of dims")
    shape = tuple(int(p) for p in parts)
    if int(dims) != len(shape):
        raise ValueError(f"{where}: dims:{dims} but the shape has {len(shape)} dims")
    return kind, int(slot), scale, int(zero), dtype, name, const == "1", shape


def _storage(dtype: str, is_float: bool | None, where: str) -> str:
    if is_float is None or is_float:
        return "float32"
    storage = INT_TYPES.get(dtype)
    if storage is None:
        raise ValueError(f"{where}: unknown type {dtype[:30]!r} in an isFloat: 0 dump")
    return storage


def _text_values(reader: _Reader, storage: str, where: str) -> np.ndarray:
    parts: list[str] = []
    total = 0
    while True:
        raw = reader.stream.readline(MAX_LINE + 1)
        if not raw:
            raise reader.fail(f"{where}: the values end without '}}' (truncated)")
        if len(raw) > MAX_LINE:
            raise reader.fail(f"{where}: a values line longer than {MAX_LINE} bytes")
        line = raw.decode("ascii", errors="replace").strip()
        if line in ("}", "};"):
            break
        total += len(line)
        if total > MAX_TEXT_PAYLOAD:
            raise reader.fail(f"{where}: more than {MAX_TEXT_PAYLOAD} characters of values")
        parts.append(line)
    tokens = " ".join(parts).replace(",", " ").split()
    try:
        values = np.array([float(t) for t in tokens], dtype=np.float64)
    except ValueError:
        bad = next(t for t in tokens if not _is_float(t))
        raise reader.fail(f"{where}: {bad[:30]!r} is not a number") from None
    kind = np.dtype(storage)
    if kind.kind == "f":
        return values.astype(kind)
    info = np.iinfo(kind)
    if values.size and (
        not np.all(np.isfinite(values))
        or np.any(values != np.round(values))
        or values.min() < info.min
        or values.max() > info.max
    ):
        raise reader.fail(f"{where}: values that are not {storage} integers")
    return values.astype(kind)


def _is_float(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _read(reader: _Reader) -> SigmaDump:
    stream = reader.stream
    first = stream.read(32)
    is_float: bool | None = None
    match = _IS_FLOAT.match(first)
    if match is not None:
        is_float = match.group(1) == b"1"
        stream.seek(match.end())
    elif first.startswith(b"isFloat"):
        raise reader.fail("the first line is not 'isFloat: 0' or 'isFloat: 1'")
    else:
        stream.seek(0)
    tensors: list[SigmaTensor] = []
    form: str | None = None  # decided by the first record that holds values
    while reader.skip_separators():
        at = stream.tell()
        where = f"record {len(tensors)} (byte {at})"
        if len(tensors) >= MAX_RECORDS:
            raise reader.fail(f"more than {MAX_RECORDS} records")
        try:
            header, op, nbytes = _record_lines(reader, where)
            kind, slot, scale, zero, dtype, name, const, shape = header
            storage = _storage(dtype, is_float, where)
            problem = shape_problem(shape, np.dtype(storage).itemsize)
            if problem is not None:
                raise ValueError(f"{where}: {problem}")
        except ValueError as err:
            raise reader.fail(str(err)) from None
        label = f"{where} {name[:60]!r}"
        offset = stream.tell()
        count = math.prod(shape)
        empty = _empty_record(nbytes, count)
        if form is None and not empty:
            form = FORM_BINARY if reader.binary_payload(offset, nbytes) else FORM_STRING
            stream.seek(offset)
        values = None
        if empty:  # no payload in either form: only end markers follow, which the loop skips
            values = np.zeros(shape, dtype=storage)
            offset = -1
        elif form == FORM_BINARY:
            if offset + nbytes > reader.size:
                raise reader.fail(
                    f"{label}: the {nbytes}-byte payload runs past the end of the file (truncated)"
                )
            needed = count * np.dtype(storage).itemsize
            if nbytes < needed:
                raise reader.fail(
                    f"{label}: shape {list(shape)} of {storage} needs {needed} bytes but the "
                    f"payload has {nbytes}"
                )
            stream.seek(offset + nbytes)
        else:
            values = _text_values(reader, storage, label)
            if values.size < count:
                raise reader.fail(
                    f"{label}: shape {list(shape)} needs {count} values but the text has "
                    f"{values.size}"
                )
            values = values[:count].reshape(shape)
            offset, nbytes = -1, 0
        tensors.append(
            SigmaTensor(
                path=reader.path,
                index=len(tensors),
                name=name,
                shape=shape,
                dtype=dtype,
                scale=scale,
                zero_point=zero,
                constant=const,
                is_input=kind == "in" or op.group(1) != "op_out",
                slot=slot,
                op_index=int(op.group(2)),
                op_label=op.group(3),
                storage=storage,
                form=form or FORM_BINARY,
                offset=offset,
                nbytes=nbytes,
                _text_values=values,
            )
        )
    if not tensors:
        raise reader.fail("no '//out k ...' records; not a SigmaStar DumpDebug file")
    return SigmaDump(reader.path, is_float, form or FORM_BINARY, tuple(tensors))


def read_sigmastar_dump(path: str | Path) -> SigmaDump:
    """Read a DumpDebug file (binary or string form, any end marker); payloads of the binary
    form are not read. Raises FormatError naming the file and the problem."""
    name = str(path)
    try:
        with open(path, "rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            return _read(_Reader(stream, name, size))
    except OSError as err:
        raise FormatError(name, f"cannot read: {err.strerror or err}") from None


def read_values(tensor: SigmaTensor) -> np.ndarray:
    """The stored values of `tensor`, shaped (padding dropped); integers stay integers."""
    if tensor._text_values is not None:
        return tensor._text_values
    dtype = np.dtype(tensor.storage).newbyteorder("<")
    count = tensor.count
    if count == 0:
        return np.zeros(tensor.shape, dtype=dtype)
    try:
        with open(tensor.path, "rb") as stream:
            stream.seek(tensor.offset)
            values = np.fromfile(stream, dtype=dtype, count=count)
    except OSError as err:
        raise FormatError(tensor.path, f"cannot read: {err.strerror or err}") from None
    if values.size != count:
        raise FormatError(tensor.path, f"{tensor.name!r}: the file changed since it was read")
    return values.reshape(tensor.shape)


def dequantize(values: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """real = scale * (q - zero_point) in float64, returned as float64: a float32 result would
    move the metrics' 7th significant digit (the compare is in float64); the copy is the one
    the compare makes anyway (8 bytes a value, one tensor at a time)."""
    real = np.asarray(values, dtype=np.float64) - np.float64(zero_point)
    real *= np.float64(scale)
    return real


def real_values(tensor: SigmaTensor) -> np.ndarray:
    """The tensor's real values: an integer payload with a scale dequantized (float64); float
    payloads (including `dequantFixed` ones still typed SGS_S16) as stored, float32."""
    stored = read_values(tensor)
    if tensor.is_quantized:
        return dequantize(stored, tensor.scale, tensor.zero_point)
    if stored.dtype.kind in "iu" and tensor.scale == 0 and tensor.count:
        # `s: 0.000000`: a scale below 5e-7 printed with six decimals: the integers are not
        # the values, and what they stand for cannot be known (QA Q25 #6: raw ints compared)
        raise FormatError(
            tensor.path,
            f"{tensor.name}: {tensor.dtype} payload with its scale printed as 0 (below 5e-7): "
            "its real values cannot be recovered",
        )
    return stored.astype(np.float32)


# ---------------------------------------------------------------------------- detection


def _sniff(path: str) -> str | None:
    try:
        with open(path, "rb") as stream:
            head = stream.read(96)
            if not (_IS_FLOAT.match(head) or head.startswith((b"//out ", b"//in "))):
                return None
            form = _first_form(_Reader(stream, path, os.fstat(stream.fileno()).st_size))
    except (OSError, FormatError, ValueError):
        return None
    return KIND_BIN if form == FORM_BINARY else KIND_TEXT


def _record_lines(
    reader: _Reader, where: str
) -> tuple[tuple[str, int, float, int, str, str, bool, tuple[int, ...]], re.Match[str], int]:
    """A record's three lines: (its header's fields, the `op_out[i] X = {` match, the payload
    size N). Raises ValueError naming `where` and the line that is wrong."""
    header = _header(reader.line("a record header"), where)
    op = _OP_LINE.fullmatch(reader.line("'op_out[i] X = {'").rstrip())
    if op is None:
        raise ValueError(f"{where}: the second line is not 'op_out[i] X = {{'")
    size = _SIZE_LINE.fullmatch(reader.line("'//buffer data size: N'").rstrip())
    if size is None:
        raise ValueError(f"{where}: the third line is not '//buffer data size: N'")
    return header, op, int(size.group(1))


def _empty_record(nbytes: int, count: int) -> bool:
    """A record of no values has no payload in either form, so it cannot tell the form."""
    return nbytes == 0 and count == 0


def _first_form(reader: _Reader) -> str:
    """The form of a file from its first record that holds values (binary if none does);
    FormatError or ValueError if it has no record."""
    stream = reader.stream
    stream.seek(0)
    match = _IS_FLOAT.match(stream.read(32))
    stream.seek(match.end() if match else 0)
    if not reader.skip_separators():
        raise reader.fail("no records")
    for number in range(MAX_RECORDS):
        header, _, nbytes = _record_lines(reader, f"record {number}")
        if not _empty_record(nbytes, math.prod(header[-1])):
            binary = reader.binary_payload(stream.tell(), nbytes)
            return FORM_BINARY if binary else FORM_STRING
        if not reader.skip_separators():
            break
    return FORM_BINARY


def unreadable(path: str | Path) -> str | None:
    """Why a file that starts as a DumpDebug file does (`isFloat:`, `//out ` or `//in `) cannot
    be read, as one line naming it; None for any other file, or one that reads (never
    raises)."""
    name = str(path)
    try:
        with open(name, "rb") as stream:
            head = stream.read(96)
    except OSError:
        return None
    if not head.startswith((b"isFloat:", b"//out ", b"//in ")):
        return None
    try:
        read_sigmastar_dump(name)
    except FormatError as err:
        return str(err)
    return None


def detect(path: str | Path) -> str | None:
    """What SigmaStar dump `path` is, from its contents: KIND_BIN / KIND_TEXT for a file,
    KIND_DIR for a directory holding one (not recursive); None otherwise (never raises)."""
    name = str(path)
    if os.path.isfile(name):
        return _sniff(name)
    if os.path.isdir(name):
        try:
            with os.scandir(name) as entries:
                for count, entry in enumerate(entries):
                    if count >= 256:
                        break
                    if entry.is_file(follow_symlinks=False) and _sniff(entry.path) is not None:
                        return KIND_DIR
        except OSError:
            return None
    return None


# ---------------------------------------------------------------------------- writer (tests)


@dataclass(frozen=True)
class SigmaSpec:
    """One record for `write_sigmastar_dump`. `values` are written as stored (float32 in an
    isFloat: 1 file, else the integer type of `dtype`); `pad` extra values follow them."""

    name: str
    values: np.ndarray
    dtype: str = "float"
    scale: float = 0.0
    zero_point: int = 0
    constant: bool = False
    is_input: bool = False
    slot: int = 0
    op_index: int = 0
    op_label: str = "CONV_2D"
    pad: int = 0


# end markers after a binary payload
TRAILERS = {"sigma": b"\n};\n", "tflite": b"};\n", "none": b""}


def _header_lines(spec: SigmaSpec, nbytes: int, per_tensor_input: bool) -> str:
    kind = "in" if spec.is_input else "out"
    shape = ", ".join(str(d) for d in spec.values.shape)
    if spec.is_input:
        op = (
            f"input[{spec.op_index}] {spec.op_label}"
            if per_tensor_input
            else (f"op_in[{spec.op_index}] {spec.op_label}")
        )
    else:
        op = f"op_out[{spec.op_index}] {spec.op_label}"
    return (
        f"//{kind} {spec.slot} s: {spec.scale:f} z: {spec.zero_point} type: {spec.dtype} "
        f"name: {spec.name} bConstant:{int(spec.constant)} shape:[{shape}] "
        f"dims:{spec.values.ndim}\n{op} = {{\n//buffer data size: {nbytes}\n"
    )


def _stored(spec: SigmaSpec, is_float: bool) -> np.ndarray:
    storage = "float32" if is_float else INT_TYPES[spec.dtype]
    flat = np.asarray(spec.values).reshape(-1).astype(np.dtype(storage).newbyteorder("<"))
    if spec.pad:
        flat = np.concatenate([flat, np.zeros(spec.pad, flat.dtype)])
    return flat


def write_sigmastar_dump(
    path: str | Path,
    tensors: Sequence[SigmaSpec],
    *,
    is_float: bool = True,
    form: str = FORM_BINARY,
    trailer: str = "sigma",
    text_style: str = "sigma",
    is_float_line: bool = True,
) -> None:
    """Write a DumpDebug file.

    Binary form: `trailer` "sigma" (`\\n};\\n`), "tflite" (`};\\n`) or "none" (caffe/onnx).
    String form: `text_style` "sigma" (splite_binary_to_string: a newline before each group
    of 16, `%.6f, ` or `%6d, `, then `\\n};\\n`) or "python" (the reference writers' `.txt`:
    a blank line, `{:.6f}, ` with a newline after every 16th, then `\\n}\\n`).
    `is_float_line=False` writes a per-tensor file (no `isFloat:` line; inputs as `input[i]`).
    """
    out = bytearray()
    if is_float_line:
        out += f"isFloat: {int(is_float)}\n".encode()
    for spec in tensors:
        stored = _stored(spec, is_float)
        out += _header_lines(spec, stored.nbytes, not is_float_line).encode()
        if form == FORM_BINARY:
            out += stored.tobytes() + TRAILERS[trailer]
            continue
        integer = stored.dtype.kind in "iu"
        cells = [f"{int(v):6d}, " if integer else f"{float(v):.6f}, " for v in stored]
        if text_style == "python":
            body = "\n"
            for number, cell in enumerate(cells, start=1):
                body += cell + ("\n" if number % 16 == 0 else "")
            out += (body + "\n}\n").encode()
        else:
            body = "".join(
                ("\n" if number % 16 == 0 else "") + cell for number, cell in enumerate(cells)
            )
            out += (body + "\n};\n").encode()
    Path(path).write_bytes(bytes(out))
