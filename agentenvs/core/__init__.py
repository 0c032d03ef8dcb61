"""The core of agentenvs: the data contract (:class:`Step`, :class:`Trajectory`, the success rule
:func:`episode_success`), the action parser, task panels, the text-env base (and with it the
``info`` keys credit wrappers read: ``state_key``, ``action_valid``, ``action_key``, ...), the
agent prompts (the ``agent_prompt`` hook) and the crash-safe trajectory store
(:mod:`agentenvs.core.store`, with its record format in :mod:`agentenvs.core.store_format` and its
readers in :mod:`agentenvs.core.store_read`).

Everything here depends on gymnasium and numpy only (the store's Parquet format on pyarrow, imported
when used); it never imports the envs, the wrappers or the learners.
"""

from agentenvs.core.jsonl import TrajectoryWriter, read_trajectories, write_trajectories
from agentenvs.core.parsing import ParsedAction, parse_action, parse_action_verl
from agentenvs.core.prompting import (
    IMAGE_PLACEHOLDER,
    PROMPT_STYLES,
    AgentPrompt,
    CompactGenericPrompt,
    EpisodeMemory,
    GenericPrompt,
    agent_prompt_for,
    generic_prompt,
)
from agentenvs.core.spaces import TEXT_CHARSET, TextSpace, text_space
from agentenvs.core.store import StoredGroup, TrajectoryStore, list_runs, read_groups
from agentenvs.core.tasks import SeedTaskIds, TaskPanel
from agentenvs.core.text_env import TextAgentEnv
from agentenvs.core.trajectory import Step, Trajectory, decode, encode, episode_success

__all__ = [
    "Step",
    "episode_success",
    "Trajectory",
    "encode",
    "decode",
    "TrajectoryWriter",
    "write_trajectories",
    "read_trajectories",
    "TrajectoryStore",
    "StoredGroup",
    "read_groups",
    "list_runs",
    "ParsedAction",
    "parse_action",
    "parse_action_verl",
    "TaskPanel",
    "SeedTaskIds",
    "TextAgentEnv",
    "AgentPrompt",
    "EpisodeMemory",
    "GenericPrompt",
    "CompactGenericPrompt",
    "PROMPT_STYLES",
    "IMAGE_PLACEHOLDER",
    "generic_prompt",
    "agent_prompt_for",
    "text_space",
    "TextSpace",
    "TEXT_CHARSET",
]
