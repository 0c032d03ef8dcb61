"""The typed OpenEnv client of agentenvs/SWE-v0 (the class ``AutoEnv`` looks up by name)."""

from agentenvs.serve.openenv import AgentEnvClient, TextAction, TextObservation

__all__ = ["ENV_ID", "AgentenvsSweEnv", "TextAction", "TextObservation"]

#: The registered id the server of this package's image serves.
ENV_ID = "agentenvs/SWE-v0"


class AgentenvsSweEnv(AgentEnvClient):
    """:class:`agentenvs.serve.openenv.AgentEnvClient` for a server of ``agentenvs/SWE-v0``."""
