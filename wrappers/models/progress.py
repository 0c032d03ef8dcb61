"""Progress estimators: models that split a trajectory's outcome into per-step (or per-segment)
contributions whose sum regresses onto the outcome (docs/spa.md, section 5).

SPA (``agentenvs.wrappers.spa``) reads per-step contributions; HISR reads per-segment ones. Both train the
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

The protocol, :func:`check_ends` and :func:`sum_loss` live in :mod:`agentenvs.wrappers.models.progress_core`,
:class:`HFProgressEstimator` in :mod:`agentenvs.wrappers.models.progress_hf`; this module re-exports them.

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
import zlib
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any, Literal, TypedDict

import numpy as np
from agentenvs.wrappers.batch import action_signature, hashable_key
from agentenvs.wrappers.models.fit import FitReport
from agentenvs.wrappers.models.hf import is_model_dir
from agentenvs.wrappers.models.progress_core import (
    ProgressEstimator,
    check_ends,
    check_targets,
    episode_ends,
    fit_sums,
    saved_state,
    sum_loss,
    torch_save,
    unit_of_steps,
)
from agentenvs.wrappers.models.progress_hf import HFProgressEstimator

from agentenvs.core import Trajectory

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


# -- tabular ----------------------------------------------------------------------------------------
class _TabularOptions(TypedDict):
    lr: float
    iterations: int
    history: int


class _FeatureOptions(TypedDict):
    hidden: int
    epochs: int
    lr: float
    batch_size: int
    hash_dim: int
    n_actions: int
    positions: int
    readout: Literal["sum", "last"]
    weight_decay: float
    seed: int


class TabularProgressEstimator:
    """A weight per ``(unit index, unit signature)``; zero init; full-batch gradient descent.

    A unit's signature is the tuple of its steps' action signatures
    (:func:`agentenvs.wrappers.batch.action_signature`; one step: a 1-tuple), preceded by the signatures of
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
        self.options: _TabularOptions = {
            "lr": float(lr),
            "iterations": int(iterations),
            "history": int(history),
        }
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
            for t, e in zip(trajectories, episode_ends(trajectories, ends), strict=True)
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
        y = check_targets(trajectories, targets)
        keys = [
            self._keys(t, e)
            for t, e in zip(trajectories, episode_ends(trajectories, ends), strict=True)
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
        torch_save(saved_state("tabular", self.options, self.state_dict()), path)


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
        readout: Literal["sum", "last"] = "sum",
        weight_decay: float = 0.0,
        seed: int = 0,
    ) -> None:
        if readout not in ("sum", "last"):
            raise ValueError(f"readout must be 'sum' or 'last', got {readout!r}")
        if min(hidden, batch_size, hash_dim, n_actions) < 1 or epochs < 0 or positions < 0:
            raise ValueError("hidden, batch_size, hash_dim, n_actions must be >= 1")
        if lr <= 0:
            raise ValueError(f"lr must be > 0, got {lr}")
        self.options: _FeatureOptions = {
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
        all_ends = episode_ends(trajectories, ends)
        feats = [self.step_features(t) for t in trajectories]
        counts = [len(e) for e in all_ends]
        if self.net is None:
            dims = {f.shape[1] for f in feats if len(f)}
            if not dims:
                return None, np.zeros(0, np.int64), np.zeros(0, np.int64), counts
            self._build(dims.pop())
        step_unit, base = [], 0
        for f, e in zip(feats, all_ends, strict=True):
            units = unit_of_steps(len(f), e) + base
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
        y = check_targets(trajectories, targets)
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
        return fit_sums(self, errors, m, opt, start, epochs, rng=shuffle, sort_batches=True)

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
        torch_save(saved_state("features", self.options, self.state_dict()), path)


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
