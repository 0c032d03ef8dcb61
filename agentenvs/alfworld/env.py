"""``agentenvs/ALFWorld-v0``: ALFWorld's text games on the real alfworld/TextWorld PDDL engine.

This module holds :class:`ALFWorldEnv`. The engine (textworld ``PddlEnv`` behind ALFWorld's
demangler) produces every observation, admissible command and ``won`` flag; the env adds the
``<think>/<action>`` format rule, the step budget, rewards, the GraphGPO state key and
goal-condition success (also ``info["progress"]``). Games come from the shipped panel (splits
``train``/``test_seen``/``test_unseen``, ``test`` = ``test_seen``) or, when ``data_path`` or
``$ALFWORLD_DATA`` holds it, the official data (``train``/``valid_seen``/``valid_unseen``). Needs
``pip install agentenvs[alfworld]``; the module imports without it. Every engine load, reset and
step runs inside :func:`~agentenvs.alfworld.memo.engine_memos`: the engine's pure, repeated work is
memoised, with the same results, an order of magnitude faster (docs/alfworld.md, *Speed*).

Observations: the intro at reset (``-= Welcome to TextWorld, ALFRED! =- ... Your task is to: ...``),
then the engine's feedback for each command; a command the engine does not know gets ALFWorld's
``Nothing happens.`` (a valid, ineffective step, as in ALFWorld; its ``info["action_executed"]`` is
``False``, the contract credit methods read for grounding). Text that breaks the format is an
invalid action (``-invalid_action_penalty``, state unchanged) whose observation says why.

The agent-facing prompts come from :meth:`ALFWorldEnv.agent_prompt` (:mod:`agentenvs.alfworld.prompts`).

The env in full (engine, games, rewards, compat mode, state key, info keys): docs/alfworld.md.
"""

from __future__ import annotations

from typing import Any

from agentenvs.alfworld.constants import task_type_of
from agentenvs.alfworld.games import GameSet, resolve_games
from agentenvs.alfworld.gcsr import gcsr
from agentenvs.alfworld.memo import engine_memos
from agentenvs.alfworld.prompts import ALFWorldPrompt, CompactALFWorldPrompt
from agentenvs.alfworld.tracker import StateTracker
from agentenvs.core import TextAgentEnv, text_space
from agentenvs.core.prompting import AgentPrompt, check_prompt_style

__all__ = ["ALFWorldEnv"]

_TASK_MARKER = "Your task is to: "
#: The ``traj_data`` goal parameters that name an object or receptacle class of the task.
_GOAL_PARAMS = ("object_target", "parent_target", "mrecep_target", "toggle_target")


