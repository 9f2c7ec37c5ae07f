"""file_name_text: JSON and display text that hold a file name whose bytes are not UTF-8."""

from __future__ import annotations

import json
import os

from precision_shell.file_name_text import json_text, shown

NAME = os.fsdecode(b"Conv2D.caf\xe9_\xff.5.1.17")  # as os.listdir gives it: 'caf\udce9_\udcff'


def test_json_text_is_utf8_json_that_loads_back_the_same_name():
    value = {"file": NAME, "op": "卷积/Relu", "n": 1}
    text = json_text(value, separators=(",", ":"))
    assert text == '{"file":"Conv2D.caf\\udce9_\\udcff.5.1.17","op":"卷积/Relu","n":1}'
    assert json.loads(text.encode("utf-8").decode("utf-8")) == value
    assert os.fsencode(json.loads(text)["file"]) == b"Conv2D.caf\xe9_\xff.5.1.17"


def test_shown_writes_each_byte_that_was_not_utf8_as_x_escape():
    assert shown(NAME) == "Conv2D.caf\\xe9_\\xff.5.1.17"
    assert shown("a\ud800b") == "a\\ud800b"  # a lone surrogate not from a byte
    assert shown("卷积 é") == "卷积 é"
