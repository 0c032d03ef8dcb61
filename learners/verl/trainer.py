"""verl's V1 trainers with our step credit: each step row's own reward and env columns.

verl's V1 ``AgentLoopWorkerTQ`` stores one TransferQueue row per step of
:class:`~agentenvs.learners.verl.agent_loop.EnvAgentLoop` (key ``{uid}_{session_id}_{step}``), but
copies the episode's final ``reward_score`` onto every step and gives every row the prompt's
``uid``; its trainer's ``_compute_advantage`` reads only ``uid``, ``response_mask`` and
``rm_scores`` back. :func:`write_step_rows` (the hook) first rewrites, for a batch's keys, each
row's ``uid`` as a :class:`~agentenvs.learners.verl.columns.StepUid` (the group id, carrying
``traj_uid = {uid}_{session_id}``, ``step_index`` and the step's env columns from
``extra_fields``) and its ``rm_scores`` as the step's own env reward at its last response token.
Then verl's own ``_compute_advantage`` runs unchanged (KL-in-reward, rollout correction, the
estimator, the write-back of advantages). Rows of verl's batch padding get a group of their own
(reward 0, response mask 0: their advantages stay 0).

The hook runs only when ``algorithm.adv_estimator`` is one of ours (``agentenvs_<method>``); with
verl's own estimators these trainers are verl's (every step carries the episode's return, as
:class:`~agentenvs.learners.verl.agent_loop.EnvAgentLoop` reports it).

Trainers (``trainer.v1.trainer_mode``; importing this module registers them with verl's
``register_trainer``): ``agentenvs`` (:class:`StepCreditTrainer`, verl's ``sync``),
``agentenvs_colocate_async`` and ``agentenvs_separate_async`` (verl's async ones). Each runs as
the verl mode it extends: it sets ``trainer.v1.trainer_mode`` to that mode when built, so the
``trainer.v1.sync`` (or async) options apply. In YAML::

    algorithm:
      adv_estimator: agentenvs_graphgpo
    trainer:
      use_v1: true
      v1:
        trainer_mode: agentenvs

This module holds: :data:`TRAINER_MODES`, :func:`write_step_rows`, :class:`StepCreditMixin`,
:class:`StepCreditTrainer`, :class:`StepCreditColocateAsyncTrainer`,
:class:`StepCreditSeparateAsyncTrainer`.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from typing import Any

import torch
from agentenvs.learners.verl.agent_loop import EXTRA_KEY
from agentenvs.learners.verl.columns import KEYS, StepUid
from agentenvs.learners.verl.estimators import PREFIX
from verl.trainer.ppo.v1 import (
    PPOTrainerColocateAsync,
    PPOTrainerSeparateAsync,
    PPOTrainerSync,
    register_trainer,
)
from verl.utils import tensordict_utils as tu

tq: Any = import_module("transfer_queue")  # verl's V1 trainer needs it (its key-value store)

__all__ = [
    "TRAINER_MODES",
    "write_step_rows",
    "StepCreditMixin",
    "StepCreditTrainer",
    "StepCreditColocateAsyncTrainer",
    "StepCreditSeparateAsyncTrainer",
]

#: Our ``trainer.v1.trainer_mode`` -> the verl mode it runs as.
TRAINER_MODES: Mapping[str, str] = {
    "agentenvs": "sync",
    "agentenvs_colocate_async": "colocate_async",
    "agentenvs_separate_async": "separate_async",
}


def write_step_rows(batch: Any) -> None:
    """Rewrite ``uid`` and ``rm_scores`` of the TransferQueue rows of ``batch`` (a
    ``KVBatchMeta``: ``keys``, ``tags``, ``partition_id``) from the step columns and rewards
    :class:`~agentenvs.learners.verl.agent_loop.EnvAgentLoop` stored in ``extra_fields``.
    ``rm_scores``: float32, the row's response length, the reward at its last token.

    Raises:
        ValueError: a row (not verl's padding) without our step columns, i.e. not played by
            :class:`~agentenvs.learners.verl.agent_loop.EnvAgentLoop`.
    """
    keys = list(batch.keys)
    if not keys:
        return
    data = tq.kv_batch_get(
        keys=keys,
        partition_id=batch.partition_id,
        select_fields=["uid", "extra_fields", "responses"],
    )
    groups = list(data["uid"])
    extras = list(data["extra_fields"])
    lengths = data["responses"].offsets().diff().tolist()
    tags = list(batch.tags) if batch.tags is not None else [{}] * len(keys)
    uids, scores = [], []
    for key, group, extra, length, tag in zip(keys, groups, extras, lengths, tags, strict=True):
        session = key.rsplit("_", 1)[0]  # {uid}_{session_id}
        row = (extra or {}).get(EXTRA_KEY)
        score = torch.zeros(int(length), dtype=torch.float32)
        if tag.get("is_padding", False):
            uids.append(StepUid(str(group), traj_uid=key, **_padding_columns(key)))
        elif row is None:
            raise ValueError(
                f"row {key!r} has no extra_fields[{EXTRA_KEY!r}]: agentenvs step credit needs every "
                "row played by agentenvs.learners.verl.agent_loop.EnvAgentLoop (agent_name "
                "'agentenvs', or an agent-loop YAML's entry for it)"
            )
        else:
            columns = {k: v for k, v in row.items() if k != "reward"}
            columns["step_index"] = int(key.rsplit("_", 1)[1])
            uids.append(StepUid(str(group), traj_uid=session, **columns))
            if length:
                score[-1] = float(row["reward"])
        scores.append(score)
    fields = {"uid": uids, "rm_scores": torch.nested.as_nested_tensor(scores, layout=torch.jagged)}
    tq.kv_batch_put(keys=keys, partition_id=batch.partition_id, fields=tu.get_tensordict(fields))


def _padding_columns(key: str) -> dict[str, Any]:
    """Every column of a padding row (a one-step trajectory of its own; no column missing, so
    no method refuses it): its own state, no win, a valid empty action, no progress."""
    columns: dict[str, Any] = {k: None for k in KEYS if k not in ("uid", "traj_uid")}
    texts = {"observation": "", "action": "", "next_observation": ""}
    columns.update(texts, step_index=0, state_key=key, next_state_key=key, won=False)
    columns.update(action_valid=True, action_key=key, cost=1.0, progress=0.0)
    return columns


class StepCreditMixin:
    """A V1 trainer's ``_compute_advantage`` preceded by :func:`write_step_rows` (for our
    estimators); :attr:`base_mode` is the verl mode the trainer runs as."""

    base_mode = "sync"

    def __init__(self, config: Any) -> None:
        config.trainer.v1.trainer_mode = self.base_mode  # verl's modes are compared by name
        super().__init__(config)  # type: ignore[call-arg]

    def _compute_advantage(self, batch: Any, metrics: dict) -> Any:
        config: Any = getattr(self, "config")  # noqa: B009  (set by verl's trainer)
        if str(config.algorithm.adv_estimator).startswith(PREFIX):
            write_step_rows(batch)
        return super()._compute_advantage(batch, metrics)  # type: ignore[misc]


@register_trainer("agentenvs")
class StepCreditTrainer(StepCreditMixin, PPOTrainerSync):
    """verl's synchronous V1 trainer (``sync``) with our step credit."""

    base_mode = "sync"


@register_trainer("agentenvs_colocate_async")
class StepCreditColocateAsyncTrainer(StepCreditMixin, PPOTrainerColocateAsync):
    """verl's ``colocate_async`` V1 trainer with our step credit."""

    base_mode = "colocate_async"


@register_trainer("agentenvs_separate_async")
class StepCreditSeparateAsyncTrainer(StepCreditMixin, PPOTrainerSeparateAsync):
    """verl's ``separate_async`` V1 trainer with our step credit."""

    base_mode = "separate_async"
