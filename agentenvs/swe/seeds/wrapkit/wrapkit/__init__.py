"""Plain-text wrapping and layout helpers."""

from wrapkit.align import center, dedent, indent, justify, justify_lines, truncate
from wrapkit.columns import columnize, table
from wrapkit.wrap import chop, fill, wrap, wrap_paragraphs

__all__ = [
    "center",
    "chop",
    "columnize",
    "dedent",
    "fill",
    "indent",
    "justify",
    "justify_lines",
    "table",
    "truncate",
    "wrap",
    "wrap_paragraphs",
]
