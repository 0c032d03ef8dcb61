"""The typed OpenEnv client of agentenvs/SearchQA-v0 (the class ``AutoEnv`` looks up by name)."""

from agentenvs.serve.openenv import AgentEnvClient, TextAction, TextObservation

__all__ = ["ENV_ID", "AgentenvsSearchqaEnv", "TextAction", "TextObservation"]

#: The registered id the server of this package's image serves.
ENV_ID = "agentenvs/SearchQA-v0"


class AgentenvsSearchqaEnv(AgentEnvClient):
    """:class:`agentenvs.serve.openenv.AgentEnvClient` for a server of ``agentenvs/SearchQA-v0``."""
