"""Problem statements for generated SWE tasks, written from the failing behaviour (docs/swe.md).

No language model: the first FAIL_TO_PASS test is run alone on the buggy repository, pytest's
failure report is parsed (:func:`parse_failure`), the failing statement is located in the test
source with :mod:`ast` (:func:`find_site`), and a template is filled (:func:`render`):

* ``vague`` - the API and its module, "returns wrong results for some inputs";
* ``repro`` - a code block reproducing the call and "I get X but expected Y";
* ``traceback`` - for exceptions (an unexpected one, or an expected one never raised): the
  exception type and message.

Several phrasings per level are drawn with a seeded :class:`random.Random`. Statements never quote
the package's source (the buggy line), the diff, the mutation operator or the test's name.
:func:`write_statement` does all of it for one task.

>>> log = '''____ test_chunk_even ____
...     def test_chunk_even():
... >       assert chunk([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]
... E       assert [[2, 3], [4]] == [[1, 2], [3, 4]]
... E         At index 0 diff: [2, 3] != [1, 2]
...
... tests/test_core.py:19: AssertionError'''
>>> f = parse_failure(log, "tests/test_core.py::test_chunk_even")
>>> f.kind, f.assertion, f.test_lineno
('assertion', 'assert [[2, 3], [4]] == [[1, 2], [3, 4]]', 19)
>>> split_comparison(f.assertion, "==")
('[[2, 3], [4]]', '[[1, 2], [3, 4]]')
"""

from __future__ import annotations

import ast
import builtins
import random
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentenvs.swe.calls import CommandResult
from agentenvs.swe.mutate import is_test_file

__all__ = [
    "COMMAND",
    "LEVELS",
    "Failure",
    "Site",
    "failure_section",
    "find_site",
    "parse_failure",
    "render",
    "split_comparison",
    "write_statement",
]

#: Statement levels, from most to least informative.
LEVELS = ("traceback", "repro", "vague")
#: Level weights: failures that are exceptions (all three levels) and wrong values (no traceback).
_WEIGHTS_EXCEPTION = {"repro": 4, "vague": 3, "traceback": 3}
_WEIGHTS_VALUE = {"repro": 4, "vague": 3}
#: The pytest command whose failure reports statements are written from (full explanations).
COMMAND = "python -m pytest -rA -p no:cacheprovider -vv --tb=long"
_LOCATION = re.compile(r"^(?P<path>[^\s:][^:]*\.py):(?P<line>\d+):(?: (?P<exc>\S+))?\s*$")
_E_LINE = re.compile(r"^E( +)(.*)$")
_HEADER = re.compile(r"^_{2,} \S.* _{2,}$")
_RULE = re.compile(r"^={3,}")
_CMP = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}
_SKIP_CALLEES = frozenset(dir(builtins)) | {"pytest", "approx", "raises"}


@dataclass(frozen=True)
class Failure:
    """What pytest reported for one failing test.

    Attributes:
        kind: ``"assertion"`` (an ``assert`` in the test failed), ``"not_raised"`` (a
            ``pytest.raises`` block saw no exception) or ``"exception"`` (something raised).
        assertion: the first explanation line of a failed assert (``assert 1 == 2``), else ``""``.
        exception: the last error's text, ``Type: message`` (first line only).
        test_lineno: the line of the test file where the test stopped, or ``None``.
        arguments: pytest's line of the test function's arguments (parametrised values),
            ``a = 1, b = [2, 3]``, else ``""``.
    """

    kind: str
    assertion: str = ""
    exception: str = ""
    test_lineno: int | None = None
    arguments: str = ""


@dataclass(frozen=True)
class Site:
    """The failing statement of a test, as code a user could run.

    Attributes:
        expression: the call or value checked (source text), e.g. ``chunk([1, 2, 3, 4], 2)``.
        op: the comparison operator (``"=="``, ``"is"``, ...), ``"truthy"`` / ``"falsy"`` for a
            bare ``assert x`` / ``assert not x``, ``"raises"`` inside ``pytest.raises``, ``""`` for
            a plain statement.
        expected: the comparison's right-hand side (source) or the expected exception's name.
        setup: statements to run first (parameter values, earlier statements of the test).
        imports: the test module's imports that the code needs.
        subject: the API the test exercises (``"Interval.contains()"``) and its module path.
        runnable: every name the snippet uses is defined by it (parameters have literal
            values, no loop variables or fixtures are missing).
    """

    expression: str
    op: str = ""
    expected: str = ""
    setup: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()
    subject: tuple[str, str] = ("", "")
    runnable: bool = True


