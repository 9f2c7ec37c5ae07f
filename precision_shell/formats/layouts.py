"""Tensor layout codes of NPU dumps (`toolkit.dumpdata.OutputFormat`) and conversions between the
device layouts (NC1HWC0, FRACTAL_Z, FRACTAL_NZ, NDC1HWC0) and the original framework layouts.

Every conversion is reshape / transpose / slice on numpy arrays; pads are cut off using the
original shape. C0 (and the fractal's inner N) are read from the device array's own shape, so
int8 tensors with C0 = 32 convert like float16 ones with C0 = 16.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from enum import IntEnum

import numpy as np

from precision_shell.errors import PrecisionError
from precision_shell.formats.shapes import shape_problem


class DumpFormat(IntEnum):
    """`OutputFormat` of the dump protobuf (the proto's names without the `FORMAT_` prefix)."""

    NCHW = 0
    NHWC = 1
    ND = 2
    NC1HWC0 = 3
    FRACTAL_Z = 4
    NC1C0HWPAD = 5
    NHWC1C0 = 6
    FSR_NCHW = 7
    FRACTAL_DECONV = 8
    C1HWNC0 = 9
    FRACTAL_DECONV_TRANSPOSE = 10
    FRACTAL_DECONV_SP_STRIDE_TRANS = 11
    NC1HWC0_C04 = 12
    FRACTAL_Z_C04 = 13
    CHWN = 14
    FRACTAL_DECONV_SP_STRIDE8_TRANS = 15
    HWCN = 16
    NC1KHKWHWC0 = 17
    BN_WEIGHT = 18
    FILTER_HWCK = 19
    HASHTABLE_LOOKUP_LOOKUPS = 20
    HASHTABLE_LOOKUP_KEYS = 21
    HASHTABLE_LOOKUP_VALUE = 22
    HASHTABLE_LOOKUP_OUTPUT = 23
    HASHTABLE_LOOKUP_HITS = 24
    C1HWNCoC0 = 25
    MD = 26
    NDHWC = 27
    FRACTAL_ZZ = 28
    FRACTAL_NZ = 29
    NCDHW = 30
    DHWCN = 31
    NDC1HWC0 = 32
    FRACTAL_Z_3D = 33
    CN = 34
    NC = 35
    DHWNC = 36
    FRACTAL_Z_3D_TRANSPOSE = 37
    FRACTAL_ZN_LSTM = 38
    FRACTAL_Z_G = 39
    RESERVED = 40
    ALL = 41
    NULL = 42
    ND_RNN_BIAS = 43
    FRACTAL_ZN_RNN = 44
    YUV = 45
    YUV_A = 46


class LayoutError(PrecisionError, ValueError):
    """A tensor that cannot be converted between two layouts; the message says why.

    A PrecisionError, so one escaping a command is one line; still a ValueError for callers
    that catch it as one."""


# Plain layouts whose letters name the axes, so two of them with the same letters differ by a
# transpose. ND (any rank, row-major) is plain too but has no named axes.
_LETTER_LAYOUTS = frozenset(
    {"NCHW", "NHWC", "HWCN", "CHWN", "NCDHW", "NDHWC", "DHWCN", "DHWNC", "NC", "CN"}
)
_PLAIN_LAYOUTS = _LETTER_LAYOUTS | {"ND"}

# Rows of a FRACTAL_Z / FRACTAL_NZ fractal (the cube unit is 16 rows whatever C0 is).
_FRACTAL_ROWS = 16

_NAME_BY_UPPER = {member.name.upper(): member.name for member in DumpFormat}


def format_name(code: int) -> str:
    """The dump's name for a format code ("NC1HWC0"), or "UNKNOWN(99)"."""
    try:
        return DumpFormat(code).name
    except ValueError:
        return f"UNKNOWN({code})"


def format_code(name: str) -> int:
    """The format code for a name; accepts "NC1HWC0", "FORMAT_NC1HWC0", any letter case."""
    key = name.strip().upper()
    key = key.removeprefix("FORMAT_")
    if key not in _NAME_BY_UPPER:
        raise LayoutError(f"unknown tensor format {name!r}")
    return int(DumpFormat[_NAME_BY_UPPER[key]])


def is_plain_format(fmt: str | int) -> bool:
    """True for layouts without device blocks (ND, NCHW, NHWC, NC...), which need no conversion
    beyond a reshape or transpose."""
    try:
        return _canonical(fmt) in _PLAIN_LAYOUTS
    except LayoutError:
        return False


def _canonical(fmt: str | int) -> str:
    if isinstance(fmt, str):
        return format_name(format_code(fmt))
    return format_name(int(fmt))


def _shape_text(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


class _Conversion:
    """The two sides of one conversion, for error messages that name both."""

    def __init__(
        self, device: str, device_shape: tuple[int, ...], origin: str, target: tuple[int, ...]
    ) -> None:
        self.device = device
        self.device_shape = device_shape
        self.origin = origin
        self.target = target

    def fail(self, reason: str) -> LayoutError:
        return LayoutError(
            f"cannot convert {self.device} {_shape_text(self.device_shape)} to "
            f"{self.origin} {_shape_text(self.target)}: {reason}"
        )

    def need_ranks(self, device_rank: int, origin_rank: int) -> None:
        if len(self.device_shape) != device_rank:
            raise self.fail(
                f"{self.device} tensors have {device_rank} dims, this one has "
                f"{len(self.device_shape)}"
            )
        if len(self.target) != origin_rank:
            raise self.fail(
                f"{self.origin} shapes have {origin_rank} dims, this one has {len(self.target)}"
            )

    def need_equal(self, axis: str, origin_dim: int, device_dim: int) -> None:
        if origin_dim != device_dim:
            raise self.fail(
                f"{axis} is {origin_dim} in the origin shape but {device_dim} on the device"
            )

    def need_fit(self, axis: str, origin_dim: int, blocks: int, block: int) -> None:
        if origin_dim > blocks * block:
            raise self.fail(
                f"{axis}={origin_dim} is larger than the {blocks} x {block} = {blocks * block} "
                "the device tensor holds"
            )


def _nc1hwc0_to_origin(arr: np.ndarray, conv: _Conversion) -> np.ndarray:
    conv.need_ranks(5, 4)
    n, c1, h, w, c0 = arr.shape
    dims = dict(zip(conv.origin, conv.target, strict=True))
    conv.need_equal("N", dims["N"], n)
    conv.need_equal("H", dims["H"], h)
    conv.need_equal("W", dims["W"], w)
    conv.need_fit("C", dims["C"], c1, c0)
    if conv.origin == "NCHW":
        return arr.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)[:, : dims["C"]]
    return arr.transpose(0, 2, 3, 1, 4).reshape(n, h, w, c1 * c0)[..., : dims["C"]]


def _ndc1hwc0_to_origin(arr: np.ndarray, conv: _Conversion) -> np.ndarray:
    conv.need_ranks(6, 5)
    n, d, c1, h, w, c0 = arr.shape
    dims = dict(zip(conv.origin, conv.target, strict=True))
    for axis, device_dim in (("N", n), ("D", d), ("H", h), ("W", w)):
        conv.need_equal(axis, dims[axis], device_dim)
    conv.need_fit("C", dims["C"], c1, c0)
    if conv.origin == "NCDHW":
        return arr.transpose(0, 2, 5, 1, 3, 4).reshape(n, c1 * c0, d, h, w)[:, : dims["C"]]
    return arr.transpose(0, 1, 3, 4, 2, 5).reshape(n, d, h, w, c1 * c0)[..., : dims["C"]]


def _fractal_z_to_origin(arr: np.ndarray, conv: _Conversion) -> np.ndarray:
    conv.need_ranks(4, 4)
    c1hw, n_outer, n_inner, c0 = arr.shape
    dims = dict(zip(conv.origin, conv.target, strict=True))
    hw = dims["H"] * dims["W"]
    if hw == 0 or c1hw % hw:
        raise conv.fail(f"the first device dim {c1hw} is not C1 x H x W for H x W = {hw}")
    c1 = c1hw // hw
    conv.need_fit("N", dims["N"], n_outer, n_inner)
    conv.need_fit("C", dims["C"], c1, c0)
    nchw = (
        arr.reshape(c1, dims["H"], dims["W"], n_outer, n_inner, c0)
        .transpose(3, 4, 0, 5, 1, 2)
        .reshape(n_outer * n_inner, c1 * c0, dims["H"], dims["W"])[: dims["N"], : dims["C"]]
    )
    return nchw.transpose(["NCHW".index(axis) for axis in conv.origin])


def _fractal_nz_to_origin(arr: np.ndarray, conv: _Conversion) -> np.ndarray:
    if arr.ndim < 4:
        raise conv.fail(f"FRACTAL_NZ tensors have at least 4 dims, this one has {arr.ndim}")
    *batch, c1, n_outer, n_inner, c0 = arr.shape
    target = conv.target
    # A 1-D (or scalar) origin is a single row.
    rows, cols = (target[-2], target[-1]) if len(target) >= 2 else (1, math.prod(target))
    outer = target[:-2]
    matrices = math.prod(batch)
    if math.prod(outer) != matrices:
        raise conv.fail(
            f"the origin batch dims {_shape_text(outer)} hold {math.prod(outer)} matrices, "
            f"the device tensor {matrices}"
        )
    conv.need_fit("N (rows)", rows, n_outer, n_inner)
    conv.need_fit("C (columns)", cols, c1, c0)
    return (
        arr.reshape(matrices, c1, n_outer, n_inner, c0)
        .transpose(0, 2, 3, 1, 4)
        .reshape(matrices, n_outer * n_inner, c1 * c0)[:, :rows, :cols]
        .reshape(target)
    )


def _plain_to_origin(arr: np.ndarray, conv: _Conversion) -> np.ndarray:
    wanted = math.prod(conv.target)
    if arr.size != wanted:
        raise conv.fail(f"the device tensor has {arr.size} elements, the origin shape {wanted}")
    device, origin = conv.device, conv.origin
    if (
        device != origin
        and device in _LETTER_LAYOUTS
        and origin in _LETTER_LAYOUTS
        and sorted(device) == sorted(origin)
        and arr.ndim == len(device) == len(conv.target)
    ):
        order = [device.index(axis) for axis in origin]
        # Transpose only when the dims agree with it; otherwise the labels are loose and the
        # data is already in origin order.
        if tuple(arr.shape[axis] for axis in order) == conv.target:
            return arr.transpose(order)
    return arr.reshape(conv.target)


_TO_ORIGIN: dict[tuple[str, str], Callable[[np.ndarray, _Conversion], np.ndarray]] = {
    ("NC1HWC0", "NCHW"): _nc1hwc0_to_origin,
    ("NC1HWC0", "NHWC"): _nc1hwc0_to_origin,
    ("NDC1HWC0", "NCDHW"): _ndc1hwc0_to_origin,
    ("NDC1HWC0", "NDHWC"): _ndc1hwc0_to_origin,
    ("FRACTAL_Z", "NCHW"): _fractal_z_to_origin,
    ("FRACTAL_Z", "NHWC"): _fractal_z_to_origin,
    ("FRACTAL_Z", "HWCN"): _fractal_z_to_origin,
}


def to_origin_layout(
    arr: np.ndarray,
    device_format: str | int,
    origin_format: str | int,
    origin_shape: Sequence[int],
) -> np.ndarray:
    """`arr` (a tensor in `device_format`) in `origin_format` with `origin_shape`, pads cut off.

    Supported: NC1HWC0 -> NCHW / NHWC, NDC1HWC0 -> NCDHW / NDHWC, FRACTAL_Z -> NCHW / NHWC /
    HWCN, FRACTAL_NZ -> ND (any batch dims, 1-D origins) or any plain layout, and between
    plain layouts (ND, NCHW, NHWC, NC...) with equal element counts: a transpose when both name
    the same axes in another order and the dims agree, else a reshape. Returns a view where
    numpy can. Raises LayoutError naming both formats and shapes.
    """
    device = _canonical(device_format)
    origin = _canonical(origin_format)
    target = tuple(int(d) for d in origin_shape)
    conv = _Conversion(device, tuple(arr.shape), origin, target)
    problem = shape_problem(target, arr.itemsize)
    if problem is not None:
        raise conv.fail(f"the origin {problem}")
    convert = _TO_ORIGIN.get((device, origin))
    if convert is not None:
        return convert(arr, conv)
    if device == "FRACTAL_NZ" and origin in _PLAIN_LAYOUTS:
        return _fractal_nz_to_origin(arr, conv)
    if device == origin or (device in _PLAIN_LAYOUTS and origin in _PLAIN_LAYOUTS):
        return _plain_to_origin(arr, conv)
    raise conv.fail("no conversion between these formats is known")


def _blocks(size: int, block: int) -> int:
    return -(-size // block)


def _pad_tail(arr: np.ndarray, padded_shape: tuple[int, ...]) -> np.ndarray:
    """`arr` zero-padded at the end of each axis to `padded_shape`."""
    widths = [(0, full - have) for have, full in zip(arr.shape, padded_shape, strict=True)]
    return np.pad(arr, widths)


def _to_axes(arr: np.ndarray, origin: str, wanted: str) -> np.ndarray:
    if arr.ndim != len(origin):
        raise LayoutError(
            f"a {origin} tensor has {len(origin)} dims, this one has shape {arr.shape}"
        )
    return arr.transpose([origin.index(axis) for axis in wanted])


def from_origin_layout(
    arr: np.ndarray, device_format: str | int, origin_format: str | int, c0: int = 16
) -> np.ndarray:
    """`arr` (a tensor in `origin_format`) laid out as `device_format`, zero-padded to C0 blocks.

    The inverse of `to_origin_layout`, for writers: NCHW / NHWC -> NC1HWC0, NCHW / NHWC / HWCN
    weights -> FRACTAL_Z, any plain layout (read as ND, last two dims a matrix) -> FRACTAL_NZ,
    NCDHW / NDHWC -> NDC1HWC0, and transposes between plain layouts naming the same axes.
    """
    device = _canonical(device_format)
    origin = _canonical(origin_format)
    if device == origin:
        return arr
    if device == "NC1HWC0" and origin in ("NCHW", "NHWC"):
        nchw = _to_axes(arr, origin, "NCHW")
        n, c, h, w = nchw.shape
        c1 = _blocks(c, c0)
        padded = _pad_tail(nchw, (n, c1 * c0, h, w))
        return np.ascontiguousarray(padded.reshape(n, c1, c0, h, w).transpose(0, 1, 3, 4, 2))
    if device == "NDC1HWC0" and origin in ("NCDHW", "NDHWC"):
        ncdhw = _to_axes(arr, origin, "NCDHW")
        n, c, d, h, w = ncdhw.shape
        c1 = _blocks(c, c0)
        padded = _pad_tail(ncdhw, (n, c1 * c0, d, h, w))
        return np.ascontiguousarray(padded.reshape(n, c1, c0, d, h, w).transpose(0, 3, 1, 4, 5, 2))
    if device == "FRACTAL_Z" and origin in ("NCHW", "NHWC", "HWCN"):
        nchw = _to_axes(arr, origin, "NCHW")
        n, c, h, w = nchw.shape
        n_outer, c1 = _blocks(n, _FRACTAL_ROWS), _blocks(c, c0)
        padded = _pad_tail(nchw, (n_outer * _FRACTAL_ROWS, c1 * c0, h, w))
        return np.ascontiguousarray(
            padded.reshape(n_outer, _FRACTAL_ROWS, c1, c0, h, w)
            .transpose(2, 4, 5, 0, 1, 3)
            .reshape(c1 * h * w, n_outer, _FRACTAL_ROWS, c0)
        )
    if device == "FRACTAL_NZ" and origin in _PLAIN_LAYOUTS:
        matrix = arr.reshape(1, -1) if arr.ndim < 2 else arr
        *batch, rows, cols = matrix.shape
        n_outer, c1 = _blocks(rows, _FRACTAL_ROWS), _blocks(cols, c0)
        padded = _pad_tail(matrix, (*batch, n_outer * _FRACTAL_ROWS, c1 * c0))
        k = len(batch)
        order = [*range(k), k + 2, k, k + 1, k + 3]
        return np.ascontiguousarray(
            padded.reshape(*batch, n_outer, _FRACTAL_ROWS, c1, c0).transpose(order)
        )
    if device in _PLAIN_LAYOUTS and origin in _PLAIN_LAYOUTS:
        if (
            device in _LETTER_LAYOUTS
            and origin in _LETTER_LAYOUTS
            and sorted(device) == sorted(origin)
        ):
            return _to_axes(arr, origin, device)
        return arr
    raise LayoutError(
        f"cannot lay out {origin} {_shape_text(arr.shape)} as {device}: "
        "no conversion between these formats is known"
    )
