"""agentenvs/WebShop-v0 for OpenEnv's ``AutoEnv``: ``AutoEnv.from_env("agentenvs-webshop")`` finds this
package's ``openenv.yaml`` and returns :class:`~agentenvs_webshop.client.AgentenvsWebshopEnv`."""

from agentenvs_webshop.client import AgentenvsWebshopEnv, TextAction, TextObservation

__all__ = ["AgentenvsWebshopEnv", "TextAction", "TextObservation"]
