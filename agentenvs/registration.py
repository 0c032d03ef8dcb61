"""Registration of the ``agentenvs/*`` Gymnasium ids (entry points import lazily).

Every id keeps ``gym.make``'s default Gymnasium passive env checker (``PassiveEnvChecker``: it
checks the spaces, and the first reset and step, then only passes calls through); each id passes it
without a warning (tests/agentenvs/test_gym_conventions.py).
"""

from __future__ import annotations

import gymnasium as gym

__all__ = ["ENV_IDS", "register_envs"]

#: id -> (entry point, default kwargs)
ENV_IDS: dict[str, tuple[str, dict]] = {
    "agentenvs/Sokoban-v0": ("agentenvs.sokoban.env:SokobanEnv", {}),
    "agentenvs/SokobanVisual-v0": ("agentenvs.sokoban.env:SokobanEnv", {"visual": True}),
    "agentenvs/ALFWorld-v0": ("agentenvs.alfworld.env:ALFWorldEnv", {}),
    "agentenvs/SokobanDiscrete-v0": ("agentenvs.sokoban.adapters:make_sokoban_discrete", {}),
    "agentenvs/SokobanDiscreteVisual-v0": (
        "agentenvs.sokoban.adapters:make_sokoban_discrete",
        {"visual": True},
    ),
    "agentenvs/WebShop-v0": ("agentenvs.webshop.env:WebShopEnv", {}),
    "agentenvs/WebShopBrowser-v0": ("agentenvs.webshop.browser:WebShopBrowserEnv", {}),
    "agentenvs/SearchQA-v0": ("agentenvs.searchqa.env:SearchQAEnv", {}),
    "agentenvs/SWE-v0": ("agentenvs.swe.env:SWEEnv", {}),
}


def register_envs() -> None:
    """Register every id in :data:`ENV_IDS` (idempotent)."""
    for env_id, (entry_point, kwargs) in ENV_IDS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=entry_point, kwargs=kwargs)
