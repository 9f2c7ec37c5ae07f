"""A strict walk of the report page with `html.parser`: every non-void element must close,
and the parts the tests check are collected on the way."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

_VOID = {"meta", "input", "br", "hr", "img", "link", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    text: str = ""

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())


@dataclass
class Page:
    elements: list[Element] = field(default_factory=list)  # every element, document order
    plot_circles: list[tuple[str, Element]] = field(default_factory=list)  # (panel, circle)
    result_heads: list[Element] = field(default_factory=list)
    result_rows: list[tuple[Element, list[str]]] = field(default_factory=list)
    facts: dict[str, str] = field(default_factory=dict)  # header dt -> dd text
    subgraph_nodes: dict[str, str] = field(default_factory=dict)  # dot node title -> fill

    def by_class(self, name: str) -> list[Element]:
        return [e for e in self.elements if name in e.classes]

    def first_row(self) -> list[str]:
        return self.result_rows[0][1]


def assert_self_contained(html: str, page: Page) -> None:
    """The page loads nothing from outside: no linked, framed or scripted resource, and every
    reference is to an anchor in the page itself."""
    assert not [e for e in page.elements if e.tag in ("link", "iframe", "img", "object")]
    assert not [e for e in page.elements if e.tag == "script" and "src" in e.attrs]
    refs = [
        v for e in page.elements for k, v in e.attrs.items() if k in ("href", "src", "xlink:href")
    ]
    assert refs and all(v.startswith("#") for v in refs)
    assert "url(" not in html and "@import" not in html


class _Walker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self.stack: list[Element] = []
        self._row: list[str] | None = None
        self._dt: str | None = None
        self._node_title: str | None = None

    def _inside(self, tag: str, cls: str | None = None, id_: str | None = None) -> Element | None:
        for e in reversed(self.stack):
            if (
                e.tag == tag
                and (cls is None or cls in e.classes)
                and (id_ is None or e.attrs.get("id") == id_)
            ):
                return e
        return None

    def _open(self, tag: str, attrs: list[tuple[str, str | None]], void: bool) -> None:
        el = Element(tag, {k: v or "" for k, v in attrs})
        self.page.elements.append(el)
        plot = self._inside("svg", cls="accuracy-plot")
        if tag == "circle" and plot is not None:
            panel = self._inside("g", cls="panel")
            self.page.plot_circles.append((panel.attrs["data-panel"] if panel else "", el))
        if self._inside("table", id_="results") is not None:
            if tag == "th":
                self.page.result_heads.append(el)
            if tag == "tr" and self._inside("tbody") is not None:
                self._row = []
                self.page.result_rows.append((el, self._row))
        if tag == "g" and "node" in el.classes and self._inside("div", cls="subgraph"):
            self._node_title = None
        if (
            "fill" in el.attrs
            and self._node_title is not None
            and self._node_title not in self.page.subgraph_nodes
        ):
            self.page.subgraph_nodes[self._node_title] = el.attrs["fill"]
        if not void:
            self.stack.append(el)

    def handle_starttag(self, tag, attrs):  # noqa: ANN001
        self._open(tag, attrs, tag in _VOID)

    def handle_startendtag(self, tag, attrs):  # noqa: ANN001
        self._open(tag, attrs, True)

    def handle_endtag(self, tag):  # noqa: ANN001
        assert self.stack, f"</{tag}> closes nothing"
        el = self.stack.pop()
        assert el.tag == tag, f"</{tag}> closes <{el.tag}>"
        text = el.text
        if self.stack:  # the parent passes it on when it closes
            self.stack[-1].text += text
        if tag == "g" and "node" in el.classes:
            self._node_title = None
        if tag == "td" and self._row is not None:
            self._row.append(text)
        if tag == "tr":
            self._row = None
        if tag == "title" and self._inside("g", cls="node") and self._inside("div", cls="subgraph"):
            self._node_title = text
        if tag == "dt":
            self._dt = text
        if tag == "dd" and self._dt is not None and self._inside("header") is not None:
            self.page.facts[self._dt] = text

    def handle_data(self, data):  # noqa: ANN001
        if self.stack:
            self.stack[-1].text += data


def parse_page(html: str) -> Page:
    walker = _Walker()
    walker.feed(html)
    walker.close()
    assert [e.tag for e in walker.stack] == [], "unclosed elements"
    return walker.page
