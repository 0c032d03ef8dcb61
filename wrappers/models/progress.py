"""Progress estimators: models that split a trajectory's outcome into per-step (or per-segment)
contributions whose sum regresses onto the outcome (docs/spa.md, section 5).

SPA (``wrappers.spa``) reads per-step contributions; HISR reads per-segment ones. Both train the
estimator on one signal only: each trajectory's contributions should *sum* to its target (mean
squared error of the sum). The per-step split is not identified by that loss; each estimator's
inductive bias (zero init, features, causal read-out) decides it.

This module holds:

* :class:`ProgressEstimator` - the protocol: ``trained``, :meth:`~ProgressEstimator.contributions`,
  :meth:`~ProgressEstimator.fit`, ``state_dict`` / ``load_state_dict``, ``save``.
* :class:`TabularProgressEstimator` - a table ``(unit index, action signature) -> weight``, zero
  init, full-batch gradient descent (reproduces the minimum-norm golden vectors of docs/spa.md 8.3).
* :class:`FeatureProgressEstimator` - a small torch MLP on fixed-size step features (flattened array
  observations and one-hot discrete actions, or hashed bags of words of text).
* :class:`HFProgressEstimator` - a Hugging Face causal LM with a scalar MLP head read at the last
  token of each unit's action, in one causal forward pass over the rendered trajectory.
* :func:`make_estimator` - an estimator from a text spec; :func:`load_estimator` - from a file.
* :func:`check_ends`, :func:`sum_loss` - the unit layout and the loss all estimators share;
  :func:`hashed_bag_of_words` - the text features of :class:`FeatureProgressEstimator`.

Units. ``ends=None`` makes every step a unit. Otherwise ``ends[i]`` lists the inclusive last step
index of each segment of trajectory ``i``: strictly increasing, the last one ``n - 1``.

>>> from agentenvs.core import Step, Trajectory
>>> trajs = [Trajectory("t", "g", [Step("o", a, 0.0) for a in pair]) for pair in ("gg", "gb", "bg", "bb")]
>>> est = TabularProgressEstimator(lr=0.1, iterations=5000)
>>> report = est.fit(trajs, [1.0, 0.5, 0.5, 0.0])
>>> [c.round(3).tolist() for c in est.contributions(trajs[:2])]
[[0.5, 0.5], [0.5, 0.0]]
>>> round(report.loss_before, 4), report.loss_after < 1e-9, est.trained
(0.375, True, True)
>>> est.contributions(trajs[:1], ends=[[1]])[0].round(3).tolist()  # one segment of both steps
[0.0]
"""

from __future__ import annotations

import json
import re
import time
import warnings
import zlib
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from agentenvs.core import Trajectory
from wrappers.batch import action_signature, hashable_key
from wrappers.models.fit import FitReport, fit_epochs
from wrappers.models.hf import check_model_dir, default_device, is_model_dir, load_causal_lm

__all__ = [
    "ProgressEstimator",
    "TabularProgressEstimator",
    "FeatureProgressEstimator",
    "HFProgressEstimator",
    "make_estimator",
    "check_estimator_spec",
    "load_estimator",
    "check_ends",
    "sum_loss",
    "hashed_bag_of_words",
    "ESTIMATOR_SPECS",
]

#: The text specs :func:`make_estimator` takes besides a model directory or a saved file.
ESTIMATOR_SPECS = ("features", "tabular")


@runtime_checkable
class ProgressEstimator(Protocol):
    """What SPA and HISR need of a progress estimator (docs/spa.md, section 5).

    ``contributions(trajectories, ends=None)`` gives, per trajectory, one float64 contribution per
    unit (steps when ``ends`` is ``None``, else segments). ``fit(trajectories, targets, ends=None,
    epochs=None)`` trains so that each trajectory's contributions sum to its target, for ``epochs``
    passes (``None``: the estimator's own setting; an online refit continues from the current
    weights and needs few), and returns a :class:`~wrappers.models.fit.FitReport`. ``trained`` is ``False`` until the first fit (or a loaded state).
    """

    trained: bool

    def contributions(
        self, trajectories: Sequence[Trajectory], ends: Sequence[Sequence[int]] | None = None
    ) -> list[np.ndarray]: ...

    def fit(
        self,
        trajectories: Sequence[Trajectory],
        targets: Sequence[float],
        ends: Sequence[Sequence[int]] | None = None,
        epochs: int | None = None,
    ) -> FitReport: ...

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...

    def save(self, path: str | Path) -> None: ...


