"""A file name's control characters never reach the terminal: ESC would start a terminal
sequence (recolour, move, erase what we print). They are shown as `\\xNN` (QA Q23 #5)."""

from __future__ import annotations

import io

from rich.table import Table
from rich.text import Text

from precision_shell.render.output import make_console

NAME = "Conv2D.conv1_\x1b[31mred\x1b[2J\x9bX\x7f.5.1.1700000000000000"


def _printed(color: bool, renderable) -> str:  # noqa: ANN001
    buffer = io.StringIO()
    console = make_console(color, file=buffer, width=200)
    console.print(renderable)
    return buffer.getvalue()


def test_plain_output_shows_control_characters_escaped() -> None:
    text = _printed(False, Text(NAME))
    assert text == "Conv2D.conv1_\\x1b[31mred\\x1b[2J\\x9bX\\x7f.5.1.1700000000000000\n"


def test_colour_output_keeps_its_own_styles_and_escapes_the_names() -> None:
    table = Table()
    table.add_column("file")
    table.add_row(Text(NAME, style="bold red"))
    text = _printed(True, table)
    assert "\\x1b[31mred\\x1b[2J\\x9bX\\x7f" in text
    assert "\x1b[31mred" not in text and "\x9b" not in text and "\x7f" not in text
    # the styles rich writes itself are still escape sequences
    assert "\x1b[1;31m" in text
