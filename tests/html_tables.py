"""Reading rendered HTML reports back: tables, definitions and text (standard library only)."""

from __future__ import annotations

from html.parser import HTMLParser


class Page(HTMLParser):
    """Tables as rows of (tag, text, attributes) cells, definition lists as pairs, and all text."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tables: list[list[list[tuple[str, str, dict]]]] = []
        self.definitions: list[tuple[str, str]] = []
        self.images: list[str] = []
        self.text: list[str] = []
        self._cell: tuple[str, dict] | None = None
        self._buf: list[str] = []
        self._dt: str | None = None
        self._in: str | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell, self._buf = (tag, a), []
        elif tag in ("dt", "dd"):
            self._in, self._buf = tag, []
        elif tag == "img":
            self.images.append(a.get("src", ""))

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell:
            self.tables[-1][-1].append((self._cell[0], "".join(self._buf).strip(), self._cell[1]))
            self._cell = None
        elif tag == "dt":
            self._dt, self._in = "".join(self._buf).strip(), None
        elif tag == "dd":
            self.definitions.append((self._dt or "", "".join(self._buf).strip()))
            self._in = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell or self._in:
            self._buf.append(data)

    @property
    def all_text(self) -> str:
        return " ".join(" ".join(self.text).split())

    def table_with(self, header: str) -> list[list[tuple[str, str, dict]]]:
        """The first table one of whose header cells reads ``header``."""
        for t in self.tables:
            if any(c[0] == "th" and c[1] == header for row in t for c in row):
                return t
        raise AssertionError(f"no table with header {header!r}")
