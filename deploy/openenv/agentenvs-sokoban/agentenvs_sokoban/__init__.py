"""agentenvs/Sokoban-v0 for OpenEnv's ``AutoEnv``: ``AutoEnv.from_env("agentenvs-sokoban")`` finds this
package's ``openenv.yaml`` and returns :class:`~agentenvs_sokoban.client.AgentenvsSokobanEnv`."""

from agentenvs_sokoban.client import AgentenvsSokobanEnv, TextAction, TextObservation

__all__ = ["AgentenvsSokobanEnv", "TextAction", "TextObservation"]
