"""The session ledger of ``agentenvs serve --workers N`` (:mod:`agentenvs.serve.workers`): which
worker process holds each session, and the server's session caps counted over all workers.

The router process owns the one :class:`Ledger`; a worker asks it before it creates a session
(:meth:`Ledger.acquire`), tells it the new session's id (:meth:`Ledger.bind`) and the ids of
sessions that have ended (:meth:`Ledger.release`). The router routes a request naming a session
id to :meth:`Ledger.worker_of` that id; an id it does not know (forged, expired) routes nowhere
in particular, and the worker that gets it answers as for any unknown id.
"""

from __future__ import annotations

from collections import Counter

__all__ = ["Refusal", "Ledger"]

#: Why a session was refused: ``(sessions held, cap, message)`` (``SessionCapacityError``'s
#: arguments).
Refusal = tuple[int, int, str]


class Ledger:
    """Sessions per worker and per client address, capped in total.

    Args:
        max_sessions: sessions at once over all workers.
        max_sessions_per_client: sessions one client address may hold at once over all
            workers (``None``: only ``max_sessions``).

    >>> ledger = Ledger(max_sessions=2, max_sessions_per_client=1)
    >>> ledger.acquire(0, "10.0.0.1") is None, ledger.acquire(1, "10.0.0.1")[:2]
    (True, (1, 1))
    >>> ledger.bind(0, "s1", "10.0.0.1"); ledger.worker_of("s1"), ledger.load(0)
    (0, 1)
    >>> ledger.release(1, ["s1"]); ledger.worker_of("s1")  # only its worker can release it
    0
    >>> ledger.release(0, ["s1"]); ledger.worker_of("s1") is None, ledger.total
    (True, 0)
    """

    def __init__(self, max_sessions: int, max_sessions_per_client: int | None = None) -> None:
        self.max_sessions = max_sessions
        self.max_sessions_per_client = max_sessions_per_client
        self.sessions: dict[str, tuple[int, str]] = {}  # id -> (worker, client)
        self.pending: Counter[tuple[int, str]] = Counter()  # (worker, client) -> being created
        self.by_client: Counter[str] = Counter()  # sessions held or being created
        self.by_worker: Counter[int] = Counter()

    @property
    def total(self) -> int:
        """Sessions held or being created, over all workers."""
        return sum(self.by_worker.values())

    def acquire(self, worker: int, client: str) -> Refusal | None:
        """Reserve a slot for a session ``client`` opens on ``worker``; ``None`` if granted
        (then :meth:`bind` or :meth:`cancel` it), else why not."""
        if self.total >= self.max_sessions:
            total = self.total
            return (
                total,
                self.max_sessions,
                f"the server holds {total}/{self.max_sessions} sessions",
            )
        cap, held = self.max_sessions_per_client, self.by_client[client]
        if cap is not None and held >= cap:
            return (
                held,
                cap,
                f"client {client} holds {held}/{cap} sessions (max_sessions_per_client)",
            )
        self.pending[worker, client] += 1
        self.by_client[client] += 1
        self.by_worker[worker] += 1
        return None

    def _unreserve(self, worker: int, client: str) -> bool:
        if self.pending[worker, client] <= 0:
            return False
        self.pending[worker, client] -= 1
        if not self.pending[worker, client]:
            del self.pending[worker, client]
        return True

    def _drop(self, worker: int, client: str) -> None:
        self.by_client[client] -= 1
        if self.by_client[client] <= 0:
            del self.by_client[client]
        self.by_worker[worker] -= 1

    def bind(self, worker: int, session_id: str, client: str) -> None:
        """The slot ``acquire`` gave ``client`` on ``worker`` now holds ``session_id``."""
        if self._unreserve(worker, client) and session_id not in self.sessions:
            self.sessions[session_id] = (worker, client)

    def cancel(self, worker: int, client: str) -> None:
        """The session ``client`` was opening on ``worker`` was never made: free its slot."""
        if self._unreserve(worker, client):
            self._drop(worker, client)

    def release(self, worker: int, session_ids: list[str]) -> None:
        """Sessions of ``worker`` that have ended (ids of other workers' sessions are ignored)."""
        for session_id in session_ids:
            owner = self.sessions.get(session_id)
            if owner is not None and owner[0] == worker:
                del self.sessions[session_id]
                self._drop(*owner)

    def drop_worker(self, worker: int) -> None:
        """``worker`` has exited: its sessions and reservations are gone."""
        self.release(worker, [s for s, (w, _) in self.sessions.items() if w == worker])
        for w, client in [key for key in self.pending if key[0] == worker]:
            while self._unreserve(w, client):
                self._drop(w, client)
        self.by_worker.pop(worker, None)

    def worker_of(self, session_id: str | None) -> int | None:
        """The worker holding ``session_id`` (``None``: no such session)."""
        owner = self.sessions.get(session_id or "")
        return None if owner is None else owner[0]

    def load(self, worker: int) -> int:
        """Sessions ``worker`` holds or is creating."""
        return self.by_worker[worker]
