"""Guessing a device tensor's original layout from its shapes, when nothing records it.

Dump inputs carry no original format; the graph usually says, but a copied dump file
outside its workspace has only its shapes. The guess answers only when exactly one
layout fits.
"""

from __future__ import annotations


def _guess_nc1hwc0_origin(
    device_shape: tuple[int, ...], origin_shape: tuple[int, ...]
) -> str | None:
    """For NC1HWC0 the H and W dims tell NCHW from NHWC."""
    if len(device_shape) != 5 or len(origin_shape) != 4:
        return None
    h, w = device_shape[2], device_shape[3]
    if origin_shape[1:3] == (h, w) and origin_shape[2:4] != (h, w):
        return "NHWC"
    if origin_shape[2:4] == (h, w) and origin_shape[1:3] != (h, w):
        return "NCHW"
    return None


def _guess_fractal_z_origin(
    device_shape: tuple[int, ...], origin_shape: tuple[int, ...]
) -> str | None:
    """FRACTAL_Z is (C1*H*W, N1, N0, C0): the one 4-D layout whose dims rebuild exactly that."""
    if len(device_shape) != 4 or len(origin_shape) != 4:
        return None
    c1hw, n_outer, n_inner, c0 = device_shape
    if not n_inner or not c0:
        return None
    fits = []
    for fmt in ("NCHW", "NHWC", "HWCN"):
        dims = dict(zip(fmt, origin_shape, strict=True))
        c1 = -(-dims["C"] // c0)
        if c1 * dims["H"] * dims["W"] == c1hw and -(-dims["N"] // n_inner) == n_outer:
            fits.append(fmt)
    # Square filters (e.g. 3x3x3x8) fit more than one layout: then the shapes cannot tell.
    return fits[0] if len(fits) == 1 else None


def guess_origin_format(
    device_format: str, device_shape: tuple[int, ...], origin_shape: tuple[int, ...]
) -> str | None:
    """The original layout of a device tensor from its shapes alone, or None when ambiguous."""
    device_shape, origin_shape = tuple(device_shape), tuple(origin_shape)
    if device_format == "NC1HWC0":
        return _guess_nc1hwc0_origin(device_shape, origin_shape)
    if device_format == "FRACTAL_Z":
        return _guess_fractal_z_origin(device_shape, origin_shape)
    if device_format == "FRACTAL_NZ":
        return "ND"  # NZ is only ever made from ND matrices (batched or not)
    return None
