"""`dc`'s decoding: device dump tensors to `.npy`, optionally in another layout, one distinct
file per tensor.

Every rank's and every run's dump dir holds the same file names (and mapping-numbered files
`1`, `2`... in each run), so an output name carries the run when the tensors come from several
runs and the rank and step when their run has several dump dirs; names that still meet (a dir
outside the workspace holding copies) get the sub-dir they were read from. Into our own
`temp/decode/` a repeated `dc` replaces its own earlier files; a dir the user named (`-o`) is
never written over: an existing name stops `dc`, and what this `dc` wrote there is removed.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from precision_shell.errors import PrecisionError
from precision_shell.explore.tensor_target import TensorHandle
from precision_shell.formats.layouts import LayoutError, is_plain_format, to_origin_layout
from precision_shell.workspace.output_files import create_output_file, replace_output
from precision_shell.workspace.subgraph_files import safe_file_stem

_NAME_LIMIT = 240  # below the usual 255-byte file name limit, with room for the temp prefix
_FORMAT_RANKS = {"NCHW": 4, "NHWC": 4, "HWCN": 4, "NCDHW": 5, "NDHWC": 5}


@dataclass(frozen=True)
class DecodedTensor:
    """One `.npy` written: its source, path, shape and layout."""

    label: str
    path: str
    shape: tuple[int, ...]
    layout: str


def decode_tensors(
    handles: Sequence[TensorHandle], out_dir: Path, fmt: str | None, user_dir: bool
) -> tuple[list[DecodedTensor], list[str]]:
    """Write each tensor to `out_dir` (converted to `fmt` when given). Returns the files written
    and notes on tensors kept in their device layout. `user_dir`: a dir the user named, where
    no existing file is ever replaced (PrecisionError naming it, nothing of this call left)."""
    labels, stems = _labels_and_stems(handles)
    written: list[DecodedTensor] = []
    notes: list[str] = []
    try:
        for h, label, stem in zip(handles, labels, stems, strict=True):
            assert h.meta is not None
            values = h.load()
            layout = h.meta.format_name
            if fmt:
                try:
                    values, layout = convert_layout(h, values, fmt)
                except LayoutError as exc:
                    notes.append(f"{label}: kept {layout}: {exc}")
            path = out_dir / f"{stem}.{safe_file_stem(layout, 40)}.npy"
            values, widened = npy_writable(values)
            if widened:
                notes.append(f"{label}: {widened}")
            _write(path, np.ascontiguousarray(values), user_dir)
            written.append(DecodedTensor(label, str(path), tuple(values.shape), layout))
    except BaseException:
        if user_dir:  # all or nothing in the user's dir: only files this call made go
            for item in written:
                Path(item.path).unlink(missing_ok=True)
        raise
    return written, notes


def npy_writable(values: np.ndarray) -> tuple[np.ndarray, str | None]:
    """`values`, or float32 copies of a dtype a `.npy` cannot name (bfloat16 and the float8s:
    numpy would write raw void bytes, or a descr no reader takes: QA) with the note saying so;
    float32 holds each of their values exactly."""
    try:
        readable = np.dtype(values.dtype.str) == values.dtype
    except TypeError:
        readable = False
    if readable:
        return values, None
    return values.astype(
        np.float32
    ), f"{values.dtype.name} saved as float32 (exact: .npy has no {values.dtype.name})"


def _write(path: Path, data: np.ndarray, user_dir: bool) -> None:
    if not user_dir:
        # one file per tensor and layout: a repeated dc replaces its own earlier file, and
        # two concurrent ones each write a whole file under a temp name first
        replace_output(path, partial(np.save, arr=data, allow_pickle=False))
        return
    if os.path.lexists(path):
        raise PrecisionError(
            f"{path}: already exists; dc never writes over a file in a dir you name "
            "(give another -o dir, or remove it)"
        )
    with create_output_file(path, text=False, keep_on_interrupt=False) as fh:  # O_EXCL
        np.save(fh, data, allow_pickle=False)


def _labels_and_stems(handles: Sequence[TensorHandle]) -> tuple[list[str], list[str]]:
    """Per tensor: the label shown and the output name without its layout, all distinct."""
    several_runs = len({h.run for h in handles}) > 1
    labels, stems = [], []
    for h in handles:
        assert h.meta is not None
        run = h.run if several_runs else ""
        where = [w for w in (run, h.where) if w]
        labels.append(f"{h.label} ({', '.join(where)})" if where else h.label)
        tag = f".{safe_file_stem(run, 40)}" if run else ""
        if h.dump_slice:
            tag += f".rank{h.dump_slice[0]}_step{h.dump_slice[1]}"
        stems.append((os.path.basename(h.path), tag, f".{h.meta.kind}.{h.meta.index}"))
    counts = Counter(stems)
    if max(counts.values(), default=0) > 1:  # copies outside the workspace: say where from
        common = os.path.commonpath([os.path.dirname(os.path.abspath(h.path)) for h in handles])
        for k, (h, stem) in enumerate(zip(handles, stems, strict=True)):
            if counts[stem] > 1:
                sub = os.path.relpath(os.path.dirname(os.path.abspath(h.path)), common)
                stems[k] = (stem[0], f"{stem[1]}.{safe_file_stem(sub, 80)}", stem[2])
                labels[k] = f"{labels[k]} ({sub})"
    return labels, _distinct([_joined(*stem) for stem in stems])


def _distinct(names: list[str]) -> list[str]:
    """`names` with the later of any two that made-safe names made equal (`a b` and `a_b`
    both become `a_b`: QA, the second file written over the first) numbered `~2`, `~3`..."""
    seen: set[str] = set(names)
    taken: set[str] = set()
    out = []
    for name in names:
        if name in taken:
            n = 2
            while f"{name}~{n}" in seen:
                n += 1
            name = f"{name}~{n}"
            seen.add(name)
        taken.add(name)
        out.append(name)
    return out


def _joined(base: str, tag: str, slot: str) -> str:
    """`base + tag + slot`, made safe; a long base is cut, never the parts that tell apart.
    A base the making safe changed (a character replaced, the name cut) carries `~` and a
    tag of the real name, so two names made alike stay apart across `dc` calls too (QA Q24
    #12: `a b` decoded to `a_b` in one call, then `a_b` in another wrote over it)."""
    keep = max(_NAME_LIMIT - 50 - len(tag) - len(slot), 16)  # 50: the layout and `.npy`
    safe = safe_file_stem(base, keep)
    if safe != base:
        real = hashlib.blake2b(os.fsencode(base), digest_size=4).hexdigest()
        safe = f"{safe[: keep - 9]}~{real}"
    return f"{safe}{tag}{slot}"


def _is_axis_permutation(a: str, b: str) -> bool:
    return a != b and a in _FORMAT_RANKS and b in _FORMAT_RANKS and sorted(a) == sorted(b)


def convert_layout(h: TensorHandle, values: np.ndarray, fmt: str) -> tuple[np.ndarray, str]:
    """Convert to `fmt`. Raises LayoutError.

    The original shape is given in the original layout, so a request for another order of the
    same axes (NCHW for an HWCN filter, NHWC for an NCHW activation) converts to the original
    layout first and then transposes; ND gives the original layout itself.
    """
    assert h.meta is not None
    if fmt == h.meta.format_name:
        return values, fmt
    origin_shape = tuple(h.meta.original_shape or values.shape)
    rank = _FORMAT_RANKS.get(fmt)
    if rank is not None and len(origin_shape) != rank:
        raise LayoutError(
            f"{fmt} needs a {rank}-D tensor; the original shape is {list(origin_shape)}"
        )
    origin_fmt = h.origin_format()
    if fmt == "ND" and origin_fmt is not None and is_plain_format(origin_fmt):
        # ND asks for a plain array: the original layout is that, and says more than "ND".
        return to_origin_layout(values, h.meta.format_name, origin_fmt, origin_shape), origin_fmt
    if origin_fmt is not None and _is_axis_permutation(origin_fmt, fmt):
        converted = to_origin_layout(values, h.meta.format_name, origin_fmt, origin_shape)
        return np.transpose(converted, [origin_fmt.index(axis) for axis in fmt]), fmt
    try:
        return to_origin_layout(values, h.meta.format_name, fmt, origin_shape), fmt
    except LayoutError as exc:
        if origin_fmt is None and not is_plain_format(h.meta.format):
            raise LayoutError(
                f"{exc} (the dump does not record the original layout of this "
                f"{h.meta.format_name} tensor and its shapes do not tell it; read the "
                f"original shape as {fmt})"
            ) from None
        raise
