"""The typed OpenEnv client of agentenvs/Sokoban-v0 (the class ``AutoEnv`` looks up by name)."""

from agentenvs.serve.openenv import AgentEnvClient, TextAction, TextObservation

__all__ = ["ENV_ID", "AgentenvsSokobanEnv", "TextAction", "TextObservation"]

#: The registered id the server of this package's image serves.
ENV_ID = "agentenvs/Sokoban-v0"


class AgentenvsSokobanEnv(AgentEnvClient):
    """:class:`agentenvs.serve.openenv.AgentEnvClient` for a server of ``agentenvs/Sokoban-v0``."""
