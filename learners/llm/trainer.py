"""The training loop: grouped rollouts -> ``wrappers.assign_advantages`` -> PPO-clip update.

This module holds :class:`Trainer` and :func:`build_generator`.

One iteration:

1. take ``num_groups`` task ids from the :class:`~learners.llm.panels.TaskCursor`;
2. play each with ``group_size`` sub-envs (:func:`~learners.llm.rollout.collect_groups`), one
   sampled response per environment step;
3. write per-step advantages with ``wrappers.assign_advantages(groups, credit, credit_config)``;
4. one PPO-clip update over every step-sample (prompt tokens masked, the step's advantage on each of
   its response tokens, k3 KL to the frozen reference, token-mean loss, gradient accumulation over
   micro-batches, bf16 autocast on CUDA, optional LoRA);
5. log metrics (CSV, TensorBoard, tqdm), evaluate on test tasks, checkpoint.

Checkpoints hold the model and optimizer state, every RNG state, the iteration and the task-cursor
position, so a resumed run continues bit-exactly on CPU (episodes always start from explicit task
ids; no env state crosses an iteration).
"""

from __future__ import annotations

import copy
import json
import math
import random
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agentenvs.core.trajectory import Step, Trajectory
from agentenvs.vector import make_group_vec_env
from learners.llm.config import TrainConfig
from learners.llm.generation import HFGenerator, VLLMGenerator
from learners.llm.loss import (
    broadcast_advantages,
    entropy_from_logits,
    ppo_objective,
    token_logprobs,
)
from learners.llm.metrics import MetricsLogger, plot_learning_curve, rollout_metrics
from learners.llm.panels import TaskCursor
from learners.llm.policy import Policy, collate, response_logits
from learners.llm.prompts import prompt_for
from learners.llm.rollout import RolloutStats, collect_groups, run_episodes, sub_envs

__all__ = ["Trainer", "build_generator", "CreditFn"]

#: ``credit(groups, method, config) -> None``: writes ``Step.advantage`` in place.
CreditFn = Callable[[Sequence[Sequence[Trajectory]], str, Any], None]


def _wrappers_credit(groups: Sequence[Sequence[Trajectory]], method: str, config: Any) -> None:
    from wrappers import assign_advantages

    assign_advantages(groups, method, config)


def build_generator(config: TrainConfig, policy: Policy, model_path: str | None = None) -> Any:
    """The sampling backend of ``config.backend`` (vLLM needs ``model_path``, the HF directory)."""
    if config.backend == "vllm":
        if model_path is None:
            raise ValueError("the vLLM backend needs the model directory (model_path)")
        return VLLMGenerator(
            policy,
            model_path,
            max_new_tokens=config.max_new_tokens,
            temperature=config.temperature,
            top_p=config.top_p,
            seed=config.seed,
        )
    return HFGenerator(
        policy,
        max_new_tokens=config.max_new_tokens,
        temperature=config.temperature,
        top_p=config.top_p,
        batch_size=config.gen_batch_size,
        prefix_cache=config.min_shared_prefix > 0,
        min_shared_prefix=max(config.min_shared_prefix, 1),
    )


