"""agentenvs/SearchQA-v0 for OpenEnv's ``AutoEnv``: ``AutoEnv.from_env("agentenvs-searchqa")`` finds this
package's ``openenv.yaml`` and returns :class:`~agentenvs_searchqa.client.AgentenvsSearchqaEnv`."""

from agentenvs_searchqa.client import AgentenvsSearchqaEnv, TextAction, TextObservation

__all__ = ["AgentenvsSearchqaEnv", "TextAction", "TextObservation"]
