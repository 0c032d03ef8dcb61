"""Our envs served over the network through OpenEnv's protocol (extra ``openenv``); in-process
adapters to other frameworks are in :mod:`agentenvs.integrations`.

:mod:`agentenvs.serve.openenv` holds the server (``create_server_app``, :func:`serve`) and the
client (:func:`make_remote`, a ``gymnasium.Env``); both import the ``openenv`` package, so this
package imports nothing until one of them is used. :mod:`agentenvs.serve.sessions` binds
sessions to their creators, :mod:`agentenvs.serve.guard` holds the server's limits,
:mod:`agentenvs.serve.prompt` the agent prompt on the wire (``--prompt STYLE``) and
:mod:`agentenvs.serve.cli` the ``agentenvs serve`` command, :mod:`agentenvs.serve.workers` its
``--workers N`` (N server processes behind one port) and :mod:`agentenvs.serve.ledger` their
session caps. ``deploy/openenv`` holds the
packages OpenEnv's ``AutoEnv`` discovers and the server's container build file.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TOKEN_ENV", "make_remote", "serve"]

#: The environment variable holding the server's shared-secret token (``--token`` overrides it).
TOKEN_ENV = "AGENTENVS_SERVE_TOKEN"


def make_remote(url: str, **kwargs: Any) -> Any:
    """A ``gymnasium.Env`` playing the env served at ``url`` (see
    :func:`agentenvs.serve.openenv.make_remote`)."""
    from agentenvs.serve.openenv import make_remote as _make_remote

    return _make_remote(url, **kwargs)


def serve(env_id: str, **kwargs: Any) -> None:
    """Serve ``env_id`` until interrupted (see :func:`agentenvs.serve.openenv.serve`)."""
    from agentenvs.serve.openenv import serve as _serve

    _serve(env_id, **kwargs)
