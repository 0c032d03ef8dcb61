"""How retrieved passages reach the agent: the two reference formats of the ``<information>`` block.

This module holds :func:`searchr1_information` (Search-R1's format), :func:`verl_information`
(SkyRL / verl-agent's, JSON-wrapped), :data:`FORMATS` and :data:`SEARCHR1_INVALID` (Search-R1's
message after a turn with neither a search nor an answer).

* ``"searchr1"``: passage ``i`` (from 1) becomes ``Doc i(Title: <first line>) <other lines>``
  plus a newline, title quotes kept; the lines are joined, stripped, and wrapped as
  ``"\\n\\n<information>" + text + "</information>\\n\\n"``.
* ``"verl"``: passage ``i`` becomes ``Doc i: <contents stripped>`` plus a newline (title line and
  its newline included); the joined text goes through ``json.dumps({"result": text})`` (so the
  agent sees ``\\"`` for quotes, the two characters ``\\n`` for newlines and ``\\uXXXX`` for non-ASCII
  characters) and is wrapped as ``<information>…</information>``. No passage gives
  ``No search results found.``, a failed retrieval ``Search error: <message>``.

>>> from agentenvs.searchqa.retrieval import Hit
>>> hits = [Hit("0", '"Mug"\\nA cup.'), Hit("1", '"Tea"\\nA drink.')]
>>> searchr1_information(hits)
'\\n\\n<information>Doc 1(Title: "Mug") A cup.\\nDoc 2(Title: "Tea") A drink.</information>\\n\\n'
>>> print(verl_information(hits))
<information>{"result": "Doc 1: \\"Mug\\"\\nA cup.\\nDoc 2: \\"Tea\\"\\nA drink.\\n"}</information>
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from agentenvs.searchqa.retrieval import Hit

__all__ = [
    "FORMATS",
    "SEARCHR1_INVALID",
    "format_information",
    "searchr1_information",
    "verl_information",
]

#: The observation formats (``action_format=`` of the env).
FORMATS = ("verl", "searchr1")

#: Search-R1's observation after a response with neither ``<search>`` nor ``<answer>``.
SEARCHR1_INVALID = (
    "\nMy previous action is invalid. If I want to search, I should put the query between "
    "<search> and </search>. If I want to give the final answer, I should put the answer between "
    "<answer> and </answer>. Let me try again.\n"
)


def searchr1_information(hits: Sequence[Hit], error: str | None = None) -> str:
    """Search-R1's ``<information>`` block for ``hits`` (``error``: the failure text instead)."""
    if error is not None:
        text = f"Search error: {error}"
    else:
        lines = []
        for i, hit in enumerate(hits, 1):
            title, _, rest = hit.contents.partition("\n")
            lines.append(f"Doc {i}(Title: {title}) {rest}\n")
        text = "".join(lines)
    return f"\n\n<information>{text.strip()}</information>\n\n"


def verl_information(hits: Sequence[Hit], error: str | None = None) -> str:
    """verl-agent's ``<information>`` block for ``hits`` (``error``: the failure text instead),
    as the agent sees it (already stripped by the reference stack)."""
    if error is not None:
        text = f"Search error: {error}"
    elif not hits:
        text = "No search results found."
    else:
        text = "".join(f"Doc {i}: {hit.contents.strip()}\n" for i, hit in enumerate(hits, 1))
    return f"<information>{json.dumps({'result': text})}</information>"


def format_information(format: str, hits: Sequence[Hit], error: str | None = None) -> str:
    """The ``<information>`` block in ``format`` (one of :data:`FORMATS`)."""
    if format == "searchr1":
        return searchr1_information(hits, error)
    if format == "verl":
        return verl_information(hits, error)
    raise ValueError(f"format must be one of {FORMATS}, got {format!r}")