def split_comparison(assertion: str, op: str) -> tuple[str, str] | None:
    """Split ``assert L <op> R`` (pytest's explanation line) at the top-level ``op``.

    >>> split_comparison("assert 'a == b' == 'c'", "==")
    ("'a == b'", "'c'")
    """
    text = assertion.removeprefix("assert ")
    needle = f" {op} "
    depth, quote, i = 0, "", 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith(needle, i):
            return text[:i], text[i + len(needle) :]
        i += 1
    return None


def failure_section(log: str, test_id: str) -> str:
    """The report of ``test_id`` in a ``--tb=long`` pytest log (its ``___ name ___`` header up to
    the next header or ``===`` line); ``""`` when absent.

    >>> log = ["__ t.test_a __", "A", "__ test_b __", "B", "=== 1 failed ==="]
    >>> failure_section("\\n".join(log), "t.py::test_b").splitlines()
    ['__ test_b __', 'B']
    """
    headline = ".".join(test_id.split("::")[1:])
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if _HEADER.match(line) and line.strip("_ ") == headline:
            end = next(
                (
                    j
                    for j in range(i + 1, len(lines))
                    if _HEADER.match(lines[j]) or _RULE.match(lines[j])
                ),
                len(lines),
            )
            return "\n".join(lines[i:end])
    return ""


def parse_failure(log: str, test_id: str) -> Failure:
    """The failure of ``test_id`` in a ``--tb=long`` pytest log (of that test alone, or its
    :func:`failure_section`)."""
    test_path = test_id.split("::")[0]
    lines = log.splitlines()
    blocks: list[list[str]] = []
    test_lineno: int | None = None
    arguments = ""
    previous = False
    for i, line in enumerate(lines):
        match = _E_LINE.match(line)
        if match and not previous:
            blocks.append([])
            base = len(match.group(1))
        if match:
            pad = line[1 : 1 + base]
            blocks[-1].append(line[1 + base :] if not pad.strip() else match.group(2))
        previous = bool(match)
        location = _LOCATION.match(line)
        if location and location["path"] == test_path and test_lineno is None:
            test_lineno = int(location["line"])
        if _HEADER.match(line) and not arguments and i + 2 < len(lines):
            candidate = lines[i + 2] if not lines[i + 1].strip() else ""
            arguments = candidate if " = " in candidate and not candidate[:1].isspace() else ""
    first = blocks[-1][0].strip() if blocks and blocks[-1] else ""
    if first == "assert" or first.startswith("assert "):
        return Failure("assertion", first, "", test_lineno, arguments)
    if "DID NOT RAISE" in first:
        return Failure("not_raised", "", first, test_lineno, arguments)
    return Failure("exception", "", first, test_lineno, arguments)


def _split_arguments(line: str, names: Sequence[str]) -> dict[str, str]:
    """``a = 1, b = [2, 3]`` (pytest's argument line) split at the known argument ``names``."""
    values: dict[str, str] = {}
    rest = line
    for i, name in enumerate(names):
        if not rest.startswith(f"{name} = "):
            return values
        rest = rest[len(name) + 3 :]
        marker = f", {names[i + 1]} = " if i + 1 < len(names) else None
        cut = rest.find(marker) if marker else len(rest)
        if cut < 0:
            return values
        values[name] = rest[:cut]
        rest = rest[cut + 2 :]
    return values


