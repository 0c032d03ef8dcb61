"""The typed OpenEnv client of agentenvs/WebShop-v0 (the class ``AutoEnv`` looks up by name)."""

from agentenvs.serve.openenv import AgentEnvClient, TextAction, TextObservation

__all__ = ["ENV_ID", "AgentenvsWebshopEnv", "TextAction", "TextObservation"]

#: The registered id the server of this package's image serves.
ENV_ID = "agentenvs/WebShop-v0"


class AgentenvsWebshopEnv(AgentEnvClient):
    """:class:`agentenvs.serve.openenv.AgentEnvClient` for a server of ``agentenvs/WebShop-v0``."""
