"""Mutation operators on Python source text, for SWE-smith-style bug injection (docs/swe.md).

This module holds:

* :data:`OPERATORS` - the operator families, in a fixed order.
* :class:`Mutation` - one candidate edit: its operator, site and the text edits that make it.
* :func:`candidates` - every mutation of one module, in (line, column, operator) order.
* :func:`apply` - the mutated source text.
* :func:`is_test_file` - whether a repo-relative path is a test module (never mutated).

Families: ``op_change`` (``+``/``-``, ``*``/``//``, ``<``/``<=``, ``==``/``!=``, ``and``/``or``,
``+=``/``-=`` ...), ``op_swap`` (operands of a non-commutative binary operator or an ordering
comparison), ``off_by_one`` (an integer literal ``k`` -> ``k+1`` / ``k-1`` inside ``range()``
arguments or a subscript), ``const_change`` (``True``/``False``, ``None``, other number and string
literals), ``remove_cond`` (an ``if`` without ``else`` dropped, or replaced by its body),
``invert_if`` (an ``if``/``elif`` test negated), ``remove_assign`` (an assignment or augmented
assignment inside a function deleted), ``remove_return_early`` (a ``return`` inside an ``if``
deleted), ``swap_args`` (two adjacent positional call arguments exchanged), ``remove_loop_break``
(a ``break`` or ``continue`` deleted). Edits are spliced into the source text at the nodes'
positions (comments and formatting elsewhere are kept); every candidate's result parses and
differs from the source. Docstrings, ``__all__``, annotations and test files are never mutated.

>>> src = "def f(xs):\\n    return xs[1:] + [0]\\n"
>>> [(m.operator, m.description) for m in candidates(src, "pkg/m.py")][:3]
[('op_change', '+ -> -'), ('off_by_one', '1 -> 0'), ('off_by_one', '1 -> 2')]
>>> print(apply(src, candidates(src, "pkg/m.py")[0]), end="")
def f(xs):
    return xs[1:] - [0]
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import PurePosixPath

__all__ = ["OPERATORS", "Edit", "Mutation", "apply", "candidates", "is_test_file"]

#: The operator families, in the order used to break ties at one site.
OPERATORS = (
    "op_change",
    "op_swap",
    "off_by_one",
    "const_change",
    "remove_cond",
    "invert_if",
    "remove_assign",
    "remove_return_early",
    "swap_args",
    "remove_loop_break",
)

#: One text replacement: (lineno, col, end_lineno, end_col, text); lines 1-based, columns are
#: UTF-8 byte offsets as in :mod:`ast`; ``(n + 1, 0)`` is the end of an ``n``-line file.
Edit = tuple[int, int, int, int, str]

#: A node with a source position: every expression and statement.
_Located = ast.expr | ast.stmt

_BINOP_CHANGE: dict[type[ast.operator], str] = {
    ast.Add: "-",
    ast.Sub: "+",
    ast.Mult: "//",
    ast.FloorDiv: "*",
    ast.Div: "*",
    ast.Mod: "//",
    ast.LShift: ">>",
    ast.RShift: "<<",
    ast.BitAnd: "|",
    ast.BitOr: "&",
}
_BINOP_SYMBOL: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.FloorDiv: "//",
    ast.Div: "/",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.MatMult: "@",
}
_CMP_SYMBOL: dict[type[ast.cmpop], str] = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}
_CMP_CHANGE = {
    "<": "<=",
    "<=": "<",
    ">": ">=",
    ">=": ">",
    "==": "!=",
    "!=": "==",
    "in": "not in",
    "not in": "in",
    "is": "is not",
    "is not": "is",
}
_NON_COMMUTATIVE = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift)
_ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_ATOMS = (ast.Name, ast.Constant, ast.Attribute, ast.Call, ast.Subscript, ast.List, ast.Tuple)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


@dataclass(frozen=True, order=True)
class Mutation:
    """One candidate bug.

    Attributes:
        operator: the family, one of :data:`OPERATORS`.
        file: the module's repo-relative path.
        lineno / col: the site (1-based line, 0-based UTF-8 byte column of the mutated node).
        description: what changes, for debugging (e.g. ``"0 -> 1"``, ``"< -> <="``).
        edits: the text replacements, in source order.
    """

    file: str
    lineno: int
    col: int
    operator: str
    description: str
    edits: tuple[Edit, ...]


def is_test_file(path: str) -> bool:
    """A ``test_*.py`` / ``*_test.py`` / ``conftest.py`` module or anything under ``tests/``.

    >>> is_test_file("tests/helpers.py"), is_test_file("pkg/testing.py")
    (True, False)
    """
    parts = PurePosixPath(path).parts
    name = parts[-1] if parts else ""
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or any(p in ("tests", "test") for p in parts[:-1])
    )


def apply(source: str, mutation: Mutation) -> str:
    """``source`` with ``mutation``'s edits spliced in."""
    data = source.encode()
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    out = []
    cursor = 0
    for lineno, col, end_lineno, end_col, text in mutation.edits:
        begin, end = starts[lineno - 1] + col, starts[end_lineno - 1] + end_col
        out += [data[cursor:begin], text.encode()]
        cursor = end
    out.append(data[cursor:])
    return b"".join(out).decode()


