"""Hooks into the training loop: :class:`TrainerCallback`.

Pass instances as ``Trainer(..., callbacks=[...])``; the trainer calls them in order, on every
rank (check ``trainer.dist.is_main`` to act once). A callback reads the trainer and the metrics;
what it changes in them is its own responsibility.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentenvs.learners.llm.trainer import Trainer

__all__ = ["TrainerCallback"]


class TrainerCallback:
    """Subclass and override the hooks you need; each is a no-op here.

    >>> class Best(TrainerCallback):
    ...     def __init__(self):
    ...         self.best = 0.0
    ...     def on_eval(self, trainer, results):
    ...         self.best = max(self.best, results.get("eval/greedy/success_rate", 0.0))
    >>> cb = Best()
    >>> cb.on_eval(None, {"eval/greedy/success_rate": 0.5}); cb.best
    0.5
    """

    def on_iteration_end(self, trainer: Trainer, metrics: dict[str, float]) -> None:
        """After each iteration of :meth:`Trainer.train
        <agentenvs.learners.llm.trainer.Trainer.train>`: ``metrics`` is the row just logged (evaluation
        included when it ran), ``trainer.iteration`` its 1-based iteration; the checkpoint of
        this iteration, if due, is written."""

    def on_eval(self, trainer: Trainer, results: dict[str, float]) -> None:
        """After each :meth:`Trainer.evaluate <agentenvs.learners.llm.trainer.Trainer.evaluate>`
        (before the first iteration of a fresh run, every ``eval_every`` iterations, after the
        last, and when called directly): ``results`` holds its ``eval/...`` metrics at
        ``trainer.iteration``."""
