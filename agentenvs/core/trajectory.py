"""The data contract shared by environments, credit wrappers and learners.

This module holds:

* :class:`Step` - one environment-facing action and what came of it.
* :class:`Trajectory` - one episode: its task, its group and its steps.
* :func:`episode_success` - whether a finished episode succeeded, from its last ``info``.
* :func:`encode` / :func:`decode` - a lossless JSON-compatible encoding of the values a step may hold
  (``str``, numbers, ``bytes``, tuples, numpy arrays and scalars, nested lists and dicts).

A *group* is a list of trajectories of one task that all started from the same initial state;
credit wrappers compute advantages per group.

Example:
    >>> step = Step(observation="grid", action="up", reward=-0.1, state_key="k0", next_state_key="k1")
    >>> traj = Trajectory(task_id="train-3", group_id="g0", steps=[step], success=False)
    >>> traj.total_return
    -0.1
    >>> Trajectory.from_dict(traj.to_dict()) == traj
    True
    >>> end = Trajectory("t", "g", [step], final_observation=np.zeros(2), info={"credit": {"n": 1}})
    >>> Trajectory.from_dict(end.to_dict()) == end  # arrays compare by value, like Step's
    True
    >>> Step.from_dict({"observation": "o", "action": "up", "reward": 0.0}).cost  # an older record
    1.0
"""

from __future__ import annotations

import base64
from collections.abc import Hashable
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

__all__ = ["Step", "Trajectory", "encode", "decode"]


def episode_success(info: dict[str, Any], terminated: bool) -> bool:
    """Whether the episode that ended with ``info`` succeeded: ``info["won"]`` where the env
    reports it (every agentenvs env does), else ``terminated`` (an env that ends only by winning).

    >>> episode_success({"won": False}, True), episode_success({}, True)
    (False, True)
    """
    return bool(info.get("won", terminated))


@dataclass
class Step:
    """One action taken in an environment.

    Attributes:
        observation: what the agent saw before acting (text, or a numpy array / dict for visual envs).
        action: the action as sent to ``env.step`` (the raw LLM text, or an int / array).
        reward: the environment reward for this step (env units, before any credit method).
        terminated: the episode ended in a terminal state after this step (Gymnasium semantics).
        truncated: the episode was cut by the step limit after this step.
        state_key: hashable, history-free identity of the state the action was taken in
            (``info["state_key"]`` of the previous reset/step).
        next_state_key: identity of the state the action led to (``info["state_key"]`` of this step).
        action_valid: the action parsed and was admissible in form (``info["action_valid"]``).
        action_key: the env's own, hashable description of what the action did
            (``info["action_key"]``, e.g. SWE's RTMC action signature ``view:full@core.py``);
            ``None`` (most envs) means credit methods derive it from the action text.
        advantage: per-step advantage written by a credit wrapper; ``None`` until credited.
        extras: free slot for learners (token ids, log-probs) and env diagnostics; must hold values
            :func:`encode` understands to survive a JSON round trip.
        cost: the step's positive cost ``c(s, a)`` (e.g. the price or latency of a tool call;
            ``info["cost"]`` where the env reports one). GraphGPO measures distances to success in
            it; 1.0 (every step costs the same) unless the env says otherwise. Records written
            before this field existed load with 1.0.
        progress: how much this step changed the env's privileged task progress
            (``info["progress"]`` after the step minus before it; see docs/credit.md, "Privileged
            progress"); ``None`` where the env reports no progress. Oracle judges read it; the
            agent never sees it.
    """

    observation: Any
    action: Any
    reward: float
    terminated: bool = False
    truncated: bool = False
    state_key: Hashable = None
    next_state_key: Hashable = None
    action_valid: bool = True
    action_key: Hashable = None
    advantage: float | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    cost: float = 1.0
    progress: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible dict; :meth:`from_dict` inverts it exactly."""
        return {f.name: encode(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Step:
        return cls(**{k: decode(v) for k, v in data.items()})

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Step):
            return NotImplemented
        return self.to_dict() == other.to_dict()


@dataclass
class Trajectory:
    """One episode of one task.

    Attributes:
        task_id: the env's stable task id (``info["task_id"]``).
        group_id: identifies the group (same task, same initial state) this episode belongs to.
        steps: the steps in order.
        success: the env's ``won`` flag at the last step (never inferred from rewards).
        traj_id: identifies this episode inside its group.
        final_observation: the observation after the last step (``steps[k].observation`` is the
            one *before* step ``k``); ``None`` when not recorded.
        info: episode-level metadata. Credit methods that consult a model put their diagnostics
            and costs under ``info["credit"]`` (a dict of numbers, e.g. ``judge_calls``,
            ``judge_seconds``), which the LLM learner averages into its metrics.
    """

    task_id: str
    group_id: str
    steps: list[Step] = field(default_factory=list)
    success: bool = False
    traj_id: str = ""
    final_observation: Any = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def total_return(self) -> float:
        """Undiscounted sum of env rewards (env units)."""
        return float(sum(s.reward for s in self.steps))

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def advantages(self) -> np.ndarray:
        """Per-step advantages, shape ``(len(self),)``, float64; NaN where not credited."""
        return np.array([np.nan if s.advantage is None else s.advantage for s in self.steps])

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible dict (``total_return`` included for readers; recomputed on load)."""
        return {
            "task_id": self.task_id,
            "group_id": self.group_id,
            "traj_id": self.traj_id,
            "success": bool(self.success),
            "total_return": self.total_return,
            "steps": [s.to_dict() for s in self.steps],
            "final_observation": encode(self.final_observation),
            "info": encode(self.info),
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Trajectory):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        return cls(
            task_id=data["task_id"],
            group_id=data["group_id"],
            traj_id=data.get("traj_id", ""),
            success=bool(data["success"]),
            steps=[Step.from_dict(s) for s in data["steps"]],
            final_observation=decode(data.get("final_observation")),
            info=decode(data.get("info", {})),
        )


