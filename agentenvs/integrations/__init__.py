"""Our envs inside other agent frameworks, each behind an extra; importing this package imports
none of them.

* :mod:`agentenvs.integrations.verifiers_env` - any registered env as a ``verifiers``
  ``MultiTurnEnv`` (extra ``verifiers``; :func:`~agentenvs.integrations.verifiers_env.load_environment`).
* :mod:`agentenvs.integrations.skyrl_env` - any registered env as a SkyRL-gym ``BaseTextEnv``
  (extra ``skyrl``; ``SkyRLTextEnv``, and ``register`` adds our ids to SkyRL-gym's registry).
"""

__all__: list[str] = []
