"""The learner's configuration: one dataclass of every training knob.

This module holds :class:`TrainConfig`, :data:`LOSS_AGG_MODES` (verl's loss aggregation modes),
:data:`WEIGHT_DTYPES` and :data:`AUTOCAST_MODES` (the precision choices; see
:mod:`agentenvs.learners.llm.precision`), :data:`EVAL_MODES` (greedy and sampled decoding in evaluation),
:data:`PARALLEL_MODES` (DDP or FSDP under ``torchrun``) and :data:`STORE_CHOICES` (the trajectory
store's formats).

The environments, their credit wrappers and the group sizes are not configuration here: the
trainer is handed credit-wrapped envs (see :class:`~agentenvs.learners.llm.trainer.Trainer`). Defaults suit a
small pretrained instruct model; ``examples/train_llm.py`` reads its command-line defaults from this
class (and the main job's per-model recipes override some of them). Each field says the reference
stack's value (verl-agent scripts and verl's actor config) where it differs.

>>> TrainConfig().prompt_style, TrainConfig().max_new_tokens is None
('compact', True)
>>> TrainConfig(backend="tpu")
Traceback (most recent call last):
...
ValueError: backend must be 'hf' or 'vllm', got 'tpu'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

from agentenvs.core.prompting import PROMPT_STYLES

#: verl's loss aggregation modes (see :mod:`agentenvs.learners.llm.loss`; defined here, where reading the
#: configuration needs no torch).
LossAggMode = Literal["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"]
LOSS_AGG_MODES: tuple[str, ...] = get_args(LossAggMode)

#: Decoding in evaluation: ``"greedy"`` (argmax) or ``"sampled"`` (at the training temperature).
EvalMode = Literal["greedy", "sampled"]
EVAL_MODES: tuple[str, ...] = get_args(EvalMode)

#: ``TrainConfig.prompt_style`` choices (:data:`agentenvs.core.prompting.PROMPT_STYLES`).
PromptStyle = Literal["compact", "reference"]

#: ``TrainConfig.backend`` choices.
Backend = Literal["hf", "vllm"]

#: ``TrainConfig.weight_dtype`` choices.
WeightDtype = Literal["float32", "bfloat16", "float16"]
WEIGHT_DTYPES: tuple[str, ...] = get_args(WeightDtype)

#: ``TrainConfig.autocast`` choices.
AutocastMode = Literal["auto", "bfloat16", "float16", "none"]
AUTOCAST_MODES: tuple[str, ...] = get_args(AutocastMode)

#: ``TrainConfig.parallel`` choices (data parallelism under ``torchrun``).
ParallelMode = Literal["ddp", "fsdp"]
PARALLEL_MODES: tuple[str, ...] = get_args(ParallelMode)

#: ``TrainConfig.store`` choices: a trajectory-store format, or none.
StoreChoice = Literal["jsonl", "parquet", "none"]
STORE_CHOICES: tuple[str, ...] = get_args(StoreChoice)

__all__ = [
    "TrainConfig",
    "LOSS_AGG_MODES",
    "WEIGHT_DTYPES",
    "AUTOCAST_MODES",
    "EVAL_MODES",
    "PARALLEL_MODES",
    "STORE_CHOICES",
]


@dataclass
class TrainConfig:
    """Everything a training run needs besides the model and the envs.

    Attributes:
        train_tasks: task ids the task cursor walks; ``None`` = the env's ``train`` split
            (``env.unwrapped.tasks``).
        test_tasks: task ids to evaluate on, as one split named ``test``; ``None`` = take them
            from the panel's ``eval_splits``.
        iterations: training iterations (one rollout of every env's group + one update each).
        lr: AdamW learning rate (verl actor: 1e-6 for 1.5B-7B models).
        warmup_steps: linear learning-rate warmup over this many optimizer steps (counted across
            iterations: ``lr * min(1, (k + 1) / warmup_steps)`` at step ``k``), then constant; 0 =
            none (verl: ``lr_warmup_steps`` -1, i.e. none). The schedule's position is in the
            checkpoint.
        weight_decay: AdamW weight decay (verl actor: 0.01).
        grad_clip: max global grad norm (verl: 1.0).
        clip_ratio: PPO clip epsilon (verl: 0.2); ``clip_ratio_high`` the upper one (None = same).
        clip_ratio_c: dual-clip bound for negative advantages: the clipped loss of a token with
            ``A < 0`` is at most ``clip_ratio_c * (-A)`` (verl: 3.0; must be > 1); ``None`` disables
            the dual clip.
        loss_agg_mode: how per-token losses become one number per mini-batch (verl: token-mean):
            ``"token-mean"`` (sum over the mini-batch's response tokens / their count),
            ``"seq-mean-token-sum"`` (mean over sequences of each one's token sum) or
            ``"seq-mean-token-mean"`` (mean over sequences of each one's token mean). The KL and
            entropy terms are aggregated the same way (as verl).
        kl_coef: weight of the k3 KL to the frozen reference (verl-agent: 0.01); 0 disables the
            reference model entirely.
        entropy_coef: entropy bonus weight (verl-agent: 0; entropy is always logged).
        ppo_epochs: passes over each rollout batch (verl: 1).
        mini_batches: optimizer steps per epoch (the batch is split evenly; 1 = on-policy).
        micro_batch_size: step-samples per forward/backward (gradient accumulation in between);
            unused when ``micro_batch_tokens`` is set.
        micro_batch_tokens: a token budget per forward/backward instead of a sample count:
            rows x padded width (prompt + response columns, padding included) at most this many;
            a sample longer than the budget runs alone. ``None`` = use ``micro_batch_size``.
            Either way a mini-batch's samples are sorted by length first, so rows of similar
            length share a micro-batch (less padding). verl: ``ppo_max_token_len_per_gpu`` 16384,
            used when ``use_dynamic_bsz`` is on (off by default).
        min_shared_prefix: run a prompt prefix shared by a whole micro-batch (or generation batch)
            once when it is at least this many tokens (0 = never); exact, it only saves compute.
        recompute_old_logprobs: use a fresh no-grad forward as the PPO "old" policy instead of the
            sampler's log-probs (verl's default; useful with vLLM, whose numerics differ). The
            trainer turns it on when the backend's log-probs are not the trainer's (vLLM with
            ``top_p < 1``, or a vLLM without processed log-probs: see
            :mod:`agentenvs.learners.llm.vllm_generator`).
        max_new_tokens: response budget per step in tokens; ``None`` = the env prompt's
            ``max_new_tokens`` (verl-agent: 512; the compact Sokoban prompt: 40).
        temperature, top_p: sampling (verl-agent: 1.0, 1.0).
        stop_at_action_end: stop each response right after the env prompt's stop string (its
            ``AgentPrompt.stop``, e.g. ``"</action>"``; kept in the response) besides the EOS token;
            ``False`` = stop on EOS (or the token budget) only. verl-agent stops on EOS only.
        mask_truncated: give zero loss weight to responses that hit the token budget without a
            stop token or stop string (``Step.extras["truncated"]``); they are still played and
            counted (``truncated_frac``). verl: off (some verl recipes turn it on).
        history_length: observation/action pairs shown in the prompt; ``None`` = the env's
            default (verl-agent: 2).
        prompt_style: ``"compact"`` (short prompts for small CPU models) or ``"reference"``
            (verl-agent's texts); each env supplies both through its ``agent_prompt`` hook.
        eval_every: evaluate every this many iterations (and before the first and after the last);
            0 = only before and after.
        eval_splits: the task panel's splits every evaluation plays, each on ``eval_tasks`` of its
            ids evenly spaced in panel order (all when ``eval_tasks`` >= the split's size); ``None`` = every split named ``test`` or starting with ``test_``,
            in panel order (e.g. ``test``, or ``test_seen`` and ``test_unseen``). Ignored when
            ``test_tasks`` is set.
        eval_tasks: tasks per evaluated split and evaluation (one episode each per mode).
        eval_modes: the decodings every evaluation runs, each on every evaluated task (see
            :data:`EVAL_MODES`). Metrics are ``eval/<label>/...`` with the label of
            :func:`~agentenvs.learners.llm.metrics.eval_label`: the mode for the split ``test``
            (``eval/greedy/...``), ``<split>.<mode>`` for any other
            (``eval/test_unseen.greedy/...``). At the end of
            :meth:`~agentenvs.learners.llm.trainer.Trainer.train` each label also gets the per-task change
            since the first evaluation, with its 95% interval, of success
            (``eval/<label>/success_gain`` and its bounds ``..._low``, ``..._high``), of the
            valid-action share (``valid_action_gain``) and, where the env marks goal-directed
            steps, of goal-directed episodes (``goal_directed_gain``).
        checkpoint_every: save every this many iterations (0 = only at the end).
        seed: seeds the task cursor, the sampler and the mini-batch shuffles.
        backend: ``"hf"`` (transformers ``generate``) or ``"vllm"`` (GPU).
        gen_batch_size: prompts per HF ``generate`` call.
        vllm_gpu_memory_utilization: share of the GPU's memory the vLLM engine may take (weights,
            KV cache, activations; the trainer needs the rest), in (0, 1); default 0.4.
        vllm_max_model_len: the vLLM engine's context length in tokens (prompt + response);
            ``None`` = the model config's. A shorter one needs less KV cache to start.
        vllm_kv_cache_bytes: the vLLM engine's KV cache in bytes (vLLM's
            ``kv_cache_memory_bytes``); ``None`` = what ``vllm_gpu_memory_utilization`` leaves
            after weights and activations. A fixed size does not depend on what else the process
            holds (on CPU the share is of all RAM, minus the process's resident memory).
        vllm_sleep: free the vLLM engine's GPU memory during each update (vLLM sleep mode: LoRA
            level 1, full-weight level 2) and wake it before the weight sync and generation.
        vllm_max_lora_rank: the vLLM engine's ``max_lora_rank`` for a LoRA policy; ``None`` = the
            smallest value vLLM accepts (8, 16, 32, 64, ...) that holds the adapter's rank.
        logprob_check_samples: after every weight sync, score this many step-samples of the last
            batch with the sampling backend and with the training model (temperature 1) and log
            ``sync/logprob_gap`` (mean absolute difference per response token) and
            ``sync/logprob_gap_max``: near 0 when the backend holds the trained weights. 0 = off.
        weight_dtype: the model's weights: ``"float32"``, ``"bfloat16"`` or ``"float16"``; the
            trainer casts a policy loaded in another dtype (``examples/train_llm.py`` loads it in
            this one). verl keeps fp32 parameters and computes in bf16 (FSDP mixed precision).
        master_weights: with bfloat16/float16 weights, the optimizer steps float32 copies of the
            trainable parameters (float32 AdamW states) and the model is refreshed from them after
            each step (+4 bytes per trainable parameter); ``False`` = AdamW directly on bfloat16
            weights (float16 weights require masters). Ignored with float32 weights. verl: fp32
            (FSDP's sharded fp32 parameters).
        autocast: the forward's autocast dtype: ``"auto"`` (bfloat16 on CUDA with float32
            weights, none otherwise: the previous ``mixed_precision`` default), ``"bfloat16"``,
            ``"float16"`` (on CPU too; needs float32 weights) or ``"none"``. Float16, as weights or
            autocast, uses dynamic loss scaling (skipped steps are counted in ``skipped_steps``).
        gradient_checkpointing: recompute each decoder layer in backward instead of keeping its
            activations (HF non-reentrant checkpointing; ~1/3 more update compute). Training
            forwards then run without the shared-prefix KV cache (``min_shared_prefix`` applies to
            generation only). verl: ``enable_gradient_checkpointing`` True.
        ref_offload: keep the frozen reference model (KL, full fine-tune) in CPU memory and move it
            to the device only for the reference pass, once per update. With LoRA the reference is
            the base model with the adapter disabled and costs nothing. verl:
            ``ref.fsdp_config.param_offload``, False by default.
        lora_rank: > 0 trains a LoRA adapter of this rank (peft) instead of all weights (read by
            :func:`~agentenvs.learners.llm.policy.load_policy` callers such as ``examples/train_llm.py``).
        torch_threads: CPU threads for torch (0 = leave torch's default).
        parallel: how the update is spread over the processes of a ``torchrun`` job (ignored in a
            single process): ``"ddp"`` (every rank holds the whole model, gradients all-reduced)
            or ``"fsdp"`` (FSDP2 ``fully_shard``: parameters, gradients and optimizer state
            sharded; float32 weights, no LoRA, HF backend). See
            :mod:`agentenvs.learners.llm.distributed` and ``docs/learner-distributed.md``.
        store: where the trainer writes every credited group of each iteration
            (:class:`~agentenvs.core.TrajectoryStore` under ``out_dir/trajectories``, run = the
            out_dir's name): ``"jsonl"``, ``"parquet"`` (needs pyarrow) or ``"none"``.
        store_extras: also store the learner's per-step sample (``Step.extras`` keys
            ``prompt_ids``, ``response_ids``, ``logprobs``); ``False`` drops them (the stored
            steps keep the text, rewards, advantages and the other extras); see docs/store.md for
            the size per step.
    """

    train_tasks: list[str] | None = None
    test_tasks: list[str] | None = None
    iterations: int = 6
    lr: float = 2e-5
    warmup_steps: int = 0
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    clip_ratio: float = 0.2
    clip_ratio_high: float | None = None
    clip_ratio_c: float | None = 3.0
    loss_agg_mode: LossAggMode = "token-mean"
    kl_coef: float = 0.01
    entropy_coef: float = 0.0
    ppo_epochs: int = 1
    mini_batches: int = 1
    micro_batch_size: int = 8
    micro_batch_tokens: int | None = None
    min_shared_prefix: int = 16
    recompute_old_logprobs: bool = False
    max_new_tokens: int | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    stop_at_action_end: bool = True
    mask_truncated: bool = False
    history_length: int | None = None
    prompt_style: PromptStyle = "compact"
    eval_every: int = 0
    eval_splits: tuple[str, ...] | None = None
    eval_tasks: int = 64
    eval_modes: tuple[EvalMode, ...] = ("greedy", "sampled")
    checkpoint_every: int = 0
    seed: int = 0
    backend: Backend = "hf"
    gen_batch_size: int = 32
    vllm_gpu_memory_utilization: float = 0.4
    vllm_max_model_len: int | None = None
    vllm_kv_cache_bytes: int | None = None
    vllm_sleep: bool = False
    vllm_max_lora_rank: int | None = None
    logprob_check_samples: int = 4
    weight_dtype: WeightDtype = "float32"
    master_weights: bool = True
    autocast: AutocastMode = "auto"
    gradient_checkpointing: bool = False
    ref_offload: bool = False
    lora_rank: int = 0
    torch_threads: int = 0
    parallel: ParallelMode = "ddp"
    store: StoreChoice = "jsonl"
    store_extras: bool = False

    def __post_init__(self) -> None:
        if self.backend not in ("hf", "vllm"):
            raise ValueError(f"backend must be 'hf' or 'vllm', got {self.backend!r}")
        if self.store not in STORE_CHOICES:
            raise ValueError(f"store must be one of {STORE_CHOICES}, got {self.store!r}")
        if self.prompt_style not in PROMPT_STYLES:
            raise ValueError(
                f"prompt_style must be one of {PROMPT_STYLES}, got {self.prompt_style!r}"
            )
        if self.loss_agg_mode not in LOSS_AGG_MODES:
            raise ValueError(
                f"loss_agg_mode must be one of {LOSS_AGG_MODES}, got {self.loss_agg_mode!r}"
            )
        if self.clip_ratio_c is not None and self.clip_ratio_c <= 1.0:
            raise ValueError(f"clip_ratio_c must be > 1 or None, got {self.clip_ratio_c}")
        if self.warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {self.warmup_steps}")
        for name in ("micro_batch_size", "mini_batches", "ppo_epochs"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.micro_batch_tokens is not None and self.micro_batch_tokens < 1:
            raise ValueError(
                f"micro_batch_tokens must be >= 1 or None, got {self.micro_batch_tokens}"
            )
        if self.weight_dtype not in WEIGHT_DTYPES:
            raise ValueError(
                f"weight_dtype must be one of {WEIGHT_DTYPES}, got {self.weight_dtype!r}"
            )
        if self.autocast not in AUTOCAST_MODES:
            raise ValueError(f"autocast must be one of {AUTOCAST_MODES}, got {self.autocast!r}")
        if self.autocast in ("bfloat16", "float16") and self.weight_dtype != "float32":
            raise ValueError("autocast needs float32 weights (low-precision weights compute as is)")
        if self.weight_dtype == "float16" and not self.master_weights:
            raise ValueError("float16 weights need master_weights=True")
        if self.max_new_tokens is not None and self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1 or None, got {self.max_new_tokens}")
        self.eval_modes = tuple(self.eval_modes)
        if not set(self.eval_modes) <= set(EVAL_MODES) or len(set(self.eval_modes)) < len(
            self.eval_modes
        ):
            raise ValueError(
                f"eval_modes must be distinct values of {EVAL_MODES}, got {self.eval_modes}"
            )
        if self.eval_splits is not None:
            self.eval_splits = tuple(self.eval_splits)
            if len(set(self.eval_splits)) < len(self.eval_splits) or any(
                not s or "/" in s for s in self.eval_splits
            ):
                raise ValueError(
                    f"eval_splits must be distinct non-empty names without '/', got "
                    f"{self.eval_splits}"
                )
        if self.iterations < 0 or self.eval_tasks < 0:
            raise ValueError("iterations and eval_tasks must be >= 0")
        util = self.vllm_gpu_memory_utilization
        if not 0.0 < util < 1.0:
            raise ValueError(f"vllm_gpu_memory_utilization must be in (0, 1), got {util}")
        for name in ("vllm_max_model_len", "vllm_kv_cache_bytes", "vllm_max_lora_rank"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1 or None, got {getattr(self, name)}")
        if self.parallel not in PARALLEL_MODES:
            raise ValueError(f"parallel must be one of {PARALLEL_MODES}, got {self.parallel!r}")
        if self.logprob_check_samples < 0:
            raise ValueError(
                f"logprob_check_samples must be >= 0, got {self.logprob_check_samples}"
            )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict of the fields."""
        return asdict(self)
