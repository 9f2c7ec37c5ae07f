"""How the text we write holds a file name whose bytes are not UTF-8.

Python hands such a name over as a str with lone surrogates (PEP 383: the byte `0xe9` of
`b"caf\\xe9"` becomes the character U+DCE9), and a plain UTF-8 write of it fails. Every
output that may name a file (or sit under a workspace path holding such bytes) follows one
policy, chosen by what must read the text back:
- text files (result CSVs and the statistics CSV, pt/cp value files: every text output made
  through `workspace.output_files`, and the journaled CSVs): UTF-8 with `surrogateescape`
  (`TEXT_ERRORS`). The name's own bytes are written, and our readers, decoding with the same
  handler, get the very str back: a CSV row still names the file it came from, and
  `vc --resume` reads back the bytes it hashed;
- JSON (summary.json, the vc journal's lines): `json_text` escapes a lone surrogate as
  `\\udcXX`, so the file is valid JSON and valid UTF-8, and `json.loads` gives the same str;
- the report page and the terminal: `shown` writes the byte as `\\xNN` (what `ls -b` prints):
  neither can show a byte that is not UTF-8, and a strict UTF-8 stdout fails on it; a
  console also shows the control characters of the text it prints so (`controls_shown`).
"""

from __future__ import annotations

import json
import re
from typing import Any

TEXT_ERRORS = "surrogateescape"  # the `errors=` of every text file we write or read back

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text(value: Any, **dumps_args: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, ...)` with each lone surrogate escaped
    (`\\udce9`): encodable as UTF-8, and `json.loads` returns the same strings. A NaN or
    infinite float is refused (ValueError): `json_numbers.json_number` writes those."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, **dumps_args)
    # a lone surrogate can only sit inside a JSON string, where `\uXXXX` is the escape
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def shown(text: str) -> str:
    """`text` with each byte that was not UTF-8 as `\\xNN` (any other lone surrogate as
    `\\uXXXX`), for a page or terminal that can show only real characters."""
    return _LONE_SURROGATE.sub(_shown_char, text)


# C0 controls but tab and newline, DEL and the C1 controls: a file name holding one (ESC
# starts a terminal sequence) would recolour, move or erase what a terminal shows (QA: a dump
# named `conv1_\x1b[31m...`)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def controls_shown(text: str) -> str:
    """`text` with each control character (`_CONTROL`) as `\\xNN`, as `ls -b` shows it: for
    the data a console prints, whose own styles are escape sequences `shown` cannot tell
    apart from a name's."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _shown_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte `surrogateescape` kept
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"
