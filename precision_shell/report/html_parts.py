"""Small HTML pieces the report's sections share: escaping, a facts list, inline SVG."""

from __future__ import annotations

from html import escape
from typing import Any


def inline_svg(text: str) -> str | None:
    """dot's SVG without its XML prolog and DOCTYPE, ready to sit inside HTML."""
    start = text.find("<svg")
    return text[start:].strip() if start >= 0 else None


def esc(value: Any) -> str:
    return escape(str(value))


def facts_html(pairs: list[tuple[str, str]]) -> str:
    items = "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in pairs)
    return f'<dl class="facts">{items}</dl>'
