"""agentenvs: Gymnasium environments for training LLM agents with RL on multi-turn tasks.

Importing the package registers the ``agentenvs/*`` ids with Gymnasium:

>>> import gymnasium as gym, agentenvs
>>> "agentenvs/Sokoban-v0" in gym.registry
True
"""

from agentenvs.core import Step, Trajectory, read_trajectories, write_trajectories
from agentenvs.ray_vector import RayVectorEnv
from agentenvs.registration import register_envs
from agentenvs.serve import make_remote
from agentenvs.vector import GroupedVectorEnv, make_group_vec_env

__version__ = "0.1.0"
__all__ = [
    "Step",
    "Trajectory",
    "read_trajectories",
    "write_trajectories",
    "GroupedVectorEnv",
    "make_group_vec_env",
    "RayVectorEnv",
    "register_envs",
    "make_remote",
]

register_envs()
