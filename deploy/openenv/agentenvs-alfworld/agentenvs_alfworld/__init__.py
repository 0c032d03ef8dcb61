"""agentenvs/ALFWorld-v0 for OpenEnv's ``AutoEnv``: ``AutoEnv.from_env("agentenvs-alfworld")`` finds this
package's ``openenv.yaml`` and returns :class:`~agentenvs_alfworld.client.AgentenvsAlfworldEnv`."""

from agentenvs_alfworld.client import AgentenvsAlfworldEnv, TextAction, TextObservation

__all__ = ["AgentenvsAlfworldEnv", "TextAction", "TextObservation"]
