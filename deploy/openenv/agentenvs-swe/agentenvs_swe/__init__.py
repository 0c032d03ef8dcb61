"""agentenvs/SWE-v0 for OpenEnv's ``AutoEnv``: ``AutoEnv.from_env("agentenvs-swe")`` finds this
package's ``openenv.yaml`` and returns :class:`~agentenvs_swe.client.AgentenvsSweEnv`."""

from agentenvs_swe.client import AgentenvsSweEnv, TextAction, TextObservation

__all__ = ["AgentenvsSweEnv", "TextAction", "TextObservation"]
