"""Reading the agent's response: which ``<search>`` or ``<answer>`` it makes (the reference projection).

This module holds :class:`SearchAction` and :func:`project_action`, verl-agent's
``search_projection`` rule for one response:

1. cut the response after the first ``</search>``, else after the first ``</answer>``;
2. take the first ``<search>…</search>`` block of the cut text, else its first
   ``<answer>…</answer>`` block (tags matched case-insensitively, content stripped); neither is an
   invalid turn (nothing runs);
3. the turn is still *invalid* (it runs, and is charged the penalty) when the whole response opens
   both tag kinds, or opens either more than once.

agentenvs adds one rule: an empty or blank ``<search>`` query is invalid and retrieves nothing
(Search-R1 would search the empty string and return arbitrary passages).

>>> project_action("<think>who?</think><search> Stanley Kubrick </search>")
SearchAction(kind='search', content='Stanley Kubrick', valid=True, reason='')
>>> project_action("<search>a</search><answer>b</answer>").reason
'the response holds both <search> and <answer>'
>>> project_action("I think it is 1928.").text
''
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["SearchAction", "project_action"]

_SEARCH = re.compile(r"<search>(.*?)</search>", re.IGNORECASE | re.DOTALL)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.IGNORECASE | re.DOTALL)
_SEARCH_TAG = re.compile(r"<search>", re.IGNORECASE)
_ANSWER_TAG = re.compile(r"<answer>", re.IGNORECASE)


@dataclass(frozen=True)
class SearchAction:
    """A projected response: ``kind`` (``"search"``, ``"answer"`` or ``None``), its ``content``,
    whether the turn is ``valid`` and, if not, the ``reason``."""

    kind: str | None
    content: str
    valid: bool
    reason: str = ""

    @property
    def text(self) -> str:
        """The projected action as the reference stack stores it (``<search>q</search>``, ``""``)."""
        return f"<{self.kind}>{self.content}</{self.kind}>" if self.kind else ""


def _cut(response: str) -> str:
    for close in ("</search>", "</answer>"):
        head, found, _ = response.partition(close)
        if found:
            return head + close
    return response


def project_action(response: object) -> SearchAction:
    """The search, answer or nothing that ``response`` makes (rules in the module doc)."""
    if not isinstance(response, str):
        return SearchAction(
            None, "", False, f"the response must be text, got {type(response).__name__}"
        )
    cut = _cut(response)
    match = _SEARCH.search(cut)
    kind = "search" if match else None
    if match is None:
        match = _ANSWER.search(cut)
        kind = "answer" if match else None
    if match is None:
        return SearchAction(
            None, "", False, "no <search>...</search> or <answer>...</answer> block"
        )
    content = match.group(1).strip()
    if kind == "search" and not content:
        return SearchAction(None, "", False, "empty search query")
    searches, answers = len(_SEARCH_TAG.findall(response)), len(_ANSWER_TAG.findall(response))
    if searches and answers:
        return SearchAction(kind, content, False, "the response holds both <search> and <answer>")
    if searches > 1 or answers > 1:
        return SearchAction(kind, content, False, f"the response holds more than one <{kind}>")
    return SearchAction(kind, content, True)