def encode(value: Any) -> Any:
    """Encode ``value`` into JSON-compatible data that :func:`decode` restores exactly.

    Plain ``str``/``int``/``float``/``bool``/``None``/``list`` pass through; ``bytes``, ``tuple``,
    numpy arrays and scalars and dicts with non-string keys are tagged with a one-key dict.

    >>> decode(encode((1, b"x", np.arange(3, dtype=np.uint8))))[2].dtype
    dtype('uint8')
    """
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, np.ndarray):
        return {
            "__ndarray__": {
                "dtype": value.dtype.str,
                "shape": list(value.shape),
                "data": base64.b64encode(np.ascontiguousarray(value).tobytes()).decode("ascii"),
            }
        }
    if isinstance(value, np.generic):
        return {"__npscalar__": encode(np.asarray(value))}
    if isinstance(value, (bytes, bytearray)):
        return {"__bytes__": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("__") for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {"__items__": [[encode(k), encode(v)] for k, v in value.items()]}
    raise TypeError(
        f"cannot encode {type(value).__name__} losslessly; store str, numbers, bytes, "
        "tuples, lists, dicts or numpy arrays"
    )


def decode(data: Any) -> Any:
    """Invert :func:`encode`."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if len(data) == 1:
        ((tag, payload),) = data.items()
        if tag == "__ndarray__":
            raw = base64.b64decode(payload["data"])
            return (
                np.frombuffer(raw, dtype=np.dtype(payload["dtype"]))
                .reshape(payload["shape"])
                .copy()
            )
        if tag == "__npscalar__":
            return decode(payload)[()]
        if tag == "__bytes__":
            return base64.b64decode(payload)
        if tag == "__tuple__":
            return tuple(decode(v) for v in payload)
        if tag == "__items__":
            return {decode(k): decode(v) for k, v in payload}
    return {k: decode(v) for k, v in data.items()}
