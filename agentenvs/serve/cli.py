"""``agentenvs serve ENV_ID``: serve a registered env over OpenEnv's protocol (extra ``openenv``).

The subcommand module of the command line (``add_parser``, ``run``), kept here beside the
server so the command line's own package only names it. The env's options (``--env-kwargs``,
``--prompt``) are the operator's, fixed for every session; they are checked, and a bad one is a
one-line error (exit status 2), before the server binds its port; the command prints them at
start.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from typing import Any

from agentenvs.cli.errors import parse_env_kwargs
from agentenvs.serve import TOKEN_ENV

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "serve",
        help="serve a registered env over OpenEnv's protocol (HTTP and WebSocket)",
        description="Serve ENV_ID with OpenEnv's server: one env per session (a WebSocket, or "
        "HTTP /reset and /step with the X-Session-Id it returns), at most --max-sessions at once; "
        "play it with agentenvs.make_remote(URL) or any OpenEnv client. The threat model: "
        "docs/integrations.md.",
    )
    p.add_argument("env_id", metavar="ENV_ID", help="a registered id, e.g. agentenvs/Sokoban-v0")
    p.add_argument(
        "--env-kwargs",
        default=None,
        metavar="JSON",
        help='JSON options for gym.make of every session, e.g. \'{"action_format": "plain"}\'',
    )
    p.add_argument(
        "--prompt",
        choices=("reference", "compact"),
        default=None,
        help="send the env's agent prompt in this style in metadata['prompt'] (default: none)",
    )
    p.add_argument(
        "--prompt-history",
        type=int,
        default=None,
        metavar="N",
        help="past steps the prompt's turns show (default: the prompt's own; 0 for chats)",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default %(default)s)")
    p.add_argument("--port", type=int, default=8000, help="port (default %(default)s)")
    p.add_argument(
        "--max-sessions",
        type=int,
        default=16,
        help="concurrent sessions, over all workers (default %(default)s)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="server processes behind the port, each session kept on one (about one per core; "
        "default %(default)s)",
    )
    p.add_argument(
        "--max-sessions-per-client",
        type=int,
        default=None,
        help="sessions one client address may hold (default: --max-sessions)",
    )
    p.add_argument(
        "--max-connections-per-client",
        type=int,
        default=64,
        help="open connections per client address (default %(default)s)",
    )
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=600.0,
        help="seconds a session may sit idle before it is closed; 0: never (default %(default)s)",
    )
    p.add_argument(
        "--max-body-bytes",
        type=int,
        default=1 << 20,
        help="largest request body and WebSocket message (default %(default)s)",
    )
    p.add_argument(
        "--max-requests-per-second-per-client",
        type=float,
        default=200.0,
        help="HTTP requests and WebSocket openings per second per client address; 0: no bound "
        "(default %(default)s)",
    )
    p.add_argument(
        "--token",
        default=None,
        help=f"a shared secret every request must send as 'Authorization: Bearer TOKEN' "
        f"(default: ${TOKEN_ENV}, if set)",
    )
    p.add_argument(
        "--privileged",
        action="store_true",
        help="also send info['progress'] (the env's privileged task progress)",
    )


def run(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("openenv") is None:
        print("agentenvs serve needs OpenEnv: pip install 'agentenvs[openenv]'", file=sys.stderr)
        return 2
    from agentenvs.cli.errors import check_env_id
    from agentenvs.serve.guard import Limits
    from agentenvs.serve.openenv import make_server, run_server
    from agentenvs.serve.workers import Router, run_router

    check_env_id(args.env_id)
    env_kwargs = parse_env_kwargs(args.env_kwargs)
    try:
        limits = Limits.from_env(
            token=args.token,
            max_sessions_per_client=args.max_sessions_per_client,
            max_connections_per_client=args.max_connections_per_client,
            idle_timeout_s=args.idle_timeout or None,
            max_body_bytes=args.max_body_bytes,
            max_requests_per_second_per_client=args.max_requests_per_second_per_client or None,
        )
        options: dict[str, Any] = dict(
            host=args.host,
            port=args.port,
            max_sessions=args.max_sessions,
            limits=limits,
            privileged=args.privileged,
            prompt=args.prompt,
            prompt_history_length=args.prompt_history,
            env_kwargs=env_kwargs,
        )
        if args.workers == 1:
            server = make_server(args.env_id, **options)
        else:  # checked (a ValueError) before any port is bound, as make_server is
            server = Router(args.env_id, args.workers, **options)
    except (TypeError, ValueError) as exc:
        print(f"agentenvs serve: error: {exc}", file=sys.stderr)
        return 2
    prompt = "none" if args.prompt is None else args.prompt
    if args.prompt is not None and args.prompt_history is not None:
        prompt += f" (history {args.prompt_history})"
    print(
        f"serving {args.env_id} on http://{args.host}:{args.port}; env kwargs "
        f"{json.dumps(env_kwargs)}; prompt {prompt}; max sessions {args.max_sessions}; "
        + (f"workers {args.workers}; " if args.workers > 1 else "")
        + f"token {'set' if limits.token else 'none'}; privileged {args.privileged}",
        flush=True,
    )
    if args.workers == 1:
        run_server(server)
    else:
        run_router(server)
    return 0