class ALFWorldEnv(TextAgentEnv[str]):
    """ALFWorld (text) as a Gymnasium env over the alfworld engine.

    Args:
        split: panel split to draw games from (``train``/``test_seen``/``test_unseen``, alias
            ``test``; official data: ``train``, ``valid_seen``, ``valid_unseen``).
        data_path: ``None`` (official data under ``$ALFWORLD_DATA`` if present, else the shipped
            panel), ``"embedded"`` (always the shipped panel) or an official data directory.
        task_types: ALFWorld task type ids (1-6) or names to keep; ``None`` = all six.
        max_steps: step budget (ALFWorld/verl-agent: 50).
        win_reward: reward of the winning step (verl-agent: 10.0); other steps earn 0.
        invalid_action_penalty: a format-breaking response earns ``-invalid_action_penalty``.
        action_format: ``"tagged"`` (``<think>..</think><action>..</action>``) or ``"plain"``.
        require_think: with ``"tagged"``, demand the think block.
        compat: ``None`` or ``"verl-agent"`` (verl-agent's projection: lower-cased command, and without
            action tags the last 30 characters go to the engine anyway; such a step is executed,
            flagged ``action_valid=False`` and charged the penalty).
        expert_plan: add ``info["expert_plan"]``, the planner expert's plan from the current state
            (Fast Downward runs on every reset and step: 0.3 s to minutes).
        expert_timeout: the planner's time limit when :meth:`expert_action` replans (s).
        drop_help: leave ``help`` out of ``info["admissible_actions"]`` (the reference prompts do).
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
        task_types: list[int | str] | None = None,
        max_steps: int = 50,
        win_reward: float = 10.0,
        invalid_action_penalty: float = 0.1,
        action_format: str = "tagged",
        require_think: bool = True,
        compat: str | None = None,
        expert_plan: bool = False,
        expert_timeout: float = 30.0,
        drop_help: bool = True,
        render_mode: str | None = None,
    ) -> None:
        if compat not in (None, "verl-agent"):
            raise ValueError(f"compat must be None or 'verl-agent', got {compat!r}")
        try:
            import alfworld.agents.environment.alfred_tw_env  # noqa: F401
            import textworld  # noqa: F401
        except ImportError as exc:
            raise ImportError(
                "agentenvs/ALFWorld-v0 runs the alfworld engine: pip install 'agentenvs[alfworld]'"
            ) from exc
        self.games: GameSet = resolve_games(data_path, task_types)
        super().__init__(
            tasks=self.games.panel,
            max_steps=max_steps,
            split=split,
            invalid_action_penalty=invalid_action_penalty,
            action_format=action_format,
            require_think=require_think,
            render_mode=render_mode,
        )
        self.win_reward = float(win_reward)
        self.compat = compat
        self.expert_plan = expert_plan
        self.drop_help = drop_help
        self.observation_space = text_space()
        self.action_space = text_space()
        self._engine: Any = None
        self._loaded: str | None = None
        self._state: Any = None
        self._raw = ""
        self._tracker = StateTracker()
        self._traj: dict = {}
        self.verl_fallback_chars = 30 if compat == "verl-agent" else None
        self._task = ""
        self.expert_timeout = float(expert_timeout)
        self._plan: list[str] | None = None  # the expert's plan the episode follows (None: replan)
        self._plan_at = 0  # the index of its next command

    # -- agent-facing hook ---------------------------------------------------------------------------
    def agent_prompt(
        self, style: str = "reference", history_length: int | None = None
    ) -> AgentPrompt:
        """:class:`~agentenvs.alfworld.prompts.ALFWorldPrompt` (``"reference"``, history 2) or
        :class:`~agentenvs.alfworld.prompts.CompactALFWorldPrompt` (``"compact"``, last 3 moves)."""
        cls = ALFWorldPrompt if check_prompt_style(style) == "reference" else CompactALFWorldPrompt
        return cls() if history_length is None else cls(history_length=history_length)

    def expert_action(self) -> str | None:
        """The planner expert's next command from the current state (the ``expert_action`` hook
        of docs/custom-env.md): the next command of the plan the episode follows, which is the
        game's stored walkthrough from the reset on; after any other command, a new plan from
        the current state (:func:`~agentenvs.alfworld.engine.replan`, Fast Downward in a forked
        child, ``expert_timeout`` seconds at most). ``None`` before a reset, once the plan is
        played out (won), and where the planner finds no plan in time."""
        if self._state is None or self._state["won"]:
            return None
        if self._plan is None:
            from agentenvs.alfworld.engine import PlannerTimeout, replan

            try:
                self._plan, self._plan_at = replan(self._engine, self.expert_timeout), 0
            except PlannerTimeout:
                return None
        return self._plan[self._plan_at] if self._plan_at < len(self._plan) else None

    # -- engine --------------------------------------------------------------------------------------
    def _get_engine(self) -> Any:
        if self._engine is None:
            import textworld

            from agentenvs.alfworld.engine import make_engine

            infos = textworld.EnvInfos(won=True, admissible_commands=True, facts=False)
            infos.policy_commands = self.expert_plan
            self._engine = make_engine(infos)
        return self._engine

    def _load_task(self, task_id: str) -> None:
        from agentenvs.alfworld.engine import keep_argv

        engine = self._get_engine()
        with keep_argv(), engine_memos():
            if self._loaded != task_id:  # reuse the parsed game when the task repeats (groups)
                self._loaded = None
                engine.load(self.games.game(task_id))
                self._traj = self.games.traj_data(task_id)
                self._loaded = task_id
            self._state = engine.reset()
        self._plan, self._plan_at = list(engine.unwrapped.walkthrough or []) or None, 0
        self._raw = self._state.feedback
        self._task = (
            self._raw.split(_TASK_MARKER, 1)[-1].strip().rstrip(".")
            if _TASK_MARKER in self._raw
            else ""
        )
        self._tracker.reset()

    # -- base-class hooks ----------------------------------------------------------------------------
    def _apply(self, command: str) -> tuple[float, bool]:
        with engine_memos():
            self._state, _, _ = self._engine.step(command)
        on_plan = self._plan is not None and self._plan[self._plan_at : self._plan_at + 1] == [
            command
        ]
        self._plan, self._plan_at = (self._plan, self._plan_at + 1) if on_plan else (None, 0)
        self._raw = self._state.feedback
        self._tracker.update(command, self._raw)
        won = bool(self._state["won"])
        return (self.win_reward if won else 0.0), won

    def _observation(self, feedback: str) -> str:
        return feedback or self._raw

    def _state_key(self) -> str:
        return self._tracker.key(self._raw, self._state["admissible_commands"])

    def _admissible_actions(self) -> list[str]:
        commands = list(self._state["admissible_commands"])
        return [c for c in commands if c != "help"] if self.drop_help else commands

    def _task_type(self) -> str | None:
        return self._traj.get("task_type") or task_type_of(self.task_id or "")

    def _progress(self) -> float:
        """Goal-condition progress: the share of the task's goal conditions that the engine's
        PDDL facts satisfy now (docs/alfworld.md, *Goal-condition success*)."""
        facts = [(f.name, tuple(a.name for a in f.arguments)) for f in self._state["_facts"]]
        return gcsr(facts, self._task_type(), self._traj.get("pddl_params", {}))

    def _extra_info(self) -> dict[str, Any]:
        assert self.task_id is not None  # set by reset()
        info: dict[str, Any] = {
            "task_type": self._task_type(),
            "task": self._task,
            "gamefile": self.games.gamefile(self.task_id),
            "anchor": self._raw,
        }
        if self.expert_plan:
            info["expert_plan"] = list(self._state["policy_commands"])
        return info

    def _info(self, action_valid: bool, reason: str) -> dict[str, Any]:
        info = super()._info(action_valid, reason)
        info["is_action_valid"] = info["action_valid"]
        if info["action_valid"] and self._raw.startswith("Nothing happens"):
            info["action_executed"] = False  # well-formed, but the game ignored it
        info["goal_condition_success_rate"] = info["progress"]
        info["goal_directed"] = bool(
            info["action_valid"]
            and info.get("action_executed", True)
            and self._goal_classes() & set(str(self._action_key).lower().split())
        )
        return info

    def _goal_classes(self) -> set[str]:
        """The lower-cased object and receptacle classes of the task's goal (``apple``,
        ``fridge``), as the engine's commands spell them."""
        params = self._traj.get("pddl_params", {})
        return {str(params.get(key) or "").lower() for key in _GOAL_PARAMS} - {""}

    # -- helpers -------------------------------------------------------------------------------------
    def walkthrough(self) -> list[str]:
        """The current game's stored walkthrough (the planner's plan for generated games)."""
        if self._loaded is None:
            raise RuntimeError("call reset() first")
        return list(self._engine.unwrapped.walkthrough or [])

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine, self._loaded = None, None
        super().close()
