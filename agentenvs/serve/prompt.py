"""The agent's prompt on the wire: what ``env.agent_prompt()`` gives in-process, sent to remote
clients in the observation's ``metadata["prompt"]`` (``agentenvs serve --prompt STYLE``).

The wire format (JSON):

* at ``reset``, once per episode: ``{"style", "history_length", "examples", "response_prefix",
  "stop", "max_new_tokens", "turn"}``: the prompt's own fields, ``turn`` the rendered user turn
  of the first observation (so ``[*examples, {"role": "user", "content": turn}]`` is the chat
  a local learner builds);
* at each ``step``: ``{"turn"}``, the next user turn, rendered on the server from its episode
  memory (the observation each action was taken in and the action's projection).

This module holds :class:`EpisodePrompt` (the server's side: one per session) and
:class:`WirePrompt` (the client's: an :class:`~agentenvs.core.AgentPrompt` whose ``render`` is the
server's latest turn, what ``RemoteEnv.agent_prompt`` returns).

>>> from agentenvs.core import GenericPrompt
>>> server = EpisodePrompt(GenericPrompt(history_length=0), "reference")
>>> wire = server.first("A door.", {"admissible_actions": ["open door"]})
>>> client = WirePrompt()
>>> client.load(wire)
>>> client.render(None, "A door.", {}) == GenericPrompt(history_length=0).render(
...     EpisodeMemory(), "A door.", {"admissible_actions": ["open door"]})
True
>>> sorted(server.next("<action>open door</action>", "Open.", {}))
['turn']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentenvs.core import AgentPrompt, EpisodeMemory

__all__ = ["EpisodePrompt", "WirePrompt"]


class EpisodePrompt:
    """The server's prompt of one session: ``prompt`` (the env's ``agent_prompt(style,
    history_length)``) rendered over an episode memory of its own."""

    def __init__(self, prompt: AgentPrompt, style: str) -> None:
        self.prompt, self.style = prompt, style
        self.memory = EpisodeMemory()
        self.observation: Any = None

    def first(self, observation: Any, info: dict[str, Any]) -> dict[str, Any]:
        """A new episode: the whole prompt and the first user turn (the reset's wire dict)."""
        self.memory, self.observation = EpisodeMemory(), observation
        p = self.prompt
        return {
            "style": self.style,
            "history_length": p.history_length,
            "examples": [dict(m) for m in p.examples],
            "response_prefix": p.response_prefix,
            "stop": list(p.stop),
            "max_new_tokens": p.max_new_tokens,
            "turn": p.render(self.memory, observation, info),
        }

    def next(self, action: str, observation: Any, info: dict[str, Any]) -> dict[str, Any]:
        """After ``env.step(action)``: the next user turn (a step's wire dict)."""
        self.memory.record(self.observation, self.prompt.project(action))
        self.observation = observation
        return {"turn": self.prompt.render(self.memory, observation, info)}


@dataclass
class WirePrompt(AgentPrompt):
    """The prompt a server sends (see the module doc): the fields of its reset, and
    :meth:`render` its latest turn (the arguments are not read: the server rendered it from the
    same episode). ``style``: the server's style; ``turn``: ``None`` until a prompt is loaded.
    ``project`` and ``answer`` are :class:`~agentenvs.core.AgentPrompt`'s (tagged actions)."""

    style: str = ""
    turn: str | None = None

    def load(self, wire: dict[str, Any] | None) -> None:
        """Take a reset's or a step's ``metadata["prompt"]`` (``None``: the server sends none)."""
        if wire is None:
            self.turn = None
            return
        if "style" in wire:
            self.style = str(wire["style"])
            self.history_length = int(wire["history_length"])
            self.examples = tuple(dict(m) for m in wire["examples"])
            self.response_prefix = str(wire["response_prefix"])
            self.stop = tuple(str(s) for s in wire["stop"])
            self.max_new_tokens = int(wire["max_new_tokens"])
        self.turn = str(wire["turn"])

    def render(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
        """The server's user turn for the current step; ``ValueError`` if it sends none."""
        if self.turn is None:
            raise ValueError(
                "the server sends no prompt: serve the env with `agentenvs serve ENV_ID --prompt "
                "reference` (or prompt='reference'), then reset"
            )
        return self.turn