def find_site(
    test_source: str, test_id: str, failure: Failure, package: Mapping[str, str]
) -> Site | None:
    """The failing statement of ``test_id`` as a runnable snippet; ``None`` when the test or the
    line is not found. ``package`` maps the package's module paths to their source (to name the
    API the test exercises)."""
    tree = ast.parse(test_source)
    lines = test_source.splitlines()
    parts = test_id.split("::")[1:]
    function = _find_function(tree, parts)
    if function is None or failure.test_lineno is None:
        return None
    parents = {c: p for p in ast.walk(function) for c in ast.iter_child_nodes(p)}
    covering = [
        n
        for n in ast.walk(function)
        if isinstance(n, ast.stmt)
        and n is not function
        and n.lineno <= failure.test_lineno <= _end_lineno(n)
    ]
    if not covering:
        return None
    stmt = min(covering, key=lambda n: (_end_lineno(n) - n.lineno, -n.lineno))
    expression, op, expected = _check(stmt, parents, lines)
    climb: ast.AST = stmt
    while parents.get(climb) is not function:
        climb = parents[climb]
    top = climb
    assert isinstance(top, ast.stmt)  # the climb ends at a statement of the function's body
    setup: list[str] = []
    names = [a.arg for a in function.args.args]
    values = _split_arguments(failure.arguments, names) if failure.arguments else {}
    runnable = True
    for name in names:
        if name == "self":
            continue
        value = values.get(name)
        if value is None or " at 0x" in value or not _is_expression(value):
            runnable = False
        else:
            setup.append(f"{name} = {value}")
    for before in function.body:
        if before is top or before.lineno > top.lineno:
            break
        if not isinstance(before, ast.Assert) and not _raises_block(before):
            setup.append(_text(lines, before))
    if top is not stmt and not _raises_block(top):
        runnable = False
    code = "\n".join([*setup, expression])
    try:
        code_tree = ast.parse(code)
    except SyntaxError:
        return None
    loaded = _loaded(code_tree)
    stored = {
        n.id
        for n in ast.walk(code_tree)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    helpers = _helpers(tree)
    needed: set[str] = set()
    frontier = loaded
    while frontier & set(helpers) - needed:
        new = frontier & set(helpers) - needed
        needed |= new
        frontier = set().union(*(_loaded(helpers[n]) for n in new))
    used_everywhere = loaded.union(*(_loaded(helpers[n]) for n in needed))
    imports = []
    imported: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            used = [a for a in node.names if (a.asname or a.name).split(".")[0] in used_everywhere]
            if used and isinstance(node, ast.ImportFrom):
                listed = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in used)
                imports.append(f"from {'.' * node.level}{node.module or ''} import {listed}")
            elif used:
                imports.append(_text(lines, node))
            imported |= {(a.asname or a.name).split(".")[0] for a in used}
    definitions = [_text(lines, n) + "\n" for n in tree.body if _helper_name(n) in needed]
    free = loaded - stored - imported - needed - set(dir(builtins))
    setup = [*definitions, *setup]
    return Site(
        expression=expression,
        op=op,
        expected=expected,
        setup=tuple(setup),
        imports=tuple(imports),
        subject=_subject(code_tree, package),
        runnable=runnable and not free,
    )


