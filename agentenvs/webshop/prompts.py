"""WebShop's agent prompts: verl-agent's text word for word, and a compact one for small models.

This module holds :func:`format_page` (verl-agent's view of a ``text`` observation: the parts after
the instruction, each quoted), :func:`available_action_list` (``search[<your query>]`` when the page
has a search bar, then ``click[...]`` per clickable), :class:`WebShopPrompt` (the reference stack's
``WEBSHOP_TEMPLATE`` / ``WEBSHOP_TEMPLATE_NO_HIS``, history of 2 steps, falling back to the no-history
text above 13,000 characters) and :class:`CompactWebShopPrompt`. Both store the env's projection of
a response (the lower-cased ``<action>`` content; without tags, the last 20 characters).
:class:`ScreenshotWebShopPrompt` and :class:`CompactScreenshotWebShopPrompt` are the two for
``WebShopBrowser-v0``'s screenshot mode: the current page is its screenshot, at the
:data:`~agentenvs.core.prompting.IMAGE_PLACEHOLDER` where the page text would be; the task, the
admissible actions and the history stay text.

>>> obs = "Instruction: [SEP] Find a mug [SEP] Back to Search [SEP] Page 1 (Total results: 0) [SEP] Next >"
>>> format_page(obs, "Find a mug")
"'Back to Search' [SEP] 'Page 1 (Total results: 0)' [SEP] 'Next >'"
>>> available_action_list({"has_search_bar": False, "clickables": ["back to search", "next >"]})
['click[back to search]', 'click[next >]']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentenvs.core.parsing import parse_action_verl
from agentenvs.core.prompting import IMAGE_PLACEHOLDER, AgentPrompt, EpisodeMemory, recent_moves

__all__ = [
    "WEBSHOP_TEMPLATE",
    "WEBSHOP_TEMPLATE_NO_HIS",
    "format_page",
    "available_action_list",
    "WebShopPrompt",
    "CompactWebShopPrompt",
    "ScreenshotWebShopPrompt",
    "CompactScreenshotWebShopPrompt",
]

_SEP = " [SEP] "
_MAX_PROMPT_CHARS = 13000

# The reference stack's prompt text (verl-agent, agent_system/environments/prompts/webshop.py),
# kept character for character, including its non-breaking hyphen in "e‑commerce" (U+2011).
WEBSHOP_TEMPLATE_NO_HIS = """
You are an expert autonomous agent operating in the WebShop e\u2011commerce environment.\u0020
Your task is to: {task_description}.
Your current observation is: {current_observation}.
Your admissible actions of the current situation are:\u0020
[
{available_actions}
].

Now it's your turn to take one action for the current step.
You should first reason step-by-step about the current situation, then think carefully which admissible action best advances the shopping goal. This reasoning process MUST be enclosed within <think> </think> tags.\u0020
Once you've finished your reasoning, you should choose an admissible action for current step and present it within <action> </action> tags.
"""

WEBSHOP_TEMPLATE = """
You are an expert autonomous agent operating in the WebShop e\u2011commerce environment.
Your task is to: {task_description}.
Prior to this step, you have already taken {step_count} step(s). Below are the most recent {history_length} observations and the corresponding actions you took: {action_history}
You are now at step {current_step} and your current observation is: {current_observation}.
Your admissible actions of the current situation are:
[
{available_actions}
].

