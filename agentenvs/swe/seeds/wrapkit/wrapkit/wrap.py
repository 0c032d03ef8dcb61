"""Greedy word wrapping."""

from __future__ import annotations


def chop(word: str, width: int) -> list[str]:
    """Cut ``word`` into pieces of at most ``width`` characters."""
    if width < 1:
        raise ValueError(f"width must be at least 1, got {width}")
    return [word[start : start + width] for start in range(0, len(word), width)]


def wrap(text: str, width: int = 70, break_long_words: bool = True) -> list[str]:
    """Wrap ``text`` into lines of at most ``width`` characters.

    Words are separated by any whitespace and joined by single spaces. A word longer than
    ``width`` starts on a new line and, if ``break_long_words`` is true, is cut into
    pieces of ``width`` characters; otherwise it is kept whole on a line of its own.
    """
    if width < 1:
        raise ValueError(f"width must be at least 1, got {width}")
    lines: list[str] = []
    current: list[str] = []
    used = 0
    for word in text.split():
        if len(word) > width and break_long_words:
            if current:
                lines.append(" ".join(current))
            pieces = chop(word, width)
            lines.extend(pieces[:-1])
            current = [pieces[-1]]
            used = len(pieces[-1])
            continue
        if current and used + 1 + len(word) <= width:
            current.append(word)
            used += 1 + len(word)
            continue
        if current:
            lines.append(" ".join(current))
        current = [word]
        used = len(word)
    if current:
        lines.append(" ".join(current))
    return lines


def fill(text: str, width: int = 70, break_long_words: bool = True) -> str:
    """Wrap ``text`` and join the lines with newlines."""
    return "\n".join(wrap(text, width, break_long_words))


def wrap_paragraphs(text: str, width: int = 70) -> str:
    """Wrap each blank-line separated paragraph on its own; keep one blank line between."""
    paragraphs = []
    for block in text.split("\n\n"):
        if block.strip():
            paragraphs.append(fill(block, width))
    return "\n\n".join(paragraphs)
