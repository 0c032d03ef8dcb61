"""The gold patch as edits an agent could make: its hunks as (file, old text, new text) pairs.

This module holds :class:`Hunk` and :func:`hunks`, which :meth:`agentenvs.swe.env.SWEEnv.expert_action`
plays as ``str_replace`` edits (docs/learner-warm-start.md, section 2). A hunk's old text is its context and
removed lines, its new text the context and added lines, each line with its newline (a ``\\ No
newline at end of file`` marker drops the newline of the line before it). Creating, deleting or
renaming a file, or a binary change, is not an edit of text: :func:`hunks` raises ``ValueError``.

>>> patch = '''diff --git a/pkg/core.py b/pkg/core.py
... --- a/pkg/core.py
... +++ b/pkg/core.py
... @@ -1,3 +1,3 @@
...  def f(x):
... -    return x + 1
... +    return x + 2
...  # end
... '''
>>> hunks(patch)
[Hunk(path='pkg/core.py', old='def f(x):\\n    return x + 1\\n# end\\n', new='def f(x):\\n    return x + 2\\n# end\\n')]
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Hunk", "hunks"]


@dataclass(frozen=True)
class Hunk:
    """One hunk of a unified diff: the repo-relative ``path`` and the ``old`` text it replaces
    with the ``new`` text (whole lines, newlines included)."""

    path: str
    old: str
    new: str


def hunks(patch: str) -> list[Hunk]:
    """The hunks of the unified diff ``patch`` (``git diff`` output), in order.

    Raises ``ValueError`` for a file that is created, deleted, renamed or binary, and for a line
    outside any hunk that a diff cannot hold.
    """
    out: list[Hunk] = []
    path: str | None = None
    old: list[str] | None = None
    new: list[str] = []
    last: tuple[list[str], ...] = ()  # the sides the previous hunk line went to

    def close() -> None:
        if old is not None and path is not None:
            out.append(Hunk(path, "".join(old), "".join(new)))

    for line in patch.splitlines(keepends=True):
        if line.startswith("diff --git "):
            close()
            path, old, new = None, None, []
        elif line.startswith(("new file", "deleted file", "rename ", "Binary files", "GIT binary")):
            raise ValueError(f"not a text edit of an existing file: {line.strip()!r}")
        elif line.startswith("--- ") and old is None:
            continue
        elif line.startswith("+++ ") and old is None:
            path = line[4:].strip().removeprefix("b/")
        elif line.startswith("@@"):
            close()
            old, new = [], []
        elif old is None:
            continue  # the header's index / mode lines
        elif line.startswith("\\"):  # "\ No newline at end of file": of the line before
            for side in last:
                side[-1] = side[-1].removesuffix("\n")
        elif line[:1] in (" ", "\n", "-", "+"):
            last = {" ": (old, new), "\n": (old, new), "-": (old,), "+": (new,)}[line[:1]]
            for side in last:
                side.append(line[1:] if line[:1] != "\n" else "\n")
        else:
            raise ValueError(f"not a line of a unified diff hunk: {line[:40]!r}")
    close()
    return out
