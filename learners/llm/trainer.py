"""The training loop: credit-wrapped envs -> their credited groups -> PPO-clip update.

This module holds :class:`Trainer`, :func:`build_generator` and :data:`SAMPLE_EXTRAS` (the
per-step sample keys the trajectory store leaves out by default).

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

1. take one task id per group from the :class:`~learners.llm.cursor.TaskCursor`;
2. play them (:func:`~learners.llm.rollout.collect_sequential` or
   :func:`~learners.llm.rollout.collect_parallel`), one sampled response per env step, batched
   over every env still playing; keep the complete credited groups the wrappers hand out;
3. one PPO update over every step-sample (prompt tokens masked, the step's advantage on each of
   its response tokens, dual-clip PPO, k3 KL to the frozen reference, the loss aggregated by
   ``loss_agg_mode`` over each mini-batch, gradient accumulation over micro-batches, truncated
   responses optionally given zero weight, the reference log-probs from one pass per update,
   length-sorted micro-batches cut by a sample count or a token budget, the precision of
   :mod:`~learners.llm.precision` (bf16 autocast on CUDA by default), optional gradient
   checkpointing and LoRA);
4. append the credited groups to the trajectory store (``config.store``: ``out_dir/trajectories``,
   run = the out_dir's name, iteration = the 1-based iteration of the ``metrics.csv`` row; see
   :mod:`agentenvs.core.store`), log metrics (CSV, TensorBoard, tqdm), evaluate on the tasks of
   each test split (greedy and sampled, every episode's outcome kept, the before/after gain with
   its 95% interval), checkpoint.

Before the first update the trainer estimates its memory with :mod:`learners.llm.plan` and warns
when the run will likely not fit the device (:func:`~learners.llm.memcheck.warn_if_unfit`).

Under ``torchrun`` (:mod:`learners.llm.distributed`; ``docs/learner-distributed.md``) every rank
takes the same ``world_size x groups`` tasks from its cursor and plays its own contiguous share of
whole groups (credit is assigned per whole group, by the rank's own wrappers); the update equals one
process's on the union of the ranks' samples (global loss normalisers, gradients summed by DDP or
FSDP2, every rank in every collective even with no samples), and every rank keeps the same
weights. Each split's evaluation tasks are shared out across the ranks and the outcomes gathered;
only rank 0 writes files (metrics, TensorBoard, checkpoints, the curve, the trajectory store).

Checkpoints hold the model and optimizer state, the fp32 master weights and the loss scaler,
every RNG state, the iteration and the task-cursor
position, so a resumed run continues bit-exactly on CPU (every group starts from an explicit task
id; no env state crosses an iteration).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import math
import random
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from agentenvs.core.store import TrajectoryStore
from agentenvs.core.trajectory import Step, Trajectory
from learners.llm.batching import micro_batches
from learners.llm.config import TrainConfig
from learners.llm.cursor import TaskCursor
from learners.llm.distributed import Distributed
from learners.llm.generation import HFGenerator
from learners.llm.logprob_gap import logprob_gap
from learners.llm.loss import (
    aggregate,
    broadcast_advantages,
    entropy_from_logits,
    loss_normaliser,
    ppo_objective,
    token_logprobs,
)
from learners.llm.memcheck import warn_if_unfit
from learners.llm.metrics import (
    MetricsLogger,
    credit_metrics,
    eval_label,
    paired_difference,
    plot_learning_curve,
    rollout_metrics,
)
from learners.llm.policy import (
    Policy,
    collate,
    enable_gradient_checkpointing,
    response_logits,
    response_logprobs,
)
from learners.llm.precision import DTYPES, MixedPrecision, autocast_dtype
from learners.llm.rollout import (
    Sampler,
    block_size,
    collect_parallel,
    collect_sequential,
    group_size_of,
    play_episodes,
    prompts_of,
)

__all__ = ["Trainer", "build_generator", "EnvSource", "SAMPLE_EXTRAS"]

#: What the trainer is given: env factories / envs (single credit wrappers) or a vector credit wrapper.
EnvSource = Sequence[Callable[[], gym.Env] | gym.Env] | gym.vector.VectorEnv


def build_generator(
    config: TrainConfig, policy: Policy, max_new_tokens: int, model_path: str | None = None
) -> Any:
    """The sampling backend of ``config.backend`` (vLLM needs ``model_path``, the HF directory)."""
    if config.backend == "vllm":
        from learners.llm.vllm_generator import VLLMGenerator

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
            sleep=config.vllm_sleep,
            max_lora_rank=config.vllm_max_lora_rank,
            seed=config.seed,
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


def _make(env: Callable[[], gym.Env] | gym.Env) -> gym.Env:
    return env if isinstance(env, gym.Env) else env()


def _outcome(traj: Trajectory) -> Trajectory:
    """What evaluation logs of an episode (no observations, actions or extras): cheap to gather."""
    steps = [Step(None, None, s.reward, action_valid=s.action_valid) for s in traj.steps]
    return Trajectory(traj.task_id, traj.group_id, steps, traj.success, traj.traj_id)


def _rng_state() -> dict[str, Any]:
    return {
        "torch_rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        "numpy_rng": np.random.get_state(),
        "python_rng": random.getstate(),
    }


def _set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch_rng"].cpu())
    if state["cuda_rng"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda_rng"])
    np.random.set_state(state["numpy_rng"])
    random.setstate(state["python_rng"])


#: The learner's per-step sample in ``Step.extras``, not stored unless ``config.store_extras``.
SAMPLE_EXTRAS = ("prompt_ids", "response_ids", "logprobs")


def _credit_method_name(env: gym.Env | gym.vector.VectorEnv) -> str | None:
    """The canonical name of the credit method ``env``'s wrapper applies; ``None`` if unknown."""
    try:
        entry = env.get_wrapper_attr("credit_method") if isinstance(env, gym.Env) else None
    except AttributeError:
        entry = None
    entry = entry or getattr(env, "credit_method", None)
    return getattr(entry, "name", None)


