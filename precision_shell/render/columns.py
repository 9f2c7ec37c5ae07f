"""Table columns and cells that never lose what they show when the terminal is narrow.

rich's defaults cut a cell that does not fit with an ellipsis and wrap numbers like words. Here:
text (names, paths, reasons) folds onto more lines but is never cut; numbers never wrap, so
when the table must shrink, rich narrows the text columns instead.
"""

from __future__ import annotations

from os import PathLike

from rich.table import Table
from rich.text import Text


def text_column(table: Table, header: str = "", **options: object) -> None:
    """A column of names or paths: folded when narrow, never cut with an ellipsis."""
    table.add_column(header, overflow="fold", **options)  # type: ignore[arg-type]


def number_column(table: Table, header: str = "", **options: object) -> None:
    """A right-aligned column of numbers: never wrapped. rich shrinks the wrapping columns
    first, so a number is only ever cut (with an ellipsis, never silently) when the numbers
    alone are wider than the terminal."""
    options.setdefault("justify", "right")
    table.add_column(header, no_wrap=True, **options)  # type: ignore[arg-type]


def facts_table(title: str, fold: bool = False) -> Table:
    """A titled two-column name/value table without header or edges (a compare's head, an
    op's facts); `fold` wraps long values instead of cropping them."""
    table = Table(title=title, title_justify="left", show_header=False, show_edge=False, box=None)
    table.add_column(style="bold")
    if fold:
        table.add_column(overflow="fold")
    else:
        table.add_column()
    return table


def path_text(path: str | PathLike[str], style: str = "") -> Text:
    """A path as a cell or line: folded at any character when it must be, never cut."""
    return Text(str(path), style=style, overflow="fold")