# -- shared pieces -----------------------------------------------------------------------------------
def check_ends(n_steps: int, ends: Sequence[int] | None) -> np.ndarray:
    """The inclusive last step index of each unit, int64: ``arange(n_steps)`` for ``None``.

    Raises ``ValueError`` unless ``ends`` is strictly increasing, non-negative and ends at
    ``n_steps - 1`` (an empty trajectory has no units).

    >>> check_ends(3, None).tolist(), check_ends(3, [0, 2]).tolist()
    ([0, 1, 2], [0, 2])
    >>> check_ends(3, [1])
    Traceback (most recent call last):
    ...
    ValueError: segment ends [1] must be strictly increasing and end at the last step 2
    """
    if ends is None:
        return np.arange(n_steps, dtype=np.int64)
    out = np.asarray(list(ends), dtype=np.int64).reshape(-1)
    ok = (out.size == 0) if n_steps == 0 else (out.size > 0 and out[-1] == n_steps - 1)
    if not ok or (out.size and (out[0] < 0 or np.any(np.diff(out) <= 0))):
        raise ValueError(
            f"segment ends {out.tolist()} must be strictly increasing and end at the last step "
            f"{n_steps - 1}"
        )
    return out


def _all_ends(
    trajectories: Sequence[Trajectory], ends: Sequence[Sequence[int]] | None
) -> list[np.ndarray]:
    if ends is not None and len(ends) != len(trajectories):
        raise ValueError(f"got {len(ends)} segment lists for {len(trajectories)} trajectories")
    return [
        check_ends(len(t.steps), None if ends is None else ends[i])
        for i, t in enumerate(trajectories)
    ]


def _check_targets(trajectories: Sequence[Trajectory], targets: Sequence[float]) -> np.ndarray:
    out = np.asarray(list(targets), dtype=np.float64).reshape(-1)
    if len(out) != len(trajectories):
        raise ValueError(f"got {len(out)} targets for {len(trajectories)} trajectories")
    if not np.all(np.isfinite(out)):
        raise ValueError("targets must be finite")
    return out


def sum_loss(contributions: Sequence[np.ndarray], targets: Sequence[float]) -> float:
    """Mean over trajectories of ``(sum of contributions - target)^2`` (0.0 for no trajectory).

    >>> sum_loss([np.array([0.2, 0.3]), np.array([0.0])], [1.0, 0.0])
    0.125
    """
    if not len(contributions):
        return 0.0
    sums = np.array([float(np.sum(c)) for c in contributions])
    return float(np.mean((sums - np.asarray(targets, np.float64)) ** 2))


def _unit_of_steps(n_steps: int, ends: np.ndarray) -> np.ndarray:
    """int64 ``(n_steps,)``: the unit index of each step."""
    return np.searchsorted(ends, np.arange(n_steps), side="left").astype(np.int64)


def _saved(kind: str, options: dict[str, Any], state: dict) -> dict[str, Any]:
    return {"kind": kind, "config": json.dumps(options, sort_keys=True), "state": state}


def _torch_save(obj: Any, path: str | Path) -> None:
    import torch

    torch.save(obj, Path(path))


# -- tabular -----------------------------------------------------------------------------------------
def _fit_sums(
    estimator: Any,
    errors: Callable[[np.ndarray], Any],
    m: int,
    optimizer: Any,
    start: float,
    epochs: int | None,
    **loop: Any,
) -> FitReport:
    """Train a torch estimator on the mean of ``errors(rows)`` (squared sum errors of those of its
    ``m`` trajectories) through :func:`~wrappers.models.fit.fit_epochs`, for ``epochs`` passes
    (``None``: its ``options["epochs"]``) in mini-batches of ``options["batch_size"]``; ``loop``:
    the loop's other options. Counts the fit and marks the estimator trained."""
    report = fit_epochs(
        lambda rows: errors(rows).mean(),
        lambda: errors(np.arange(m)).mean(),
        optimizer,
        n=m,
        epochs=estimator.options["epochs"] if epochs is None else int(epochs),
        start=start,
        batch_size=estimator.options["batch_size"],
        **loop,
    )
    estimator._fits += 1
    estimator.trained = True
    return report


