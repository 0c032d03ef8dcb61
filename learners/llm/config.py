"""The learner's configuration: one dataclass, every default documented with its source.

This module holds :class:`TrainConfig`.

Sources for defaults: verl-agent's scripts and verl's actor config (specs/compat.md section 3.1:
group size 8, invalid-action penalty 0.1 in the env, ``low_var_kl`` KL loss with coefficient 0.01,
PPO clip 0.2, actor lr 1e-6, grad clip 1.0, history length 2). CPU-sized values (batch, response
length) are ours and say so.

>>> TrainConfig().num_envs
32
>>> TrainConfig(credit="nope")
Traceback (most recent call last):
...
ValueError: credit must be one of ('grpo', 'gigpo', 'graph', 'rtmc'), got 'nope'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["TrainConfig", "CREDIT_METHODS"]

#: Credit methods that need nothing beyond the rollouts (``wrappers.assign_advantages`` names).
CREDIT_METHODS = ("grpo", "gigpo", "graph", "rtmc")


@dataclass
class TrainConfig:
    """Everything a training run needs besides the model.

    Attributes:
        env_id: registered env id.
        env_kwargs: keyword arguments for every sub-env (e.g. ``{"max_steps": 5}``).
        train_tasks: task ids to train on; ``None`` = the env's ``train`` split.
        test_tasks: task ids to evaluate on; ``None`` = the first ``eval_tasks`` of the ``test`` split.
        credit: credit method for ``wrappers.assign_advantages``.
        credit_config: method config object passed through (``None`` = the method's defaults).
        num_groups: tasks per iteration (verl-agent: 32 for Sokoban; 4 here for CPU).
        group_size: rollouts per task (verl-agent: 8).
        iterations: training iterations (one rollout batch + one update each).
        lr: AdamW learning rate (verl actor: 1e-6 for 1.5B-7B models; tiny models want ~1e-3).
        weight_decay: AdamW weight decay (verl actor: 0.01).
        grad_clip: max global grad norm (verl: 1.0).
        clip_ratio: PPO clip epsilon (verl: 0.2); ``clip_ratio_high`` the upper one (None = same).
        kl_coef: weight of the k3 KL to the frozen reference (verl-agent: 0.01); 0 disables the
            reference model entirely.
        entropy_coef: entropy bonus weight (verl-agent scripts: 0; entropy is always logged).
        ppo_epochs: passes over each rollout batch (verl: 1).
        mini_batches: optimizer steps per epoch (the batch is split evenly; 1 = on-policy).
        micro_batch_size: step-samples per forward/backward (gradient accumulation in between).
        min_shared_prefix: run a prompt prefix shared by a whole micro-batch (or generation batch)
            once when it is at least this many tokens (0 = never); exact, it only saves compute.
        recompute_old_logprobs: use a fresh no-grad forward as the PPO "old" policy instead of the
            sampler's log-probs (verl's default; useful with vLLM, whose numerics differ).
        max_new_tokens: response budget per step (verl-agent: 512; 64 here for CPU).
        temperature, top_p: sampling (verl-agent: 1.0, 1.0).
        history_length: observation/action pairs in the prompt (verl-agent: 2).
        prompt_style: ``"reference"`` (verl-agent's texts) or ``"compact"`` (short one-shot Sokoban
            prompt for small CPU models, see :class:`~learners.llm.prompts.CompactSokobanPrompt`).
        eval_every: evaluate every this many iterations (and before the first and after the last);
            0 = only before and after.
        eval_tasks: test tasks per evaluation (one episode each).
        eval_greedy: greedy decoding in evaluation (else sampled at ``temperature``).
        checkpoint_every: save every this many iterations (0 = only at the end).
        seed: seeds the task cursor, the sampler and the mini-batch shuffles.
        backend: ``"hf"`` (transformers ``generate``) or ``"vllm"`` (GPU).
        gen_batch_size: prompts per HF ``generate`` call.
        device: ``"auto"`` (CUDA if available), ``"cpu"`` or ``"cuda"``.
        mixed_precision: bf16 autocast on CUDA (ignored on CPU).
        lora_rank: > 0 trains a LoRA adapter of this rank (peft) instead of all weights.
        torch_threads: CPU threads for torch (0 = leave torch's default).
    """

    env_id: str = "agentenvs/Sokoban-v0"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    train_tasks: list[str] | None = None
    test_tasks: list[str] | None = None
    credit: str = "graph"
    credit_config: Any = None
    num_groups: int = 4
    group_size: int = 8
    iterations: int = 10
    lr: float = 1e-6
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    clip_ratio: float = 0.2
    clip_ratio_high: float | None = None
    kl_coef: float = 0.01
    entropy_coef: float = 0.0
    ppo_epochs: int = 1
    mini_batches: int = 1
    micro_batch_size: int = 8
    min_shared_prefix: int = 16
    recompute_old_logprobs: bool = False
    max_new_tokens: int = 64
    temperature: float = 1.0
    top_p: float = 1.0
    history_length: int = 2
    prompt_style: str = "reference"
    eval_every: int = 0
    eval_tasks: int = 32
    eval_greedy: bool = True
    checkpoint_every: int = 0
    seed: int = 0
    backend: str = "hf"
    gen_batch_size: int = 32
    device: str = "auto"
    mixed_precision: bool = True
    lora_rank: int = 0
    torch_threads: int = 0

    def __post_init__(self) -> None:
        if self.credit not in CREDIT_METHODS:
            raise ValueError(f"credit must be one of {CREDIT_METHODS}, got {self.credit!r}")
        if self.backend not in ("hf", "vllm"):
            raise ValueError(f"backend must be 'hf' or 'vllm', got {self.backend!r}")
        for name in (
            "num_groups",
            "group_size",
            "micro_batch_size",
            "mini_batches",
            "max_new_tokens",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.ppo_epochs < 1 or self.iterations < 0:
            raise ValueError("ppo_epochs must be >= 1 and iterations >= 0")

    @property
    def num_envs(self) -> int:
        """Sub-envs in the grouped vector env (``num_groups * group_size``)."""
        return self.num_groups * self.group_size

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (``credit_config`` as its repr)."""
        out = asdict(self)
        out["credit_config"] = None if self.credit_config is None else repr(self.credit_config)
        return out
