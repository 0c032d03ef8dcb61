"""Multi-column and table layout."""

from __future__ import annotations


def columnize(items: list[str], width: int = 80, gap: int = 2) -> list[str]:
    """Lay out ``items`` in as many equal-width columns as fit in ``width``.

    Items run down the columns first (like ``ls``). Trailing spaces are stripped.
    """
    if gap < 0:
        raise ValueError("gap must not be negative")
    if not items:
        return []
    cell = max(len(item) for item in items)
    columns = max(1, (width + gap) // (cell + gap))
    rows = -(-len(items) // columns)
    lines = []
    for row in range(rows):
        cells = []
        for column in range(columns):
            index = column * rows + row
            if index >= len(items):
                break
            cells.append(items[index].ljust(cell))
        lines.append((" " * gap).join(cells).rstrip())
    return lines


def table(rows: list[list[str]], sep: str = " | ", align: str = "") -> list[str]:
    """Format ``rows`` of cells as aligned text lines.

    ``align`` holds one letter per column: ``l`` (left, the default for missing letters),
    ``r`` (right) or ``c`` (center). All rows must have the same number of cells.
    """
    if not rows:
        return []
    count = len(rows[0])
    for row in rows:
        if len(row) != count:
            raise ValueError(f"expected {count} cells per row, got {len(row)}")
    widths = [0] * count
    for row in rows:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], len(cell))
    lines = []
    for row in rows:
        cells = []
        for index, cell in enumerate(row):
            how = align[index] if index < len(align) else "l"
            if how == "r":
                cells.append(cell.rjust(widths[index]))
            elif how == "c":
                cells.append(cell.center(widths[index]))
            else:
                cells.append(cell.ljust(widths[index]))
        lines.append(sep.join(cells).rstrip())
    return lines
