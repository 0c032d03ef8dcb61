"""Token type and lexer errors."""

from dataclasses import dataclass

NUMBER = "NUMBER"
IDENT = "IDENT"
KEYWORD = "KEYWORD"
STRING = "STRING"
OP = "OP"
COMMENT = "COMMENT"
EOF = "EOF"

KEYWORDS = frozenset({"and", "or", "not", "true", "false"})


@dataclass(frozen=True)
class Token:
    """One lexical token; ``line`` and ``column`` are 1-based."""

    kind: str
    value: object
    line: int
    column: int


class LexError(ValueError):
    """Raised for malformed input; carries the position of the problem."""

    def __init__(self, message, line, column):
        super().__init__(f"{message} at {line}:{column}")
        self.line = line
        self.column = column
