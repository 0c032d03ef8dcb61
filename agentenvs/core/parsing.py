"""Parsing the agent's free text into an environment command.

This module holds :class:`ParsedAction`, :func:`parse_action` (agentenvs' validity rule) and
:func:`parse_action_verl` (the reference stack's projection, for ``compat="verl-agent"``).

The validity rule of :func:`parse_action` (tags are matched case-insensitively):

1. the action is a ``str``;
2. with ``require_think``, a ``<think>`` tag is later closed by ``</think>`` before the first ``<action>``;
3. there is exactly one ``<action>...</action>`` block and nothing inside it opens another tag of the pair;
4. its content, stripped of surrounding white space, is non-empty;
5. with ``reject_cjk``, the whole response has no CJK ideograph (U+4E00-U+9FFF), as the reference stack.

Anything else is an *invalid action*: the env charges its penalty, keeps the state and says why.

>>> parse_action("<think>go</think><action> Up </action>")
ParsedAction(command='Up', valid=True, reason='')
>>> parse_action("up").reason
'no <action>...</action> block'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ParsedAction", "parse_action", "parse_action_verl"]

CJK_CHARS = re.compile("[\u4e00-\u9fff]")


@dataclass(frozen=True)
class ParsedAction:
    """Result of parsing one response.

    Attributes:
        command: the action text to execute (stripped, case kept); ``None`` when there is none.
        valid: whether the response follows the format.
        reason: why it is invalid (empty when valid); shown to the agent in the next observation.
    """

    command: str | None
    valid: bool
    reason: str = ""


def _invalid(reason: str, command: str | None = None) -> ParsedAction:
    return ParsedAction(command, False, reason)


def parse_action(
    text: object, *, tag: str = "action", require_think: bool = True, reject_cjk: bool = True
) -> ParsedAction:
    """Extract the command from ``<think>...</think><action>...</action>`` text (rule in module doc).

    Args:
        text: the raw response.
        tag: name of the action tag (``"action"``; SearchQA uses its own tags).
        require_think: demand a closed ``<think>`` block before the action.
        reject_cjk: treat any CJK ideograph as a format violation.
    """
    if not isinstance(text, str):
        return _invalid(f"the action must be text, got {type(text).__name__}")
    lower = text.lower()
    open_tag, close_tag = f"<{tag}>", f"</{tag}>"
    start = lower.find(open_tag)
    end = lower.find(close_tag, start + len(open_tag)) if start >= 0 else -1
    if start < 0 or end < 0:
        return _invalid(f"no <{tag}>...</{tag}> block")
    inner = lower[start + len(open_tag) : end]
    if open_tag in inner:
        return _invalid(f"nested <{tag}> tag")
    if open_tag in lower[end:] or close_tag in lower[end + len(close_tag) :]:
        return _invalid(f"more than one <{tag}> block")
    command = text[start + len(open_tag) : end].strip()
    if not command:
        return _invalid(f"empty <{tag}> block")
    if require_think:
        think = lower.find("<think>", 0, start)
        if think < 0 or lower.find("</think>", think, start) < 0:
            return _invalid(f"no <think>...</think> block before <{tag}>", command)
    if reject_cjk and CJK_CHARS.search(text):
        return _invalid("CJK characters are not allowed", command)
    return ParsedAction(command, True)


def parse_action_verl(text: object, *, fallback_chars: int = 30) -> ParsedAction:
    """The reference stack's projection (``alfworld_projection`` / ``webshop_projection``).

    Lower-cases the response and takes the text between the first ``<action>`` and ``</action>``.
    Without both tags the last ``fallback_chars`` characters become the command (the env then answers
    it like any other command); ``valid`` is false when a tag or a think tag is missing or the text
    holds CJK characters.

    >>> parse_action_verl("I pick <action>Go To Desk 1</action>")
    ParsedAction(command='go to desk 1', valid=False, reason='missing <think> or </think>')
    """
    if not isinstance(text, str):
        return _invalid(f"the action must be text, got {type(text).__name__}")
    lower = text.lower()
    start, end = lower.find("<action>"), lower.find("</action>")
    if start < 0 or end < 0:
        return _invalid("no <action>...</action> block", lower[-fallback_chars:])
    command = lower[start + len("<action>") : end].strip()
    if "<think>" not in lower or "</think>" not in lower:
        return _invalid("missing <think> or </think>", command)
    if CJK_CHARS.search(text):
        return _invalid("CJK characters are not allowed", command)
    return ParsedAction(command, True)