class TabularProgressEstimator:
    """A weight per ``(unit index, unit signature)``; zero init; full-batch gradient descent.

    A unit's signature is the tuple of its steps' action signatures
    (:func:`wrappers.batch.action_signature`; one step: a 1-tuple), preceded by the signatures of
    the ``history`` units before it when ``history > 0`` (so the weight can depend on earlier
    actions). Unseen keys read 0. Each :meth:`fit` runs ``iterations`` gradient steps of size
    ``lr`` on the mean squared sum error over all given trajectories, continuing from the current
    weights. From zero init this converges to the minimum-norm least-squares weights
    (docs/spa.md, section 8.3).

    Args:
        lr: step size (default 0.1). iterations: gradient steps per fit (default 5000).
        history: earlier units included in a unit's key (default 0).
    """

    def __init__(self, lr: float = 0.1, iterations: int = 5000, history: int = 0) -> None:
        if lr <= 0 or iterations < 0 or history < 0:
            raise ValueError("need lr > 0, iterations >= 0 and history >= 0")
        self.options = {"lr": float(lr), "iterations": int(iterations), "history": int(history)}
        self.weights: dict[Hashable, float] = {}
        self.trained = False

    def _keys(self, traj: Trajectory, ends: np.ndarray) -> list[Hashable]:
        sigs = [hashable_key(action_signature(s)) for s in traj.steps]
        units = [tuple(sigs[a : b + 1]) for a, b in zip([0, *(ends[:-1] + 1)], ends, strict=True)]
        h = self.options["history"]
        return [(u, tuple(units[max(0, u - h) : u]), units[u]) for u in range(len(units))]

    def contributions(
        self, trajectories: Sequence[Trajectory], ends: Sequence[Sequence[int]] | None = None
    ) -> list[np.ndarray]:
        """float64 contributions per unit, one array per trajectory."""
        return [
            np.array([self.weights.get(k, 0.0) for k in self._keys(t, e)], np.float64)
            for t, e in zip(trajectories, _all_ends(trajectories, ends), strict=True)
        ]

    def fit(
        self,
        trajectories: Sequence[Trajectory],
        targets: Sequence[float],
        ends: Sequence[Sequence[int]] | None = None,
        epochs: int | None = None,
    ) -> FitReport:
        """Gradient descent on ``mean_i (sum_u w[key_iu] - R_i)^2`` (gradient factor 2 kept)."""
        start = time.perf_counter()
        y = _check_targets(trajectories, targets)
        keys = [
            self._keys(t, e)
            for t, e in zip(trajectories, _all_ends(trajectories, ends), strict=True)
        ]
        index: dict[Hashable, int] = {k: i for i, k in enumerate(self.weights)}
        for row in keys:
            for k in row:
                index.setdefault(k, len(index))
        design = np.zeros((len(keys), len(index)))
        for i, row in enumerate(keys):
            for k in row:
                design[i, index[k]] += 1.0
        w = np.zeros(len(index))
        w[: len(self.weights)] = list(self.weights.values())
        m = max(len(keys), 1)
        before = float(np.mean((design @ w - y) ** 2)) if len(keys) else 0.0
        step = 2.0 * self.options["lr"] / m
        iterations = self.options["iterations"] if epochs is None else int(epochs)
        for _ in range(iterations):
            w -= step * (design.T @ (design @ w - y))
        after = float(np.mean((design @ w - y) ** 2)) if len(keys) else 0.0
        self.weights = dict(zip(index, w.tolist(), strict=True))
        self.trained = True
        return FitReport(before, after, iterations, time.perf_counter() - start)

    def state_dict(self) -> dict:
        """``{"keys": [...], "weights": [...]}`` (plain lists; keys are nested tuples)."""
        return {"keys": list(self.weights), "weights": list(self.weights.values())}

    def load_state_dict(self, state: dict) -> None:
        self.weights = dict(zip(state["keys"], map(float, state["weights"]), strict=True))
        self.trained = True

    def save(self, path: str | Path) -> None:
        """``torch.save`` of the kind, options (JSON) and state; :func:`load_estimator` reads it."""
        _torch_save(_saved("tabular", self.options, self.state_dict()), path)


# -- features + MLP ----------------------------------------------------------------------------------
_WORD = re.compile(r"\w+|[^\w\s]")


def hashed_bag_of_words(text: str, dim: int, salt: str) -> np.ndarray:
    """float32 ``(dim,)``: counts of the words of ``text`` hashed (CRC-32 of ``salt + word``) into
    ``dim`` buckets, scaled to unit L2 norm (zeros for no word). No vocabulary is kept.

    >>> v = hashed_bag_of_words("go to desk 1", 64, "a:")
    >>> v.shape, round(float(np.linalg.norm(v)), 6)
    ((64,), 1.0)
    """
    out = np.zeros(dim, np.float32)
    for word in _WORD.findall(text.lower()):
        out[zlib.crc32(f"{salt}{word}".encode()) % dim] += 1.0
    norm = float(np.linalg.norm(out))
    return out / norm if norm else out


