"""PDF: the text layer, page by page, each page under a `--- page N ---` line.

The marker lines are part of the stored text, so the lines a search result cites, the lines
`read` pages by and the page numbers agree: page N starts at its marker line.
"""

from __future__ import annotations

import io
import logging

try:
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError
except ImportError as _import_error:  # pragma: no cover - without the extra
    msg = (
        "Please install `pypdf` to index PDF files, you can use the `documents` optional "
        'group — `pip install "ragbudget-server[documents]"`'
    )
    raise ImportError(msg) from _import_error

from ragbudget_server.store.convert.errors import Unindexable
from ragbudget_server.store.convert.limits import Limits, page_marker

__all__ = ["pdf_text"]

logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings are about the file, not us


def pdf_text(data: bytes, limits: Limits) -> str:
    """Every page's text under its marker line; Unindexable for an encrypted PDF, one with no
    text layer (scanned), one over the page cap, or one pypdf cannot read."""
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")  # many PDFs are encrypted with an empty password
            except (DependencyError, NotImplementedError) as exc:
                msg = f"encrypted PDF that cannot be opened here ({exc})"
                raise Unindexable(msg) from None
            if not opened:
                raise Unindexable("encrypted PDF (needs a password)")
        count = len(reader.pages)
        if count > limits.max_pages:
            msg = f"too many pages ({count:,} > {limits.max_pages:,})"
            raise Unindexable(msg)
        parts: list[str] = []
        size = 0
        for number, page in enumerate(reader.pages, start=1):
            limits.check_time()
            text = page.extract_text() or ""
            text = "\n".join(line.rstrip() for line in text.strip("\n").splitlines()).strip("\n")
            parts.append(page_marker("page", number) + ("\n" + text if text.strip() else ""))
            size += len(text)
            limits.check_size(size)
    except Unindexable:
        raise
    except FileNotDecryptedError:
        raise Unindexable("encrypted PDF (needs a password)") from None
    except PdfReadError as exc:
        msg = f"conversion failed: not a readable PDF ({exc})"
        raise Unindexable(msg) from None
    if not any("\n" in part for part in parts):
        raise Unindexable("no text layer (a scanned PDF? run OCR on it first, e.g. ocrmypdf)")
    return "\n\n".join(parts) + "\n"
