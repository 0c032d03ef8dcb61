"""The PPO update over micro-batches, with its precision and its DDP/FSDP hooks.

This module holds :class:`PPOUpdate`: it owns what an update changes and needs (the trainable
parameters, :class:`~agentenvs.learners.llm.precision.MixedPrecision`, the AdamW optimizer, the frozen
reference, the DDP wrapper or FSDP sharding of :mod:`agentenvs.learners.llm.parallel`) and runs one update
over a list of step-samples: prompt tokens masked, the step's advantage on each of its response
tokens, dual-clip PPO, k3 KL to the frozen reference, the loss aggregated by ``loss_agg_mode`` over
each mini-batch, gradient accumulation over length-sorted micro-batches (a sample count or a token
budget), truncated responses optionally given zero weight, the reference log-probs from one pass
per update, optional gradient checkpointing and LoRA.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from agentenvs.learners.llm.batching import micro_batches
from agentenvs.learners.llm.config import TrainConfig
from agentenvs.learners.llm.distributed import Distributed
from agentenvs.learners.llm.loss import (
    aggregate,
    broadcast_advantages,
    entropy_from_logits,
    loss_normaliser,
    ppo_objective,
    token_logprobs,
)
from agentenvs.learners.llm.memcheck import warn_if_unfit
from agentenvs.learners.llm.parallel import full_weights, parallel_model
from agentenvs.learners.llm.policy import (
    PackedBatch,
    Policy,
    collate,
    enable_gradient_checkpointing,
    response_logits,
    response_logprobs,
)
from agentenvs.learners.llm.precision import DTYPES, MixedPrecision, autocast_dtype
from agentenvs.learners.llm.vision import images_of

from agentenvs.core.trajectory import Step

__all__ = ["PPOUpdate", "warmup_factor"]


def _advantage(step: Step) -> float:
    """A training sample's advantage (the credit wrapper set it)."""
    if step.advantage is None:
        raise ValueError("a training sample has no advantage: credit its group first")
    return float(step.advantage)


def warmup_factor(step: int, warmup_steps: int) -> float:
    """The learning-rate multiplier at optimizer step ``step`` (0-based): linear warmup
    ``(step + 1) / warmup_steps`` up to 1, then 1 (always 1 when ``warmup_steps`` is 0).

    >>> [warmup_factor(k, 4) for k in range(6)], warmup_factor(0, 0)
    ([0.25, 0.5, 0.75, 1.0, 1.0, 1.0], 1.0)
    """
    return 1.0 if warmup_steps <= 0 else min(1.0, (step + 1) / warmup_steps)