class FeatureProgressEstimator:
    """A torch MLP ``Linear(d, hidden) -> SiLU -> Linear(hidden, 1)`` on step features.

    Step features (fixed size; no vocabulary state):

    * observation: a numpy array (or number) is flattened (float32); text is a hashed bag of words
      (:func:`hashed_bag_of_words`, ``hash_dim`` buckets); anything else is hashed as its ``str``.
    * action: an integer is one-hot over ``n_actions`` slots; an array is flattened; text is a
      hashed bag of words (another salt).
    * position: one-hot of ``min(t, positions - 1)`` (``positions=0`` leaves it out).

    The input size is fixed by the first trajectories seen; later ones must match (``ValueError``).
    A unit's contribution is the sum of its steps' outputs (``readout="sum"``, default) or the
    output of its last step (``readout="last"``). :meth:`fit` runs ``epochs`` passes of Adam
    (``lr``, minibatches of ``batch_size`` trajectories shuffled by ``seed``) on the mean squared
    sum error, continuing from the current network. The output layer starts at zero, so an
    untrained estimator gives 0 everywhere.

    Args:
        hidden: MLP width (default 64). epochs: passes per fit (default 200). lr: Adam step (3e-3).
        batch_size: trajectories per step (default 64). hash_dim: text buckets (default 256).
        n_actions: one-hot slots for integer actions (default 16). positions: default 32.
        readout: ``"sum"`` or ``"last"``. weight_decay: default 0. seed: default 0.

    >>> from agentenvs.core import Step, Trajectory
    >>> trajs = [Trajectory("t", "g", [Step(np.eye(3)[a], a, 0.0) for a in (0, k)]) for k in range(3)]
    >>> est = FeatureProgressEstimator(epochs=300, seed=0)
    >>> report = est.fit(trajs, [0.0, 1.0, 0.5])
    >>> report.loss_after < 1e-3 < report.loss_before
    True
    """

    def __init__(
        self,
        hidden: int = 64,
        epochs: int = 200,
        lr: float = 3e-3,
        batch_size: int = 64,
        hash_dim: int = 256,
        n_actions: int = 16,
        positions: int = 32,
        readout: str = "sum",
        weight_decay: float = 0.0,
        seed: int = 0,
    ) -> None:
        if readout not in ("sum", "last"):
            raise ValueError(f"readout must be 'sum' or 'last', got {readout!r}")
        if min(hidden, batch_size, hash_dim, n_actions) < 1 or epochs < 0 or positions < 0:
            raise ValueError("hidden, batch_size, hash_dim, n_actions must be >= 1")
        if lr <= 0:
            raise ValueError(f"lr must be > 0, got {lr}")
        self.options = {
            "hidden": int(hidden),
            "epochs": int(epochs),
            "lr": float(lr),
            "batch_size": int(batch_size),
            "hash_dim": int(hash_dim),
            "n_actions": int(n_actions),
            "positions": int(positions),
            "readout": readout,
            "weight_decay": float(weight_decay),
            "seed": int(seed),
        }
        self.input_dim: int | None = None
        self.net: Any = None
        self.trained = False
        self._fits = 0

    # features
    def _part(self, value: Any, salt: str, is_action: bool) -> np.ndarray:
        if isinstance(value, str):
            return hashed_bag_of_words(value, self.options["hash_dim"], salt)
        if is_action and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            if not 0 <= int(value) < self.options["n_actions"]:
                raise ValueError(
                    f"integer action {int(value)} outside the {self.options['n_actions']} one-hot "
                    "slots; raise n_actions"
                )
            return np.eye(self.options["n_actions"], dtype=np.float32)[int(value)]
        if isinstance(value, (np.ndarray, int, float, np.number, list, tuple)):
            try:
                return np.asarray(value, dtype=np.float32).reshape(-1)
            except (TypeError, ValueError):
                pass
        return hashed_bag_of_words(str(value), self.options["hash_dim"], salt)

    def step_features(self, trajectory: Trajectory) -> np.ndarray:
        """float32 ``(n, d)``: one feature row per step (see the class docstring)."""
        p = self.options["positions"]
        rows = []
        for t, step in enumerate(trajectory.steps):
            parts = [self._part(step.observation, "o:", False), self._part(step.action, "a:", True)]
            if p:
                parts.append(np.eye(p, dtype=np.float32)[min(t, p - 1)])
            rows.append(np.concatenate(parts))
        if not rows:
            return np.zeros((0, self.input_dim or 0), np.float32)
        out = np.stack(rows)
        if self.input_dim is not None and out.shape[1] != self.input_dim:
            raise ValueError(
                f"step features have {out.shape[1]} values, the estimator was built for "
                f"{self.input_dim}: observations/actions of another shape"
            )
        return out

    def _build(self, dim: int) -> None:
        import torch

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.options["seed"])
            h = self.options["hidden"]
            self.net = torch.nn.Sequential(
                torch.nn.Linear(dim, h), torch.nn.SiLU(), torch.nn.Linear(h, 1)
            ).double()
            torch.nn.init.zeros_(self.net[2].weight)
            torch.nn.init.zeros_(self.net[2].bias)
        self.input_dim = dim

    def _inputs(
        self, trajectories: Sequence[Trajectory], ends: Sequence[Sequence[int]] | None
    ) -> tuple[Any, np.ndarray, np.ndarray, list[int]]:
        """Stacked step features, each step's flat unit index (-1 where the step is not read out),
        each step's trajectory index, and the unit count per trajectory."""
        all_ends = _all_ends(trajectories, ends)
        feats = [self.step_features(t) for t in trajectories]
        counts = [len(e) for e in all_ends]
        if self.net is None:
            dims = {f.shape[1] for f in feats if len(f)}
            if not dims:
                return None, np.zeros(0, np.int64), np.zeros(0, np.int64), counts
            self._build(dims.pop())
        step_unit, base = [], 0
        for f, e in zip(feats, all_ends, strict=True):
            units = _unit_of_steps(len(f), e) + base
            if self.options["readout"] == "last":
                last = np.zeros(len(f), bool)
                last[e] = True
                units = np.where(last, units, -1)
            step_unit.append(units)
            base += len(e)
        x = np.concatenate([f for f in feats if len(f)])
        step_traj = np.repeat(np.arange(len(feats)), [len(f) for f in feats])
        return x, np.concatenate(step_unit), step_traj, counts

    def contributions(
        self, trajectories: Sequence[Trajectory], ends: Sequence[Sequence[int]] | None = None
    ) -> list[np.ndarray]:
        """float64 contributions per unit, one array per trajectory."""
        import torch

        x, step_unit, _, counts = self._inputs(trajectories, ends)
        values = np.zeros(int(sum(counts)))
        if x is not None:
            keep = step_unit >= 0
            with torch.no_grad():
                out = self.net(torch.as_tensor(x[keep], dtype=torch.float64)).squeeze(-1)
            np.add.at(values, step_unit[keep], out.numpy())
        return np.split(values, np.cumsum(counts)[:-1])

    def fit(
        self,
        trajectories: Sequence[Trajectory],
        targets: Sequence[float],
        ends: Sequence[Sequence[int]] | None = None,
        epochs: int | None = None,
    ) -> FitReport:
        """Adam on the mean squared sum error over ``trajectories`` (see the class docstring)."""
        import torch

        start = time.perf_counter()
        y = _check_targets(trajectories, targets)
        x, step_unit, step_traj, _ = self._inputs(trajectories, ends)
        m = len(trajectories)
        if x is None:  # no steps at all: nothing to learn, every sum is 0
            loss = float(np.mean(y**2)) if m else 0.0
            self.trained = True
            return FitReport(loss, loss, 0, time.perf_counter() - start)
        keep = step_unit >= 0  # a trajectory's sum over units = the sum over its read-out steps
        xt = torch.as_tensor(x[keep], dtype=torch.float64)
        traj = step_traj[keep]
        yt = torch.as_tensor(y)

        def errors(rows: np.ndarray) -> Any:
            mask = np.ones(len(traj), bool) if len(rows) == m else np.isin(traj, rows)
            out = self.net(xt[torch.as_tensor(mask)]).squeeze(-1)
            sums = torch.zeros(m, dtype=torch.float64).index_add(
                0, torch.as_tensor(traj[mask]), out
            )
            return (sums - yt)[torch.as_tensor(rows)] ** 2

        opt = torch.optim.Adam(
            self.net.parameters(), lr=self.options["lr"], weight_decay=self.options["weight_decay"]
        )
        rng = np.random.default_rng([self.options["seed"], self._fits])
        shuffle = rng if self.options["batch_size"] < m else None
        return _fit_sums(self, errors, m, opt, start, epochs, rng=shuffle, sort_batches=True)

    def state_dict(self) -> dict:
        """The network's tensors (``net.*``), its input size and the fit count."""
        state: dict[str, Any] = {"input_dim": self.input_dim, "fits": self._fits}
        if self.net is not None:
            state.update({f"net.{k}": v.clone() for k, v in self.net.state_dict().items()})
        return state

    def load_state_dict(self, state: dict) -> None:
        if state.get("input_dim") is not None:
            self._build(int(state["input_dim"]))
            self.net.load_state_dict(
                {k[4:]: v for k, v in state.items() if k.startswith("net.")}, strict=True
            )
        self._fits = int(state.get("fits", 0))
        self.trained = True

    def save(self, path: str | Path) -> None:
        """``torch.save`` of the kind, options (JSON) and state; :func:`load_estimator` reads it."""
        _torch_save(_saved("features", self.options, self.state_dict()), path)


