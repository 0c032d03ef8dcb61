"""Run bookkeeping: metrics to CSV and TensorBoard, summaries of rollouts, the learning-curve PNG.

This module holds:

* :class:`MetricsLogger` - one row of metrics per iteration (CSV, TensorBoard) and every evaluation
  episode's outcome (``eval_outcomes.jsonl``).
* :func:`eval_label` - the ``<label>`` of an evaluation's metrics ``eval/<label>/...``.
* :func:`rollout_metrics` - success, return, valid-action rate, goal-directed episodes and
  step-advantage statistics of a list of groups.
* :func:`collapse` - whether an iteration's rollouts left the policy without a learning signal
  (every step invalid, or every advantage 0 short of solving everything), and why.
* :func:`goal_directed` - whether an episode took a step its env marked goal-directed.
* :func:`plot_learning_curve` - the PNG.

>>> from agentenvs.core import Step, Trajectory
>>> t = Trajectory("t", "g", [Step("o", "a", -0.1, action_valid=False, advantage=1.0),
...                           Step("o", "b", 10.9, advantage=-1.0)], success=True)
>>> m = rollout_metrics([[t]])
>>> m["success_rate"], m["valid_action_rate"], m["adv_mean"], m["adv_std"]
(1.0, 0.5, 0.0, 1.0)
"""

from __future__ import annotations

import csv
import json
import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agentenvs.core.trajectory import Trajectory

__all__ = [
    "MetricsLogger",
    "eval_label",
    "rollout_metrics",
    "collapse",
    "goal_directed",
    "credit_metrics",
    "plot_learning_curve",
]


def eval_label(split: str, mode: str) -> str:
    """The label of the metrics ``eval/<label>/...`` of one task split in one decoding mode: the mode
    alone for the split ``test`` (the names single-split runs always had), ``<split>.<mode>``
    otherwise; a label holds no ``/``, so every such key has exactly two.

    >>> eval_label("test", "greedy"), eval_label("test_unseen", "sampled")
    ('greedy', 'test_unseen.sampled')
    """
    return mode if split == "test" else f"{split}.{mode}"


def rollout_metrics(groups: Sequence[Sequence[Trajectory]], prefix: str = "") -> dict[str, float]:
    """Success rate, mean return and length, valid-action rate, advantage mean/std/``|A|``/zero share,
    and, where the env marks goal-directed steps, the share of episodes with one
    (``goal_directed_rate``)."""
    trajs = [t for g in groups for t in g]
    steps = [s for t in trajs for s in t.steps]
    adv = np.array([s.advantage for s in steps if s.advantage is not None], dtype=np.float64)
    out = {
        "success_rate": float(np.mean([t.success for t in trajs])) if trajs else math.nan,
        "return_mean": float(np.mean([t.total_return for t in trajs])) if trajs else math.nan,
        "episode_len": float(np.mean([len(t) for t in trajs])) if trajs else math.nan,
        "valid_action_rate": float(np.mean([s.action_valid for s in steps])) if steps else math.nan,
    }
    directed = [d for d in map(goal_directed, trajs) if d is not None]
    if directed:
        out["goal_directed_rate"] = float(np.mean(directed))
    if adv.size:
        out.update(
            adv_mean=float(adv.mean()),
            adv_std=float(adv.std()),
            adv_abs_mean=float(np.abs(adv).mean()),
            adv_zero_frac=float(np.mean(adv == 0.0)),
        )
    return {f"{prefix}{k}": v for k, v in out.items()}


def collapse(metrics: dict[str, float]) -> str | None:
    """Why an iteration with these :func:`rollout_metrics` gives the policy nothing to learn from,
    or ``None``: every step invalid (the format collapsed: every reward is the invalid penalty),
    or every advantage 0 although not every episode succeeded (every group scored alike). The
    trainer logs ``collapsed`` 1.0 and prints a warning line when it is not ``None``.

    >>> collapse({"valid_action_rate": 0.0, "adv_zero_frac": 1.0, "success_rate": 0.0})
    'every step is invalid (format collapse): every advantage is 0'
    >>> collapse({"valid_action_rate": 0.9, "adv_zero_frac": 1.0, "success_rate": 0.5})
    'every advantage is 0: every group scored alike'
    >>> collapse({"valid_action_rate": 1.0, "adv_zero_frac": 1.0, "success_rate": 1.0}) is None
    True
    """
    if metrics.get("valid_action_rate") == 0.0:
        return "every step is invalid (format collapse): every advantage is 0"
    if metrics.get("adv_zero_frac") == 1.0 and metrics.get("success_rate", 0.0) < 1.0:
        return "every advantage is 0: every group scored alike"
    return None


def credit_metrics(groups: Sequence[Sequence[Trajectory]]) -> dict[str, float]:
    """``credit/<key>``: the sum over the groups' trajectories of each number a credit method
    put in ``Trajectory.info["credit"]`` (a judge's calls, tokens, seconds, fallbacks...).

    >>> t = Trajectory("t", "g", info={"credit": {"judge_calls": 3, "judge_seconds": 0.5}})
    >>> credit_metrics([[t, t]])
    {'credit/judge_calls': 6.0, 'credit/judge_seconds': 1.0}
    """
    totals: dict[str, float] = {}
    for group in groups:
        for traj in group:
            for key, value in traj.info.get("credit", {}).items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    totals[f"credit/{key}"] = totals.get(f"credit/{key}", 0.0) + float(value)
    return totals


def goal_directed(traj: Trajectory) -> bool | None:
    """Whether any step of ``traj`` was goal-directed (``Step.extras["goal_directed"]``, copied
    from the env's ``info``); ``None`` when the env does not mark such steps."""
    marks = [s.extras["goal_directed"] for s in traj.steps if "goal_directed" in s.extras]
    return any(marks) if marks else None


