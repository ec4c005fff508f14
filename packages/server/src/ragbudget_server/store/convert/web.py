"""HTML pages and e-mail (.eml): their readable text, with the standard library alone.

HTML: the text outside scripts and styles, a line per block element, tables as tables.
E-mail: From, To, Date and Subject lines, then the plain-text body (or the HTML body's text),
then the names of its attachments (their contents are not read).
"""

from __future__ import annotations

import email
import email.policy
from email.message import EmailMessage
from html.parser import HTMLParser

from ragbudget_server.store.convert.errors import Unindexable
from ragbudget_server.store.convert.limits import Limits
from ragbudget_server.store.convert.tables import markdown_rows
from ragbudget_server.store.convert.text import decode_text

__all__ = ["eml_text", "html_text", "html_to_text"]

_SKIP = {"script", "style", "noscript", "template", "svg", "head"}
_BLOCK = {
    "p", "div", "br", "li", "ul", "ol", "section", "article", "header", "footer", "nav",
    "blockquote", "pre", "hr", "dt", "dd", "figure", "figcaption", "main", "aside", "form",
}  # fmt: skip
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self._line: list[str] = []
        self._skip = 0
        self._title: list[str] | None = None
        self.title = ""
        self._rows: list[list[str]] | None = None
        self._cell: list[str] | None = None
        self._pre = 0

    def _flush(self) -> None:
        text = "".join(self._line)
        self._line = []
        if self._pre:
            self.lines.extend(text.split("\n"))
        elif text.strip():
            self.lines.append(" ".join(text.split()))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self._skip += 1
        elif tag == "title":
            self._title = []
        elif tag == "table":
            self._flush()
            self._rows = []
        elif tag == "tr" and self._rows is not None:
            self._rows.append([])
        elif tag in ("td", "th") and self._rows is not None:
            self._cell = []
        elif tag in _HEADINGS or tag in _BLOCK:
            self._flush()
            if tag == "pre":
                self._pre += 1
            if tag in _HEADINGS:
                self._line.append("#" * _HEADINGS[tag] + " ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag == "title" and self._title is not None:
            self.title, self._title = " ".join("".join(self._title).split()), None
        elif tag in ("td", "th") and self._cell is not None and self._rows:
            self._rows[-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table" and self._rows is not None:
            self.lines += ["", *markdown_rows(self._rows), ""]
            self._rows = None
        elif tag in _HEADINGS or tag in _BLOCK:
            self._flush()
            if tag == "pre":
                self._pre = max(0, self._pre - 1)

    def handle_data(self, data: str) -> None:
        if self._title is not None:
            self._title.append(data)
        elif self._skip:
            return
        elif self._cell is not None:
            self._cell.append(data)
        else:
            self._line.append(data)


def html_to_text(markup: str) -> str:
    parser = _Text()
    parser.feed(markup)
    parser.close()
    parser._flush()
    lines = ([f"# {parser.title}", ""] if parser.title else []) + parser.lines
    out: list[str] = []
    for line in lines:  # at most one blank line in a row
        if line.strip() or (out and out[-1].strip()):
            out.append(line.rstrip())
    return "\n".join(out).strip("\n") + "\n"


def html_text(data: bytes, limits: Limits) -> str:
    text = html_to_text(decode_text(data))
    limits.check_size(len(text))
    return text


def eml_text(data: bytes, limits: Limits) -> str:
    message = email.message_from_bytes(data, policy=email.policy.default)
    if not isinstance(message, EmailMessage) or not message.keys():
        raise Unindexable("conversion failed: not an e-mail message (no headers)")
    lines = [f"{name}: {message[name]}" for name in ("From", "To", "Cc", "Date", "Subject")
             if message[name]]  # fmt: skip
    body = message.get_body(preferencelist=("plain", "html"))
    if body is not None:
        try:
            content = body.get_content()
        except (LookupError, ValueError) as exc:  # an unknown charset, a bad encoding
            msg = f"conversion failed: unreadable e-mail body ({exc})"
            raise Unindexable(msg) from None
        if isinstance(content, bytes):
            content = decode_text(content)
        if body.get_content_subtype() == "html":
            content = html_to_text(content)
        lines += ["", content.strip("\n")]
    names = [part.get_filename() for part in message.iter_attachments()]
    if any(names):
        lines += ["", "Attachments: " + ", ".join(n for n in names if n)]
    text = "\n".join(lines).strip("\n") + "\n"
    limits.check_size(len(text))
    return text
