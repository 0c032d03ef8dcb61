"""Alignment of single lines and blocks of text."""

from __future__ import annotations


def center(text: str, width: int, fillchar: str = " ") -> str:
    """Center ``text`` in ``width`` columns; an odd remainder goes to the right side.

    Text that is already ``width`` characters or longer is returned unchanged.
    """
    if len(fillchar) != 1:
        raise ValueError("fillchar must be exactly one character")
    total = width - len(text)
    left = total // 2
    return fillchar * left + text + fillchar * (total - left)


def justify(line: str, width: int) -> str:
    """Stretch ``line`` to exactly ``width`` by widening the gaps between words.

    Extra spaces go to the leftmost gaps first. A line with a single word is padded on the
    right. Lines that are already too long are returned with single spaces.
    """
    words = line.split()
    if len(words) < 2:
        return " ".join(words).ljust(width)
    gaps = len(words) - 1
    spaces = width - sum(len(word) for word in words)
    if spaces < gaps:
        return " ".join(words)
    base, extra = divmod(spaces, gaps)
    parts = []
    for index, word in enumerate(words[:-1]):
        parts.append(word)
        parts.append(" " * (base + 1 if index < extra else base))
    parts.append(words[-1])
    return "".join(parts)


def justify_lines(lines: list[str], width: int) -> list[str]:
    """Justify every line except the last one, which is kept as it is."""
    if not lines:
        return []
    return [justify(line, width) for line in lines[:-1]] + [lines[-1]]


def truncate(text: str, width: int, ellipsis: str = "...") -> str:
    """Shorten ``text`` to at most ``width`` characters, ending in ``ellipsis`` if cut."""
    if width < 0:
        raise ValueError(f"width must not be negative, got {width}")
    if len(text) <= width:
        return text
    if width <= len(ellipsis):
        return ellipsis[:width]
    return text[: width - len(ellipsis)] + ellipsis


def indent(text: str, prefix: str, skip_blank: bool = True) -> str:
    """Add ``prefix`` in front of every line; blank lines are left alone by default."""
    out = []
    for line in text.splitlines(keepends=True):
        if skip_blank and not line.strip():
            out.append(line)
        else:
            out.append(prefix + line)
    return "".join(out)


def dedent(text: str) -> str:
    """Remove the common leading spaces of all non-blank lines."""
    lines = text.splitlines(keepends=True)
    margin = None
    for line in lines:
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip(" "))
        if margin is None or depth < margin:
            margin = depth
        if margin == 0:
            break
    if not margin:
        return text
    return "".join(line[margin:] if line.strip() else line.lstrip(" ") for line in lines)
