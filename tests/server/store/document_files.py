"""Documents of every kind the store converts, written by the tests themselves (and by
`benchmarks/bench_documents.py`): PDFs with a text layer, encrypted, scanned (no text) and
corrupt; Word, PowerPoint, Excel, CSV, HTML and e-mail files; a zip bomb; a latin-1 text."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence
from email.message import EmailMessage
from pathlib import Path


def pdf_bytes(pages: Sequence[str], *, password: str | None = None) -> bytes:
    """A PDF whose page i holds `pages[i]` as its text layer (fpdf2's core font: latin-1)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 6, text)
    if password is not None:
        pdf.set_encryption(owner_password="owner-" + password, user_password=password)
    return bytes(pdf.output())


def scanned_pdf_bytes(pages: int = 2) -> bytes:
    """A PDF whose pages hold drawings and no text: what a scanner without OCR writes."""
    from fpdf import FPDF

    pdf = FPDF()
    for _ in range(pages):
        pdf.add_page()
        pdf.rect(20, 20, 100, 60, style="F")
    return bytes(pdf.output())


def corrupt_pdf_bytes() -> bytes:
    good = pdf_bytes(["Some text that will never be read."])
    return good[:200] + b"\x00garbage\xff" * 50 + good[-100:]


def docx_bytes(heading: str, paragraphs: Sequence[str], table: Sequence[Sequence[str]]) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading(heading, level=1)
    for text in paragraphs:
        document.add_paragraph(text)
    grid = document.add_table(rows=len(table), cols=len(table[0]))
    for r, row in enumerate(table):
        for c, value in enumerate(row):
            grid.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pptx_bytes(slides: Sequence[tuple[str, str, str]]) -> bytes:
    """Slides of (title, body, notes)."""
    import pptx

    deck = pptx.Presentation()
    for title, body, notes in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
        slide.notes_slide.notes_text_frame.text = notes
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def xlsx_bytes(sheets: dict[str, Sequence[Sequence[object]]]) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(list(row))
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def eml_bytes(subject: str, body: str, attachment: str | None = None) -> bytes:
    message = EmailMessage()
    message["From"] = "Ada <ada@example.org>"
    message["To"] = "Bob <bob@example.org>"
    message["Subject"] = subject
    message["Date"] = "Mon, 02 Mar 2026 10:00:00 +0000"
    message.set_content(body)
    if attachment is not None:
        message.add_attachment(b"%PDF-1.4 ...", maintype="application", subtype="pdf",
                               filename=attachment)  # fmt: skip
    return bytes(message)


def zip_bomb_docx_bytes(expanded: int = 8 * 1024 * 1024) -> bytes:
    """A .docx-shaped zip whose document part expands a thousandfold."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", b" " * expanded)
    return out.getvalue()


HTML = """<!doctype html><html><head><title>Garden notes</title><style>p {color: red}</style>
<script>var hidden = "never indexed";</script></head><body>
<h1>Watering</h1><p>Water the <b>tomatoes</b> every morning.</p>
<table><tr><th>Plant</th><th>Litres</th></tr><tr><td>Tomato</td><td>2</td></tr></table>
</body></html>
"""


def write_mixed_folder(root: Path) -> dict[str, str]:
    """One file of every kind under `root` (good and bad); returns {name: a phrase it holds}
    for the files that must be indexed."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "report.pdf").write_bytes(pdf_bytes([
        "Introduction to the quarterly report.",
        "The pelican budget grew by twelve percent.",
        "Appendix: the heron survey methods.",
    ]))  # fmt: skip
    (root / "letter.docx").write_bytes(docx_bytes(
        "Tenancy", ["The landlord repaints the kitchen in April."],
        [["Room", "Colour"], ["Kitchen", "Saffron"]],
    ))  # fmt: skip
    (root / "deck.pptx").write_bytes(pptx_bytes([
        ("Roadmap", "Ship the walrus release", "Mention the beta"),
        ("Risks", "The narwhal migration may slip", "Ask finance"),
    ]))  # fmt: skip
    (root / "budget.xlsx").write_bytes(xlsx_bytes({
        "Costs": [["Item", "Euros"], ["Marmot feed", 120], ["Fence", 80]],
    }))  # fmt: skip
    (root / "people.csv").write_text("name,city\nAda,Ljubljana\nBob,Quito\n", encoding="utf-8")
    (root / "garden.html").write_text(HTML, encoding="utf-8")
    (root / "mail.eml").write_bytes(eml_bytes("Lunch", "Shall we try the okapi cafe?", "menu.pdf"))
    latin = "Notes sur la façade: le maçon répare le mur de la crèche à Noël.\n" * 3
    (root / "latin1.txt").write_bytes(latin.encode("latin-1"))
    # the bad ones
    (root / "locked.pdf").write_bytes(pdf_bytes(["Secret salaries."], password="hunter2"))
    (root / "scan.pdf").write_bytes(scanned_pdf_bytes())
    (root / "broken.pdf").write_bytes(corrupt_pdf_bytes())
    (root / "bomb.docx").write_bytes(zip_bomb_docx_bytes())
    with (root / "huge.pdf").open("wb") as f:  # 1 GiB, sparse: nothing is written
        f.truncate(1 << 30)
    return {
        "report.pdf": "pelican budget",
        "letter.docx": "repaints the kitchen",
        "deck.pptx": "walrus release",
        "budget.xlsx": "Marmot feed",
        "people.csv": "Ljubljana",
        "garden.html": "tomatoes",
        "mail.eml": "okapi cafe",
        "latin1.txt": "façade",
    }