Now it's your turn to take one action for the current step.
You should first reason step-by-step about the current situation, then think carefully which admissible action best advances the shopping goal. This reasoning process MUST be enclosed within <think> </think> tags.
Once you've finished your reasoning, you should choose an admissible action for current step and present it within <action> </action> tags.
"""


def format_page(observation: str, task: str) -> str:
    """verl-agent's ``format_obs``: the `` [SEP] `` parts after the task, each in quotes; the
    observation unchanged when the task is not one of its parts (the done page, ``text_rich``)."""
    parts = str(observation).split(_SEP)
    if task not in parts:
        return str(observation)
    return _SEP.join(f"'{p}'" for p in parts[parts.index(task) + 1 :])


def available_action_list(available: dict[str, Any]) -> list[str]:
    """The actions verl-agent lists: ``search[<your query>]`` with a search bar, then clicks."""
    actions = ["search[<your query>]"] if available.get("has_search_bar") else []
    return actions + [f"click[{c}]" for c in available.get("clickables", [])]


def _task(info: dict[str, Any]) -> str:
    return str(info.get("task", ""))


def _actions(info: dict[str, Any]) -> list[str]:
    return available_action_list(info.get("available_actions") or {})


@dataclass
class WebShopPrompt(AgentPrompt):
    """verl-agent's WebShop prompt (word for word), history of 2 steps."""

    max_new_tokens: int = 512
    stop: tuple[str, ...] = ("</action>",)

    def render(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
        task = _task(info)
        actions = "\n".join(f"'{a}'," for a in _actions(info))
        page = self.page(observation, task)
        no_history = WEBSHOP_TEMPLATE_NO_HIS.format(
            task_description=task, current_observation=page, available_actions=actions
        )
        if len(memory) == 0 or self.history_length <= 0:
            return no_history
        formatted = EpisodeMemory([(format_page(o, task), a) for o, a in memory.records])
        history, shown = formatted.fetch(self.history_length)
        text = WEBSHOP_TEMPLATE.format(
            task_description=task,
            step_count=len(memory),
            history_length=shown,
            action_history=history,
            current_step=len(memory) + 1,
            current_observation=page,
            available_actions=actions,
        )
        return no_history if len(text) > _MAX_PROMPT_CHARS else text

    def page(self, observation: Any, task: str) -> str:
        """How the current page reads in the prompt: :func:`format_page` of the observation."""
        return format_page(observation, task)

    def project(self, response: str) -> str:
        """The projected command (lower-cased tag content, or the last 20 characters).

        >>> WebShopPrompt().project("<think>.</think><action>Click[Buy Now]</action>")
        'click[buy now]'
        """
        return parse_action_verl(response, fallback_chars=20).command or ""


@dataclass
class CompactWebShopPrompt(WebShopPrompt):
    """A short WebShop prompt for small models (not the reference text): task, the page (cut to
    ``max_page_chars``), the last moves, the actions and a one-line answer format.

    >>> from agentenvs.core.prompting import EpisodeMemory
    >>> info = {"task": "Find a mug", "admissible_actions": ["search[<your query>]"]}
    >>> print(CompactWebShopPrompt().render(EpisodeMemory(), "WebShop [SEP] Instruction: [SEP] "
    ...       "Find a mug [SEP] Search", info))
    Task: Find a mug.
    Page: 'Search'
    Actions: search[<your query>]
    Answer as <think>one short sentence</think><action>one action</action>.
    """

    history_length: int = 3
    response_prefix: str = "<think>"
    max_new_tokens: int = 64
    max_page_chars: int = 1500

    def render(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
        task = _task(info).strip().rstrip(".")
        page = self.page(observation, _task(info))
        if len(page) > self.max_page_chars:
            page = page[: self.max_page_chars] + " ..."
        lines = [f"Task: {task}.", f"Page: {page}"]
        moves = recent_moves(memory, self.history_length)
        if moves:
            lines.append(f"Your last moves: {moves}.")
        lines.append(f"Actions: {' | '.join(info.get('admissible_actions') or [])}")
        lines.append("Answer as <think>one short sentence</think><action>one action</action>.")
        return "\n".join(lines)


class _Screenshot:
    """The page as its screenshot (a ``{"text", "image"}`` observation): the image mark stands
    where the page text would be, and the screenshot is the step's one image."""

    def page(self, observation: Any, task: str) -> str:
        return (
            IMAGE_PLACEHOLDER if isinstance(observation, dict) else format_page(observation, task)
        )

    def images(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> list[Any]:
        return [observation["image"]] if isinstance(observation, dict) else []


@dataclass
class ScreenshotWebShopPrompt(_Screenshot, WebShopPrompt):
    """:class:`WebShopPrompt` with the current page shown as its screenshot.

    >>> import numpy as np
    >>> obs = {"text": "WebShop [SEP] Instruction: [SEP] Find a mug [SEP] Search", "image": np.zeros((8, 8, 3), np.uint8)}
    >>> p = ScreenshotWebShopPrompt()
    >>> "Your current observation is: <image>." in p.render(EpisodeMemory(), obs, {"task": "Find a mug"})
    True
    >>> [image.shape for image in p.images(EpisodeMemory(), obs, {})]
    [(8, 8, 3)]
    """


@dataclass
class CompactScreenshotWebShopPrompt(_Screenshot, CompactWebShopPrompt):
    """:class:`CompactWebShopPrompt` with the current page shown as its screenshot."""