# -- Hugging Face causal LM + scalar head --------------------------------------------------------------
def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


class HFProgressEstimator:
    """A causal LM backbone from a local HF model directory with a scalar head.

    Rendering: the trajectory becomes a conversation, a user turn per step's observation and an
    assistant turn per action (text as given; non-text values as ``str``), put through the
    tokenizer's chat template when it has one, else ``"Observation: ...\\nAction: ...\\n"`` lines.
    The read-out position of a unit is the last token of its last step's action. One forward pass
    over the whole sequence (causal attention) gives every read-out, so a unit's contribution
    depends only on the trajectory up to the end of that unit's action.

    Head: ``Linear(d, head_hidden) -> SiLU -> Linear(head_hidden, 1)`` on the last hidden layer
    (fp32; ``head_hidden`` defaults to ``d``). Training: AdamW (``lr``, ``weight_decay``), gradient
    norm clipped to ``grad_clip``, ``epochs`` passes in minibatches of ``batch_size`` trajectories
    (order shuffled by ``seed``), on the mean squared sum error. The backbone is frozen unless
    ``train_backbone``: then its read-outs are computed once per fit and only the head trains. The
    backbone stays in eval mode (no dropout) either way. Sequences longer than ``max_tokens`` lose
    their left part; units whose read-out was cut contribute 0 (a warning says so).

    Args:
        model_dir: a local HF model directory (``config.json`` and tokenizer files).
        head_hidden: head width (default: the backbone's hidden size).
        train_backbone: fine-tune the backbone too (default ``False``).
        lr: default 1e-3 (head only; use ~3e-6 for a full fine-tune). weight_decay: default 0.01.
        epochs: passes per fit (default 10). batch_size: default 8. grad_clip: default 1.0.
        max_tokens: default 4096. device: default ``"cuda"`` when available, else ``"cpu"``.
        dtype: backbone dtype, ``"bfloat16"`` on CUDA and ``"float32"`` on CPU by default.
        seed: head init and minibatch order (default 0).
    """

    def __init__(
        self,
        model_dir: str | Path,
        head_hidden: int | None = None,
        train_backbone: bool = False,
        lr: float = 1e-3,
        weight_decay: float = 0.01,
        epochs: int = 10,
        batch_size: int = 8,
        grad_clip: float = 1.0,
        max_tokens: int = 4096,
        device: str | None = None,
        dtype: str | None = None,
        seed: int = 0,
    ) -> None:
        import torch

        model_dir = check_model_dir(model_dir)
        if lr <= 0 or epochs < 0 or batch_size < 1 or max_tokens < 1 or grad_clip <= 0:
            raise ValueError(
                "need lr > 0, epochs >= 0, batch_size >= 1, max_tokens >= 1, grad_clip > 0"
            )
        device = default_device(device)
        dtype = dtype or ("bfloat16" if device.startswith("cuda") else "float32")
        self.options = {
            "model_dir": str(model_dir),
            "head_hidden": head_hidden,
            "train_backbone": bool(train_backbone),
            "lr": float(lr),
            "weight_decay": float(weight_decay),
            "epochs": int(epochs),
            "batch_size": int(batch_size),
            "grad_clip": float(grad_clip),
            "max_tokens": int(max_tokens),
            "device": device,
            "dtype": dtype,
            "seed": int(seed),
        }
        self.backbone, self.tokenizer = load_causal_lm(model_dir, device, dtype)
        if not self.tokenizer.is_fast:
            raise ValueError(f"{model_dir}: the estimator needs a fast tokenizer (offsets mapping)")
        self.backbone.requires_grad_(bool(train_backbone))
        d = self.backbone.config.hidden_size
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            h = head_hidden or d
            self.head = torch.nn.Sequential(
                torch.nn.Linear(d, h), torch.nn.SiLU(), torch.nn.Linear(h, 1)
            ).to(device)
        pad = self.tokenizer.pad_token_id
        self._pad = int(pad if pad is not None else (self.tokenizer.eos_token_id or 0))
        self.trained = False
        self._fits = 0

    # rendering
    def render(self, trajectory: Trajectory) -> tuple[list[int], np.ndarray]:
        """Token ids of the rendered trajectory and, per step, the index of its action's last token."""
        texts = [(_text(s.observation), _text(s.action)) for s in trajectory.steps]
        if not texts:
            return [], np.zeros(0, np.int64)
        if self.tokenizer.chat_template:
            messages = []
            for obs, act in texts:
                messages += [
                    {"role": "user", "content": obs},
                    {"role": "assistant", "content": act},
                ]
            text = self.tokenizer.apply_chat_template(messages, tokenize=False)
            ends, cursor = [], 0
            for i, m in enumerate(messages):
                content = m["content"]
                pos = text.find(content, cursor)
                if pos < 0:
                    content = content.strip()
                    pos = text.find(content, cursor)
                if pos < 0:
                    raise ValueError("the chat template does not keep message texts verbatim")
                cursor = pos + len(content)
                if i % 2:
                    ends.append(cursor)
        else:
            parts, ends, length = [], [], 0
            for obs, act in texts:
                piece = f"Observation: {obs}\nAction: {act}"
                parts.append(piece + "\n")
                ends.append(length + len(piece))
                length += len(piece) + 1
            text = "".join(parts)
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        starts = np.array([a for a, _ in enc["offset_mapping"]], np.int64)
        index = np.searchsorted(starts, np.array(ends), side="left") - 1
        return list(enc["input_ids"]), np.maximum(index, 0).astype(np.int64)

    def _encode(
        self, trajectories: Sequence[Trajectory], ends: Sequence[Sequence[int]] | None
    ) -> list[tuple[list[int], np.ndarray]]:
        """Per trajectory: token ids (left-truncated) and each unit's read-out index (-1 = cut)."""
        out, cut_units = [], 0
        limit = self.options["max_tokens"]
        for traj, e in zip(trajectories, _all_ends(trajectories, ends), strict=True):
            ids, step_index = self.render(traj)
            index = step_index[e]
            if len(ids) > limit:
                cut = len(ids) - limit
                ids, index = ids[cut:], index - cut
                index[index < 0] = -1
                cut_units += int(np.sum(index < 0))
            out.append((ids, index))
        if cut_units:
            warnings.warn(
                f"progress estimator: {cut_units} unit(s) lost their read-out to left truncation "
                f"at max_tokens={limit}; they contribute 0",
                stacklevel=3,
            )
        return out

    def _hidden(self, encoded: Sequence[tuple[list[int], np.ndarray]], grad: bool) -> list[Any]:
        """Per trajectory, the fp32 last-layer states at its kept read-outs, ``(k, d)``."""
        import torch

        device, bs = self.options["device"], self.options["batch_size"]
        d = self.backbone.config.hidden_size
        out: list[Any] = []
        for lo in range(0, len(encoded), bs):
            chunk = encoded[lo : lo + bs]
            width = max(1, *(len(ids) for ids, _ in chunk))
            ids = torch.full((len(chunk), width), self._pad, dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.long)
            for j, (row, _) in enumerate(chunk):
                ids[j, : len(row)] = torch.as_tensor(row, dtype=torch.long)
                mask[j, : len(row)] = 1
            if not any(len(row) for row, _ in chunk):
                out += [torch.zeros((0, d), device=device) for _ in chunk]
                continue
            with torch.set_grad_enabled(grad):
                states = self.backbone(
                    input_ids=ids.to(device),
                    attention_mask=mask.to(device),
                    output_hidden_states=True,
                ).hidden_states[-1]
            for j, (_, index) in enumerate(chunk):
                keep = torch.as_tensor(index[index >= 0], device=device)
                out.append(states[j, keep].float())
        return out

    def _values(self, states: Any) -> Any:
        return self.head(states).squeeze(-1)

    def contributions(
        self, trajectories: Sequence[Trajectory], ends: Sequence[Sequence[int]] | None = None
    ) -> list[np.ndarray]:
        """float64 contributions per unit, one array per trajectory (0 for truncated units)."""
        import torch

        encoded = self._encode(trajectories, ends)
        with torch.no_grad():
            states = self._hidden(encoded, grad=False)
            result = []
            for (_, index), h in zip(encoded, states, strict=True):
                values = np.zeros(len(index))
                values[index >= 0] = self._values(h).double().cpu().numpy()
                result.append(values)
        return result

    def fit(
        self,
        trajectories: Sequence[Trajectory],
        targets: Sequence[float],
        ends: Sequence[Sequence[int]] | None = None,
        epochs: int | None = None,
    ) -> FitReport:
        """AdamW on the mean squared sum error over ``trajectories`` (see the class docstring)."""
        import torch

        start = time.perf_counter()
        y = torch.as_tensor(_check_targets(trajectories, targets), dtype=torch.float32)
        y = y.to(self.options["device"])
        encoded = self._encode(trajectories, ends)
        train_backbone = self.options["train_backbone"]
        cached = None if train_backbone else self._hidden(encoded, grad=False)
        m = len(encoded)

        def errors(rows: np.ndarray) -> Any:
            states = (
                [cached[i] for i in rows]
                if cached is not None
                else self._hidden([encoded[i] for i in rows], grad=True)
            )
            owner = torch.as_tensor(np.repeat(np.arange(len(rows)), [len(h) for h in states]))
            values = self._values(torch.cat(states))
            sums = torch.zeros(len(rows), device=values.device).index_add(
                0, owner.to(values.device), values
            )
            return (sums - y[torch.as_tensor(rows, device=y.device)]) ** 2

        if m == 0:
            self.trained = True
            return FitReport(0.0, 0.0, 0, time.perf_counter() - start)
        params = list(self.head.parameters())
        if train_backbone:
            params += list(self.backbone.parameters())
        opt = torch.optim.AdamW(
            params, lr=self.options["lr"], weight_decay=self.options["weight_decay"]
        )
        rng = np.random.default_rng([self.options["seed"], self._fits])
        clip = self.options["grad_clip"]
        return _fit_sums(self, errors, m, opt, start, epochs, rng=rng, clip=clip, params=params)

    def state_dict(self) -> dict:
        """The head's tensors (``head.*``), the backbone's (``backbone.*``) when it trains, and
        the fit count."""
        state: dict[str, Any] = {"fits": self._fits}
        state.update({f"head.{k}": v.detach().cpu() for k, v in self.head.state_dict().items()})
        if self.options["train_backbone"]:
            state.update(
                {f"backbone.{k}": v.detach().cpu() for k, v in self.backbone.state_dict().items()}
            )
        return state

    def load_state_dict(self, state: dict) -> None:
        self.head.load_state_dict({k[5:]: v for k, v in state.items() if k.startswith("head.")})
        backbone = {k[9:]: v for k, v in state.items() if k.startswith("backbone.")}
        if backbone:
            self.backbone.load_state_dict(backbone)
        self._fits = int(state.get("fits", 0))
        self.trained = True

    def save(self, path: str | Path) -> None:
        """``torch.save`` of the kind, options (JSON, with ``model_dir``) and state."""
        _torch_save(_saved("hf", self.options, self.state_dict()), path)


