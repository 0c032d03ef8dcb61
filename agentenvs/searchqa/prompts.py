"""SearchQA's agent prompts: verl-agent's and Search-R1's text word for word, and a compact one.

This module holds :data:`SEARCH_TEMPLATE_NO_HIS` and :data:`SEARCH_TEMPLATE` (verl-agent's
``prompts/search.py``, trailing spaces included), :data:`SEARCH_R1_PROMPT` (Search-R1's
``template_type="base"`` instruction, its ``as your want`` included), :func:`search_r1_question`,
:func:`search_history` (verl-agent's ``SearchMemory`` lines) and the prompt classes
:class:`SearchPrompt` (``"reference"`` with ``action_format="verl"``), :class:`SearchR1Prompt`
(``"reference"`` with ``action_format="searchr1"``) and :class:`CompactSearchPrompt` (``"compact"``).

The memory stores each turn's projected action (``<search>q</search>``, ``<answer>a</answer>`` or
``""``); the information a turn returned is the observation that followed it.

>>> from agentenvs.core.prompting import EpisodeMemory
>>> text = SearchPrompt().render(EpisodeMemory(), "Who?", {"question": "Who wrote Hamlet?"})
>>> text.splitlines()[2], text.splitlines()[5].endswith("tags. ")
('Your question: Who wrote Hamlet?', True)
>>> SearchPrompt().project("<think>hm</think><SEARCH> Hamlet author </SEARCH>")
'<search>Hamlet author</search>'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentenvs.core.prompting import AgentPrompt, EpisodeMemory
from agentenvs.searchqa.actions import project_action

__all__ = [
    "SEARCH_R1_PROMPT",
    "SEARCH_TEMPLATE",
    "SEARCH_TEMPLATE_NO_HIS",
    "CompactSearchPrompt",
    "SearchPrompt",
    "SearchR1Prompt",
    "search_history",
    "search_r1_question",
]

_INSTRUCTION = (
    "Now it's your turn to respond for the current step.\n"
    "You should first conduct reasoning process. This process MUST be enclosed within <think> "
    "</think> tags. \n"
    "After completing your reasoning, choose only one of the following actions (do not perform "
    "both):\n"
    "(1) If you find you lack some knowledge, you can call a search engine to get more external "
    "information using format: <search> your query </search>.\n"
    "(2) If you have enough knowledge to answer the question confidently, provide your final "
    "answer within <answer> </answer> tags, without detailed illustrations. For example, "
    "<answer>Beijing</answer>.\n"
)
_HEAD = (
    "\nYou are an expert agent tasked with answering the given question step-by-step.\n"
    "Your question: {task_description}\n\n"
)

#: verl-agent's first-turn prompt (no history).
SEARCH_TEMPLATE_NO_HIS = _HEAD + _INSTRUCTION

#: verl-agent's prompt with the interaction history.
SEARCH_TEMPLATE = (
    _HEAD
    + "Prior to this step, you have already taken {step_count} step(s). Below is the interaction "
    "history where <search> </search> wrapped your past search queries and <information> "
    "</information> wrapped the corresponding search results returned by the external search "
    "engine. History:\n{memory_context}\n\n" + _INSTRUCTION
)

#: Search-R1's instruction (``template_type="base"``), one line ending in a newline.
SEARCH_R1_PROMPT = (
    "Answer the given question. You must conduct reasoning inside <think> and </think> first "
    "every time you get new information. After reasoning, if you find you lack some knowledge, you "
    "can call a search engine by <search> query </search> and it will return the top searched "
    "results between <information> and </information>. You can search as many times as your want. "
    "If you find no further external knowledge needed, you can directly provide the answer inside "
    "<answer> and </answer>, without detailed illustrations. For example, <answer> Beijing "
    "</answer>. Question: {question}\n"
)


def search_r1_question(question: str) -> str:
    """Search-R1's question clean-up: stripped, ``?`` appended when missing.

    >>> search_r1_question(" Who wrote Hamlet "), search_r1_question("Who?")
    ('Who wrote Hamlet?', 'Who?')
    """
    question = question.strip()
    return question if question.endswith("?") else question + "?"


def _turns(memory: EpisodeMemory, observation: Any) -> list[tuple[str, str]]:
    """(projected action, the information that followed it) per past turn."""
    records = memory.records
    if not records:
        return []
    after = [obs for obs, _ in records[1:]] + [str(observation)]
    return [(action, info.strip()) for (_, action), info in zip(records, after, strict=True)]


def search_history(memory: EpisodeMemory, observation: Any, history_length: int) -> str:
    """verl-agent's ``memory_context``: ``Step k:<action> <information>`` lines for the last
    ``history_length`` turns, each ending in a newline, joined by newlines.

    >>> m = EpisodeMemory(); m.record("Q?", "<search>q</search>")
    >>> search_history(m, "<information>x</information>", 4)
    'Step 1:<search>q</search> <information>x</information>\\n'
    """
    turns = _turns(memory, observation)
    start = max(0, len(turns) - history_length)
    return "\n".join(
        f"Step {start + j + 1}:{action} {info}\n" for j, (action, info) in enumerate(turns[start:])
    )


def _question(info: dict[str, Any]) -> str:
    return str(info.get("question", ""))


@dataclass
class SearchPrompt(AgentPrompt):
    """verl-agent's search prompt (word for word), history of 4 turns."""

    history_length: int = 4
    max_new_tokens: int = 512
    stop: tuple[str, ...] = ("</search>", "</answer>")

    def render(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
        question = _question(info)
        if len(memory) == 0 or self.history_length <= 0:
            return SEARCH_TEMPLATE_NO_HIS.format(task_description=question)
        return SEARCH_TEMPLATE.format(
            task_description=question,
            step_count=len(memory),
            memory_context=search_history(memory, observation, self.history_length),
        )

    def project(self, response: str) -> str:
        """The projected action (``<search>q</search>``, ``<answer>a</answer>`` or ``""``)."""
        return project_action(response).text

    def answer(self, command: str) -> str:
        """Text after :attr:`response_prefix` that makes ``command`` (a ``<search>``/``<answer>``
        block) with an empty thought.

        >>> SearchPrompt().answer("<answer>1928</answer>")
        '<think></think><answer>1928</answer>'
        """
        return f"<think></think>{command}".removeprefix(self.response_prefix)


@dataclass
class SearchR1Prompt(SearchPrompt):
    """Search-R1's prompt: its instruction and question, then every past turn's action and
    information in order (Search-R1 grows one sequence; here it is re-rendered each turn)."""

    history_length: int = 1_000_000

    def render(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
        text = SEARCH_R1_PROMPT.format(question=search_r1_question(_question(info)))
        turns = (
            _turns(memory, observation)[-self.history_length :] if self.history_length > 0 else []
        )
        return text + "".join(f"{action}\n\n{info}\n\n" for action, info in turns)


@dataclass
class CompactSearchPrompt(SearchPrompt):
    """A short prompt for small models (not the reference text): the question, the last
    information (cut to ``max_information_chars``), past queries, a one-line answer format.

    >>> from agentenvs.core.prompting import EpisodeMemory
    >>> print(CompactSearchPrompt().render(EpisodeMemory(), "Q", {"question": "Who wrote Hamlet?"}))
    Question: Who wrote Hamlet?
    Answer with <think>one short sentence</think> then <search>a query</search> or <answer>the answer</answer>.
    """

    history_length: int = 3
    response_prefix: str = "<think>"
    max_new_tokens: int = 64
    max_information_chars: int = 1200

    def render(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
        lines = [f"Question: {_question(info)}"]
        turns = _turns(memory, observation)
        if turns and turns[-1][1]:
            found = turns[-1][1]
            if len(found) > self.max_information_chars:
                found = found[: self.max_information_chars] + " ..."
            lines.append(f"Found: {found}")
        queries = [a for a, _ in turns[-self.history_length :] if a.startswith("<search>")]
        if queries:
            lines.append(f"Your searches: {', '.join(queries)}")
        lines.append(
            "Answer with <think>one short sentence</think> then <search>a query</search> or "
            "<answer>the answer</answer>."
        )
        return "\n".join(lines)
