"""Our envs inside other agent frameworks, each behind an extra; importing this package imports
none of them.

* :mod:`agentenvs.integrations.verifiers_env` - any registered env as a ``verifiers``
  ``MultiTurnEnv`` (extra ``verifiers``; :func:`~agentenvs.integrations.verifiers_env.load_environment`).
"""

__all__: list[str] = []