# -- construction ------------------------------------------------------------------------------------
_KINDS: dict[str, type] = {
    "tabular": TabularProgressEstimator,
    "features": FeatureProgressEstimator,
    "hf": HFProgressEstimator,
}


def load_estimator(path: str | Path) -> ProgressEstimator:
    """The estimator a ``save(path)`` wrote (its kind, options and trained state).

    >>> import tempfile, os
    >>> est = TabularProgressEstimator()
    >>> est.weights = {(0, (), ("up",)): 0.25}
    >>> path = os.path.join(tempfile.mkdtemp(), "est.pt"); est.save(path)
    >>> again = load_estimator(path)
    >>> type(again).__name__, again.weights, again.trained
    ('TabularProgressEstimator', {(0, (), ('up',)): 0.25}, True)
    """
    import torch

    saved = torch.load(Path(path), map_location="cpu", weights_only=True)
    if not isinstance(saved, dict) or saved.get("kind") not in _KINDS:
        raise ValueError(f"{path} is not a saved progress estimator")
    estimator = _KINDS[saved["kind"]](**json.loads(saved["config"]))
    estimator.load_state_dict(saved["state"])
    return estimator


def check_estimator_spec(spec: Any = "features", **options: Any) -> None:
    """Raise what :func:`make_estimator` would raise for ``spec`` and ``options``, building nothing
    (a config checks its spec with it; the estimator is built by the method's online state).

    >>> check_estimator_spec("tabular")
    >>> check_estimator_spec("nonsense")
    Traceback (most recent call last):
    ...
    ValueError: unknown progress estimator 'nonsense': give 'features', 'tabular', 'hf:<model dir>', a local HF model directory or a saved estimator file
    """
    if not isinstance(spec, (str, Path)):
        if callable(getattr(spec, "contributions", None)) and callable(getattr(spec, "fit", None)):
            if options:
                raise ValueError("options apply to an estimator built from a text spec only")
            return
        raise TypeError(
            f"an estimator spec must be text or an estimator, got {type(spec).__name__}"
        )
    text = str(spec)
    path = Path(text).expanduser()
    if text in ESTIMATOR_SPECS or text.startswith("hf:") or is_model_dir(path):
        return
    if path.is_file():
        if options:
            raise ValueError("a saved estimator keeps its own options")
        return
    raise ValueError(
        f"unknown progress estimator {text!r}: give 'features', 'tabular', 'hf:<model dir>', "
        "a local HF model directory or a saved estimator file"
    )


def make_estimator(spec: Any = "features", **options: Any) -> ProgressEstimator:
    """A progress estimator from ``spec`` (checked by :func:`check_estimator_spec`):

    * an object with ``contributions`` and ``fit`` - returned as is (``options`` must be empty);
    * ``"features"`` (default) - :class:`FeatureProgressEstimator` (``options`` go to it);
    * ``"tabular"`` - :class:`TabularProgressEstimator`;
    * ``"hf:<dir>"`` or a local HF model directory - :class:`HFProgressEstimator`;
    * the path of a file written by ``save`` - :func:`load_estimator`.

    >>> type(make_estimator("tabular", lr=0.5)).__name__
    'TabularProgressEstimator'
    """
    check_estimator_spec(spec, **options)
    if not isinstance(spec, (str, Path)):
        return spec
    text = str(spec)
    if text in ESTIMATOR_SPECS:
        return _KINDS[text](**options)
    if text.startswith("hf:"):
        return HFProgressEstimator(text[3:], **options)
    path = Path(text).expanduser()
    return HFProgressEstimator(path, **options) if is_model_dir(path) else load_estimator(path)
