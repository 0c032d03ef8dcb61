"""Parsing and formatting of paths such as ``a.b[2].c``, ``$.items[-1]`` and ``users[*].name``."""


class PathError(ValueError):
    """Raised for malformed paths or paths that cannot be used for an operation."""


class _Wildcard:
    """Singleton type of :data:`WILDCARD`."""

    def __repr__(self):
        return "WILDCARD"


WILDCARD = _Wildcard()

_SPECIAL = ".[]"


def _parse_bracket(content, path):
    """Interpret the text between ``[`` and ``]``: ``*``, an integer, or a quoted key."""
    if content == "*":
        return WILDCARD
    if len(content) >= 2 and content[0] == content[-1] and content[0] in "'\"":
        return content[1:-1]
    digits = content[1:] if content.startswith("-") else content
    if not digits.isdigit():
        raise PathError(f"bad index [{content}] in {path!r}")
    return int(content)


def _key_end(text, start):
    """Index where the plain key beginning at ``start`` ends."""
    for index in range(start, len(text)):
        if text[index] in _SPECIAL:
            return index
    return len(text)


def parse_path(path):
    """Split ``path`` into a list of keys (str), indices (int) and :data:`WILDCARD`.

    A list or tuple is returned as a list unchanged; ``""`` and ``"$"`` are the empty path.
    """
    if isinstance(path, (list, tuple)):
        return list(path)
    text = path
    if text.startswith("$"):
        text = text[1:]
        if text.startswith("."):
            text = text[1:]
    segments = []
    pos = 0
    for _ in range(len(text)):
        if pos >= len(text):
            break
        if text[pos] == "[":
            close = "]"
            if pos + 1 < len(text) and text[pos + 1] in "'\"":
                close = text[pos + 1] + "]"
            end = text.find(close, pos + len(close))
            if end < 0:
                raise PathError(f"unclosed '[' in {path!r}")
            end += len(close) - 1
            segments.append(_parse_bracket(text[pos + 1 : end], path))
            pos = end + 1
            if pos < len(text) and text[pos] not in ".[":
                raise PathError(f"expected '.' or '[' at {pos} in {path!r}")
        else:
            end = _key_end(text, pos)
            key = text[pos:end]
            if not key:
                raise PathError(f"empty key at {pos} in {path!r}")
            segments.append(WILDCARD if key == "*" else key)
            pos = end
        if pos < len(text) and text[pos] == ".":
            pos += 1
            if pos == len(text):
                raise PathError(f"trailing '.' in {path!r}")
    return segments


def format_path(segments):
    """Inverse of :func:`parse_path`: ``["a", 0, "b.c"]`` becomes ``a[0]["b.c"]``."""
    parts = []
    for segment in segments:
        if segment is WILDCARD:
            parts.append("[*]")
        elif isinstance(segment, int):
            parts.append(f"[{segment}]")
        elif segment == "" or any(ch in segment for ch in _SPECIAL):
            parts.append(f'["{segment}"]')
        elif parts:
            parts.append("." + segment)
        else:
            parts.append(segment)
    return "".join(parts)