def _task_panel(env: gym.Env | gym.vector.VectorEnv) -> Any:
    try:
        if isinstance(env, gym.vector.VectorEnv):
            return env.unwrapped.get_attr("tasks")[0]
        return env.get_wrapper_attr("tasks")
    except AttributeError:
        return None


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
            :meth:`Distributed.from_env() <learners.llm.distributed.Distributed.from_env>` (world
            size 1 outside ``torchrun``). Under world size > 1 every rank builds its own trainer
            with the same config, model and envs, and calls the same methods in the same order
            (each one that communicates says so); rank 0's weights are broadcast to all.

    Task ids come from ``config.train_tasks`` / ``test_tasks`` or the env's task panel
    (``tasks.ids("train")``, and ``tasks.ids(split)`` of each split of ``config.eval_splits``,
    by default every ``test`` / ``test_*`` split); ``eval_splits`` holds the evaluated ones
    (split -> task ids).
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
    ) -> None:
        self.config = config
        self.policy = policy
        self.dist = distributed if distributed is not None else Distributed.from_env()
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.progress = progress
        if config.torch_threads:
            torch.set_num_threads(config.torch_threads)
        torch.manual_seed(config.seed + self.dist.rank)  # ranks sample independently
        self._open_envs(envs, eval_envs)
        if self.dist.enabled:
            self._check_parallel()
        train_ids = self._choose_tasks()
        self.cursor = TaskCursor(train_ids, seed=config.seed)
        self.max_new_tokens = config.max_new_tokens or max(p.max_new_tokens for p in self.prompts)
        self.generator = build_generator(config, policy, self.max_new_tokens, model_path)
        if not self.generator.exact_logprobs and not config.recompute_old_logprobs:
            # the backend's log-probs are not the trainer's (vLLM with top_p < 1, or without
            # processed log-probs): PPO's old log-probs come from a trainer forward instead
            self.config = config = dataclasses.replace(config, recompute_old_logprobs=True)
        self.lora = hasattr(policy.model, "disable_adapter")
        dtype = DTYPES[config.weight_dtype]
        if any(p.dtype != dtype for p in policy.model.parameters() if p.is_floating_point()):
            policy.model.to(dtype)  # LoRA adapters included
        self.dist.broadcast_(policy.model.state_dict().values())  # every rank starts from rank 0
        self.ref_model = None
        if config.kl_coef and not self.lora:
            self.ref_model = copy.deepcopy(policy.model).eval().requires_grad_(False)
            if config.ref_offload:
                self.ref_model.to("cpu")
        if config.gradient_checkpointing:
            enable_gradient_checkpointing(policy.model)
        self.fsdp = self.dist.enabled and config.parallel == "fsdp"
        self.ddp: torch.nn.parallel.DistributedDataParallel | None = None
        self.train_model = self._parallel_model()  # what the update's forwards run
        self.params = [p for p in policy.model.parameters() if p.requires_grad]
        device_type = torch.device(policy.device).type
        self.precision = MixedPrecision(
            self.params,
            weight_dtype=config.weight_dtype,
            autocast=autocast_dtype(config.autocast, config.weight_dtype, device_type),
            master_weights=config.master_weights,
            device_type=device_type,
        )
        self.optimizer = torch.optim.AdamW(
            self.precision.optimizer_params, lr=config.lr, weight_decay=config.weight_decay
        )
        self._memory_checked = False
        self.iteration = 0
        self.logger: MetricsLogger | None = None  # only rank 0 writes files
        if self.dist.is_main:
            self.logger = MetricsLogger(self.out_dir, tensorboard=tensorboard)
        self.store = self._open_store()
        if self.dist.is_main:
            (self.out_dir / "config.json").write_text(json.dumps(config.to_dict(), indent=2))

    # -- data parallelism --------------------------------------------------------------------------
    def _check_parallel(self) -> None:
        """Under world size > 1: the same number of groups on every rank, and a config the chosen
        ``config.parallel`` supports (ValueError on every rank otherwise)."""
        cfg = self.config
        if cfg.backend != "hf":
            raise ValueError("torchrun data parallelism runs the HF backend only (backend='hf')")
        fsdp = cfg.parallel == "fsdp"
        if fsdp and (cfg.lora_rank or hasattr(self.policy.model, "disable_adapter")):
            raise ValueError("parallel='fsdp' does not shard LoRA policies; use parallel='ddp'")
        if fsdp and (cfg.weight_dtype != "float32" or cfg.autocast == "float16"):
            raise ValueError(
                "parallel='fsdp' needs float32 weights and no float16 autocast (autocast "
                "'bfloat16' computes in bf16); use parallel='ddp' for other precisions"
            )
        high, minus_low = self.dist.max([self.num_groups, -self.num_groups])
        if high != -minus_low:
            raise ValueError(
                f"every rank needs as many groups (envs / blocks); they hold {-minus_low:.0f} to "
                f"{high:.0f}"
            )

    def _parallel_model(self) -> Any:
        """The model the update runs: DDP around the policy's model, the policy's model sharded
        in place by FSDP2 ``fully_shard`` (each decoder layer, then the root), or the model."""
        model = self.policy.model
        if not self.dist.enabled:
            return model
        if not self.fsdp:
            # buffers (rotary tables) never change: no broadcast per forward, so ranks may run
            # different numbers of forwards; the gradient all-reduce is the only collective
            self.ddp = torch.nn.parallel.DistributedDataParallel(model, forward_sync_buffers=False)
            return self.ddp
        from torch.distributed.fsdp import fully_shard

        layers = set(getattr(model, "_no_split_modules", None) or ())
        for module in list(model.modules()):
            if type(module).__name__ in layers:
                fully_shard(module)
        fully_shard(model)
        return model

    @contextlib.contextmanager
    def full_weights(self) -> Iterator[None]:
        """Under FSDP, every rank holds the whole model inside this context (gathered on entry,
        resharded on exit), so its forwards communicate nothing and ranks may run different
        numbers of them (generation, evaluation, no-grad passes). A no-op otherwise. Every rank
        must enter it together."""
        if not self.fsdp:
            yield
            return
        from torch.distributed.fsdp import FSDPModule

        model = self.policy.model
        sharded = [m for m in model.modules() if isinstance(m, FSDPModule)]
        model.set_reshard_after_forward(False)
        for module in sharded:
            module.unshard()
        try:
            yield
        finally:
            for module in sharded:
                module.reshard()
            model.set_reshard_after_forward(True)

    def full_policy(self) -> Policy | None:
        """The trained policy with plain (unsharded) weights, on rank 0; ``None`` on other ranks.
        Under FSDP a CPU copy of the model, gathered from every rank (call on all ranks);
        otherwise the trainer's own policy."""
        if not self.fsdp:
            return self.policy if self.dist.is_main else None
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            get_model_state_dict,
        )
        from transformers import AutoModelForCausalLM

        options = StateDictOptions(full_state_dict=True, cpu_offload=True)
        state = get_model_state_dict(self.policy.model, options=options)
        if not self.dist.is_main:
            return None
        dtype = next(iter(state.values())).dtype
        model = AutoModelForCausalLM.from_config(self.policy.model.config, dtype=dtype)
        model.load_state_dict(state)
        return dataclasses.replace(self.policy, model=model.eval(), device="cpu")

    def _open_store(self) -> TrajectoryStore | None:
        """The trajectory store of ``config.store`` (``None`` for ``"none"``)."""
        cfg = self.config
        source = self.vector_env if self.vector_env is not None else self.envs[0]
        self._store_method = _credit_method_name(source)
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

    def _open_envs(self, envs: EnvSource, eval_envs: Sequence[Any] | None) -> None:
        """Make the training envs (and the eval envs) and ask each for its prompt."""
        style, history = self.config.prompt_style, self.config.history_length
        if isinstance(envs, gym.vector.VectorEnv):
            self.vector_env: gym.vector.VectorEnv | None = envs
            self.envs: list[gym.Env] = []
            self.num_groups = envs.num_envs // block_size(envs)
            self.prompts = prompts_of(envs, style, history)
            subs = getattr(envs.unwrapped, "envs", None)  # a synchronous vector env's sub-envs
            default_eval = None if subs is None else [e.unwrapped for e in subs]
        else:
            self.vector_env = None
            self.envs = [_make(e) for e in envs]
            if not self.envs:
                raise ValueError("the trainer needs at least one env")
            self.num_groups = len(self.envs)
            self.prompts = [p for e in self.envs for p in prompts_of(e, style, history)]
            default_eval = [e.unwrapped for e in self.envs]
        self._own_eval = eval_envs is not None
        self.eval_envs = [_make(e) for e in eval_envs] if eval_envs is not None else default_eval
        self.eval_prompts = [p for e in self.eval_envs or [] for p in prompts_of(e, style, history)]

    def _choose_tasks(self) -> Sequence[str]:
        """The training task ids (returned) and ``self.eval_splits`` (split -> its first
        ``eval_tasks`` ids; splits left empty are dropped), from the config or the panel."""
        config = self.config
        panel = _task_panel(self.vector_env if self.vector_env is not None else self.envs[0])
        train_ids = config.train_tasks or (panel.ids("train") if panel is not None else None)
        if not train_ids:
            raise ValueError(
                "no training tasks: the env has no task panel (env.unwrapped.tasks); pass "
                "TrainConfig(train_tasks=[...])"
            )
        if config.test_tasks is not None:
            chosen = {"test": list(config.test_tasks)}
        else:
            names = config.eval_splits
            if names is None:
                have = panel.splits if panel is not None else []
                names = [s for s in have if s == "test" or s.startswith("test_")]
            elif panel is None:
                raise ValueError("eval_splits needs the env's task panel (env.unwrapped.tasks)")
            chosen = {s: list(panel.ids(s)[: config.eval_tasks]) for s in names}
        self.eval_splits: dict[str, list[str]] = {s: ids for s, ids in chosen.items() if ids}
        if self.eval_splits and not self.eval_envs:
            raise ValueError(
                "evaluation needs single envs: pass eval_envs=[...] (an asynchronous vector env "
                "does not expose its sub-envs), or TrainConfig(eval_tasks=0)"
            )
        return train_ids

    # -- one iteration -----------------------------------------------------------------------------
    def collect(self) -> tuple[list, int, Sampler]:
        """Play one group per env (or block) on the cursor's next tasks; returns the credited
        groups, how many were dropped, and the sampler (its ``stats``).

        Under world size ``W`` every rank takes the cursor's next ``W x groups`` ids and plays
        its contiguous share (rank ``r``: ids ``[r groups, (r + 1) groups)``)."""
        tasks = self.dist.shard(self.cursor.take(self.num_groups * self.dist.world_size))
        if self.vector_env is not None:
            episodes = self.vector_env.num_envs
        else:
            episodes = sum(group_size_of(env) for env in self.envs)
        bar = self._episode_bar(episodes, f"rollout {self.iteration + 1}")
        sample = Sampler(
            self.policy,
            self.generator,
            stop_at_action_end=self.config.stop_at_action_end,
            progress=bar.update,
        )
        with bar, self.full_weights():
            if self.vector_env is not None:
                groups, dropped = collect_parallel(self.vector_env, tasks, self.prompts, sample)
            else:
                groups, dropped = collect_sequential(self.envs, tasks, self.prompts, sample), 0
        return groups, dropped, sample

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

    def _padded(self, rows: Sequence[np.ndarray], width: int) -> torch.Tensor:
        out = torch.zeros((len(rows), width), dtype=torch.float32)
        for i, r in enumerate(rows):
            out[i, : len(r)] = torch.as_tensor(np.asarray(r, dtype=np.float32))
        return out

    def _micro_batches(self, samples: Sequence[Step], indices: Sequence[int]) -> list[list[int]]:
        """``indices`` sorted by length and cut by ``micro_batch_tokens`` or ``micro_batch_size``
        (see :func:`~learners.llm.batching.micro_batches`)."""
        cfg = self.config
        budget = {"max_tokens": cfg.micro_batch_tokens}
        if cfg.micro_batch_tokens is None:
            budget = {"size": cfg.micro_batch_size}
        prompt_lens = [len(s.extras["prompt_ids"]) for s in samples]
        response_lens = [len(s.extras["response_ids"]) for s in samples]
        return micro_batches(indices, prompt_lens, response_lens, **budget)

    @property
    def _shared_prefix(self) -> int:
        """``min_shared_prefix`` of training forwards: 0 with gradient checkpointing (a
        checkpointed layer would write a shared prefix's KV cache again when recomputed)."""
        if self.config.gradient_checkpointing or self.fsdp:  # FSDP: one forward per micro-batch
            return 0
        return self.config.min_shared_prefix

    def _collate(self, samples: Sequence[Step]):
        return collate(
            [s.extras["prompt_ids"].tolist() for s in samples],
            [s.extras["response_ids"].tolist() for s in samples],
            self.policy.pad_id,
            min_shared_prefix=self._shared_prefix,
        ).to(self.policy.device)

    def _no_grad_logprobs(
        self, model: Any, samples: Sequence[Step], indices: Sequence[int], temperature: float
    ) -> dict[int, np.ndarray]:
        """``model``'s log-probs of the response tokens of ``samples[i]`` for ``i`` in ``indices``
        (one no-grad pass in this trainer's micro-batches and precision), float32 host arrays."""
        scorer = dataclasses.replace(self.policy, model=model)
        out = {}
        for idx in self._micro_batches(samples, indices):
            with self.precision.autocast():
                lps = response_logprobs(
                    scorer,
                    [samples[i].extras["prompt_ids"].tolist() for i in idx],
                    [samples[i].extras["response_ids"].tolist() for i in idx],
                    temperature=temperature,
                    batch_size=len(idx),
                    min_shared_prefix=self._shared_prefix,
                )
            out.update(
                {i: np.asarray(lp, dtype=np.float32) for i, lp in zip(idx, lps, strict=True)}
            )
        return out

    def reference_logprobs(
        self, samples: Sequence[Step], indices: Sequence[int], temperature: float
    ) -> dict[int, np.ndarray]:
        """The frozen reference's log-probs (see :meth:`_no_grad_logprobs`), computed once per
        update: the LoRA base with the adapter disabled, or the reference copy (moved to the
        device for this pass and back with ``config.ref_offload``)."""
        if self.lora:
            with self.policy.model.disable_adapter():
                return self._no_grad_logprobs(self.policy.model, samples, indices, temperature)
        offload = self.config.ref_offload
        if offload:
            self.ref_model.to(self.policy.device)
        try:
            return self._no_grad_logprobs(self.ref_model, samples, indices, temperature)
        finally:
            if offload:
                self.ref_model.to("cpu")

    def _micro_step(
        self,
        chunk: Sequence[Step],
        old: Sequence[np.ndarray],
        ref: Sequence[np.ndarray] | None,
        norm: float,
        n_tok: float,
        temperature: float,
    ) -> dict[str, float]:
        """Forward and backward of one micro-batch (its share of the mini-batch loss); returns
        its loss parts and the tokens it ran. The logits die with the backward."""
        cfg = self.config
        batch = self._collate(chunk)
        width = batch.response_ids.shape[1]
        mask = batch.response_mask
        adv = torch.tensor([float(s.advantage) for s in chunk], device=mask.device)
        with self.precision.autocast():
            logits = response_logits(self.train_model, batch)
        logp = token_logprobs(logits, batch.response_ids, temperature)
        loss, st = ppo_objective(
            logp,
            self._padded(old, width).to(mask.device),
            None if ref is None else self._padded(ref, width).to(mask.device),
            broadcast_advantages(adv, mask),
            mask,
            norm,
            clip_ratio=cfg.clip_ratio,
            clip_ratio_high=cfg.clip_ratio_high,
            clip_ratio_c=cfg.clip_ratio_c,
            kl_coef=cfg.kl_coef,
            loss_agg_mode=cfg.loss_agg_mode,
            num_tokens=n_tok,
        )
        # with a bonus the entropy is differentiated; else it is only logged (no graph)
        ent_logits = logits if cfg.entropy_coef else logits.detach()
        entropy = aggregate(
            entropy_from_logits(ent_logits, temperature), mask, cfg.loss_agg_mode, norm
        )
        if cfg.entropy_coef:
            loss = loss - cfg.entropy_coef * entropy
        del logits, ent_logits, logp  # only the graph holds the logits now: freed in backward
        # DDP and FSDP average the ranks' gradients; the loss is a share of the global sum
        self.precision.backward(loss * self.dist.world_size if self.dist.enabled else loss)
        tokens = int(batch.attention_mask.sum())  # tokens run through the model
        if batch.prefix_ids is not None:
            tokens += batch.prefix_ids.shape[1]
        return {**st, "loss": loss.item(), "entropy": entropy.item(), "tokens": tokens}

    def update(self, steps: Sequence[Step]) -> dict[str, float]:
        """PPO over ``steps`` (each with ``advantage`` and rollout ``extras``); returns stats.

        Each mini-batch's loss is aggregated by ``config.loss_agg_mode`` with the mini-batch's
        normaliser (token or sequence count), so accumulating its micro-batches' gradients gives
        the mini-batch loss's gradient. With ``config.mask_truncated`` a truncated sample
        (``extras["truncated"]``) has zero weight: it counts in no normaliser and runs in no
        micro-batch; a mini-batch of only such samples takes no optimizer step. The reference
        log-probs (and the old ones, with ``recompute_old_logprobs``) come from one no-grad pass
        before the epochs. A step skipped by the float16 loss scaler counts in ``skipped_steps``.

        Under world size > 1 (call on every rank, each with its own steps, none at all included)
        the update is one process's on the union of the ranks' steps: each mini-batch's
        normalisers are summed over the ranks, every rank runs as many micro-batches as the
        busiest one (zero-loss ones on a one-token dummy sample when it has fewer) so it takes
        part in every collective, the gradients are summed across ranks before clipping, and the
        returned stats are the job's. With ``mini_batches > 1`` each rank splits its own steps:
        a mini-batch is the union of the ranks' local mini-batches.
        """
        cfg = self.config
        samples = [s for s in steps if s.advantage is not None and len(s.extras["response_ids"])]
        if not samples and not self.dist.enabled:
            return {}
        temperature = cfg.temperature if cfg.temperature > 0 else 1.0
        lengths = torch.tensor([len(s.extras["response_ids"]) for s in samples], dtype=torch.long)
        truncated = torch.tensor(
            [bool(s.extras.get("truncated", False)) for s in samples], dtype=torch.bool
        )
        weights = (~truncated if cfg.mask_truncated else torch.ones_like(truncated)).float()
        live = [i for i in range(len(samples)) if weights[i] > 0]
        model = self.policy.model
        model.train()
        if not self._memory_checked:
            self._memory_checked = True
            self._check_memory(samples, live)
        with self.full_weights():
            if cfg.recompute_old_logprobs:
                old_all = self._no_grad_logprobs(model, samples, live, temperature)
            else:
                old_all = {i: samples[i].extras["logprobs"] for i in live}
            ref_all = self.reference_logprobs(samples, live, temperature) if cfg.kl_coef else None
        keys = ("loss", "pg_loss", "kl", "clip_frac", "clip_frac_lower", "entropy")
        sums = dict.fromkeys(keys, 0.0)
        grad_norm, minis, skipped, tokens = 0.0, 0, 0, 0
        for epoch in range(cfg.ppo_epochs):
            order = np.random.default_rng([cfg.seed, self.iteration, epoch]).permutation(
                len(samples)
            )
            if cfg.mini_batches == 1:
                order = np.arange(len(samples))
            for mini in np.array_split(order, cfg.mini_batches):
                # the mini-batch's response mask (zero-weight samples masked), for its normalisers
                rows = torch.as_tensor(mini, dtype=torch.long)
                width = int(lengths[rows].max()) if len(rows) else 0
                mini_mask = (torch.arange(width) < lengths[rows, None]).float()
                mini_mask = mini_mask * weights[rows, None]
                active = [int(i) for i in mini if weights[i] > 0]
                chunks = self._micro_batches(samples, active)
                norm = loss_normaliser(mini_mask, cfg.loss_agg_mode)
                n_tok, n_chunks = float(mini_mask.sum()), len(chunks)
                if self.dist.enabled:  # the job's normalisers; the busiest rank's micro-batches
                    norm, n_tok = self.dist.sum([norm, n_tok])
                    n_chunks = int(self.dist.max([n_chunks])[0])
                if not norm:
                    continue
                self.precision.zero_grad()
                for k in range(n_chunks):
                    # DDP all-reduces in the mini-batch's last backward only
                    sync = self.ddp is None or k == n_chunks - 1
                    with contextlib.nullcontext() if sync else self.ddp.no_sync():
                        if k >= len(chunks):
                            self._dummy_step()
                            continue
                        idx = chunks[k]
                        st = self._micro_step(
                            [samples[i] for i in idx],
                            [old_all[i] for i in idx],
                            None if ref_all is None else [ref_all[i] for i in idx],
                            norm,
                            n_tok,
                            temperature,
                        )
                    tokens += st.pop("tokens")
                    for key in keys:
                        sums[key] += st[key]
                norm_before_clip, was_skipped = self.precision.step(self.optimizer, cfg.grad_clip)
                minis += 1
                skipped += was_skipped
                grad_norm += 0.0 if was_skipped else norm_before_clip
        self.precision.zero_grad()  # nothing holds gradients between updates (rollouts)
        model.eval()
        n_samples, n_truncated = float(len(samples)), float(truncated.sum())
        if self.dist.enabled:  # each rank's loss parts are its share of the job's: summed
            totals = self.dist.sum([*sums.values(), tokens, n_samples, n_truncated])
            sums = dict(zip(keys, totals, strict=False))
            tokens, n_samples, n_truncated = totals[len(keys) :]
        out = {k: v / max(minis, 1) for k, v in sums.items()}
        out.update(
            grad_norm=grad_norm / max(minis - skipped, 1),
            update_steps=float(minis - skipped),
            skipped_steps=float(skipped),
            update_tokens=float(tokens),
            samples=n_samples,
            truncated_frac=n_truncated / n_samples if n_samples else 0.0,
        )
        return out

    def _dummy_step(self) -> None:
        """Forward and backward of a zero loss on a one-token sample: a rank with fewer
        micro-batches than the busiest one runs these, so it takes part in DDP's gradient
        all-reduce (in the last backward) and FSDP's gathers (every forward and backward); its
        gradient contribution is exactly 0."""
        pad = [self.policy.pad_id]
        batch = collate([pad], [pad], self.policy.pad_id).to(self.policy.device)
        with self.precision.autocast():
            logits = response_logits(self.train_model, batch)
        self.precision.backward(logits.float().sum() * 0.0)

    def check_sync(self, steps: Sequence[Step]) -> dict[str, float]:
        """Score the first ``config.logprob_check_samples`` step-samples of ``steps`` with the
        sampling backend and with the training model (temperature 1); returns
        ``sync/logprob_gap`` (mean absolute difference per response token, nats) and
        ``sync/logprob_gap_max`` (see :mod:`learners.llm.logprob_gap`), or nothing when off.

        An HF generator that samples from the training model itself cannot drift from it: it is
        not checked."""
        if isinstance(self.generator, HFGenerator) and self.generator.policy is self.policy:
            return {}
        chosen = [s for s in steps if len(s.extras.get("response_ids", ()))]
        chosen = chosen[: self.config.logprob_check_samples]
        if not chosen:
            return {}
        backend = self.generator.score(
            [s.extras["prompt_ids"].tolist() for s in chosen],
            [s.extras["response_ids"].tolist() for s in chosen],
        )
        ours = self._no_grad_logprobs(self.policy.model, chosen, range(len(chosen)), 1.0)
        trainer = [ours[i] for i in range(len(chosen))]
        mean, worst = logprob_gap(backend, trainer)
        return {"sync/logprob_gap": mean, "sync/logprob_gap_max": worst}

    def _check_memory(self, samples: Sequence[Step], live: Sequence[int]) -> None:
        """Warn once, before the first update, when the memory plan for this run's longest
        sample does not fit the device (see :func:`~learners.llm.memcheck.warn_if_unfit`)."""
        if not live:
            return
        prompt = max(len(samples[i].extras["prompt_ids"]) for i in live)
        mini = math.ceil(len(samples) / self.config.mini_batches)
        warn_if_unfit(
            self.config,
            self.policy.model,
            self.policy.device,
            seq_len=prompt + self.max_new_tokens,
            response_len=self.max_new_tokens,
            mini_batch_size=mini,
        )

    # -- evaluation --------------------------------------------------------------------------------
    def evaluate(self, splits: Mapping[str, Sequence[str]] | None = None) -> dict[str, float]:
        """One uncredited episode per task of each split (default :attr:`eval_splits`) and
        decoding mode (``config.eval_modes``), batched over the eval envs; each episode's outcome
        goes to ``eval_outcomes.jsonl`` under the current iteration, split and mode. Sampling here
        never disturbs the training RNG stream. Returns ``eval/<label>/``-prefixed metrics, one
        label per split and mode (:func:`~learners.llm.metrics.eval_label`).

        Under world size > 1 (call on every rank) each rank plays its contiguous share of each
        split's tasks; every rank returns the metrics of all of them (``time``: the slowest
        rank's)."""
        metrics: dict[str, float] = {}
        for split, tasks in (self.eval_splits if splits is None else splits).items():
            if tasks:
                metrics.update(self._evaluate_split(split, list(tasks)))
        return metrics

    def _evaluate_split(self, split: str, tasks: list[str]) -> dict[str, float]:
        """:meth:`evaluate` on one split's tasks, every decoding mode."""
        metrics: dict[str, float] = {}
        mine = self.dist.shard(tasks)
        envs = self.eval_envs
        cuda = [torch.cuda.current_device()] if self.policy.device.startswith("cuda") else []
        for mode in self.config.eval_modes:
            bar = self._episode_bar(len(mine), f"eval {eval_label(split, mode)}")
            sample = Sampler(
                self.policy,
                self.generator,
                greedy=mode == "greedy",
                stop_at_action_end=self.config.stop_at_action_end,
                progress=bar.update,
            )
            trajs = []
            with bar, torch.random.fork_rng(devices=cuda), self.full_weights():
                for i in range(0, len(mine), len(envs)):
                    chunk = mine[i : i + len(envs)]
                    trajs += play_episodes(envs[: len(chunk)], chunk, self.eval_prompts, sample)
            seconds = sample.stats.generate_s + sample.stats.env_s
            if self.dist.enabled:  # every rank's episodes, in task order
                trajs = [t for part in self.dist.gather([_outcome(t) for t in trajs]) for t in part]
                seconds = self.dist.max([seconds])[0]
            if self.logger is not None:
                self.logger.log_outcomes(self.iteration, split, mode, trajs)
            label = eval_label(split, mode)
            metrics.update(rollout_metrics([trajs], prefix=f"eval/{label}/"))
            metrics[f"eval/{label}/time"] = seconds
        return metrics

    def _episode_bar(self, total: int, desc: str) -> Any:
        """A tqdm bar of ``total`` episodes on stderr, removed when done; disabled (a no-op) when
        ``progress`` is off and on ranks other than 0."""
        from tqdm.auto import tqdm

        off = not self.progress or self.logger is None
        return tqdm(total=total, desc=desc, unit="episode", leave=False, disable=off)

    def success_gains(self) -> dict[str, float]:
        """Per evaluated split and decoding mode, the mean per-task change of success from the
        first evaluation (iteration 0) to the one at the current iteration, with its 95% interval
        (see :func:`~learners.llm.metrics.paired_difference`): ``eval/<label>/success_gain``,
        ``..._low``, ``..._high``; nothing for a split and mode without both evaluations (nor on
        ranks other than 0, which keep no outcomes)."""
        out: dict[str, float] = {}
        if self.logger is None or self.iteration == 0:
            return out
        for split in self.eval_splits:
            for mode in self.config.eval_modes:
                before = self.logger.successes(0, split, mode)
                after = self.logger.successes(self.iteration, split, mode)
                if not before or not after:
                    continue
                gain, low, high, _ = paired_difference(before, after)
                key = f"eval/{eval_label(split, mode)}/success_gain"
                out.update({key: gain, f"{key}_low": low, f"{key}_high": high})
        return out

    # -- checkpoints -------------------------------------------------------------------------------
    def save_checkpoint(self, path: str | Path | None = None) -> Path:
        """Write everything needed to continue exactly (default ``out_dir/checkpoint.pt``).

        Under world size > 1 call it on every rank: rank 0 writes the file, with every rank's RNG
        states (``rank_rng``; the top-level ones are rank 0's) and, under FSDP, the full
        (gathered) model and optimizer state."""
        path = Path(path or self.out_dir / "checkpoint.pt")
        model_state, optimizer_state = self._state_dicts()
        rank_rng = self.dist.gather(_rng_state())
        if self.dist.is_main:
            state = {
                "model": model_state,
                "optimizer": optimizer_state,
                "precision": self.precision.state_dict(),
                "iteration": self.iteration,
                "cursor": self.cursor.position,
                **rank_rng[0],
                "config": self.config.to_dict(),
            }
            if self.dist.enabled:
                state["rank_rng"] = rank_rng
            tmp = path.with_suffix(".tmp")
            torch.save(state, tmp)
            tmp.replace(path)
        self.dist.barrier()  # the file is complete before any rank reads it
        return path

    def _state_dicts(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The model's and the optimizer's state dicts (under FSDP gathered whole onto rank 0's
        CPU, which every rank must join; other ranks get empty dicts)."""
        if not self.fsdp:
            return self.policy.model.state_dict(), self.optimizer.state_dict()
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            get_model_state_dict,
            get_optimizer_state_dict,
        )

        options = StateDictOptions(full_state_dict=True, cpu_offload=True)
        model = self.policy.model
        return (
            get_model_state_dict(model, options=options),
            get_optimizer_state_dict(model, self.optimizer, options=options),
        )

    def load_checkpoint(self, path: str | Path | None = None) -> None:
        """Restore a :meth:`save_checkpoint` file into this trainer (same config and model).

        Under world size > 1 every rank reads the file (a path all ranks see); each takes its own
        RNG states when the checkpoint was written by as many ranks, else the streams restart from
        the seed (a warning: the run continues, not bit-exactly)."""
        path = Path(path or self.out_dir / "checkpoint.pt")
        state = torch.load(path, map_location=self.policy.device, weights_only=False)
        if self.fsdp:
            from torch.distributed.checkpoint.state_dict import (
                StateDictOptions,
                set_model_state_dict,
                set_optimizer_state_dict,
            )

            options = StateDictOptions(full_state_dict=True)
            model = self.policy.model
            set_model_state_dict(model, state["model"], options=options)
            set_optimizer_state_dict(model, self.optimizer, state["optimizer"], options=options)
        else:
            self.policy.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
        self.precision.load_state_dict(state["precision"])
        self.iteration = int(state["iteration"])
        self.cursor.position = int(state["cursor"])
        rank_rng = state.get("rank_rng", [state])
        if len(rank_rng) == self.dist.world_size:
            _set_rng_state(rank_rng[self.dist.rank])
        else:
            warnings.warn(
                f"{path} was written by {len(rank_rng)} process(es), resumed by "
                f"{self.dist.world_size}: random streams restart from the seed (not bit-exact)",
                stacklevel=2,
            )
        self.generator.sync_weights()
        self._store_truncated = False  # the next write drops what was stored after this state

    # -- the loop ----------------------------------------------------------------------------------
    def train(self, iterations: int | None = None) -> list[dict[str, float]]:
        """Train up to ``iterations`` total (default ``config.iterations``); returns all logged rows.

        Evaluates before the first iteration of a fresh run, every ``eval_every`` iterations and
        after the last, where it also logs :meth:`success_gains`; checkpoints every ``checkpoint_every`` and at the end; draws the PNG.
        Metric rows already in ``out_dir`` past the current iteration are dropped first (a fresh run
        starts a fresh CSV; a resumed one keeps its history up to the checkpoint).

        Under world size > 1 every rank calls it; rank 0 logs, checkpoints and draws, and returns
        the rows; the other ranks return ``[]``.
        """
        from tqdm.auto import tqdm

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
            disable=not self.progress or log is None,
            desc="train",
            unit="it",
        )
        for _ in bar:
            metrics = self.train_iteration()
            last = self.iteration == total
            if last or (cfg.eval_every and self.iteration % cfg.eval_every == 0):
                metrics.update(self.evaluate())
            if last:
                metrics.update(self.success_gains())
            if log is not None:
                log.log(self.iteration, metrics)
            if last or (cfg.checkpoint_every and self.iteration % cfg.checkpoint_every == 0):
                self.save_checkpoint()
            bar.set_postfix(
                success=f"{metrics['success_rate']:.2f}",
                valid=f"{metrics['valid_action_rate']:.2f}",
                loss=f"{metrics.get('loss', math.nan):.3f}",
            )
        if log is None:
            return []
        plot_learning_curve(log.rows, self.out_dir / "learning_curve.png")
        return log.rows

    def close(self) -> None:
        """Close the envs (and eval envs given to the trainer), the logger and the store."""
        for env in [*self.envs, *(self.eval_envs if self._own_eval else [])]:
            env.close()
        if self.vector_env is not None:
            self.vector_env.close()
        if self.logger is not None:
            self.logger.close()
        if self.store is not None:
            self.store.close()
