"""The retrieval interface: one protocol for in-process, dense and remote retrievers, and its wire format.

This module holds :class:`Hit` (one retrieved passage and its score), :class:`Retriever` (the
protocol: ``retrieve(queries, topk) -> one list of hits per query``), :func:`to_response` and
:func:`parse_response` (the JSON of the reference stack's ``POST /retrieve``),
:func:`parse_request`, and :func:`cached_build` (the on-disk cache of indexes and embeddings:
``$AGENTENVS_CACHE/searchqa``, default ``~/.cache/agentenvs/searchqa``).

The wire format is Search-R1's retrieval server's, which SkyRL / verl-agent also speak. Request:
``{"queries": [str, ...], "topk": k, "return_scores": bool}`` (the batch form) or
``{"query": str, ...}`` (the single form). Response: ``{"result": [[{"document": {"id", "contents"},
"score": float}, ...], ...]}``, one inner list per query; without scores each entry is the bare
document dict.

>>> hits = [[Hit("7", '"Mug"\\nA cup.', 1.5)]]
>>> to_response(hits, return_scores=True)
{'result': [[{'document': {'id': '7', 'contents': '"Mug"\\nA cup.'}, 'score': 1.5}]]}
>>> parse_response(to_response(hits, return_scores=False)) == [[Hit("7", '"Mug"\\nA cup.', 0.0)]]
True
>>> parse_request({"query": "mug", "topk": 2})
(['mug'], 2, False)
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "CACHE_ENV_VAR",
    "Hit",
    "Retriever",
    "MAX_TOPK",
    "cache_root",
    "cached_build",
    "parse_request",
    "parse_response",
    "to_response",
]

#: Environment variable naming the cache directory (default ``~/.cache/agentenvs``).
CACHE_ENV_VAR = "AGENTENVS_CACHE"

#: The most passages one query may ask for.
MAX_TOPK = 1000


@dataclass(frozen=True)
class Hit:
    """One retrieved passage: its corpus ``id``, ``contents`` (title line first) and ``score``."""

    id: str
    contents: str
    score: float = 0.0

    def document(self) -> dict[str, str]:
        return {"id": self.id, "contents": self.contents}


@runtime_checkable
class Retriever(Protocol):
    """Anything that answers a batch of queries with the ``topk`` best passages of each.

    ``retrieve(queries, topk)`` returns ``len(queries)`` lists of at most ``topk`` :class:`Hit`,
    best first. It may raise (a remote retriever that cannot connect); the env turns that into
    the reference stack's ``Search error`` observation.
    """

    def retrieve(self, queries: Sequence[str], topk: int) -> list[list[Hit]]: ...


def to_response(results: Sequence[Sequence[Hit]], return_scores: bool) -> dict[str, Any]:
    """The ``/retrieve`` response body for ``results`` (one hit list per query)."""
    rows: list[list[Mapping[str, object]]]
    if return_scores:
        rows = [[{"document": h.document(), "score": h.score} for h in hits] for hits in results]
    else:
        rows = [[h.document() for h in hits] for hits in results]
    return {"result": rows}


def parse_response(body: Any) -> list[list[Hit]]:
    """The hits in a ``/retrieve`` response body (with or without scores); ``ValueError`` if the
    body does not have that shape."""
    try:
        results = []
        for row in body["result"]:
            hits = []
            for entry in row:
                document = entry.get("document", entry)
                hits.append(
                    Hit(
                        str(document["id"]), str(document["contents"]), float(entry.get("score", 0))
                    )
                )
            results.append(hits)
        return results
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        raise ValueError(f"not a /retrieve response: {err!r}") from None


def parse_request(body: Any) -> tuple[list[str], int, bool]:
    """``(queries, topk, return_scores)`` of a ``/retrieve`` request body (either form).

    ``topk`` defaults to 3 and must be an integer in ``1..MAX_TOPK``; queries must be strings.
    Anything else raises ``ValueError`` with a message fit for a 400 response.
    """
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object")
    if "queries" in body:
        queries = body["queries"]
        if not isinstance(queries, list):
            raise ValueError('"queries" must be a list of strings')
    elif "query" in body:
        queries = [body["query"]]
    else:
        raise ValueError('the body needs "queries" (a list) or "query" (a string)')
    if not all(isinstance(q, str) for q in queries):
        raise ValueError("every query must be a string")
    topk = body.get("topk", 3)
    if isinstance(topk, bool) or not isinstance(topk, int) or not 1 <= topk <= MAX_TOPK:
        raise ValueError(f'"topk" must be an integer from 1 to {MAX_TOPK}')
    return list(queries), topk, bool(body.get("return_scores", False))


def cache_root() -> Path:
    """Where SearchQA caches indexes and embeddings: ``$AGENTENVS_CACHE/searchqa``, default
    ``~/.cache/agentenvs/searchqa``."""
    base = os.environ.get(CACHE_ENV_VAR) or Path.home() / ".cache" / "agentenvs"
    return Path(base) / "searchqa"


def cached_build(root: str | Path, key: str, build: Callable[[Path], None]) -> Path:
    """The directory ``root/key``, made by ``build(directory)`` the first time.

    ``build`` writes into a fresh temporary directory that is renamed into place when it
    returns, so a crash leaves no half-written cache and concurrent builders (several env
    workers starting at once) all end up reading one complete copy.
    """
    root = Path(root)
    final = root / key
    if final.is_dir():
        return final
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root))
    try:
        build(staging)
        os.rename(staging, final)
    except OSError:
        if not final.is_dir():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final