def _loaded(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _helper_name(node: ast.stmt) -> str:
    """The name a module-level helper binds (a class, a function or a one-name assignment that
    is neither a test nor a fixture), else ``""``."""
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        if node.name.startswith(("test", "Test")) or node.decorator_list:
            return ""
        return node.name
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        return target.id if isinstance(target, ast.Name) else ""
    return ""


def _helpers(tree: ast.Module) -> dict[str, ast.stmt]:
    return {name: n for n in tree.body if (name := _helper_name(n))}


def _find_function(tree: ast.Module, parts: Sequence[str]) -> ast.FunctionDef | None:
    scope: Sequence[ast.stmt] = tree.body
    for i, part in enumerate(parts):
        name = part.split("[")[0]
        last = i == len(parts) - 1
        kind = ast.FunctionDef if last else ast.ClassDef
        node = next((n for n in scope if isinstance(n, kind) and n.name == name), None)
        if node is None:
            return None
        if last:
            return node  # type: ignore[return-value]
        scope = node.body
    return None


def _end_lineno(node: ast.stmt) -> int:
    """The statement's last line: the parser sets it on every node it makes."""
    assert node.end_lineno is not None
    return node.end_lineno


def _text(lines: Sequence[str], node: ast.stmt) -> str:
    """A statement's full lines, dedented to its own indentation."""
    chunk = lines[node.lineno - 1 : node.end_lineno]
    indent = len(chunk[0]) - len(chunk[0].lstrip())
    return "\n".join(line[indent:] if not line[:indent].strip() else line for line in chunk)


def _raises_block(node: ast.AST | None) -> ast.expr | None:
    """The expected exception of a ``with pytest.raises(E):`` statement, else ``None``."""
    if not isinstance(node, ast.With):
        return None
    for item in node.items:
        call = item.context_expr
        if isinstance(call, ast.Call) and call.args:
            func = call.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "raises":
                return call.args[0]
    return None


def _check(
    stmt: ast.stmt, parents: Mapping[ast.AST, ast.AST], lines: Sequence[str]
) -> tuple[str, str, str]:
    """(expression, op, expected) of the failing statement."""
    raised = _raises_block(stmt)
    if raised is not None and stmt.body:  # type: ignore[attr-defined]
        inner = stmt.body[0]  # type: ignore[attr-defined]
        return _statement_value(inner, lines), "raises", ast.unparse(raised)
    raised = _raises_block(parents.get(stmt))
    if raised is not None:
        return _statement_value(stmt, lines), "raises", ast.unparse(raised)
    if isinstance(stmt, ast.Assert):
        test = stmt.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            op = _CMP[type(test.ops[0])]
            return _segment(lines, test.left), op, _segment(lines, test.comparators[0])
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return _segment(lines, test.operand), "falsy", ""
        return _segment(lines, test), "truthy", ""
    return _statement_value(stmt, lines), "", ""


def _statement_value(stmt: ast.stmt, lines: Sequence[str]) -> str:
    if isinstance(stmt, (ast.Expr, ast.Assign)):
        return _segment(lines, stmt.value)
    return _text(lines, stmt)


def _segment(lines: Sequence[str], node: ast.AST) -> str:
    """An expression's source text (continuation lines joined)."""
    source = "\n".join(lines)
    text = ast.get_source_segment(source, node) or ast.unparse(node)
    return " ".join(part.strip() for part in text.splitlines()) if "\n" in text else text


def _is_expression(text: str) -> bool:
    try:
        ast.parse(text, mode="eval")
    except SyntaxError:
        return False
    return True


def _subject(code: ast.Module, package: Mapping[str, str]) -> tuple[str, str]:
    """(qualified name, module path) of the first package API the code uses, searching the last
    statement first; ``("", "")`` when none is found."""
    index = _definitions(package)
    for stmt in reversed(code.body):
        for node in ast.walk(stmt):
            name = ""
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            elif isinstance(node, ast.Attribute):
                name = node.attr
            if name and name not in _SKIP_CALLEES and name in index:
                return index[name]
    return "", ""


def _definitions(package: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """name -> (display name, module path) for public functions, classes, methods, properties."""
    index: dict[str, tuple[str, str]] = {}
    for path in sorted(package):
        try:
            tree = ast.parse(package[path])
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                index.setdefault(node.name, (f"{node.name}()", path))
            elif isinstance(node, ast.ClassDef):
                index.setdefault(node.name, (node.name, path))
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        prop = any(
                            getattr(d, "id", getattr(d, "attr", "")) in ("property", "setter")
                            for d in item.decorator_list
                        )
                        shown = f"{node.name}.{item.name}" + ("" if prop else "()")
                        index.setdefault(item.name, (shown, path))
    return {k: v for k, v in index.items() if not k.startswith("_")}


def _quote(value: str) -> str:
    """Inline code for short values, a code block for long or multi-line ones."""
    value = value if len(value) <= 400 else value[:400] + " ..."
    if "\n" in value or len(value) > 70:
        return f"\n\n```\n{value}\n```\n"
    return f"`{value}`"


def _outcome(failure: Failure, site: Site) -> str:
    """ "I get X but expected Y" for a failed assert."""
    op = site.op
    if op in ("truthy", "falsy"):
        text = failure.assertion.removeprefix("assert ").removeprefix("not ")
        want = "a true value" if op == "truthy" else "a false value"
        return f"I get {_quote(text)}, but I expected {want}."
    pair = split_comparison(failure.assertion, op) if op else None
    if pair is None:
        return "The result is not what I expected."
    got, want = pair
    if op in ("==", "is") and got == want:
        return f"I get {_quote(got)}, which prints like the expected value but is not equal to it."
    if op in ("==", "is"):
        return f"I get {_quote(got)}, but I expected {_quote(want)}."
    if op in ("!=", "is not"):
        return f"I get {_quote(got)}, which is exactly the value it should not be."
    return f"I get {_quote(got)}, but the result should satisfy `result {op} {want}`."


def _code(site: Site) -> str:
    last = site.expression
    if site.op not in ("raises", "") and not last.startswith("print("):
        last = f"print({last})"
    parts = ["\n".join(site.imports), "\n".join([*site.setup, last])]
    return "```python\n" + "\n\n".join(p for p in parts if p) + "\n```"


def render(failure: Failure, site: Site | None, level: str, rng: random.Random) -> str:
    """The statement text at ``level`` (``vague`` when ``site`` is ``None``)."""
    api, module = site.subject if site else ("", "")
    where = f"`{api}` in `{module}`" if api else "The package"
    name = f"`{api}`" if api else "it"
    exc = failure.exception.split(":")[0].strip() or "an exception"
    expected_exc = site.expected if site and site.op == "raises" else ""
    if site is None or level == "vague":
        if failure.kind == "not_raised":
            options = [
                f"{where} does not reject some invalid inputs: no `{expected_exc or 'error'}` "
                "is raised where one should be.",
                f"Validation looks broken in {where}: invalid arguments are accepted silently "
                "instead of raising an error.",
            ]
        elif failure.kind == "exception":
            options = [
                f"{where} raises `{exc}` for some inputs that should work.",
                f"I get an unexpected `{exc}` from {where} for some valid inputs.",
            ]
        else:
            options = [
                f"{where} returns wrong results for some inputs.",
                f"I think there is a bug in {where}: for some inputs the result is not what "
                "the documentation describes.",
                f"{where} gives incorrect output in certain cases. Could someone take a look?",
            ]
        return rng.choice(options)
    code = _code(site)
    if failure.kind == "not_raised":
        wanted = f"`{expected_exc}`" if expected_exc else "an error"
        options = [
            f"{name} accepts invalid input without complaint.\n\n{code}\n\n"
            f"This returns normally, but I expected it to raise {wanted}.",
            f"The following should raise {wanted}, but no exception is raised:\n\n{code}",
        ]
        if level == "traceback":
            options = [
                f"I expected this to fail with {wanted}:\n\n{code}\n\n"
                f"but it finishes without any exception.",
            ]
        return rng.choice(options)
    if failure.kind == "exception":
        message = failure.exception
        tail = f" I expected it to raise `{expected_exc}` instead." if expected_exc else ""
        if level == "traceback":
            trace = f"```\nTraceback (most recent call last):\n  ...\n{message}\n```"
            options = [
                f"{name} crashes on this input:\n\n{code}\n\n{trace}\n{tail}",
                f"Running the snippet below fails with `{exc}`.\n\n{code}\n\nOutput:\n\n{trace}"
                f"\n{tail}",
            ]
        else:
            options = [
                f"{name} raises `{exc}` here:\n\n{code}\n{tail}",
                f"Minimal example that fails with an unexpected `{exc}`:\n\n{code}\n{tail}",
            ]
        return rng.choice(options).rstrip() + "\n"
    outcome = _outcome(failure, site)
    options = [
        f"I ran into unexpected behaviour with {name}:\n\n{code}\n\n{outcome}",
        f"{name} returns a wrong value.\n\nTo reproduce:\n\n{code}\n\n{outcome}",
        f"Here is a minimal example ({module or 'the package'}):\n\n{code}\n\n{outcome}",
    ]
    return rng.choice(options)


def write_statement(
    run: Callable[[str, Path, float], CommandResult],
    workspace: Path,
    test_id: str,
    *,
    seed: int,
    level: str | None = None,
    avoid: Sequence[str] = (),
    log: str | None = None,
    timeout: float = 30.0,
) -> tuple[str, str]:
    """Run ``test_id`` alone in ``workspace`` (the buggy repository, hidden tests in place) with
    :data:`COMMAND` and write a statement about its failure.

    Args:
        run: ``(command, workspace, timeout) -> CommandResult``.
        seed: seeds the choice of level (when ``level`` is ``None``: ``repro`` 4, ``vague`` 3,
            ``traceback`` 3 for exceptions, no ``traceback`` otherwise) and of the phrasing.
        log: the output of an earlier :data:`COMMAND` run that includes ``test_id``'s failure
            (then nothing is run).
        avoid: text that must not appear (the buggy lines); a statement quoting one falls back
            to ``vague``.

    Returns:
        ``(text, level)``; ``level`` is ``vague`` when no runnable snippet could be built.
    """
    rng = random.Random(seed)
    if log is None:
        log = run(f"{COMMAND} {shlex.quote(test_id)}", workspace, timeout).output
    failure = parse_failure(failure_section(log, test_id), test_id)
    test_path = test_id.split("::")[0]
    package = {
        p.relative_to(workspace).as_posix(): p.read_text()
        for p in sorted(workspace.rglob("*.py"))
        if not _ignored(p.relative_to(workspace).as_posix())
    }
    try:
        site = find_site((workspace / test_path).read_text(), test_id, failure, package)
    except (OSError, SyntaxError):
        site = None
    weights = _WEIGHTS_VALUE if failure.kind == "assertion" else _WEIGHTS_EXCEPTION
    chosen = level or rng.choices(list(weights), list(weights.values()))[0]
    if site is None or not site.runnable:
        chosen = "vague"
    text = render(failure, site, chosen, rng)
    if chosen != "vague" and any(a.strip() and a.strip() in text for a in avoid):
        chosen = "vague"
        text = render(failure, site, chosen, rng)
    return text, chosen


def _ignored(path: str) -> bool:
    parts = path.split("/")
    return is_test_file(path) or any(p.startswith(".") or p == "__pycache__" for p in parts)
