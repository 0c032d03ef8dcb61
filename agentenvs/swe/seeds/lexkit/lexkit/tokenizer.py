"""Turn source text into a list of :class:`~lexkit.tokens.Token`."""

from .tokens import COMMENT, EOF, IDENT, KEYWORD, KEYWORDS, NUMBER, OP, STRING, LexError, Token

# Longest operators first so that "**" wins over "*".
OPERATORS = ("**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "<", ">", "=", "(", ")", ",")
ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "0": "\0"}


def _is_ident_start(ch):
    return ch.isalpha() or ch == "_"


def _is_ident_char(ch):
    return ch.isalnum() or ch == "_"


def _scan(source, start, predicate):
    """Index of the first character at or after ``start`` that does not satisfy ``predicate``."""
    for index in range(start, len(source)):
        if not predicate(source[index]):
            return index
    return len(source)


def read_number(source, start):
    """Read an integer or decimal literal at ``start``; return ``(value, end)``."""
    end = _scan(source, start, str.isdigit)
    if end + 1 < len(source) and source[end] == "." and source[end + 1].isdigit():
        end = _scan(source, end + 1, str.isdigit)
        return float(source[start:end]), end
    return int(source[start:end]), end


def read_string(source, start, line, column):
    """Read a quoted string starting at ``start``; return ``(value, end)``."""
    quote = source[start]
    chars = []
    escaped = False
    for index in range(start + 1, len(source)):
        ch = source[index]
        if escaped:
            if ch not in ESCAPES:
                raise LexError(f"unknown escape \\{ch}", line, column + index - start - 1)
            chars.append(ESCAPES[ch])
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == quote:
            return "".join(chars), index + 1
        elif ch == "\n":
            break
        else:
            chars.append(ch)
    raise LexError("unterminated string", line, column)


def match_operator(source, pos):
    """The operator that starts at ``pos``, or None."""
    for op in OPERATORS:
        if source.startswith(op, pos):
            return op
    return None


def tokenize(source, keep_comments=False, add_eof=True):
    """Split ``source`` into tokens. Comments run from ``#`` to the end of the line."""
    tokens = []
    pos = 0
    line = 1
    line_start = 0
    for _ in range(len(source)):
        if pos >= len(source):
            break
        ch = source[pos]
        column = pos - line_start + 1
        if ch == "\n":
            line += 1
            line_start = pos + 1
            pos += 1
        elif ch.isspace():
            pos += 1
        elif ch == "#":
            end = source.find("\n", pos)
            if end < 0:
                end = len(source)
            if keep_comments:
                tokens.append(Token(COMMENT, source[pos + 1 : end].strip(), line, column))
            pos = end
        elif ch.isdigit():
            value, pos = read_number(source, pos)
            tokens.append(Token(NUMBER, value, line, column))
        elif _is_ident_start(ch):
            end = _scan(source, pos, _is_ident_char)
            word = source[pos:end]
            kind = KEYWORD if word in KEYWORDS else IDENT
            tokens.append(Token(kind, word, line, column))
            pos = end
        elif ch in "\"'":
            value, pos = read_string(source, pos, line, column)
            tokens.append(Token(STRING, value, line, column))
        else:
            op = match_operator(source, pos)
            if op is None:
                raise LexError(f"unexpected character {ch!r}", line, column)
            tokens.append(Token(OP, op, line, column))
            pos += len(op)
    if add_eof:
        tokens.append(Token(EOF, None, line, pos - line_start + 1))
    return tokens


def token_values(source):
    """Convenience: the values of all tokens except the final EOF."""
    return [token.value for token in tokenize(source, add_eof=False)]
