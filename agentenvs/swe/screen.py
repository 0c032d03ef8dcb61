"""A static screen of the submission's diff for grader tampering (docs/swe.md, "Grading", 8).

This module holds :data:`FLAGGED` (what an added line may not touch) and :func:`screen_diff`,
which names the first flagged line, or a file named like a standard or test-runner module (it
would shadow that module), in a unified diff. The env grades a flagged submission 0 with the
reason in ``info["grading_error"]``, before running anything: a fix of a repository's own logic
has no business with these, while each is a known way to forge pytest's outcomes in process.

>>> screen_diff(b"+++ b/pkg/core.py\\n+    return a + b\\n")
''
>>> screen_diff(b"+++ b/pkg/core.py\\n+import atexit\\n")
"the diff touches atexit (pkg/core.py: 'import atexit'); grading refuses it"
>>> screen_diff(b"+++ b/json/__init__.py\\n+x = 1\\n")
'the diff adds json/__init__.py, which would shadow the module json; grading refuses it'
"""

from __future__ import annotations

import re
import sys

__all__ = ["FLAGGED", "SHADOWED", "screen_diff"]

#: Name -> pattern of what an added line of the diff may not touch.
FLAGGED = {
    "sys.modules": r"\bsys\s*\.\s*modules\b",
    "_pytest": r"\b_pytest\b",
    "pytest internals": r"\bpytest\s*\.\s*(?:main|hookimpl|TestReport|CallInfo|Item|Session)\b",
    "pytest hooks": r"\bpytest_(?:runtest|sessionfinish|collectreport|configure|plugins)",
    "atexit": r"\batexit\b",
    "builtins": r"\b__builtins__\b|\bbuiltins\b",
    "os._exit": r"\b_exit\s*\(",
    "a /run path": r"""['"/]run(?:/|['"])""",
    "the grading report": r"agentenvs",
    "interpreter internals": (
        r"\bsys\s*\.\s*(?:settrace|setprofile|addaudithook|_getframe|meta_path|path_hooks)\b"
        r"|\bgc\s*\.\s*get_(?:objects|referrers|referents)\b|/proc/self/mem"
        r"|\binspect\s*\.\s*(?:currentframe|stack|getouterframes)\b"
        r"|\b(?:tb_frame|f_back|f_locals|f_globals)\b"
    ),
    "killing the process": r"\bos\s*\.\s*kill\b|\bsignal\s*\.\s*(?:raise_signal|pthread_kill)\b",
}
#: Top-level module names a submission may not add a file for: the standard library's and the
#: test runner's.
SHADOWED = frozenset(sys.stdlib_module_names) | {"pytest", "_pytest", "pluggy", "py"}

_FLAGGED = [(name, re.compile(pattern)) for name, pattern in FLAGGED.items()]
_MODULE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\.py[cdw]?|\.[^/]*\.so|/.*)?$")


def screen_diff(diff: bytes) -> str:
    """``""``, or why the unified ``diff`` (git's, ``b/`` paths) is refused: an added line that
    matches :data:`FLAGGED`, or a file added or changed whose top-level module name is in
    :data:`SHADOWED`."""
    path = ""
    for raw in diff.splitlines():
        line = raw.decode("utf-8", "replace")
        if line.startswith("+++ "):
            path = line[4:].removeprefix("b/").strip()
            top = _MODULE.match(path)
            if top and top.group(1) in SHADOWED:
                return (
                    f"the diff adds {path}, which would shadow the module {top.group(1)};"
                    " grading refuses it"
                )
            continue
        if not line.startswith("+"):
            continue
        for name, pattern in _FLAGGED:
            if pattern.search(line):
                text = line[1:].strip()[:80]
                return f"the diff touches {name} ({path}: {text!r}); grading refuses it"
    return ""