class Trainer:
    """Multi-turn PPO on per-step advantages.

    Args:
        config: the run configuration.
        policy: the model to train (already on its device; LoRA-wrapped if ``config.lora_rank``).
        out_dir: where metrics, TensorBoard logs, checkpoints and the learning curve go.
        model_path: the model's HF directory (needed by the vLLM backend only).
        credit: advantage writer; default ``wrappers.assign_advantages``.
        tensorboard: also log to ``out_dir/tensorboard``.
        progress: show a tqdm bar.
    """

    def __init__(
        self,
        config: TrainConfig,
        policy: Policy,
        out_dir: str | Path,
        *,
        model_path: str | None = None,
        credit: CreditFn | None = None,
        tensorboard: bool = True,
        progress: bool = True,
    ) -> None:
        self.config = config
        self.policy = policy
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.credit = credit or _wrappers_credit
        self.progress = progress
        if config.torch_threads:
            torch.set_num_threads(config.torch_threads)
        torch.manual_seed(config.seed)
        self.envs = make_group_vec_env(
            config.env_id, config.num_groups, config.group_size, **config.env_kwargs
        )
        panel = sub_envs(self.envs)[0].unwrapped.tasks
        train_ids = config.train_tasks or panel.ids("train")
        self.test_tasks = list(config.test_tasks or panel.ids("test")[: config.eval_tasks])
        self.cursor = TaskCursor(train_ids, seed=config.seed)
        self.prompt = prompt_for(config.env_id, config.history_length, config.prompt_style)
        self.generator = build_generator(config, policy, model_path)
        self.lora = hasattr(policy.model, "disable_adapter")
        self.ref_model = None
        if config.kl_coef and not self.lora:
            self.ref_model = copy.deepcopy(policy.model).eval().requires_grad_(False)
        self.params = [p for p in policy.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(
            self.params, lr=config.lr, weight_decay=config.weight_decay
        )
        self.iteration = 0
        self.logger = MetricsLogger(self.out_dir, tensorboard=tensorboard)
        (self.out_dir / "config.json").write_text(json.dumps(config.to_dict(), indent=2))

    # -- one iteration -----------------------------------------------------------------------------
    def train_iteration(self) -> dict[str, float]:
        """Rollout, credit and update once; returns the iteration's metrics."""
        cfg = self.config
        start = time.perf_counter()
        tasks = self.cursor.take(cfg.num_groups)
        groups, stats = collect_groups(
            self.envs,
            tasks,
            self.policy,
            self.generator,
            self.prompt,
            group_tag=f"it{self.iteration}-",
        )
        t0 = time.perf_counter()
        self.credit(groups, cfg.credit, cfg.credit_config)
        credit_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        update = self.update([s for g in groups for t in g for s in t.steps])
        update_s = time.perf_counter() - t0
        self.generator.sync_weights()
        self.iteration += 1
        total = time.perf_counter() - start
        metrics = rollout_metrics(groups)
        metrics.update(update)
        metrics.update(
            time_generate=stats.generate_s,
            time_env=stats.env_s,
            time_credit=credit_s,
            time_update=update_s,
            time_iteration=total,
            outside_model_share=(total - stats.generate_s - update_s) / total,
            gen_tokens=float(stats.tokens),
            gen_tokens_per_s=stats.tokens / max(stats.generate_s, 1e-9),
            update_tokens_per_s=update.get("update_tokens", 0.0) / max(update_s, 1e-9),
        )
        return metrics

    def _autocast(self):
        if self.policy.device.startswith("cuda") and self.config.mixed_precision:
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return nullcontext()

    def _reference_logprobs(self, batch, temperature: float) -> torch.Tensor:
        with torch.no_grad(), self._autocast():
            if self.lora:
                with self.policy.model.disable_adapter():
                    logits = response_logits(self.policy.model, batch)
            else:
                logits = response_logits(self.ref_model, batch)
            return token_logprobs(logits, batch.response_ids, temperature)

    def _padded(self, rows: Sequence[np.ndarray], width: int) -> torch.Tensor:
        out = torch.zeros((len(rows), width), dtype=torch.float32)
        for i, r in enumerate(rows):
            out[i, : len(r)] = torch.as_tensor(np.asarray(r, dtype=np.float32))
        return out

    def _old_logprobs(self, samples: Sequence[Step], temperature: float) -> list[np.ndarray]:
        if not self.config.recompute_old_logprobs:
            return [s.extras["logprobs"] for s in samples]
        out = []
        size = self.config.micro_batch_size
        for i in range(0, len(samples), size):
            chunk = samples[i : i + size]
            batch = self._collate(chunk)
            with torch.no_grad(), self._autocast():
                lp = token_logprobs(
                    response_logits(self.policy.model, batch), batch.response_ids, temperature
                )
            out += [
                lp[j, : len(s.extras["response_ids"])].float().cpu().numpy()
                for j, s in enumerate(chunk)
            ]
        return out

    def _collate(self, samples: Sequence[Step]):
        return collate(
            [s.extras["prompt_ids"].tolist() for s in samples],
            [s.extras["response_ids"].tolist() for s in samples],
            self.policy.pad_id,
            min_shared_prefix=self.config.min_shared_prefix,
        ).to(self.policy.device)

    def update(self, steps: Sequence[Step]) -> dict[str, float]:
        """PPO-clip over ``steps`` (each with ``advantage`` and rollout ``extras``); returns stats."""
        cfg = self.config
        samples = [s for s in steps if s.advantage is not None and len(s.extras["response_ids"])]
        if not samples:
            return {}
        temperature = cfg.temperature if cfg.temperature > 0 else 1.0
        model = self.policy.model
        model.train()
        old_all = self._old_logprobs(samples, temperature)
        sums = dict.fromkeys(("loss", "pg_loss", "kl", "clip_frac", "entropy", "grad_norm"), 0.0)
        updates, tokens = 0, 0
        for epoch in range(cfg.ppo_epochs):
            order = np.random.default_rng([cfg.seed, self.iteration, epoch]).permutation(
                len(samples)
            )
            if cfg.mini_batches == 1:
                order = np.arange(len(samples))
            for mini in np.array_split(order, cfg.mini_batches):
                if len(mini) == 0:
                    continue
                self.optimizer.zero_grad(set_to_none=True)
                n_tok = float(sum(len(samples[i].extras["response_ids"]) for i in mini))
                for k in range(0, len(mini), cfg.micro_batch_size):
                    idx = mini[k : k + cfg.micro_batch_size]
                    chunk = [samples[i] for i in idx]
                    batch = self._collate(chunk)
                    width = batch.response_ids.shape[1]
                    mask = batch.response_mask
                    old = self._padded([old_all[i] for i in idx], width).to(mask.device)
                    adv = torch.tensor([float(s.advantage) for s in chunk], device=mask.device)
                    with self._autocast():
                        logits = response_logits(model, batch)
                    logp = token_logprobs(logits, batch.response_ids, temperature)
                    ref = self._reference_logprobs(batch, temperature) if cfg.kl_coef else None
                    loss, st = ppo_objective(
                        logp,
                        old,
                        ref,
                        broadcast_advantages(adv, mask),
                        mask,
                        n_tok,
                        clip_ratio=cfg.clip_ratio,
                        clip_ratio_high=cfg.clip_ratio_high,
                        kl_coef=cfg.kl_coef,
                    )
                    ent_logits = logits if cfg.entropy_coef else logits.detach()
                    entropy = (entropy_from_logits(ent_logits, temperature) * mask).sum() / n_tok
                    if cfg.entropy_coef:
                        loss = loss - cfg.entropy_coef * entropy
                    loss.backward()
                    sums["loss"] += loss.item()
                    sums["entropy"] += entropy.item()
                    for key in ("pg_loss", "kl", "clip_frac"):
                        sums[key] += st[key]
                    tokens += int(batch.attention_mask.sum())  # tokens run through the model
                    if batch.prefix_ids is not None:
                        tokens += batch.prefix_ids.shape[1]
                norm = torch.nn.utils.clip_grad_norm_(self.params, cfg.grad_clip)
                sums["grad_norm"] += float(norm)
                self.optimizer.step()
                updates += 1
        model.eval()
        out = {k: v / updates for k, v in sums.items()}
        out.update(
            update_steps=float(updates), update_tokens=float(tokens), samples=float(len(samples))
        )
        return out

    # -- evaluation --------------------------------------------------------------------------------
    def evaluate(self, tasks: Sequence[str] | None = None) -> dict[str, float]:
        """One episode per test task (batched over the sub-envs; greedy if ``config.eval_greedy``).

        Sampling here never disturbs the training RNG stream. Returns ``eval/``-prefixed metrics.
        """
        tasks = list(self.test_tasks if tasks is None else tasks)
        envs = sub_envs(self.envs)
        trajs: list[Trajectory] = []
        stats = RolloutStats()
        cuda = [torch.cuda.current_device()] if self.policy.device.startswith("cuda") else []
        with torch.random.fork_rng(devices=cuda):
            for i in range(0, len(tasks), len(envs)):
                chunk = tasks[i : i + len(envs)]
                done, st = run_episodes(
                    envs[: len(chunk)],
                    chunk,
                    self.policy,
                    self.generator,
                    self.prompt,
                    greedy=self.config.eval_greedy,
                )
                trajs += done
                stats.add(st)
        metrics = rollout_metrics([trajs], prefix="eval/")
        metrics["eval/time"] = stats.generate_s + stats.env_s
        return metrics

    # -- checkpoints -------------------------------------------------------------------------------
    def save_checkpoint(self, path: str | Path | None = None) -> Path:
        """Write everything needed to continue exactly (default ``out_dir/checkpoint.pt``)."""
        path = Path(path or self.out_dir / "checkpoint.pt")
        state = {
            "model": self.policy.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "iteration": self.iteration,
            "cursor": self.cursor.position,
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
            "numpy_rng": np.random.get_state(),
            "python_rng": random.getstate(),
            "config": self.config.to_dict(),
        }
        tmp = path.with_suffix(".tmp")
        torch.save(state, tmp)
        tmp.replace(path)
        return path

    def load_checkpoint(self, path: str | Path | None = None) -> None:
        """Restore a :meth:`save_checkpoint` file into this trainer (same config and model)."""
        path = Path(path or self.out_dir / "checkpoint.pt")
        state = torch.load(path, map_location=self.policy.device, weights_only=False)
        self.policy.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.iteration = int(state["iteration"])
        self.cursor.position = int(state["cursor"])
        torch.set_rng_state(state["torch_rng"].cpu())
        if state["cuda_rng"] is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        np.random.set_state(state["numpy_rng"])
        random.setstate(state["python_rng"])
        self.generator.sync_weights()

    # -- the loop ----------------------------------------------------------------------------------
    def train(self, iterations: int | None = None) -> list[dict[str, float]]:
        """Train up to ``iterations`` total (default ``config.iterations``); returns all logged rows.

        Evaluates before the first iteration of a fresh run, every ``eval_every`` iterations and
        after the last; checkpoints every ``checkpoint_every`` and at the end; draws the PNG.
        Metric rows already in ``out_dir`` past the current iteration are dropped first (a fresh run
        starts a fresh CSV; a resumed one keeps its history up to the checkpoint).
        """
        from tqdm.auto import tqdm

        cfg = self.config
        total = cfg.iterations if iterations is None else iterations
        self.logger.truncate(self.iteration if self.iteration else -1)
        if self.iteration == 0 and total > 0:
            self.logger.log(0, self.evaluate())
        bar = tqdm(
            range(self.iteration, total),
            initial=self.iteration,
            total=total,
            disable=not self.progress,
            desc="train",
            unit="it",
        )
        for _ in bar:
            metrics = self.train_iteration()
            last = self.iteration == total
            if last or (cfg.eval_every and self.iteration % cfg.eval_every == 0):
                metrics.update(self.evaluate())
            self.logger.log(self.iteration, metrics)
            if last or (cfg.checkpoint_every and self.iteration % cfg.checkpoint_every == 0):
                self.save_checkpoint()
            bar.set_postfix(
                success=f"{metrics['success_rate']:.2f}",
                valid=f"{metrics['valid_action_rate']:.2f}",
                loss=f"{metrics.get('loss', math.nan):.3f}",
            )
        plot_learning_curve(self.logger.rows, self.out_dir / "learning_curve.png")
        return self.logger.rows

    def close(self) -> None:
        self.envs.close()
        self.logger.close()
