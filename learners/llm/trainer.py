"""The training loop: credit-wrapped envs -> their credited groups -> PPO-clip update.

This module holds :class:`Trainer`, the orchestrator, :func:`build_generator` and
:data:`SAMPLE_EXTRAS` (the per-step sample keys the trajectory store leaves out by default). The
trainer's parts live beside it: :mod:`~agentenvs.learners.llm.env_source` (what it needs from its envs:
groups, prompts, task panel, credit method), :mod:`~agentenvs.learners.llm.update` (the PPO update with its
precision and DDP/FSDP hooks), :mod:`~agentenvs.learners.llm.evaluation`, :mod:`~agentenvs.learners.llm.checkpoint`,
:mod:`~agentenvs.learners.llm.parallel` (DDP/FSDP2 around the model) and :mod:`~agentenvs.learners.llm.callbacks`
(``on_iteration_end`` and ``on_eval`` hooks, ``Trainer(..., callbacks=[...])``).

The trainer is handed envs that already assign credit (data flows env -> wrapper -> learner):

* a sequence of env factories (or envs), each a single-env credit wrapper such as
  ``lambda: GraphCreditWrapper(gym.make("agentenvs/ALFWorld-v0"), group_size=8)``: env ``i`` plays
  one task until it hands out its group (``group_size`` episodes in a row); all envs play at once;
* or a vector credit wrapper over a grouped vector env, such as
  ``VectorCreditWrapper(agentenvs.make_group_vec_env(env_id, num_groups, group_size), "graphgpo")``:
  every member of a group plays at the same time, one episode each.

Any ``gym.Wrapper`` that puts its credited groups into ``info["credit"]`` (every ``Step`` with
``advantage`` set, ``Step.action`` the object it was given) and any env that follows the
:class:`~agentenvs.core.TextAgentEnv` info contract train unchanged; the prompt comes from the env's
``agent_prompt`` hook. The learner calls no estimator.

One iteration:

1. take one task id per group from the :class:`~agentenvs.learners.llm.cursor.TaskCursor`;
2. play them (:func:`~agentenvs.learners.llm.rollout.collect_sequential` or
   :func:`~agentenvs.learners.llm.rollout.collect_parallel`), one sampled response per env step, batched
   over every env still playing; keep the complete credited groups the wrappers hand out;
3. one PPO update over every step-sample (prompt tokens masked, the step's advantage on each of
   its response tokens, dual-clip PPO, k3 KL to the frozen reference, the loss aggregated by
   ``loss_agg_mode`` over each mini-batch, gradient accumulation over micro-batches, truncated
   responses optionally given zero weight, the reference log-probs from one pass per update,
   length-sorted micro-batches cut by a sample count or a token budget, the precision of
   :mod:`~agentenvs.learners.llm.precision` (bf16 autocast on CUDA by default), optional gradient
   checkpointing and LoRA);
4. append the credited groups to the trajectory store (``config.store``: ``out_dir/trajectories``,
   run = the out_dir's name, iteration = the 1-based iteration of the ``metrics.csv`` row; see
   :mod:`agentenvs.core.store`), log metrics (CSV, TensorBoard, tqdm; ``collapsed`` 1.0 and a
   ``WARNING`` line on stderr when the iteration gave no learning signal:
   :func:`~agentenvs.learners.llm.metrics.collapse`), evaluate on the tasks of
   each test split (greedy and sampled, every episode's outcome kept, the before/after gain with
   its 95% interval), checkpoint; then the callbacks.

Before the first update the trainer estimates its memory with :mod:`agentenvs.learners.llm.plan` and warns
when the run will likely not fit the device (:func:`~agentenvs.learners.llm.memcheck.warn_if_unfit`).

Under ``torchrun`` (:mod:`agentenvs.learners.llm.distributed`; ``docs/learner-distributed.md``) every rank
takes the same ``world_size x groups`` tasks from its cursor and plays its own contiguous share of
whole groups (credit is assigned per whole group, by the rank's own wrappers); the update equals one
process's on the union of the ranks' samples (global loss normalisers, gradients summed by DDP or
FSDP2, every rank in every collective even with no samples), and every rank keeps the same
weights. Each split's evaluation tasks are shared out across the ranks and the outcomes gathered;
only rank 0 writes files (metrics, TensorBoard, checkpoints, the curve, the trajectory store).

Checkpoints hold the model and optimizer state, the learning-rate schedule (warmup), the fp32
master weights and the loss scaler, every RNG state, the iteration and the task-cursor position,
so a resumed run continues bit-exactly on CPU (every group starts from an explicit task id; no env
state crosses an iteration).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch
from agentenvs.learners.llm.callbacks import TrainerCallback
from agentenvs.learners.llm.checkpoint import Checkpointer
from agentenvs.learners.llm.config import TrainConfig
from agentenvs.learners.llm.cursor import TaskCursor
from agentenvs.learners.llm.distributed import Distributed
from agentenvs.learners.llm.env_source import CreditedEnvs, EnvSource, choose_tasks
from agentenvs.learners.llm.evaluation import Evaluator, outcome_gains
from agentenvs.learners.llm.generation import HFGenerator
from agentenvs.learners.llm.logprob_gap import logprob_gap
from agentenvs.learners.llm.metrics import (
    MetricsLogger,
    collapse,
    credit_metrics,
    plot_learning_curve,
    rollout_metrics,
)
from agentenvs.learners.llm.parallel import check_parallel, full_policy
from agentenvs.learners.llm.policy import Policy
from agentenvs.learners.llm.rollout import Sampler, episode_bar
from agentenvs.learners.llm.update import PPOUpdate
from agentenvs.learners.llm.vision import images_of
from tqdm.auto import tqdm

from agentenvs.core.store import TrajectoryStore
from agentenvs.core.trajectory import Step

__all__ = ["Trainer", "TrainerCallback", "build_generator", "EnvSource", "SAMPLE_EXTRAS"]


def build_generator(
    config: TrainConfig, policy: Policy, max_new_tokens: int, model_path: str | None = None
) -> Any:
    """The sampling backend of ``config.backend`` (vLLM needs ``model_path``, the HF directory)."""
    if config.backend == "vllm":
        from agentenvs.learners.llm.vllm_generator import VLLMGenerator

        if model_path is None:
            raise ValueError("the vLLM backend needs the model directory (model_path)")
        return VLLMGenerator(
            policy,
            model_path,
            max_new_tokens=max_new_tokens,
            temperature=config.temperature,
            top_p=config.top_p,
            gpu_memory_utilization=config.vllm_gpu_memory_utilization,
            max_model_len=config.vllm_max_model_len,
            kv_cache_bytes=config.vllm_kv_cache_bytes,
            sleep=config.vllm_sleep,
            max_lora_rank=config.vllm_max_lora_rank,
            seed=config.seed,
            dtype=config.weight_dtype,  # the engine's log-probs are then the trainer's
        )
    return HFGenerator(
        policy,
        max_new_tokens=max_new_tokens,
        temperature=config.temperature,
        top_p=config.top_p,
        batch_size=config.gen_batch_size,
        prefix_cache=config.min_shared_prefix > 0,
        min_shared_prefix=max(config.min_shared_prefix, 1),
    )


#: The learner's per-step sample in ``Step.extras``, not stored unless ``config.store_extras``.
SAMPLE_EXTRAS = ("prompt_ids", "response_ids", "logprobs", "images")


class Trainer:
    """Multi-turn PPO on the per-step advantages that credit wrappers hand out.

    Args:
        config: the run configuration.
        policy: the model to train (already on its device; LoRA-wrapped if ``config.lora_rank``).
        out_dir: where metrics, TensorBoard logs, checkpoints, the trajectory store
            (``trajectories/``) and the learning curve go.
        envs: credit-wrapped envs: a sequence of factories (or envs), one group per env and
            iteration, or a vector credit wrapper over a grouped vector env, one group per block
            (see the module doc). The trainer owns and closes them.
        eval_envs: envs (or factories) for evaluation, without credit; default: the base envs
            (``env.unwrapped``) of ``envs`` (of a synchronous vector env's sub-envs).
        model_path: the model's HF directory (needed by the vLLM backend only).
        tensorboard: also log to ``out_dir/tensorboard``.
        progress: show tqdm bars on stderr (rank 0 only): iterations, and the episodes done /
            total with an ETA of every rollout and every evaluation (per split and decoding).
        distributed: this process's place in a ``torchrun`` job; default
            :meth:`Distributed.from_env() <agentenvs.learners.llm.distributed.Distributed.from_env>` (world
            size 1 outside ``torchrun``). Under world size > 1 every rank builds its own trainer
            with the same config, model and envs, and calls the same methods in the same order
            (each one that communicates says so); rank 0's weights are broadcast to all.
        callbacks: :class:`~agentenvs.learners.llm.callbacks.TrainerCallback` hooks, called in order.

    Task ids come from ``config.train_tasks`` / ``test_tasks`` or the env's task panel
    (``tasks.ids("train")``, and ``tasks.ids(split)`` of each split of ``config.eval_splits``,
    by default every ``test`` / ``test_*`` split); ``eval_splits`` holds the evaluated ones
    (split -> task ids).

    The parts it runs: ``source`` (:class:`~agentenvs.learners.llm.env_source.CreditedEnvs`: groups,
    prompts, task panel), ``generator`` (the sampling backend), ``updater``
    (:class:`~agentenvs.learners.llm.update.PPOUpdate`: the update, its precision, optimizer and
    reference), ``evaluator`` (:class:`~agentenvs.learners.llm.evaluation.Evaluator`), ``logger`` and
    ``store``. ``prompts``, ``eval_envs``, ``precision``, ``optimizer``, ``params`` and
    ``ref_model`` name the parts' own.
    """

    def __init__(
        self,
        config: TrainConfig,
        policy: Policy,
        out_dir: str | Path,
        envs: EnvSource,
        *,
        eval_envs: Sequence[Callable[[], gym.Env] | gym.Env] | None = None,
        model_path: str | None = None,
        tensorboard: bool = True,
        progress: bool = True,
        distributed: Distributed | None = None,
        callbacks: Sequence[TrainerCallback] = (),
    ) -> None:
        self.config = config
        self.policy = policy
        self.dist = distributed if distributed is not None else Distributed.from_env()
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.progress = progress
        self.callbacks = list(callbacks)
        if config.torch_threads:
            torch.set_num_threads(config.torch_threads)
        torch.manual_seed(config.seed + self.dist.rank)  # ranks sample independently
        self.source = CreditedEnvs(envs, eval_envs, config.prompt_style, config.history_length)
        self.prompts, self.eval_envs = self.source.prompts, self.source.eval_envs
        if self.dist.enabled:
            check_parallel(config, policy.model, self.source.num_groups, self.dist)
        train_ids, self.eval_splits = choose_tasks(config, self.source)
        self.cursor = TaskCursor(train_ids, seed=config.seed)
        self.max_new_tokens = config.max_new_tokens or max(p.max_new_tokens for p in self.prompts)
        self.generator = build_generator(config, policy, self.max_new_tokens, model_path)
        if not self.generator.exact_logprobs and not config.recompute_old_logprobs:
            # the backend's log-probs are not the trainer's (vLLM with top_p < 1, or without
            # processed log-probs): PPO's old log-probs come from a trainer forward instead
            self.config = config = dataclasses.replace(config, recompute_old_logprobs=True)
        self.updater = PPOUpdate(config, policy, self.dist, self.max_new_tokens)
        u = self.updater  # its parts under the trainer's names
        self.precision, self.optimizer = u.precision, u.optimizer
        self.params, self.ref_model = u.params, u.ref_model
        self.checkpointer = Checkpointer(
            policy.model, u.optimizer, u.precision, self.dist, u.fsdp, u.scheduler
        )
        self.evaluator = Evaluator(
            config,
            policy,
            self.generator,
            self.dist,
            self.source.eval_envs,
            self.source.eval_prompts,
            self.full_weights,
            progress=progress and self.dist.is_main,
        )
        self.iteration = 0
        self.logger: MetricsLogger | None = None  # only rank 0 writes files
        if self.dist.is_main:
            self.logger = MetricsLogger(self.out_dir, tensorboard=tensorboard)
        self.store = self._open_store()
        if self.dist.is_main:
            (self.out_dir / "config.json").write_text(json.dumps(config.to_dict(), indent=2))

    # -- the loop ----------------------------------------------------------------------------------
    def train(self, iterations: int | None = None) -> list[dict[str, float]]:
        """Train up to ``iterations`` total (default ``config.iterations``); returns all logged rows.

        Each iteration: rollout and credit, update (:meth:`train_iteration`), evaluation
        (before the first iteration of a fresh run, every ``eval_every`` iterations and after the
        last, where it also logs :meth:`outcome_gains`), the metrics row, the checkpoint (every
        ``checkpoint_every`` and at the end), then the callbacks' ``on_iteration_end``. Draws
        the PNG at the end.

        Metric rows already in ``out_dir`` past the current iteration are dropped first (a fresh run
        starts a fresh CSV; a resumed one keeps its history up to the checkpoint).

        Under world size > 1 every rank calls it; rank 0 logs, checkpoints and draws, and returns
        the rows; the other ranks return ``[]``.
        """

        cfg = self.config
        total = cfg.iterations if iterations is None else iterations
        log = self.logger
        if log is not None:
            log.truncate(self.iteration if self.iteration else -1)
        if self.iteration == 0 and total > 0:
            metrics = self.evaluate()
            if log is not None:
                log.log(0, metrics)
        bar = tqdm(
            range(self.iteration, total),
            initial=self.iteration,
            total=total,
            disable=not self._show_progress,
            desc="train",
            unit="it",
        )
        for _ in bar:
            metrics = self.train_iteration()
            last = self.iteration == total
            if last or (cfg.eval_every and self.iteration % cfg.eval_every == 0):
                metrics.update(self.evaluate())
            if last:
                metrics.update(self.outcome_gains())
            if log is not None:
                log.log(self.iteration, metrics)
            if last or (cfg.checkpoint_every and self.iteration % cfg.checkpoint_every == 0):
                self.save_checkpoint()
            for callback in self.callbacks:
                callback.on_iteration_end(self, metrics)
            bar.set_postfix(
                success=f"{metrics['success_rate']:.2f}",
                valid=f"{metrics['valid_action_rate']:.2f}",
                loss=f"{metrics.get('loss', math.nan):.3f}",
            )
        if log is None:
            return []
        plot_learning_curve(log.rows, self.out_dir / "learning_curve.png")
        return log.rows

    def train_iteration(self) -> dict[str, float]:
        """Rollout (credit is assigned by the wrappers) and update once; returns the metrics."""
        start = time.perf_counter()
        groups, dropped, sample = self.collect()
        stats = sample.stats
        t0 = time.perf_counter()
        steps = [s for g in groups for t in g for s in t.steps]
        self.generator.sleep()  # vLLM sleep mode: the engine's GPU memory is the update's
        update = self.update(steps)
        update_s = time.perf_counter() - t0
        self.generator.sync_weights()
        self.generator.wake_up()
        sync = self.check_sync(steps)
        sync_s = time.perf_counter() - t0 - update_s
        self.iteration += 1
        if self.config.store != "none":
            self._store_groups([g for part in self.dist.gather(groups) for g in part])
        total = time.perf_counter() - start
        metrics = rollout_metrics(groups)
        why = collapse(metrics)
        metrics["collapsed"] = float(why is not None)
        if why is not None and self.dist.is_main:
            tqdm.write(f"WARNING: iteration {self.iteration} collapsed: {why}", file=sys.stderr)
        credit = credit_metrics(groups)  # a model-based credit method's own costs, if any
        metrics.update(credit)
        metrics.update(update)
        metrics.update(sync)
        metrics.update(
            groups=float(len(groups)),
            groups_dropped=float(dropped),
            time_generate=stats.generate_s,
            time_env=stats.env_s,
            time_update=update_s,
            time_sync=sync_s,
            time_iteration=total,
            outside_model_share=(total - stats.generate_s - update_s) / total,
            gen_tokens=float(stats.tokens),
            gen_tokens_per_s=stats.tokens / max(stats.generate_s, 1e-9),
            update_tokens_per_s=update.get("update_tokens", 0.0) / max(update_s, 1e-9),
            credit_time_share=sum(v for k, v in credit.items() if k.endswith("seconds")) / total,
        )
        if self.dist.enabled:  # the update's stats are the job's already
            local = {k: v for k, v in metrics.items() if k not in update}
            metrics = {**self.dist.reduce_metrics(local), **update}
        return metrics

    def collect(self) -> tuple[list, int, Sampler]:
        """Play one group per env (or block) on the cursor's next tasks; returns the credited
        groups, how many were dropped, and the sampler (its ``stats``).

        Under world size ``W`` every rank takes the cursor's next ``W x groups`` ids and plays
        its contiguous share (rank ``r``: ids ``[r groups, (r + 1) groups)``)."""
        tasks = self.dist.shard(self.cursor.take(self.source.num_groups * self.dist.world_size))
        bar = episode_bar(
            self.source.episodes_per_call(), f"rollout {self.iteration + 1}", self._show_progress
        )
        sample = Sampler(
            self.policy,
            self.generator,
            stop_at_action_end=self.config.stop_at_action_end,
            progress=bar.update,
        )
        with bar, self.full_weights():
            groups, dropped = self.source.play_groups(tasks, sample)
        return groups, dropped, sample

    @property
    def _show_progress(self) -> bool:
        """Bars are drawn with ``progress`` on, by rank 0 (the one with a logger) only."""
        return self.progress and self.logger is not None

    def update(self, steps: Sequence[Step]) -> dict[str, float]:
        """:meth:`PPOUpdate.run <agentenvs.learners.llm.update.PPOUpdate.run>` on ``steps`` in this
        iteration: PPO over them (each with ``advantage`` and rollout ``extras``); returns stats.
        Under world size > 1 call it on every rank, each with its own steps (none included)."""
        return self.updater.run(steps, self.iteration)

    def check_sync(self, steps: Sequence[Step]) -> dict[str, float]:
        """Score the first ``config.logprob_check_samples`` step-samples of ``steps`` with the
        sampling backend and with the training model (temperature 1); returns
        ``sync/logprob_gap`` (mean absolute difference per response token, nats) and
        ``sync/logprob_gap_max`` (see :mod:`agentenvs.learners.llm.logprob_gap`), or nothing when off.

        An HF generator that samples from the training model itself cannot drift from it: it is
        not checked."""
        if isinstance(self.generator, HFGenerator) and self.generator.policy is self.policy:
            return {}
        chosen = [s for s in steps if len(s.extras.get("response_ids", ()))]
        chosen = chosen[: self.config.logprob_check_samples]
        if not chosen:
            return {}
        pictures = images_of(chosen)
        backend = self.generator.score(
            [s.extras["prompt_ids"].tolist() for s in chosen],
            [s.extras["response_ids"].tolist() for s in chosen],
            **({} if pictures is None else {"images": pictures}),
        )
        ours = self.updater.no_grad_logprobs(self.policy.model, chosen, range(len(chosen)), 1.0)
        trainer = [ours[i] for i in range(len(chosen))]
        mean, worst = logprob_gap(backend, trainer)
        return {"sync/logprob_gap": mean, "sync/logprob_gap_max": worst}

    # -- evaluation --------------------------------------------------------------------------------
    def evaluate(self, splits: Mapping[str, Sequence[str]] | None = None) -> dict[str, float]:
        """:meth:`Evaluator.evaluate <agentenvs.learners.llm.evaluation.Evaluator.evaluate>` at the current
        iteration on ``splits`` (default :attr:`eval_splits`): one uncredited episode per task
        and decoding mode, each outcome in ``eval_outcomes.jsonl``; returns ``eval/<label>/``
        metrics, which the callbacks' ``on_eval`` then see. Under world size > 1 call it on
        every rank."""
        splits = self.eval_splits if splits is None else splits
        metrics = self.evaluator.evaluate(splits, self.iteration, self.logger)
        for callback in self.callbacks:
            callback.on_eval(self, metrics)
        return metrics

    def outcome_gains(self) -> dict[str, float]:
        """:func:`~agentenvs.learners.llm.evaluation.outcome_gains` of the evaluated splits from iteration 0
        to the current one (``eval/<label>/success_gain``, ``valid_action_gain``,
        ``goal_directed_gain``, each with ``..._low``, ``..._high``; nothing on ranks other
        than 0)."""
        return outcome_gains(self.logger, self.iteration, self.eval_splits, self.config.eval_modes)

    # -- checkpoints -------------------------------------------------------------------------------
    def save_checkpoint(self, path: str | Path | None = None) -> Path:
        """Write everything needed to continue exactly (default ``out_dir/checkpoint.pt``): what
        :meth:`Checkpointer.save <agentenvs.learners.llm.checkpoint.Checkpointer.save>` writes, plus the
        iteration, the task-cursor position, the config and the credit wrappers' states
        (``credit_states``: each one's ``state_dict()``, per rank: a model-backed method's
        trained models, buffers and caches). Under world size > 1 call it on every rank (rank 0
        writes)."""
        path = Path(path or self.out_dir / "checkpoint.pt")
        credit = [state.state_dict() for state in self.source.credit_states()]
        progress = {
            "iteration": self.iteration,
            "cursor": self.cursor.position,
            "config": self.config.to_dict(),
            "credit_states": self.dist.gather(credit),
        }
        self.checkpointer.save(path, progress)
        return path

    def load_checkpoint(self, path: str | Path | None = None) -> None:
        """Restore a :meth:`save_checkpoint` file into this trainer (same config and model); see
        :meth:`Checkpointer.load <agentenvs.learners.llm.checkpoint.Checkpointer.load>` (under world size
        > 1 every rank reads the file)."""
        path = Path(path or self.out_dir / "checkpoint.pt")
        state = self.checkpointer.load(path, self.policy.device)
        self.iteration = int(state["iteration"])
        self.cursor.position = int(state["cursor"])
        self._load_credit_states(state.get("credit_states"), path)
        self.generator.sync_weights()
        self._store_truncated = False  # the next write drops what was stored after this state

    def _load_credit_states(self, saved: list[list[dict]] | None, path: Path) -> None:
        """Restore this rank's credit states from a checkpoint's ``credit_states`` (one list
        per rank that wrote it). ``ValueError`` when it holds another number of states."""
        if saved is None:  # a checkpoint written without them: the states start afresh
            return
        states = self.source.credit_states()
        mine = saved[self.dist.rank] if len(saved) == self.dist.world_size else saved[0]
        if len(mine) != len(states):
            raise ValueError(
                f"{path} holds {len(mine)} credit state(s), this trainer's envs have "
                f"{len(states)}: resume with the envs (and shared states) of the saved run"
            )
        for state, saved_state in zip(states, mine, strict=True):
            state.load_state_dict(saved_state)

    # -- model and store plumbing ------------------------------------------------------------------
    def full_weights(self) -> contextlib.AbstractContextManager[None]:
        """Every rank holds the whole model inside this context under FSDP (a no-op otherwise;
        see :func:`agentenvs.learners.llm.parallel.full_weights`). Every rank must enter it together."""
        return self.updater.full_weights()

    def full_policy(self) -> Policy | None:
        """The trained policy with plain (unsharded) weights, on rank 0; ``None`` on other ranks
        (see :func:`agentenvs.learners.llm.parallel.full_policy`; under FSDP call it on every rank)."""
        return full_policy(self.policy, self.dist, self.updater.fsdp)

    def _open_store(self) -> TrajectoryStore | None:
        """The trajectory store of ``config.store`` (``None`` for ``"none"``)."""
        cfg = self.config
        self._store_method = self.source.credit_method_name()
        self._store_truncated = False  # see _store_groups
        if cfg.store == "none" or not self.dist.is_main:
            return None  # rank 0 stores every rank's groups (gathered in train_iteration)
        return TrajectoryStore(
            self.out_dir / "trajectories",
            run=self.out_dir.resolve().name,
            fmt=cfg.store,
            drop_extras=() if cfg.store_extras else SAMPLE_EXTRAS,
        )

    def _store_groups(self, groups: Sequence[Sequence[Any]]) -> None:
        """Append the credited ``groups`` of iteration ``self.iteration`` to the store. The first
        write of a trainer (and the first after :meth:`load_checkpoint`) first drops the stored
        groups of this iteration and later ones: a fresh run in an old out_dir, or a run resumed
        from an earlier checkpoint, never stores an iteration twice."""
        if self.store is None:
            return
        if not self._store_truncated:
            self.store.truncate(self.iteration - 1)
            self._store_truncated = True
        for group in groups:
            self.store.append(group, method=self._store_method, iteration=self.iteration)

    def close(self) -> None:
        """Close the envs (and eval envs given to the trainer), the logger and the store."""
        self.source.close()
        if self.logger is not None:
            self.logger.close()
        if self.store is not None:
            self.store.close()
