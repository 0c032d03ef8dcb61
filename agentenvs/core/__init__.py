"""The core of agentenvs: the data contract, the action parser, task panels and the text-env base.

Everything here depends on gymnasium and numpy only.
"""

from agentenvs.core.jsonl import TrajectoryWriter, read_trajectories, write_trajectories
from agentenvs.core.parsing import ParsedAction, parse_action, parse_action_verl
from agentenvs.core.spaces import TEXT_CHARSET, TextSpace, text_space
from agentenvs.core.tasks import SeedTaskIds, TaskPanel
from agentenvs.core.text_env import TextAgentEnv
from agentenvs.core.trajectory import Step, Trajectory, decode, encode

__all__ = [
    "Step",
    "Trajectory",
    "encode",
    "decode",
    "TrajectoryWriter",
    "write_trajectories",
    "read_trajectories",
    "ParsedAction",
    "parse_action",
    "parse_action_verl",
    "TaskPanel",
    "SeedTaskIds",
    "TextAgentEnv",
    "text_space",
    "TextSpace",
    "TEXT_CHARSET",
]