def _outcome_row(traj: Trajectory, **where: Any) -> dict[str, Any]:
    """One ``eval_outcomes.jsonl`` row of ``traj`` (``where``: iteration, split, mode)."""
    steps = traj.steps
    row = {
        **where,
        "task_id": traj.task_id,
        "success": bool(traj.success),
        "return": traj.total_return,
        "length": len(traj),
        "valid": float(np.mean([s.action_valid for s in steps])) if steps else 0.0,
    }
    directed = goal_directed(traj)
    if directed is not None:
        row["goal_directed"] = directed
    return row


class MetricsLogger:
    """One CSV row per logged iteration in ``out_dir/metrics.csv`` and, if available, TensorBoard;
    one JSON line per evaluation episode in ``out_dir/eval_outcomes.jsonl``.

    The CSV header is the union of all keys seen (the file is rewritten when a new key appears;
    missing cells are empty). Existing files are read back, so a resumed run keeps appending.
    """

    def __init__(self, out_dir: str | Path, tensorboard: bool = True) -> None:
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.csv_path = self.out_dir / "metrics.csv"
        self.rows: list[dict[str, float]] = []
        if self.csv_path.exists():
            with self.csv_path.open() as f:
                self.rows = [
                    {k: float(v) for k, v in r.items() if v not in ("", None)}
                    for r in csv.DictReader(f)
                ]
        self._fields = list(dict.fromkeys(k for r in self.rows for k in r))
        self.outcomes_path = self.out_dir / "eval_outcomes.jsonl"
        self.outcomes: list[dict[str, Any]] = []
        if self.outcomes_path.exists():
            self.outcomes = [json.loads(line) for line in self.outcomes_path.open() if line.strip()]
        self._tb = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(str(self.out_dir / "tensorboard"))
            except ImportError:
                warnings.warn("tensorboard is not installed; logging to CSV only", stacklevel=2)

    def log(self, iteration: int, metrics: dict[str, float]) -> None:
        """Record ``metrics`` (floats) for ``iteration``."""
        row = {"iteration": float(iteration), **{k: float(v) for k, v in metrics.items()}}
        self.rows.append(row)
        fresh = [k for k in row if k not in self._fields]
        self._fields += fresh
        rewrite = bool(fresh) or not self.csv_path.exists()
        with self.csv_path.open("w" if rewrite else "a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=self._fields)
            if rewrite:
                writer.writeheader()
                writer.writerows(self.rows)
            else:
                writer.writerow(row)
        if self._tb is not None:
            for key, value in metrics.items():
                if math.isfinite(value):
                    self._tb.add_scalar(key, value, iteration)
            self._tb.flush()

    def log_outcomes(
        self, iteration: int, split: str, mode: str, trajectories: Sequence[Trajectory]
    ) -> None:
        """Record each evaluation episode: iteration, task ``split``, decoding ``mode``, task id,
        success, return, length, valid-action share and, where the env marks goal-directed steps
        (``Step.extras["goal_directed"]``), whether any step was."""
        rows = [_outcome_row(t, iteration=iteration, split=split, mode=mode) for t in trajectories]
        self.outcomes += rows
        with self.outcomes_path.open("a") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)

    def outcome_values(
        self, iteration: int, split: str, mode: str, field: str = "success"
    ) -> dict[str, float]:
        """``{task_id: value}`` of one outcome ``field`` (``success``, ``valid``,
        ``goal_directed``) in the evaluation of ``split`` logged at ``iteration`` in ``mode``
        (rows without the field are left out; rows written before outcomes named their split
        count as ``test``)."""
        return {
            r["task_id"]: float(r[field])
            for r in self.outcomes
            if r["iteration"] == iteration
            and r.get("split", "test") == split
            and r["mode"] == mode
            and field in r
        }

    def truncate(self, last_iteration: int) -> None:
        """Forget rows and outcomes after ``last_iteration`` (a fresh run passes -1; a resumed one
        its iteration)."""
        self.outcomes = [r for r in self.outcomes if r["iteration"] <= last_iteration]
        with self.outcomes_path.open("w") as f:
            f.writelines(json.dumps(r) + "\n" for r in self.outcomes)
        self.rows = [r for r in self.rows if r["iteration"] <= last_iteration]
        self._fields = list(dict.fromkeys(k for r in self.rows for k in r))
        with self.csv_path.open("w", newline="") as f:
            if self._fields:
                writer = csv.DictWriter(f, fieldnames=self._fields)
                writer.writeheader()
                writer.writerows(self.rows)

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()


def plot_learning_curve(rows: Sequence[dict[str, Any]], path: str | Path) -> Path | None:
    """Plot train and eval (per label ``eval/<label>/``: decoding mode, or split and mode; see
    :func:`eval_label`) success and valid-action rates per iteration; ``None`` without
    matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        warnings.warn("matplotlib is not installed; no learning-curve PNG", stacklevel=2)
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    curves = [("success_rate", "train success"), ("valid_action_rate", "train valid-action rate")]
    labels = dict.fromkeys(
        k.split("/")[1] for r in rows for k in r if k.startswith("eval/") and k.count("/") == 2
    )
    for label in labels:  # eval/<label>/...
        curves += [
            (f"eval/{label}/success_rate", f"eval success ({label})"),
            (f"eval/{label}/valid_action_rate", f"eval valid-action rate ({label})"),
        ]
    for key, label in curves:
        pts = [(r["iteration"], r[key]) for r in rows if key in r and math.isfinite(r[key])]
        if pts:
            xs, ys = zip(*pts, strict=True)
            ax.plot(xs, ys, marker="o" if key.startswith("eval") else None, label=label)
    ax.set_xlabel("iteration")
    ax.set_ylabel("rate")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
