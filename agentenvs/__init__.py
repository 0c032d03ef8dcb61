"""agentenvs: Gymnasium environments for training LLM agents with RL on multi-turn tasks.

The envs (:mod:`agentenvs.sokoban`, :mod:`~agentenvs.alfworld`, :mod:`~agentenvs.webshop`,
:mod:`~agentenvs.searchqa`, :mod:`~agentenvs.swe`), the Step/Trajectory contract and the rest the
envs share (:mod:`agentenvs.core`), vector groups (:mod:`agentenvs.vector`,
:mod:`agentenvs.ray_vector`) and the ids (:mod:`agentenvs.registration`) import neither
:mod:`agentenvs.wrappers` (credit assignment) nor :mod:`agentenvs.learners` (the LLM learner and
the bridges into SB3, TRL and verl). Two tools sit on top and are imported by nothing here:
:mod:`agentenvs.viewer` (the HTML credit viewer; imports the wrappers) and :mod:`agentenvs.cli`
(the ``agentenvs`` command; imports the wrappers and the viewer).

The repository keeps ``wrappers/`` and ``learners/`` as top-level folders; the build maps them to
``agentenvs.wrappers`` and ``agentenvs.learners`` (``package-dir`` in pyproject.toml), and they
refuse to be imported under any other name.

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