def candidates(source: str, file: str) -> list[Mutation]:
    """Every mutation of ``source`` (the module at repo-relative ``file``), sorted by (line,
    column, operator order, edits); ``[]`` for a test file or unparsable source. A candidate is
    kept when its result differs and its enclosing top-level statement still parses (hence the
    whole module does)."""
    if is_test_file(file):
        return []
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    finder = _Finder(source, file, tree)
    spans = [
        (min([n.lineno, *(d.lineno for d in getattr(n, "decorator_list", ()))]), _end(n)[0])
        for n in tree.body
    ]
    lines = source.count("\n")
    found: dict[tuple[Edit, ...], Mutation] = {}
    for mutation in finder.run():
        if mutation.edits in found:
            continue
        mutated = apply(source, mutation)
        first, last = next(
            ((a, b) for a, b in spans if a <= mutation.edits[0][0] <= b), (1, lines + 1)
        )
        shift = mutated.count("\n") - lines
        region = "\n".join(mutated.splitlines()[first - 1 : last + shift])
        if mutated == source or not _parses(region):
            continue
        found[mutation.edits] = mutation
    order = {name: i for i, name in enumerate(OPERATORS)}
    return sorted(found.values(), key=lambda m: (m.lineno, m.col, order[m.operator], m.edits))


def _end(node: _Located) -> tuple[int, int]:
    """The node's (end_lineno, end_col_offset): the parser sets both on every node it makes."""
    assert node.end_lineno is not None and node.end_col_offset is not None
    return node.end_lineno, node.end_col_offset


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