class PPOUpdate:
    """One PPO update at a time on ``policy`` (see :meth:`run`).

    Building it casts the model to ``config.weight_dtype``, broadcasts rank 0's weights to every
    rank, makes the frozen reference (a deep copy, or the LoRA base with the adapter disabled),
    enables gradient checkpointing, wraps the model for DDP or shards it for FSDP2 (``dist``
    world size > 1, ``config.parallel``), and builds the precision, the optimizer and its learning-rate
    schedule (``scheduler``: the linear warmup of :func:`warmup_factor` over ``config.warmup_steps``
    optimizer steps, then constant).

    Args:
        config: the run configuration (its ``recompute_old_logprobs`` already resolved).
        policy: the model to train, on its device.
        dist: this process's place in a ``torchrun`` job.
        max_new_tokens: the longest response, for the memory check before the first update.
    """

    def __init__(
        self, config: TrainConfig, policy: Policy, dist: Distributed, max_new_tokens: int
    ) -> None:
        self.config = config
        self.policy = policy
        self.dist = dist
        self.max_new_tokens = max_new_tokens
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
        # what the update's forwards run, and the DDP wrapper (None without DDP)
        self.train_model, self.ddp = parallel_model(policy.model, self.dist, self.fsdp)
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
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, functools.partial(warmup_factor, warmup_steps=config.warmup_steps)
        )
        self._memory_checked = False

    def full_weights(self) -> contextlib.AbstractContextManager[None]:
        """:func:`~agentenvs.learners.llm.parallel.full_weights` of this model (every rank together)."""
        return full_weights(self.policy.model, self.fsdp)

    def _padded(self, rows: Sequence[np.ndarray], width: int) -> torch.Tensor:
        out = torch.zeros((len(rows), width), dtype=torch.float32)
        for i, r in enumerate(rows):
            out[i, : len(r)] = torch.as_tensor(np.asarray(r, dtype=np.float32))
        return out

    def _micro_batches(self, samples: Sequence[Step], indices: Sequence[int]) -> list[list[int]]:
        """``indices`` sorted by length and cut by ``micro_batch_tokens`` or ``micro_batch_size``
        (see :func:`~agentenvs.learners.llm.batching.micro_batches`)."""
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

    def _collate(self, samples: Sequence[Step]) -> PackedBatch:
        return collate(
            [s.extras["prompt_ids"].tolist() for s in samples],
            [s.extras["response_ids"].tolist() for s in samples],
            self.policy.pad_id,
            min_shared_prefix=self._shared_prefix,
            pixels=self.policy.pixels(images_of(samples)),
        ).to(self.policy.device)

    def no_grad_logprobs(
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
                    images=images_of([samples[i] for i in idx]),
                )
            out.update(
                {i: np.asarray(lp, dtype=np.float32) for i, lp in zip(idx, lps, strict=True)}
            )
        return out

    def reference_logprobs(
        self, samples: Sequence[Step], indices: Sequence[int], temperature: float
    ) -> dict[int, np.ndarray]:
        """The frozen reference's log-probs (see :meth:`no_grad_logprobs`), computed once per
        update: the LoRA base with the adapter disabled, or the reference copy (moved to the
        device for this pass and back with ``config.ref_offload``)."""
        if self.lora:
            with self.policy.model.disable_adapter():
                return self.no_grad_logprobs(self.policy.model, samples, indices, temperature)
        assert self.ref_model is not None  # kept when there is no LoRA adapter
        offload = self.config.ref_offload
        if offload:
            self.ref_model.to(self.policy.device)
        try:
            return self.no_grad_logprobs(self.ref_model, samples, indices, temperature)
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
        adv = torch.tensor([_advantage(s) for s in chunk], device=mask.device)
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

    def run(self, steps: Sequence[Step], iteration: int) -> dict[str, float]:
        """PPO over ``steps`` (each with ``advantage`` and rollout ``extras``) in the trainer's
        ``iteration`` (it seeds the mini-batch shuffle); returns stats.

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
                old_all = self.no_grad_logprobs(model, samples, live, temperature)
            else:
                old_all = {i: samples[i].extras["logprobs"] for i in live}
            ref_all = self.reference_logprobs(samples, live, temperature) if cfg.kl_coef else None
        keys = ("loss", "pg_loss", "kl", "clip_frac", "clip_frac_lower", "entropy")
        sums = dict.fromkeys(keys, 0.0)
        grad_norm, minis, skipped = 0.0, 0, 0
        tokens: float = 0
        for epoch in range(cfg.ppo_epochs):
            order = np.random.default_rng([cfg.seed, iteration, epoch]).permutation(len(samples))
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
                    last = k == n_chunks - 1
                    ddp = self.ddp if not last else None
                    with ddp.no_sync() if ddp is not None else contextlib.nullcontext():
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
                if not was_skipped:  # the warmup counts optimizer steps, across iterations
                    self.scheduler.step()
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
            lr=self.optimizer.param_groups[0]["lr"],
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

    def _check_memory(self, samples: Sequence[Step], live: Sequence[int]) -> None:
        """Warn once, before the first update, when the memory plan for this run's longest
        sample does not fit the device (see :func:`~agentenvs.learners.llm.memcheck.warn_if_unfit`)."""
        if not live:
            return
        prompt = max(len(samples[i].extras["prompt_ids"]) for i in live)
        mini = math.ceil(len(samples) / self.config.mini_batches)
        vision = self._vision_plan([samples[i] for i in live])
        warn_if_unfit(
            self.config,
            self.policy.model,
            self.policy.device,
            seq_len=prompt - vision.pop("image_tokens", 0) + self.max_new_tokens,
            response_len=self.max_new_tokens,
            mini_batch_size=mini,
            **vision,
        )

    def _vision_plan(self, samples: Sequence[Step]) -> dict[str, Any]:
        """A VLM's planner fields for ``samples``: the most images a prompt has, the largest
        image's size after the processor's resize, whether the tower trains, and the image tokens
        of the longest prompt (``{}`` for a text policy or text samples)."""
        rows = images_of(samples)
        inputs = self.policy.images
        if rows is None or inputs is None:
            return {}
        largest = max(
            (image for row in rows for image in row), key=lambda a: a.shape[0] * a.shape[1]
        )
        pixels = inputs.pixels([[largest]])
        assert pixels is not None  # one image
        patch = int(getattr(inputs.processor, "patch_size", 14))
        _, h, w = (int(x) for x in pixels["image_grid_thw"][0])
        longest = max(samples, key=lambda s: len(s.extras["prompt_ids"]))
        marks = int((np.asarray(longest.extras["prompt_ids"]) == inputs.image_token_id).sum())
        visual = [p for n, p in self.policy.model.named_parameters() if "visual" in n]
        return {
            "images_per_prompt": max(len(row) for row in rows),
            "image_size": (h * patch, w * patch),
            "train_vision": any(p.requires_grad for p in visual),
            "image_tokens": marks,
        }
