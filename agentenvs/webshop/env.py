"""``agentenvs/WebShop-v0``: the WebShop shopping task, driving the shop's sessions in-process.

This module holds :class:`WebShopEnv`. Each episode is one session of the shop
(:class:`~agentenvs.webshop.shop.Session`, the logic the Flask app serves): the agent reads the page
as WebShop's ``text`` observation (``text_rich`` or ``html`` on request), answers
``search[query]`` or ``click[label]`` inside the ``<think>/<action>`` format, and the episode ends
with ``click[buy now]`` (terminated) or after ``max_steps`` (15, truncated). The purchase earns
``win_reward`` (10) when its WebShop score is exactly 1 (``reward="score"``: the score itself); other
steps earn 0. An action the page does not offer, or text that breaks the format, is an invalid
action: ``-invalid_action_penalty``, the page unchanged, and a note at the end of the observation.

Tasks are the canonical goal list (``goal-<i>``: the same goal on every machine); split ``test``
holds goals 0-499, ``train`` the rest (verl-agent's split); ``reset(options={"weighted": True})``
draws by WebShop's goal weights instead of uniformly. ``state_key`` is the page as the agent
sees it (without any invalid-action note), so rollouts of one goal share keys. ``info["progress"]``
is the shop's own score of buying the open product with the selected options, scaled by
:data:`~agentenvs.core.progress.PENDING_SHARE` (0 where no product is open), and the purchase's
score once bought (docs/webshop.md, *Progress*).

The env in full (catalogue, pages, score, compat mode, info keys): docs/webshop.md.

>>> import gymnasium as gym, agentenvs
>>> env = gym.make("agentenvs/WebShop-v0", action_format="plain")
>>> obs, info = env.reset(options={"task_id": "goal-3"})
>>> obs.split(" [SEP] ")[:2], info["admissible_actions"]
(['WebShop', 'Instruction:'], ['search[<your query>]'])
>>> obs, reward, terminated, truncated, info = env.step("search[" + info["goal"]["query"] + "]")
>>> info["page"], info["action_valid"], len(info["admissible_actions"]) > 2
('results', True, True)
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from agentenvs.core import TextAgentEnv, text_space
from agentenvs.core.progress import pending_progress
from agentenvs.core.prompting import AgentPrompt, check_prompt_style
from agentenvs.core.tasks import TaskPanel
from agentenvs.webshop.pages import PRODUCT_WINDOW, to_text_rich
from agentenvs.webshop.prompts import CompactWebShopPrompt, WebShopPrompt, format_page
from agentenvs.webshop.shop import Session, Shop

__all__ = ["WebShopEnv", "TEST_GOALS", "OBSERVATION_MODES", "task_id_of", "goal_index_of"]

#: Goals 0..TEST_GOALS-1 form the test split (verl-agent's validation goals).
TEST_GOALS = 500
#: The observations ``observation_mode`` chooses from.
OBSERVATION_MODES = ("text", "text_rich", "html")
_PREFIX = "goal-"


def task_id_of(goal_index: int) -> str:
    """The task id of canonical goal ``goal_index`` (``goal-<i>``)."""
    return f"{_PREFIX}{goal_index}"


def goal_index_of(task_id: str) -> int:
    """The canonical goal index of ``task_id``."""
    return int(task_id[len(_PREFIX) :])


class WebShopEnv(TextAgentEnv[str]):
    """WebShop as a Gymnasium text env over the shop's sessions.

    Args:
        split: ``train`` (goals 500 on) or ``test`` (goals 0-499).
        data_path: ``None`` (``$WEBSHOP_DATA`` if set, else the embedded catalogue), ``"embedded"``,
            or a directory with the official files (``items_shuffle*.json`` or ``documents.jsonl``,
            ``items_ins_v2*.json``).
        num_products: use the first ``num_products`` raw products only.
        human_goals: goals from ``items_human_ins.json`` instead of the synthetic instructions.
        observation_mode: ``"text"`` (WebShop's ``[SEP]``-joined page), ``"text_rich"`` or
            ``"html"``.
        max_steps: step budget (verl-agent: 15).
        reward: ``"verl"`` (``win_reward`` iff the purchase scores 1, else 0) or ``"score"`` (the
            purchase's 0..1 score).
        win_reward: the purchase reward under ``reward="verl"``.
        invalid_action_penalty: an invalid action earns ``-invalid_action_penalty``.
        action_format: ``"tagged"`` (``<think>..</think><action>..</action>``) or ``"plain"``.
        require_think: with ``"tagged"``, demand the think block.
        compat: ``None`` or ``"verl-agent"``: the reference projection (lower-cased; without tags
            the last 20 characters are sent), ``action_valid`` and the penalty then judge the
            format only, and an action the page refuses is a free no-op (observation unchanged).
        show_attrs: offer the ``Attributes`` sub-page.
        render_mode: ``None`` or ``"ansi"``.
    """

    #: ``credit_presets``: config values the credit methods read for this env (docs/custom-env.md):
    #: TRIAGE's ``lam`` of the paper.
    metadata = {**TextAgentEnv.metadata, "credit_presets": {"triage": {"lam": 0.2}}}

    def __init__(
        self,
        *,
        split: str = "train",
        data_path: str | None = None,
        num_products: int | None = None,
        human_goals: bool = False,
        observation_mode: str = "text",
        max_steps: int = 15,
        reward: str = "verl",
        win_reward: float = 10.0,
        invalid_action_penalty: float = 0.1,
        action_format: str = "tagged",
        require_think: bool = True,
        compat: str | None = None,
        show_attrs: bool = False,
        render_mode: str | None = None,
    ) -> None:
        if observation_mode not in OBSERVATION_MODES:
            raise ValueError(
                f"observation_mode must be one of {OBSERVATION_MODES}, got {observation_mode!r}"
            )
        if reward not in ("verl", "score"):
            raise ValueError(f"reward must be 'verl' or 'score', got {reward!r}")
        if compat not in (None, "verl-agent"):
            raise ValueError(f"compat must be None or 'verl-agent', got {compat!r}")
        self.shop = Shop.load(data_path, num_products, human_goals, show_attrs)
        ids = [task_id_of(i) for i in range(len(self.shop.goals))]
        super().__init__(
            tasks=TaskPanel({"train": ids[TEST_GOALS:], "test": ids[:TEST_GOALS]}),
            max_steps=max_steps,
            split=split,
            invalid_action_penalty=invalid_action_penalty,
            action_format=action_format,
            require_think=require_think,
            render_mode=render_mode,
        )
        self.observation_mode = observation_mode
        self.reward_mode = reward
        self.win_reward = float(win_reward)
        self.compat = compat
        self.observation_space: gym.Space[Any] = text_space(200_000, self.shop.charset)
        self.action_space = text_space()
        self.session: Session | None = None
        self.verl_fallback_chars = 20 if compat == "verl-agent" else None
        self._scores: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        self._scores_goal: int | None = None

    # -- agent-facing hook ---------------------------------------------------------------------------
    def agent_prompt(
        self, style: str = "reference", history_length: int | None = None
    ) -> AgentPrompt:
        """:class:`~agentenvs.webshop.prompts.WebShopPrompt` (``"reference"``: verl-agent's text,
        history 2) or :class:`~agentenvs.webshop.prompts.CompactWebShopPrompt` (``"compact"``)."""
        cls = WebShopPrompt if check_prompt_style(style) == "reference" else CompactWebShopPrompt
        return cls() if history_length is None else cls(history_length=history_length)

    def expert_action(self) -> str | None:
        """The expert's next command from the current page (the ``expert_action`` hook of
        docs/custom-env.md), buying the goal's product with the goal's options: on the search
        page, ``search[<the instruction>]`` (or the product's title when that search does not
        return the product); on a results page, the product where it is listed, else the page
        toward it (``next >`` / ``< prev``) or ``back to search``; on another product's page,
        ``< prev``; on the goal's product page, each goal option not yet selected, then
        ``click[buy now]``. ``None`` before a reset and once bought.

        >>> env = WebShopEnv(action_format="plain")
        >>> _ = env.reset(options={"task_id": "goal-3"})
        >>> while (command := env.expert_action()) is not None:
        ...     _, reward, terminated, _, info = env.step(command)
        >>> terminated, info["won"], reward
        (True, True, 10.0)
        """
        session = self.session
        if session is None or session.done:
            return None
        goal = session.goal
        if session.kind == "search":
            query = goal.instruction_text.lower()
            if goal.asin not in {p.asin for p in self.shop.search(query)}:
                query = self.shop.catalog[goal.asin].title.lower()
            return f"search[{query}]"
        clickables = session.clickables()
        if session.kind == "results":
            listed = [p.asin for p in session.search.results] if session.search else []
            if goal.asin.lower() in clickables:
                return f"click[{goal.asin.lower()}]"
            if goal.asin not in listed:
                return "click[back to search]"
            page = listed.index(goal.asin) // PRODUCT_WINDOW + 1
            return "click[next >]" if page > session.page else "click[< prev]"
        if session.kind == "item_sub_page" or session.asin != goal.asin:
            return "click[< prev]"
        values = (
            goal.goal_options.values() if isinstance(goal.goal_options, dict) else goal.goal_options
        )
        for value in values:
            if value in clickables and value not in session.options.values():
                return f"click[{value}]"
        return "click[buy now]"

    # -- base-class hooks ----------------------------------------------------------------------------
    def _choose_task(self, options: dict[str, Any] | None) -> str:
        """As the base class; ``options={"weighted": True}`` draws from the split with WebShop's
        goal weights (goals with rarer attributes more often) instead of uniformly."""
        if not (options or {}).get("weighted") or (options or {}).get("task_id") is not None:
            return super()._choose_task(options)
        ids = self.tasks.ids((options or {}).get("split", self.split))
        weights = np.array([self.shop.goals[goal_index_of(t)].weight for t in ids])
        rng = self._task_stream if self._task_stream is not None else self.np_random
        return ids[int(rng.choice(len(ids), p=weights / weights.sum()))]

    def _load_task(self, task_id: str) -> None:
        self.session = self.shop.new_session(goal_index_of(task_id))

    def _to_command(self, text: str) -> tuple[Any, str]:
        assert self.session is not None
        command, reason = self.session.check(text)
        if command is None and self.compat == "verl-agent":
            return ("noop", reason), ""
        return command, reason

    def _apply(self, command: tuple[str, str]) -> tuple[float, bool]:
        assert self.session is not None
        if command[0] != "noop":
            self.session.apply(command)
        reward = 0.0
        if self.session.done:
            score = float(self.session.score or 0.0)
            won = score == 1.0
            reward = score if self.reward_mode == "score" else (self.win_reward if won else 0.0)
        return reward, self.session.done and self.session.score == 1.0

    def _terminated(self) -> bool:
        return self.session is not None and self.session.done

    def page_text(self) -> str:
        """The current page as WebShop's ``text`` observation (what ``state_key`` is)."""
        assert self.session is not None
        return self.session.text()

    def _observation(self, feedback: str) -> str:
        assert self.session is not None
        if self.observation_mode == "text":
            page = self.page_text()
            return f"{page} [SEP] {feedback}" if feedback else page
        if self.observation_mode == "text_rich":
            page = to_text_rich(self.session.nodes())
            return f"{feedback}\n{page}" if feedback else page
        from agentenvs.webshop.html import render_page

        return render_page(self.session.view())

    def _state_key(self) -> str:
        return self.page_text()

    def _admissible_actions(self) -> list[str]:
        assert self.session is not None
        search = ["search[<your query>]"] if self.session.kind == "search" else []
        return search + [f"click[{c}]" for c in self.session.clickables() if c != "search"]

    def _progress(self) -> float:
        """The purchase score of the open product with the selected options, times
        ``PENDING_SHARE``; 0 with no product open; the score itself once bought. Scores are
        cached per (product, options) for the current goal."""
        session = self.session
        assert session is not None
        if session.done:
            return float(session.score or 0.0)
        if session.asin is None:
            return 0.0
        if self._scores_goal != session.goal_index:
            self._scores, self._scores_goal = {}, session.goal_index
        key = (session.asin, tuple(session.options.items()))
        if key not in self._scores:
            self._scores[key] = self.shop.score(session.goal, session.asin, session.options)[0]
        return pending_progress(self._scores[key])

    def _extra_info(self) -> dict[str, Any]:
        session = self.session
        assert session is not None
        score = float(session.score or 0.0)
        info: dict[str, Any] = {
            "score": score,
            "task_score": score,
            "score_parts": dict(session.score_parts or {}),
            "available_actions": session.available_actions(),
            "page": session.kind,
            "asin": session.asin,
            "options": dict(session.options),
            "goal": session.goal.as_dict(),
            "goal_index": session.goal_index,
            "task": session.goal.instruction_text,
            "anchor": format_page(self.page_text(), session.goal.instruction_text),
        }
        if session.done:
            info["r_type_backend"] = self.shop.nouns.source(session.goal.asin)
        return info
