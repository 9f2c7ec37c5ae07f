"""What tfdbg prints, read back: the `lt` listing, a failed run's intro, `ERROR:` lines.

Formats (TensorFlow's `analyzer_cli.list_tensors`, `cli_shared.get_error_intro`):
`N dumped tensor(s):`, a blank line, the `t (ms)  Size (B)  Op type  Tensor name` head,
then one row per dump, `[<ms since t0, 3 decimals>]  <size>  <op type>  <node:slot>`,
in timestamp order, so the k-th row of a tensor is its dump `pt -n k`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PROMPT = "tfdbg> "
RUN_ERROR_MARK = "An error occurred during the run"

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|\x1b[=>]")
_COUNT = re.compile(r"^(\d+) dumped tensor\(s\)")
_ROW = re.compile(r"^\[(\d+)\.(\d{3})\]\s+(\S+)\s+(\S+)\s+(\S+)\s*$")
_OP_NAME = re.compile(r"^Op name:\s+(.*)$", re.MULTILINE)
_ERROR_TYPE = re.compile(r"^Error type:\s+<class '(?:[\w.]*\.)?(\w+)'>", re.MULTILINE)


class ListingError(ValueError):
    """The `lt` output does not read as a tensor list."""


@dataclass(frozen=True)
class ListedDump:
    """One row of `lt`: a dump, its time after the first dump, and its index `pt -n` takes."""

    rel_us: int
    op_type: str
    tensor_name: str
    dump_index: int


def clean_screen_text(text: str) -> str:
    """Terminal output -> plain lines: no carriage returns, no escape sequences."""
    return _ANSI.sub("", text).replace("\r\n", "\n").replace("\r", "\n")


def parse_tensor_list(text: str) -> list[ListedDump]:
    """The rows of an `lt` output; ListingError when its count and rows disagree."""
    lines = clean_screen_text(text).split("\n")
    counts = ((i, m) for i, line in enumerate(lines) if (m := _COUNT.match(line.strip())))
    found = next(counts, None)
    if found is None:
        raise ListingError("no 'N dumped tensor(s):' line in the tfdbg output")
    start, count = found
    expected = int(count[1])
    seen: dict[str, int] = {}
    rows: list[ListedDump] = []
    for line in lines[start + 1 :]:
        if len(rows) == expected:
            break
        match = _ROW.match(line.strip())
        if match is None:
            continue
        whole_ms, fraction_us, _size, op_type, tensor_name = match.groups()
        index = seen.get(tensor_name, 0)
        seen[tensor_name] = index + 1
        rows.append(
            ListedDump(int(whole_ms) * 1000 + int(fraction_us), op_type, tensor_name, index)
        )
    if len(rows) != expected:
        raise ListingError(f"tfdbg listed {expected} dumped tensors but {len(rows)} rows were read")
    return rows


def parse_run_error(text: str) -> str | None:
    """A short description of a failed run from its run-end screen, or None if it did not fail."""
    text = clean_screen_text(text)
    if RUN_ERROR_MARK not in text:
        return None
    op = _OP_NAME.search(text)
    kind = _ERROR_TYPE.search(text)
    what = kind[1] if kind else "error"
    op_name = op[1].strip() if op else "None"
    return f"{what} at op {op_name!r}" if op_name != "None" else what


def error_lines(text: str) -> list[str]:
    """tfdbg's `ERROR: ...` messages in a command's output, without the prefix."""
    return [
        line.strip()[len("ERROR: ") :]
        for line in clean_screen_text(text).split("\n")
        if line.strip().startswith("ERROR: ")
    ]