class _Finder:
    """Walks one module's tree and yields the raw candidate mutations."""

    def __init__(self, source: str, file: str, tree: ast.Module) -> None:
        self.file = file
        self.tree = tree
        self.lines = source.encode().splitlines(keepends=True)
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.skip: set[ast.AST] = set()
        for node in ast.walk(tree):
            for root in _excluded_roots(node):
                self.skip.update(ast.walk(root))

    def run(self) -> Iterator[Mutation]:
        for node in ast.walk(self.tree):
            if node in self.skip:
                continue
            yield from self._site(node)

    # -- helpers -----------------------------------------------------------------------------

    def text(self, lineno: int, col: int, end_lineno: int, end_col: int) -> str:
        if lineno == end_lineno:
            return self.lines[lineno - 1][col:end_col].decode()
        chunk = [self.lines[lineno - 1][col:], *self.lines[lineno : end_lineno - 1]]
        return b"".join([*chunk, self.lines[end_lineno - 1][:end_col]]).decode()

    def node_text(self, node: _Located) -> str:
        return self.text(node.lineno, node.col_offset, *_end(node))

    def between(self, left: _Located, right: _Located) -> tuple[Edit, str] | None:
        """The operator token between two nodes, as a span, when nothing but brackets, spaces and
        line continuations surround it."""
        raw = self.text(*_end(left), right.lineno, right.col_offset)
        token = raw.strip("() \t\r\n\\")
        if not token or "#" in raw:
            return None
        head = raw.index(token[0])
        lineno, col = _end(left)
        before = raw[:head].encode()
        newlines = before.count(b"\n")
        if newlines:
            lineno += newlines
            col = len(before) - before.rindex(b"\n") - 1
        else:
            col += len(before)
        span = len(token.encode())
        if "\n" in token:
            return None
        return (lineno, col, lineno, col + span, ""), " ".join(token.split())

    def mutation(self, node: _Located, operator: str, description: str, *edits: Edit) -> Mutation:
        return Mutation(self.file, node.lineno, node.col_offset, operator, description, edits)

    def replace(self, node: _Located, text: str) -> Edit:
        return (node.lineno, node.col_offset, *_end(node), text)

    def delete_statement(self, stmt: ast.stmt) -> Edit:
        """Remove a statement: its whole lines when it stands alone on them and has siblings,
        else replace it with ``pass``."""
        parent = self.parents[stmt]
        siblings = next(
            getattr(parent, f)
            for f in ("body", "orelse", "finalbody", "handlers")
            if stmt in getattr(parent, f, ())
        )
        end_lineno, end_col = _end(stmt)
        first = self.lines[stmt.lineno - 1][: stmt.col_offset]
        last = self.lines[end_lineno - 1][end_col:]
        alone = not first.strip() and (not last.strip() or last.strip().startswith(b"#"))
        if len(siblings) > 1 and alone:
            return (stmt.lineno, 0, end_lineno + 1, 0, "")
        return self.replace(stmt, "pass")

    def in_function(self, node: ast.AST) -> bool:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return True
        return False

    # -- operator families -------------------------------------------------------------------

    def _site(self, node: ast.AST) -> Iterator[Mutation]:
        if isinstance(node, ast.BinOp):
            yield from self._binop(node)
        elif isinstance(node, ast.Compare):
            yield from self._compare(node)
        elif isinstance(node, ast.BoolOp):
            for left, right in pairwise(node.values):
                found = self.between(left, right)
                if found:
                    (ln, col, eln, ecol, _), symbol = found
                    other = "or" if symbol == "and" else "and"
                    yield self.mutation(
                        node, "op_change", f"{symbol} -> {other}", (ln, col, eln, ecol, other)
                    )
        elif isinstance(node, ast.AugAssign):
            yield from self._augassign(node)
        elif isinstance(node, ast.Constant):
            yield from self._constant(node)
        elif isinstance(node, ast.If):
            yield from self._if(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and self.in_function(node):
            if not isinstance(node, ast.AnnAssign) or node.value is not None:
                yield self.mutation(
                    node, "remove_assign", "delete assignment", self.delete_statement(node)
                )
        elif isinstance(node, ast.Return) and isinstance(self.parents.get(node), ast.If):
            yield self.mutation(
                node, "remove_return_early", "delete return", self.delete_statement(node)
            )
        elif isinstance(node, (ast.Break, ast.Continue)):
            word = "break" if isinstance(node, ast.Break) else "continue"
            yield self.mutation(
                node, "remove_loop_break", f"delete {word}", self.delete_statement(node)
            )
        elif isinstance(node, ast.Call):
            yield from self._call(node)

    def _binop(self, node: ast.BinOp) -> Iterator[Mutation]:
        found = self.between(node.left, node.right)
        if not found or found[1] != _BINOP_SYMBOL.get(type(node.op)):
            return
        (ln, col, eln, ecol, _), symbol = found
        other = _BINOP_CHANGE.get(type(node.op))
        if other:
            yield self.mutation(
                node, "op_change", f"{symbol} -> {other}", (ln, col, eln, ecol, other)
            )
        if isinstance(node.op, _NON_COMMUTATIVE):
            yield self._swap(node, node.left, node.right, f"swap operands of {symbol}")

    def _compare(self, node: ast.Compare) -> Iterator[Mutation]:
        operands = [node.left, *node.comparators]
        for (left, right), op in zip(pairwise(operands), node.ops, strict=True):
            found = self.between(left, right)
            if not found or found[1] != _CMP_SYMBOL[type(op)]:
                continue
            (ln, col, eln, ecol, _), symbol = found
            other = _CMP_CHANGE[symbol]
            yield self.mutation(
                node, "op_change", f"{symbol} -> {other}", (ln, col, eln, ecol, other)
            )
        if len(node.ops) == 1 and isinstance(node.ops[0], _ORDERING):
            symbol = _CMP_SYMBOL[type(node.ops[0])]
            yield self._swap(node, node.left, node.comparators[0], f"swap operands of {symbol}")

    def _augassign(self, node: ast.AugAssign) -> Iterator[Mutation]:
        found = self.between(node.target, node.value)
        symbol = _BINOP_SYMBOL.get(type(node.op))
        other = _BINOP_CHANGE.get(type(node.op))
        if found and symbol and other and found[1] == f"{symbol}=":
            (ln, col, eln, ecol, _), _token = found
            yield self.mutation(
                node, "op_change", f"{symbol}= -> {other}=", (ln, col, eln, ecol, f"{other}=")
            )
        if self.in_function(node):
            yield self.mutation(
                node, "remove_assign", "delete augmented assignment", self.delete_statement(node)
            )

    def _swap(self, node: _Located, left: _Located, right: _Located, description: str) -> Mutation:
        def wrapped(n: _Located) -> str:
            text = self.node_text(n)
            return text if isinstance(n, _ATOMS) else f"({text})"

        return self.mutation(
            node,
            "op_swap",
            description,
            self.replace(left, wrapped(right)),
            self.replace(right, wrapped(left)),
        )

    def _constant(self, node: ast.Constant) -> Iterator[Mutation]:
        value = node.value
        if node.lineno != node.end_lineno:
            return
        if isinstance(value, bool):
            yield self.mutation(node, "const_change", f"{value} -> {not value}",
                                self.replace(node, str(not value)))  # fmt: skip
        elif value is None:
            yield self.mutation(node, "const_change", "None -> 0", self.replace(node, "0"))
        elif isinstance(value, int):
            if self._counting(node):
                for new in (value + 1, value - 1):
                    if new >= 0:
                        yield self.mutation(
                            node, "off_by_one", f"{value} -> {new}", self.replace(node, str(new))
                        )
            else:
                yield self.mutation(node, "const_change", f"{value} -> {value + 1}",
                                    self.replace(node, str(value + 1)))  # fmt: skip
        elif isinstance(value, float):
            doubled = value * 2 if value else 1.0
            yield self.mutation(node, "const_change", f"{value!r} -> {doubled!r}",
                                self.replace(node, repr(doubled)))  # fmt: skip
        elif isinstance(value, (str, bytes)):
            shorter = value[:-1] if len(value) > 1 else value * 2 or value.__class__(b" ")
            text = repr(shorter)
            if self.node_text(node).lstrip("rbRB")[:1] == '"' and '"' not in text:
                text = text.replace("'", '"')
            yield self.mutation(node, "const_change", f"{value!r} -> {shorter!r}",
                                self.replace(node, text))  # fmt: skip

    def _counting(self, node: ast.Constant) -> bool:
        """The literal sits in a ``range()`` argument or a subscript (outside nested calls)."""
        child: ast.AST = node
        parent = self.parents.get(node)
        while parent is not None and not isinstance(parent, (ast.stmt, *_SCOPES)):
            if isinstance(parent, ast.Subscript) and child is parent.slice:
                return True
            if isinstance(parent, ast.Call):
                func = parent.func
                return isinstance(func, ast.Name) and func.id == "range" and child in parent.args
            child, parent = parent, self.parents.get(parent)
        return False

    def _if(self, node: ast.If) -> Iterator[Mutation]:
        test = node.test
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inverted = self.node_text(test.operand)
        else:
            inverted = f"not ({self.node_text(test)})"
        yield self.mutation(node, "invert_if", "negate the test", self.replace(test, inverted))
        parent = self.parents.get(node)
        is_elif = (isinstance(parent, ast.If) and parent.orelse == [node]) and self.lines[
            node.lineno - 1
        ][node.col_offset :].startswith(b"elif")
        if node.orelse or is_elif:
            return
        yield self.mutation(node, "remove_cond", "drop the if block", self.delete_statement(node))
        first, last = node.body[0], node.body[-1]
        if first.lineno == node.lineno:
            return
        indent = len(self.lines[first.lineno - 1]) - len(self.lines[first.lineno - 1].lstrip())
        shift = indent - node.col_offset
        body = []
        for line in self.lines[first.lineno - 1 : _end(last)[0]]:
            body.append(line[shift:] if line.strip() and not line[:shift].strip() else line)
        yield self.mutation(
            node,
            "remove_cond",
            "keep the body without the guard",
            (node.lineno, 0, _end(last)[0] + 1, 0, b"".join(body).decode()),
        )

    def _call(self, node: ast.Call) -> Iterator[Mutation]:
        args = node.args
        for i, (a, b) in enumerate(pairwise(args)):
            if isinstance(a, ast.Starred) or isinstance(b, ast.Starred):
                continue
            ta, tb = self.node_text(a), self.node_text(b)
            if ta != tb:
                yield self.mutation(
                    node, "swap_args", f"swap arguments {i} and {i + 1}",
                    self.replace(a, tb), self.replace(b, ta),
                )  # fmt: skip


def _excluded_roots(node: ast.AST) -> Iterator[ast.AST]:
    """Subtrees never mutated: docstrings, ``__all__`` assignments and annotations."""
    body = getattr(node, "body", None)
    if (
        isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        yield body[0]
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            yield node
    if isinstance(node, ast.AnnAssign):
        yield node.annotation
    if isinstance(node, ast.JoinedStr):
        yield node
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns:
        yield node.returns
    if isinstance(node, ast.arg) and node.annotation:
        yield node.annotation
