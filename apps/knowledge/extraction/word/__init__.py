"""Word (.docx) with python-docx, walking the XML in body order, one module per subject:
`document` (the whole document and its title), `blocks` (the flow of paragraphs, lists and
tables), `parts` (headers, footers, notes, comments) and `styles` (headings and numbering).

python-docx gives us the package, its parts, styles and numbering; the text itself is read
from the XML so nothing is lost between its paragraph and table objects (content controls,
text boxes, hyperlinks, math, nested tables, tables in headers).

Mapping:

* headings: the ``Title`` style is ``#``, ``Heading N`` is ``#`` * (N + 1) (capped at 6), and
  so is a paragraph with an outline level N - 1 (localised heading styles have one);
* lists: paragraphs with numbering (``w:numPr``, on the paragraph or its style) become ``-``
  items, or ``1.`` items when the level's format is a number; levels nest by indentation;
* tables: a markdown table per table, first row as header. A merged cell shows its text in its
  first grid cell; the cells it covers are empty. A table inside a cell is written inline in
  that cell ("a, b; c, d");
* headers and footers of every section (default, first page, even pages), each part once:
  headers before the body, footers after it, each introduced by an HTML comment naming it;
* footnotes, endnotes and comments at the end. Deleted revisions and field codes are left out.

Callers import from `apps.knowledge.extraction.word`; the name below is its public face.
"""

from .document import extract_docx

__all__ = ["extract_docx"]
