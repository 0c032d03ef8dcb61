"""The typed OpenEnv client of agentenvs/ALFWorld-v0 (the class ``AutoEnv`` looks up by name)."""

from agentenvs.serve.openenv import AgentEnvClient, TextAction, TextObservation

__all__ = ["ENV_ID", "AgentenvsAlfworldEnv", "TextAction", "TextObservation"]

#: The registered id the server of this package's image serves.
ENV_ID = "agentenvs/ALFWorld-v0"


class AgentenvsAlfworldEnv(AgentEnvClient):
    """:class:`agentenvs.serve.openenv.AgentEnvClient` for a server of ``agentenvs/ALFWorld-v0``."""
