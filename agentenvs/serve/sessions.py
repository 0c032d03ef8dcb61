"""Sessions of ``agentenvs serve`` (docs/integrations.md, "Threat model"): OpenEnv's
``HTTPEnvServer`` with every session bound to the client that created it, sessions capped per
client address, and HTTP ``/reset``, ``/step`` and ``/state`` on a session.

This module holds :data:`SESSION_HEADER`, :data:`SESSION_COOKIE` and
:class:`SessionServer`, whose :meth:`~SessionServer.register_routes` registers OpenEnv's routes
and, in front of them:

* ``POST /reset``: resets the session named by the ``X-Session-Id`` header (or the
  ``session_id`` cookie), or, with none (or one not of this client's: expired, say), opens a new
  HTTP session and resets it (429 past a session cap); the answer is OpenEnv's
  ``ResetResponse`` with the session id in that header and cookie.
* ``POST /step``, ``GET /state``: on the named session; without one, 400 naming the WebSocket
  route ``/ws`` and the header; an unknown id, or one of another client, 404; a step before the
  first reset 409; an env that raises on what was asked (a bad ``options``, say) 422.
* ``GET /metadata``: computed once, never an env per request.
* ``/ws?session_id=...`` and ``POST /mcp`` with ``params.session_id``: only for the session's
  own client (an HTTP session, from its address); a session opened over a WebSocket belongs to
  that connection alone. Others get OpenEnv's answer for an unknown id.

Sessions created over HTTP expire after ``limits.idle_timeout_s`` without a request (OpenEnv's
idle reaper); those of a WebSocket when the Guard closes the idle connection.

In a worker of ``agentenvs serve --workers N`` (:mod:`agentenvs.serve.workers`),
:attr:`SessionServer.ledger` counts sessions over all workers: a session is created only when
the router's ledger grants it, and every session that ends is reported to it.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any

import gymnasium as gym
from fastapi import Body, FastAPI, HTTPException, Request, WebSocket
from fastapi.responses import JSONResponse
from openenv.core.env_server import Environment, HTTPEnvServer
from openenv.core.env_server.exceptions import SessionCapacityError
from openenv.core.env_server.mcp_types import JsonRpcErrorCode, JsonRpcResponse
from openenv.core.env_server.serialization import deserialize_action, serialize_observation
from openenv.core.env_server.types import (
    EnvironmentMetadata,
    ResetRequest,
    ResetResponse,
    StepRequest,
    StepResponse,
)
from pydantic import ValidationError

from agentenvs.serve.guard import CLIENT, Limits

if TYPE_CHECKING:
    from agentenvs.serve.workers import LedgerClient

__all__ = ["SESSION_HEADER", "SESSION_COOKIE", "SessionServer"]

#: The request and response header naming an HTTP session.
SESSION_HEADER = "X-Session-Id"
#: The cookie ``POST /reset`` sets to the session id (what a ``requests.Session`` sends back).
SESSION_COOKIE = "session_id"
_RESET_BODY = Body(default_factory=ResetRequest)  # an empty body is an empty ResetRequest
_NO_SESSION = (
    f"no session: POST /reset opens one (send back its {SESSION_HEADER} header or its "
    f"{SESSION_COOKIE} cookie), or play over the WebSocket route /ws"
)


class SessionServer(HTTPEnvServer):
    """OpenEnv's ``HTTPEnvServer`` with sessions bound to their creator and capped per client.

    Args:
        metadata: the ``GET /metadata`` answer.
        limits: the bounds (:class:`~agentenvs.serve.guard.Limits`); ``idle_timeout_s`` becomes
            OpenEnv's ``session_timeout``.
        *args: ``HTTPEnvServer``'s positional arguments (the env factory, the action and
            observation classes).
        **kwargs: ``HTTPEnvServer``'s keyword arguments (``concurrency_config``, ...).

    Session ids are OpenEnv's (``uuid4``: 122 random bits from ``os.urandom``).
    ``ledger``: set by a worker of ``agentenvs serve --workers N`` (``None``: one process).
    """

    ledger: LedgerClient | None = None

    def __init__(
        self, *args: Any, metadata: EnvironmentMetadata, limits: Limits, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.metadata = metadata
        self.limits = limits
        self._owners: dict[str, tuple[str, str]] = {}  # id -> (client, "http" | "websocket")
        self._opening: Counter[str] = Counter()  # sessions being created, per client
        self._in_ledger: set[str] = set()  # sessions the ledger holds for this worker

    # -- ownership -------------------------------------------------------------------------

    def sessions_of(self, client: str) -> int:
        """Sessions ``client`` holds (or is opening)."""
        self._owners = {s: o for s, o in self._owners.items() if s in self._sessions}
        return sum(owner == client for owner, _ in self._owners.values()) + self._opening[client]

    def owned(self, session_id: str | None) -> bool:
        """Whether the current :data:`CLIENT` may use ``session_id`` over HTTP or attach to it
        (HTTP sessions only: a WebSocket's session is its connection's)."""
        client, _ = CLIENT.get() or ("unknown", "http")
        owner = self._owners.get(session_id or "")
        return owner == (client, "http") and self._sessions.get(session_id) is not None

    async def _create_session(self) -> tuple[str, Environment]:
        """OpenEnv's session creation, refused (``SessionCapacityError``) past
        ``limits.max_sessions_per_client`` for the current :data:`CLIENT`. A session opened
        over a WebSocket is bound to that connection and exempt from OpenEnv's idle reaper
        (the Guard times the connection out); one opened over HTTP (``/reset``, ``/mcp``) to
        the client address."""
        client, kind = CLIENT.get() or ("unknown", "http")
        cap = self.limits.max_sessions_per_client
        held = self.sessions_of(client)
        if cap is not None and held >= cap:
            raise SessionCapacityError(
                held, cap, f"client {client} holds {held}/{cap} sessions (max_sessions_per_client)"
            )
        if self.ledger is not None:
            self._report_ended()
            refusal = await self.ledger.acquire(client)
            if refusal is not None:
                raise SessionCapacityError(*refusal)
        self._opening[client] += 1
        try:
            session_id, env = await super()._create_session()
        except BaseException:
            if self.ledger is not None:
                self.ledger.cancel(client)
            raise
        finally:
            self._opening[client] -= 1
            if not self._opening[client]:
                del self._opening[client]
        if self.ledger is not None:
            self.ledger.bind(session_id, client)
            self._in_ledger.add(session_id)
        self._owners[session_id] = (client, kind)
        if kind == "websocket":
            self._session_websocket_attachments.add(session_id)
        return session_id, env

    async def _destroy_session(self, session_id: str) -> None:
        await super()._destroy_session(session_id)
        self._report_ended()

    def _report_ended(self) -> None:
        """Tell the ledger (if any) of this worker's sessions that have ended (closed by a
        disconnect, the idle reaper or MCP's ``openenv/session/close``)."""
        if self.ledger is None:
            return
        ended = [s for s in self._in_ledger if s not in self._sessions]
        if ended:
            self._in_ledger.difference_update(ended)
            self.ledger.release(ended)

    # -- routes ----------------------------------------------------------------------------

    def register_routes(self, app: FastAPI, mode: Any = "simulation") -> None:
        """OpenEnv's routes behind ours (see the module docstring); OpenEnv's ``/reset``,
        ``/step``, ``/state`` and ``/metadata`` are dropped, its ``/ws`` and ``/mcp`` run after
        the ownership check."""
        ours = len(app.router.routes)
        self._register_session_routes(app)
        mine = app.router.routes[ours:]
        super().register_routes(app, mode)
        theirs = {
            (r.path, frozenset(getattr(r, "methods", None) or ())): r
            for r in app.router.routes[ours + len(mine) :]
        }
        self._openenv_ws = theirs[("/ws", frozenset())].endpoint
        self._openenv_mcp = theirs[("/mcp", frozenset({"POST"}))].endpoint
        shadowed = {(r.path, frozenset(getattr(r, "methods", None) or ())) for r in mine}
        app.router.routes[:] = app.router.routes[: ours + len(mine)] + [
            r for key, r in theirs.items() if key not in shadowed
        ]
        app.openapi_schema = None

    def _session(self, request: Request) -> tuple[str, Environment]:
        session_id = request.headers.get(SESSION_HEADER) or request.cookies.get(SESSION_COOKIE)
        if not session_id:
            raise HTTPException(400, _NO_SESSION)
        if not self.owned(session_id):
            raise HTTPException(
                404,
                f"unknown session {session_id!r} (sessions idle for {self.limits.idle_timeout_s}"
                " s are closed); POST /reset without it opens a new one, or use /ws",
            )
        self._update_session_activity(session_id)
        return session_id, self._sessions[session_id]

    async def _run(self, session_id: str, func: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            result = await self._run_in_session_executor(session_id, func, *args, **kwargs)
        except gym.error.ResetNeeded as err:
            raise HTTPException(409, f"{err}; POST /reset first") from None
        except Exception as err:  # noqa: BLE001 - what the request asked of the env failed
            raise HTTPException(422, f"the env refused it: {type(err).__name__}: {err}") from None
        self._update_session_activity(session_id, increment_step=func.__name__ == "step")
        return result

    def _register_session_routes(self, app: FastAPI) -> None:
        @app.post("/reset", response_model=ResetResponse, tags=["Environment Control"])
        async def reset(request: Request, body: ResetRequest = _RESET_BODY) -> JSONResponse:
            """Reset the named session, or (none named, or not one of the client's) open a new
            HTTP session and reset it."""
            named = request.headers.get(SESSION_HEADER) or request.cookies.get(SESSION_COOKIE)
            if self.owned(named):
                session_id, env = self._session(request)
            else:
                try:
                    session_id, env = await self._create_session()
                except SessionCapacityError as err:
                    raise HTTPException(429, str(err)) from None
            observation = await self._run(
                session_id, env.reset, **body.model_dump(exclude_unset=True)
            )
            answer = ResetResponse(**serialize_observation(observation)).model_dump()
            response = JSONResponse(answer, headers={SESSION_HEADER: session_id})
            response.set_cookie(SESSION_COOKIE, session_id, httponly=True, samesite="strict")
            return response

        @app.post("/step", response_model=StepResponse, tags=["Environment Control"])
        async def step(request: Request, body: StepRequest) -> StepResponse:
            """Step the named session."""
            try:
                action = deserialize_action(body.action, self.action_cls)
            except ValidationError as err:
                raise HTTPException(422, err.errors()) from None
            session_id, env = self._session(request)
            observation = await self._run(session_id, env.step, action)
            return StepResponse(**serialize_observation(observation))

        @app.get("/state", tags=["State Management"])
        async def state(request: Request) -> dict[str, Any]:
            """The named session's state."""
            _, env = self._session(request)
            return env.state.model_dump()

        @app.get("/metadata", response_model=EnvironmentMetadata, tags=["Environment Info"])
        async def metadata() -> EnvironmentMetadata:
            """The env's metadata (computed once)."""
            return self.metadata

        @app.websocket("/ws")
        async def websocket(websocket: WebSocket) -> None:
            """OpenEnv's ``/ws``; attaching (``?session_id=``) only to one's own HTTP session."""
            session_id = websocket.query_params.get("session_id")
            if session_id and not self.owned(session_id):
                await websocket.close(code=1008, reason="unknown session_id")
                return
            await self._openenv_ws(websocket)

        @app.post("/mcp")
        async def mcp(request: Request) -> Any:
            """OpenEnv's ``POST /mcp``; ``params.session_id`` only for its own client."""
            try:
                payload = json.loads(await request.body())
                params = payload.get("params") if isinstance(payload, dict) else None
                session_id = params.get("session_id") if isinstance(params, dict) else None
            except (ValueError, RecursionError):
                session_id = None  # OpenEnv answers the parse error
            if isinstance(session_id, str) and session_id and not self.owned(session_id):
                return JsonRpcResponse.error_response(
                    JsonRpcErrorCode.INVALID_PARAMS,
                    f"Unknown session_id: {session_id}",
                    request_id=payload.get("id"),
                ).model_dump()
            try:
                return await self._openenv_mcp(request)
            finally:
                self._report_ended()
