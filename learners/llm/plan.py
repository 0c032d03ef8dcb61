"""Memory planner for the LLM learner: the bytes one training GPU needs, and whether they fit.

This module holds:

* :class:`ModelArch` - the architecture numbers that set memory (hidden size, layers, heads,
  vocabulary, tying) and the parameter counts derived from them (full model, LoRA adapter).
* :data:`ARCHITECTURES` - published architectures (Qwen2.5 0.5B-7B Instruct, SmolLM2 135M-1.7B,
  Llama-3.1-8B) and the repo's tiny test model, as constants.
* :func:`load_arch` - a model name, a local HF directory, a ``config.json`` path or its dict ->
  :class:`ModelArch`.
* :class:`PlanConfig` - the training knobs that change memory (micro-batch, dtypes, LoRA, KL,
  gradient checkpointing, attention kernel, rollout backend).
* :class:`MemoryPlan` - the estimate: persistent tensors, each phase's transients, the peak, the
  total; :meth:`MemoryPlan.table` renders it.
* :func:`plan_memory` and :func:`check_fits` - the entry points; :func:`max_micro_batch_size` -
  the largest micro-batch that fits; :func:`train_config_kwargs` maps a
  :class:`~learners.llm.config.TrainConfig` onto planner keywords.
* :func:`parse_bytes` and :func:`main` (``python -m learners.llm.plan --help``).

Pure Python: nothing here imports torch. The numbers model *this* learner's update step (see
``docs/learner-memory.md`` for the derivation and the CPU calibration): one process on one device,
torch AdamW (on fp32 masters with low-precision weights), the frozen reference as a deep copy of
the policy (optionally offloaded to the host) whose log-probs come from one no-grad pass per
update, and log-probabilities and entropy computed from the logits of the response columns in
float32 blocks (no float32 copy of the whole logits).

Formulas (bytes; ``P`` parameters, ``P_t`` trainable ones, ``tok`` = micro-batch tokens,
``rows`` = logit rows = micro-batch x (response + 1), ``V`` vocabulary, ``L`` layers):

* persistent: weights ``P b_w`` (+ fp32 masters ``4 P_t`` when asked) + AdamW ``2 P_t b_opt`` +
  reference ``P b_w`` (KL on, no LoRA, not offloaded);
* gradients ``P_t b_g``: alive from the first backward of a mini-batch until its optimizer step
  (fp32 master gradients in the step), so they count in the backward and optimizer-step phases,
  and in the forward only when micro-batches accumulate; the trainer frees them after each update;
* activations: ``tok x L x h x f``, with ``f`` the bytes each layer saves for backward per token and
  hidden unit (SDPA with a padding mask, sequence length ``S``: fp32 full fine-tune
  ``44 + 16 I/h + 4 S/h``; bf16 ``26 + 8 I/h + 2 S/h``; see :meth:`MemoryPlan.layer_factor`);
  with gradient checkpointing ``f = b_residual`` (the layer input) plus one layer recomputed
  during backward;
* logits: ``rows x V x b_logit`` at the end of the forward (plus three float32 blocks of at most
  ``logit_chunk`` logits), twice that in the LM-head backward (their gradient and its copy padded to
  the LM head's width);
* the peak is the largest of the forward, LM-head backward, top-layer backward, end-of-backward,
  optimizer-step, reference-pass and (HF backend) generation phases, on top of the persistent
  tensors; plus vLLM's share and an overhead allowance.

>>> plan = plan_memory("tiny", micro_batch_size=4, seq_len=256, response_len=128,
...                    device="cpu", rollout="none")
>>> plan.params, plan.trainable_params, plan.peak_phase
(115392, 115392, 'forward')
>>> round(plan.total / 2**20, 1)  # MiB: fp32 weights, AdamW, reference, activations, logits
18.2
>>> plan_memory("Qwen2.5-7B-Instruct", lora_rank=64).trainable_params
161480704
>>> ok, plan = check_fits("Qwen2.5-7B-Instruct", 80 * 2**30, weight_dtype="bf16")
>>> ok, plan.peak_phase
(False, 'lm_head_backward')
>>> check_fits("Qwen2.5-7B-Instruct", 80 * 2**30, weight_dtype="bf16", lora_rank=64,
...            gradient_checkpointing=True)[0]
True
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "ARCHITECTURES",
    "DTYPE_BYTES",
    "GIB",
    "ModelArch",
    "PlanConfig",
    "MemoryPlan",
    "load_arch",
    "plan_memory",
    "check_fits",
    "max_micro_batch_size",
    "train_config_kwargs",
    "parse_bytes",
    "main",
]

GIB = 2**30

#: Bytes per element of the dtypes the planner knows (aliases included).
DTYPE_BYTES: dict[str, int] = {
    "fp32": 4,
    "float32": 4,
    "bf16": 2,
    "bfloat16": 2,
    "fp16": 2,
    "float16": 2,
}


def _dtype(name: str) -> str:
    canonical = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
    key = str(name).lower().removeprefix("torch.")
    if key not in DTYPE_BYTES:
        raise ValueError(f"unknown dtype {name!r}; use one of fp32, bf16, fp16")
    return canonical.get(key, key)


@dataclass(frozen=True)
class ModelArch:
    """A decoder-only transformer with RMSNorm, rotary positions and a gated (SwiGLU) MLP.

    That covers Qwen2/Qwen2.5, Llama and SmolLM2: per layer ``q, k, v, o`` projections (``q``/``o``
    ``heads x head_dim`` wide, ``k``/``v`` ``kv_heads x head_dim``), ``gate, up`` (``h -> I``),
    ``down`` (``I -> h``) and two norms; an embedding and an LM head (one matrix when tied).

    Attributes:
        name: a label for tables.
        hidden_size, intermediate_size, num_layers, num_heads, num_kv_heads, vocab_size: as in
            ``config.json`` (``num_hidden_layers``, ``num_attention_heads``, ``num_key_value_heads``).
        head_dim: ``None`` = ``hidden_size // num_heads``.
        tie_word_embeddings: the LM head reuses the embedding matrix.
        qkv_bias: ``q, k, v`` have biases (Qwen2); ``mlp_bias``: the MLP projections do.
    """

    name: str
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    vocab_size: int
    head_dim: int | None = None
    tie_word_embeddings: bool = False
    qkv_bias: bool = False
    mlp_bias: bool = False

    @property
    def dim_head(self) -> int:
        return self.head_dim or self.hidden_size // self.num_heads

    @property
    def q_dim(self) -> int:
        """Width of the query projection (and of the attention output): heads x head_dim."""
        return self.num_heads * self.dim_head

    @property
    def kv_dim(self) -> int:
        """Width of the key (and value) projection: kv_heads x head_dim."""
        return self.num_kv_heads * self.dim_head

    def linear_shapes(self) -> list[tuple[int, int]]:
        """``(in, out)`` of the seven projections of one layer (the LoRA "all-linear" targets)."""
        h, i, q, kv = self.hidden_size, self.intermediate_size, self.q_dim, self.kv_dim
        return [(h, q), (h, kv), (h, kv), (q, h), (h, i), (h, i), (i, h)]

    @property
    def layer_linear_params(self) -> int:
        """Weights of one layer's projections (biases excluded)."""
        return sum(a * b for a, b in self.linear_shapes())

    @property
    def layer_params(self) -> int:
        """All parameters of one decoder layer: projections, biases, two norm weights."""
        bias = (self.q_dim + 2 * self.kv_dim) if self.qkv_bias else 0
        if self.mlp_bias:
            bias += 2 * self.intermediate_size + self.hidden_size
        return self.layer_linear_params + bias + 2 * self.hidden_size

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size

    @property
    def num_params(self) -> int:
        """Total parameters: embedding, layers, final norm, LM head unless tied."""
        head = 0 if self.tie_word_embeddings else self.embedding_params
        return self.embedding_params + self.num_layers * self.layer_params + self.hidden_size + head

    def lora_params(self, rank: int) -> int:
        """Adapter parameters of peft LoRA on all seven projections of every layer (``A``: in x r,
        ``B``: r x out; peft's ``target_modules="all-linear"`` leaves the LM head out)."""
        return self.num_layers * rank * sum(a + b for a, b in self.linear_shapes())

    @classmethod
    def from_hf_config(cls, config: Mapping[str, Any], name: str | None = None) -> ModelArch:
        """Read a ``config.json`` dict (Qwen2 / Llama / Mistral style keys; a multimodal
        ``text_config`` is used when present)."""
        config = dict(config.get("text_config") or config)
        missing = [
            k
            for k in (
                "hidden_size",
                "intermediate_size",
                "num_hidden_layers",
                "num_attention_heads",
                "vocab_size",
            )
            if k not in config
        ]
        if missing:
            raise ValueError(
                f"config has no {', '.join(missing)}: only Llama/Qwen2-style decoders are planned"
            )
        model_type = str(config.get("model_type", ""))
        hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
        head_dim = config.get("head_dim")
        return cls(
            name=name or config.get("_name_or_path") or model_type or "model",
            hidden_size=int(config["hidden_size"]),
            intermediate_size=int(config["intermediate_size"]),
            num_layers=int(config["num_hidden_layers"]),
            num_heads=int(config["num_attention_heads"]),
            num_kv_heads=int(config.get("num_key_value_heads") or config["num_attention_heads"]),
            vocab_size=int(config["vocab_size"]),
            head_dim=head_dim if head_dim != hidden // heads else None,
            tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
            qkv_bias=bool(config.get("attention_bias", model_type.startswith("qwen2"))),
            mlp_bias=bool(config.get("mlp_bias", False)),
        )


#: Published architecture numbers, from each model's ``config.json`` on its model page (the base
#: and the Instruct model share them): hidden_size, intermediate_size, num_hidden_layers,
#: num_attention_heads, num_key_value_heads, vocab_size, tie_word_embeddings, and whether q/k/v
#: have biases (all Qwen2 models). The parameter counts these numbers give are in the comments.
_PUBLISHED: list[tuple[str, int, int, int, int, int, int, bool, bool]] = [
    # (name, hidden, intermediate, layers, heads, KV heads, vocab, tied, q/k/v bias)
    ("Qwen2.5-0.5B-Instruct", 896, 4864, 24, 14, 2, 151936, True, True),  # 494,032,768
    ("Qwen2.5-1.5B-Instruct", 1536, 8960, 28, 12, 2, 151936, True, True),  # 1,543,714,304
    ("Qwen2.5-3B-Instruct", 2048, 11008, 36, 16, 2, 151936, True, True),  # 3,085,938,688
    ("Qwen2.5-7B-Instruct", 3584, 18944, 28, 28, 4, 152064, False, True),  # 7,615,616,512
    ("SmolLM2-135M-Instruct", 576, 1536, 30, 9, 3, 49152, True, False),  # 134,515,008
    ("SmolLM2-360M-Instruct", 960, 2560, 32, 15, 5, 49152, True, False),  # 361,821,120
    ("SmolLM2-1.7B-Instruct", 2048, 8192, 24, 32, 32, 49152, True, False),  # 1,711,376,384
    ("Llama-3.1-8B-Instruct", 4096, 14336, 32, 32, 8, 128256, False, False),  # 8,030,261,248
    # the repo's test model (learners/llm/tiny.py defaults and its 512-token tokenizer)
    ("tiny", 64, 128, 2, 2, 2, 512, True, True),  # 115,392
]

#: The built-in architectures by name (see ``_PUBLISHED`` for the numbers and their source).
ARCHITECTURES: dict[str, ModelArch] = {
    row[0]: ModelArch(*row[:7], tie_word_embeddings=row[7], qkv_bias=row[8]) for row in _PUBLISHED
}

#: ``--model`` spellings that name a built-in architecture (the repo's resolve_model aliases).
_ALIASES = {"smollm2": "SmolLM2-135M-Instruct"}


def _key(name: str) -> str:
    key = name.strip().lower().rsplit("/", 1)[-1]
    return key.removesuffix("-instruct")


_BY_KEY = {_key(k): k for k in ARCHITECTURES}


def load_arch(model: str | Path | Mapping[str, Any] | ModelArch) -> ModelArch:
    """The architecture of ``model``: a :class:`ModelArch`, a ``config.json`` dict, a local HF
    directory or ``config.json`` path, or a built-in name (case-insensitive; an ``org/`` prefix and
    the ``-Instruct`` suffix are optional: ``"Qwen/Qwen2.5-7B"`` plans Qwen2.5-7B-Instruct).

    >>> load_arch("qwen/qwen2.5-1.5b").num_params
    1543714304
    """
    if isinstance(model, ModelArch):
        return model
    if isinstance(model, Mapping):
        return ModelArch.from_hf_config(model)
    path = Path(model).expanduser()
    config_file = path / "config.json" if path.is_dir() else path
    if config_file.is_file():
        name = path.name if path.is_dir() else path.parent.name
        return ModelArch.from_hf_config(json.loads(config_file.read_text()), name=name)
    name = str(model)
    key = _ALIASES.get(name.lower()) or _BY_KEY.get(_key(name))
    if key is None:
        known = ", ".join(ARCHITECTURES)
        raise ValueError(f"{name!r} is neither a local HF model directory nor one of: {known}")
    return ARCHITECTURES[key]


@dataclass
class PlanConfig:
    """The training knobs that change memory. Defaults are the learner's own where it has one.

    Attributes:
        micro_batch_size: sequences per forward/backward (``TrainConfig.micro_batch_size``).
        seq_len: tokens per sequence as padded in the micro-batch (prompt + response).
        response_len: response tokens per sequence; the LM head runs on ``response_len + 1``
            columns (``policy.response_logits``). ``None`` = logits over every position.
        grad_accumulation: micro-batches per optimizer step. Above 1 the summed gradients are
            alive during every forward after the first.
        lora_rank: > 0 trains a peft LoRA adapter on all seven projections of every layer.
        lora_dtype: the adapter's dtype (peft upcasts adapters to fp32 by default).
        weight_dtype: dtype of the model weights (``TrainConfig.weight_dtype``; fp32 by default).
        compute_dtype: matmul dtype; ``None`` = ``weight_dtype``. ``"bf16"`` with fp32 weights is
            the trainer's autocast (``TrainConfig.autocast``: bf16 on CUDA by default).
        master_weights: fp32 copies of the trainable parameters for the optimizer when they are
            bf16/fp16 (``TrainConfig.master_weights``): ``4 P_t`` bytes, fp32 AdamW states (with
            ``optimizer_dtype="param"``) and fp32 gradients during the optimizer step.
        grad_dtype: ``None`` = the trainable parameters' dtype (what torch produces).
        optimizer_dtype: AdamW state dtype: ``"param"`` (torch AdamW: the parameter's dtype),
            ``"fp32"`` or ``"bf16"``.
        optimizer_states: tensors the optimizer keeps per parameter (AdamW: 2).
        kl: KL to a frozen reference is on (``kl_coef > 0``); without LoRA the trainer deep-copies
            the policy, with LoRA the reference is the base with the adapter disabled (no copy).
        ref_dtype: the reference copy's dtype; ``None`` = ``weight_dtype`` (a deep copy).
        ref_offload: the reference copy lives in host memory and is on the device only during the
            reference pass (``TrainConfig.ref_offload``).
        gradient_checkpointing: recompute each decoder layer in backward (HF non-reentrant
            checkpointing, ``TrainConfig.gradient_checkpointing``).
        attention: ``"sdpa"`` (PyTorch SDPA with a padding mask: KV heads repeated, linear memory),
            ``"flash_attention_2"`` (no repeat) or ``"eager"`` (saves the seq x seq probabilities).
        device: ``"cuda"`` (AdamW's foreach path: one parameter-sized temporary in the step) or
            ``"cpu"`` (per-tensor loop: two temporaries the size of the largest tensor).
        rollout: ``"hf"`` (``generate`` on the training GPU: KV cache and per-step logits),
            ``"vllm"`` (a colocated vLLM engine holds its own share of the GPU) or ``"none"`` (the
            update alone, as the CPU calibration measures it).
        gen_batch_size: prompts per HF ``generate`` call (``TrainConfig.gen_batch_size``).
        vllm_gpu_memory_utilization: vLLM's share of the device memory; ``None`` = estimate it from
            ``vllm_max_model_len`` and ``vllm_num_seqs`` if given, else 0.4 (``VLLMGenerator``'s
            default).
        vllm_max_model_len, vllm_num_seqs: context length and concurrent sequences whose KV cache
            vLLM must hold (used when no utilisation is given).
        vllm_dtype: dtype of vLLM's weights and KV cache.
        overhead_bytes: allowance for the CUDA context, library workspaces and allocator
            fragmentation; ``None`` = 2 GiB on cuda, 0 on cpu. An allowance, not a measurement.
        logit_chunk: logits per float32 block of the chunked log-softmax and entropy
            (``learners.llm.loss.LOGIT_CHUNK_ELEMENTS``).
    """

    micro_batch_size: int = 8
    seq_len: int = 1024
    response_len: int | None = None
    grad_accumulation: int = 1
    lora_rank: int = 0
    lora_dtype: str = "fp32"
    weight_dtype: str = "fp32"
    compute_dtype: str | None = None
    master_weights: bool = False
    grad_dtype: str | None = None
    optimizer_dtype: str = "param"
    optimizer_states: int = 2
    kl: bool = True
    ref_dtype: str | None = None
    ref_offload: bool = False
    gradient_checkpointing: bool = False
    attention: str = "sdpa"
    device: str = "cuda"
    rollout: str = "hf"
    gen_batch_size: int = 32
    vllm_gpu_memory_utilization: float | None = None
    vllm_max_model_len: int | None = None
    vllm_num_seqs: int | None = None
    vllm_dtype: str = "bf16"
    overhead_bytes: int | None = None
    logit_chunk: int = 2**24

    def __post_init__(self) -> None:
        for name in ("micro_batch_size", "seq_len", "grad_accumulation", "gen_batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.response_len is not None and not 1 <= self.response_len <= self.seq_len:
            raise ValueError(f"response_len must be in [1, seq_len], got {self.response_len}")
        if self.lora_rank < 0 or self.optimizer_states < 0:
            raise ValueError("lora_rank and optimizer_states must be >= 0")
        self.weight_dtype = _dtype(self.weight_dtype)
        self.lora_dtype = _dtype(self.lora_dtype)
        self.vllm_dtype = _dtype(self.vllm_dtype)
        for name in ("compute_dtype", "grad_dtype", "ref_dtype"):
            if getattr(self, name) is not None:
                setattr(self, name, _dtype(getattr(self, name)))
        if self.optimizer_dtype != "param":
            self.optimizer_dtype = _dtype(self.optimizer_dtype)
        compute = self.compute_dtype or self.weight_dtype
        if compute != self.weight_dtype and self.weight_dtype != "fp32":
            raise ValueError(
                "a compute dtype other than the weights' needs fp32 weights (autocast)"
            )
        choices = {
            "attention": ("sdpa", "flash_attention_2", "eager"),
            "device": ("cuda", "cpu"),
            "rollout": ("hf", "vllm", "none"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        util = self.vllm_gpu_memory_utilization
        if util is not None and not 0 < util < 1:
            raise ValueError(f"vllm_gpu_memory_utilization must be in (0, 1), got {util}")
        if (self.vllm_max_model_len is None) != (self.vllm_num_seqs is None):
            raise ValueError("give vllm_max_model_len and vllm_num_seqs together")

    @property
    def autocast(self) -> bool:
        """Whether matmuls run in a lower precision than the weights (fp32 weights + autocast)."""
        return (self.compute_dtype or self.weight_dtype) != self.weight_dtype

    @property
    def logit_rows(self) -> int:
        """Rows of the logits tensor per micro-batch: the LM head's columns times sequences."""
        cols = (
            self.seq_len if self.response_len is None else min(self.seq_len, self.response_len + 1)
        )
        return self.micro_batch_size * cols

    @property
    def tokens(self) -> int:
        """Tokens per micro-batch (padding included: it runs through the model)."""
        return self.micro_batch_size * self.seq_len


@dataclass
class MemoryPlan:
    """A training config's memory on one device, in bytes.

    ``persistent`` tensors live through the whole run; ``phases`` are the transients on top of them
    at each point of an iteration (the largest is ``peak_phase``), ``gradients`` included where they
    are alive; ``total`` = persistent + the peak phase + vLLM's share + the overhead allowance.
    ``fits`` is ``None`` without a device size.
    ``details`` holds the per-token factors and the terms each phase adds up.
    """

    model: str
    params: int
    trainable_params: int
    config: PlanConfig
    persistent: dict[str, int]
    gradients: int
    phases: dict[str, int]
    peak_phase: str
    vllm: int
    overhead: int
    total: int
    device_bytes: int | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def fits(self) -> bool | None:
        return None if self.device_bytes is None else self.total <= self.device_bytes

    @property
    def free(self) -> int | None:
        """Device bytes left over (negative: short by that much)."""
        return None if self.device_bytes is None else self.device_bytes - self.total

    @property
    def layer_factor(self) -> float:
        """Activation bytes per token, per layer, per hidden unit saved for backward (``f``)."""
        return self.details["layer_bytes_per_token"] / self.details["hidden_size"]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (config included, ``fits`` and ``free`` added)."""
        out = asdict(self)
        out.update(fits=self.fits, free=self.free)
        return out

    def summary(self) -> str:
        """One line: model, total, device, verdict."""
        unit, name = (GIB, "GiB") if self.total >= GIB else (2**20, "MiB")
        verdict = ""
        if self.device_bytes is not None:
            gap = abs(self.free or 0) / GIB
            verdict = f" of {self.device_bytes / GIB:.1f} GiB: " + (
                f"fits ({gap:.1f} GiB free)" if self.fits else f"does NOT fit ({gap:.1f} GiB over)"
            )
        return f"{self.model}: ~{self.total / unit:.1f} {name}{verdict} (peak in {self.peak_phase})"

    def table(self) -> str:
        """A readable table: the config, persistent rows, each phase (peak marked), the total."""
        c, d = self.config, self.details
        w = c.weight_dtype
        unit, unit_name = (GIB, "GiB") if self.total >= GIB else (2**20, "MiB")
        mode = f"LoRA r={c.lora_rank}" if c.lora_rank else "full fine-tune"
        compute = f", {c.compute_dtype} autocast" if c.autocast else ""
        lines = [
            f"{self.model}: {_count(self.params)} params, {mode} "
            f"({_count(self.trainable_params)} trainable)",
            f"micro-batch {c.micro_batch_size} x {c.seq_len} tokens "
            f"({self.details['logit_rows']} logit rows), {w} weights{compute}, "
            f"grad checkpointing {'on' if c.gradient_checkpointing else 'off'}, "
            f"KL {'on' if c.kl else 'off'}, rollout {c.rollout}, device {c.device}",
            "",
            f"{'':<44}{unit_name:>9}",
        ]

        def row(label: str, value: int, note: str = "") -> None:
            lines.append(f"{label:<44}{value / unit:>9.2f}  {note}".rstrip())

        labels = {
            "weights": f"weights ({w})",
            "master_weights": "fp32 master weights",
            "optimizer_states": f"AdamW states ({c.optimizer_states} x {d['optimizer_dtype']})",
            "reference": f"frozen reference ({d['ref_dtype']} copy)",
        }
        lines.append("persistent")
        for key, value in self.persistent.items():
            if value or key == "weights":
                row("  " + labels[key], value)
        row(f"  (gradients, {d['grad_dtype']})", self.gradients, "counted in the phases below")
        lines.append("transient, by phase (on top of persistent)")
        for key, value in self.phases.items():
            row("  " + _PHASE_LABELS[key], value, "<- peak" if key == self.peak_phase else "")
        peak_terms = d["phase_terms"][self.peak_phase]
        lines.append(f"  peak phase '{self.peak_phase}' is:")
        for key, value in peak_terms.items():
            if value:
                row("    " + _TERM_LABELS[key], value)
        if self.vllm:
            row("vLLM share", self.vllm, d["vllm_note"])
        if self.overhead:
            row("overhead allowance", self.overhead, "CUDA context, workspaces, fragmentation")
        row("total", self.total)
        if self.device_bytes is not None:
            row("device", self.device_bytes)
        lines.append("")
        lines.append(
            f"activations: {d['layer_bytes_per_token']:,} bytes/token/layer "
            f"(f = {self.layer_factor:.1f} bytes per token x layer x hidden"
            f"{', checkpointed: the layer input only' if c.gradient_checkpointing else ''})"
        )
        lines.append(self.summary())
        return "\n".join(lines)


def _count(n: int) -> str:
    return f"{n / 1e9:.2f} B" if n >= 1e9 else f"{n / 1e6:.1f} M"


_PHASE_LABELS = {
    "forward": "forward (end)",
    "lm_head_backward": "backward: LM head",
    "layer_backward": "backward: top layer",
    "backward_end": "backward: end (embedding)",
    "optimizer_step": "optimizer step",
    "reference_pass": "reference log-prob pass",
    "generate": "HF generate (rollout)",
}

_TERM_LABELS = {
    "live_grads": "gradients alive (accumulation)",
    "activations": "saved activations (all layers)",
    "final_norm": "final norm + LM-head input",
    "attention_mask": "attention mask",
    "autocast_weights": "autocast weight copies",
    "logits": "logits (backward: their gradient + its padded copy)",
    "logit_blocks": "float32 blocks of chunked log-softmax/entropy",
    "reference_weights": "reference moved onto the device",
    "pass_transient": "a layer's tensors, or logits + blocks",
    "head_grad": "LM-head weight gradient",
    "recompute": "recomputed layer (checkpointing)",
    "workspace": "backward workspace (grads in flight)",
    "gradients": "gradients",
    "embedding_grad": "embedding gradient temporary",
    "optimizer_temp": "AdamW step temporaries",
    "kv_cache": "KV cache",
    "gen_logits": "one step's float32 logits, log-softmax, scores",
}


def _layer_bytes_per_token(arch: ModelArch, cfg: PlanConfig) -> dict[str, int]:
    """Bytes one decoder layer saves for backward per token, by part (see the module doc).

    ``R`` is the residual stream's dtype (the weights'), ``C`` the matmul dtype. A trainable
    projection saves its input; under autocast each consumer casts an fp32 input separately (only
    weights are cached), and a bf16 base with fp32 LoRA adapters casts it to fp32 per adapter.
    """
    h, inter, q, kv = arch.hidden_size, arch.intermediate_size, arch.q_dim, arch.kv_dim
    r = DTYPE_BYTES[cfg.weight_dtype]
    c = DTYPE_BYTES[cfg.compute_dtype or cfg.weight_dtype]
    lora = cfg.lora_rank > 0
    saver = c if (cfg.autocast or not lora) else DTYPE_BYTES[cfg.lora_dtype]

    def saved_input(consumers: int, dim: int, input_bytes: int) -> int:
        copies = 1 if input_bytes == saver else consumers
        return copies * saver * dim

    # RMSNorm: the fp32 upcast of its input and 1/rms are saved; the normalised tensor too when the
    # norm weight trains (full fine-tune).
    norm = 4 * h + 4 + (0 if lora else r * h)
    if cfg.attention == "flash_attention_2":
        qkv_out = c * (2 * q + 2 * kv)  # q, k, v and the output, KV heads not repeated
    elif cfg.attention == "sdpa":
        qkv_out = c * 4 * q  # a padding mask makes transformers repeat the KV heads
    else:  # eager: q, repeated k, v, and the fp32 probabilities (plus their cast for the matmul)
        qkv_out = c * 3 * q + arch.num_heads * cfg.seq_len * (4 + (c if c != 4 else 0))
    # SDPA turns the boolean padding mask into a float mask of the query dtype on every call and
    # saves it for backward: batch x seq x seq per layer, i.e. seq elements per token.
    mask = cfg.seq_len * c if cfg.attention == "sdpa" else 0
    parts = {
        "norms": 2 * norm,
        "attention_input": saved_input(3, h, r),
        "attention": qkv_out + 4 * arch.num_heads,  # + the fp32 log-sum-exp
        "attention_mask": mask,
        "o_proj_input": saved_input(1, q, c),
        "mlp_input": saved_input(2, h, r),
        "mlp": 3 * c * inter + saved_input(1, inter, c),  # gate, silu, up; down's input
        "lora": 7 * cfg.lora_rank * saver if lora else 0,
    }
    return parts


def plan_memory(
    model: str | Path | Mapping[str, Any] | ModelArch,
    *,
    device_bytes: int | None = None,
    config: PlanConfig | None = None,
    **kwargs: Any,
) -> MemoryPlan:
    """Estimate the memory of one training device for ``model`` under ``config`` (or the
    :class:`PlanConfig` keywords). ``device_bytes`` sets :attr:`MemoryPlan.fits` and is needed for a
    vLLM share given as a utilisation.

    Raises:
        ValueError: an unknown model, a bad config, or a vLLM utilisation without ``device_bytes``.
    """
    arch = load_arch(model)
    cfg = config if config is not None else PlanConfig(**kwargs)
    if config is not None and kwargs:
        cfg = PlanConfig(**{**asdict(config), **kwargs})
    lora = cfg.lora_rank > 0
    b_w = DTYPE_BYTES[cfg.weight_dtype]
    b_c = DTYPE_BYTES[cfg.compute_dtype or cfg.weight_dtype]
    b_r = b_w  # the residual stream keeps the weights' dtype (fp32 under autocast)
    train_dtype = cfg.lora_dtype if lora else cfg.weight_dtype
    grad_dtype = cfg.grad_dtype or train_dtype
    masters = cfg.master_weights and DTYPE_BYTES[train_dtype] < 4
    if cfg.optimizer_dtype == "param":
        opt_dtype = "fp32" if masters else train_dtype
    else:
        opt_dtype = cfg.optimizer_dtype
    ref_dtype = cfg.ref_dtype or cfg.weight_dtype
    b_g, b_o = DTYPE_BYTES[grad_dtype], DTYPE_BYTES[opt_dtype]

    params = arch.num_params
    trainable = arch.lora_params(cfg.lora_rank) if lora else params
    adapter = trainable if lora else 0
    reference = params * DTYPE_BYTES[ref_dtype] if (cfg.kl and not lora) else 0
    persistent = {
        "weights": params * b_w + adapter * DTYPE_BYTES[cfg.lora_dtype],
        "master_weights": 4 * trainable if masters else 0,
        "optimizer_states": cfg.optimizer_states * trainable * b_o,
        "reference": reference if not cfg.ref_offload else 0,
    }

    h, vocab, layers = arch.hidden_size, arch.vocab_size, arch.num_layers
    tok, rows = cfg.tokens, cfg.logit_rows
    parts = _layer_bytes_per_token(arch, cfg)
    per_layer = sum(parts.values())
    if cfg.gradient_checkpointing:
        activations = layers * tok * b_r * h  # each layer's input, kept by the checkpoint
        recompute = tok * per_layer
    else:
        activations = layers * tok * per_layer
        recompute = 0
    if lora:
        # frozen final norm and LM head: only the norm's fp32 upcast (4 h per token) is saved,
        # and the first layer's input norm saves nothing (the frozen embedding's output needs no
        # gradient) though the per-layer count includes it: the two cancel.
        final_norm = 0
    else:
        # norm input and output, plus the LM head's input: the response rows, copied out of the
        # sequence by the slice (in the compute dtype under autocast)
        final_norm = tok * (4 + b_r) * h + rows * b_c * h
    # the model's own mask, once: boolean for SDPA, additive in the weights' dtype for eager
    mask = {"sdpa": 1, "eager": b_r, "flash_attention_2": 0}[cfg.attention]
    attention_mask = cfg.micro_batch_size * cfg.seq_len**2 * mask
    autocast_weights = 0
    if cfg.autocast:  # cast weight copies live from the forward until their layer's backward
        cast_layers = 1 if cfg.gradient_checkpointing else layers
        adapter_linear = arch.lora_params(cfg.lora_rank) // layers if lora else 0
        autocast_weights = b_c * (
            vocab * h + cast_layers * (arch.layer_linear_params + adapter_linear)
        )
    logits_one = rows * vocab * b_c
    # one float32 block of the chunked log-softmax / entropy (up to three alive at a time)
    block = 4 * min(rows * vocab, cfg.logit_chunk)
    grads = trainable * b_g
    accumulating = cfg.grad_accumulation > 1
    head_grad = 0 if lora else vocab * h * b_g
    base = {
        "live_grads": grads if accumulating else 0,
        "activations": activations,
        "final_norm": final_norm,
        "attention_mask": attention_mask,
        "autocast_weights": autocast_weights,
    }
    if lora:  # the largest single trainable tensor: one adapter matrix, or the embedding
        largest = cfg.lora_rank * max(max(s) for s in arch.linear_shapes())
    else:
        largest = max(vocab * h, max(a * b for a, b in arch.linear_shapes()))
    opt_temp = trainable * b_o if cfg.device == "cuda" else 2 * largest * b_o
    terms: dict[str, dict[str, int]] = {
        # the logits (the log-prob and entropy functions save them, no float32 copy)
        "forward": {**base, "logits": logits_one, "logit_blocks": 3 * block},
        # the logits' gradient, then the slice's full-width copy of it (the logits themselves die
        # when the log-prob function's backward has run)
        "lm_head_backward": {**base, "logits": 2 * logits_one, "logit_blocks": 2 * block},
        "layer_backward": {
            **base,
            "head_grad": head_grad,
            "recompute": recompute,
            "workspace": tok * (b_r * h + 3 * b_c * arch.intermediate_size),
        },
        "backward_end": {
            "gradients": grads,
            "embedding_grad": 0 if lora else vocab * h * b_g,
        },
        # with masters the gradients become fp32 master gradients (the model's freed one by one)
        "optimizer_step": {
            "gradients": 4 * trainable + largest * b_g if masters else grads,
            "optimizer_temp": opt_temp,
        },
    }
    if cfg.kl:  # the reference log-probs: one no-grad pass per update, before the micro-batches
        # a layer's tensors in flight (two residuals, q/k/v/output, the MLP's three
        # intermediates, SDPA's float mask), then the logits and the log-prob function's blocks
        layer = tok * (2 * b_r * h + 4 * b_c * arch.q_dim + 3 * b_c * arch.intermediate_size)
        layer += cfg.micro_batch_size * cfg.seq_len**2 * b_c if cfg.attention == "sdpa" else 0
        terms["reference_pass"] = {
            "reference_weights": reference if cfg.ref_offload else 0,
            "attention_mask": attention_mask,
            "pass_transient": max(layer, logits_one + 2 * block),
        }
    if cfg.rollout == "hf":
        kv_per_token = 2 * layers * arch.kv_dim * b_w
        terms["generate"] = {
            "kv_cache": cfg.gen_batch_size * cfg.seq_len * kv_per_token,
            # the step's float32 logits, their log-softmax and the processed scores
            "gen_logits": 3 * cfg.gen_batch_size * vocab * 4,
        }
    phases = {k: sum(v.values()) for k, v in terms.items()}
    peak_phase = max(phases, key=lambda k: phases[k])

    vllm, vllm_note = 0, ""
    if cfg.rollout == "vllm":
        util = cfg.vllm_gpu_memory_utilization
        if util is None and cfg.vllm_max_model_len is not None:
            b_v = DTYPE_BYTES[cfg.vllm_dtype]
            kv_bytes = 2 * layers * arch.kv_dim * b_v * cfg.vllm_max_model_len * cfg.vllm_num_seqs
            vllm = params * b_v + kv_bytes
            vllm_note = (
                f"{cfg.vllm_dtype} weights + KV cache for {cfg.vllm_num_seqs} x "
                f"{cfg.vllm_max_model_len} tokens"
            )
        else:
            util = 0.4 if util is None else util
            if device_bytes is None:
                raise ValueError("a vLLM share from gpu_memory_utilization needs device_bytes")
            vllm = int(util * device_bytes)
            vllm_note = f"gpu_memory_utilization {util:g} x device"
    overhead = cfg.overhead_bytes
    if overhead is None:
        overhead = 2 * GIB if cfg.device == "cuda" else 0
    total = sum(persistent.values()) + phases[peak_phase] + vllm + overhead
    details = {
        "hidden_size": h,
        "tokens": tok,
        "logit_rows": rows,
        "layer_bytes_per_token": per_layer,
        "layer_parts": parts,
        "grad_dtype": grad_dtype,
        "optimizer_dtype": opt_dtype,
        "ref_dtype": ref_dtype,
        "phase_terms": terms,
        "vllm_note": vllm_note,
    }
    return MemoryPlan(
        model=arch.name,
        params=params,
        trainable_params=trainable,
        config=cfg,
        persistent=persistent,
        gradients=grads,
        phases=phases,
        peak_phase=peak_phase,
        vllm=vllm,
        overhead=overhead,
        total=total,
        device_bytes=device_bytes,
        details=details,
    )


def check_fits(
    model_config_or_path: str | Path | Mapping[str, Any] | ModelArch,
    device_bytes: int,
    **config: Any,
) -> tuple[bool, MemoryPlan]:
    """``(fits, plan)`` for a device of ``device_bytes``: a trainer can warn before a run that
    cannot fit. Meant to be called once before the first update, for example::

        import warnings, torch
        from learners.llm.plan import check_fits, train_config_kwargs

        ok, plan = check_fits(model_path, torch.cuda.get_device_properties(0).total_memory,
                              **train_config_kwargs(config, seq_len=2048, response_len=512))
        if not ok:
            warnings.warn("the run will likely not fit in GPU memory:\\n" + plan.table())

    ``config`` holds :class:`PlanConfig` keywords. The answer is an estimate (see
    ``docs/learner-memory.md``): warn, do not refuse.
    """
    plan = plan_memory(model_config_or_path, device_bytes=device_bytes, **config)
    return bool(plan.fits), plan


def max_micro_batch_size(
    model: str | Path | Mapping[str, Any] | ModelArch,
    device_bytes: int,
    *,
    limit: int = 4096,
    **config: Any,
) -> int:
    """The largest ``micro_batch_size`` (at most ``limit``) whose plan fits ``device_bytes``; 0 when
    not even one sequence fits. Times ``seq_len`` it is the micro-batch token budget.

    >>> max_micro_batch_size("Qwen2.5-1.5B-Instruct", 80 * 2**30, seq_len=2048, response_len=512,
    ...                      compute_dtype="bf16", gradient_checkpointing=True, rollout="none")
    74
    """
    config.pop("micro_batch_size", None)

    def fits(n: int) -> bool:
        return check_fits(model, device_bytes, micro_batch_size=n, **config)[0]

    if not fits(1):
        return 0
    lo, hi = 1, limit  # fits(lo); memory grows with the micro-batch, so bisect
    if fits(hi):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def train_config_kwargs(
    train_config: Any,
    *,
    seq_len: int,
    response_len: int | None = None,
    device: str = "cuda",
    **overrides: Any,
) -> dict[str, Any]:
    """:class:`PlanConfig` keywords read off a ``TrainConfig`` (any object with its fields; vLLM's
    share is ``vllm_gpu_memory_utilization`` when it has one).

    The sequence lengths come from the envs' prompts, so they are arguments; ``overrides`` win.
    ``autocast="auto"`` resolves for ``device`` (bf16 on CUDA with fp32 weights); a token budget
    ``micro_batch_tokens`` plans ``max(1, budget // seq_len)`` sequences of ``seq_len`` tokens;
    LoRA adapters take the weights' dtype (the trainer casts the whole model).

    >>> from types import SimpleNamespace
    >>> cfg = SimpleNamespace(micro_batch_size=4, micro_batch_tokens=4096, lora_rank=0,
    ...                       kl_coef=0.01, backend="hf", autocast="auto", gen_batch_size=32)
    >>> kw = train_config_kwargs(cfg, seq_len=512)
    >>> kw["compute_dtype"], kw["micro_batch_size"]
    ('bf16', 8)
    """
    weights = _dtype(getattr(train_config, "weight_dtype", "float32"))
    mode = getattr(train_config, "autocast", "auto")
    if mode == "auto":
        compute = "bf16" if device == "cuda" and weights == "fp32" else None
    else:
        compute = None if mode == "none" else _dtype(mode)
    budget = getattr(train_config, "micro_batch_tokens", None)
    rows = int(train_config.micro_batch_size) if budget is None else max(1, budget // seq_len)
    out: dict[str, Any] = {
        "micro_batch_size": rows,
        "seq_len": seq_len,
        "response_len": response_len,
        "lora_rank": int(getattr(train_config, "lora_rank", 0)),
        "lora_dtype": weights,
        "kl": bool(getattr(train_config, "kl_coef", 0.0)),
        "ref_offload": bool(getattr(train_config, "ref_offload", False)),
        "rollout": getattr(train_config, "backend", "hf"),
        "vllm_gpu_memory_utilization": getattr(train_config, "vllm_gpu_memory_utilization", None),
        "gen_batch_size": int(getattr(train_config, "gen_batch_size", 32)),
        "weight_dtype": weights,
        "compute_dtype": compute,
        "master_weights": bool(getattr(train_config, "master_weights", False)),
        "gradient_checkpointing": bool(getattr(train_config, "gradient_checkpointing", False)),
        "device": device,
    }
    out.update(overrides)
    return out


_UNITS = {
    "": GIB,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


def parse_bytes(text: str | int | float) -> int:
    """``"80"`` / ``"80GiB"`` (binary), ``"80GB"`` (decimal), ``"81559MiB"`` -> bytes.

    A bare number is GiB.

    >>> parse_bytes("80"), parse_bytes("80GB"), parse_bytes("1.5 MiB")
    (85899345920, 80000000000, 1572864)
    """
    if isinstance(text, int | float):
        return int(text * GIB)
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(text))
    if m is None or m.group(2).lower() not in _UNITS:
        raise ValueError(f"cannot read a memory size from {text!r} (e.g. 80GiB, 80GB, 81559MiB)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m learners.llm.plan",
        description="Estimate the GPU memory of an LLM-learner training config (no torch needed).",
    )
    p.add_argument("--model", help="built-in name (see --list) or local HF model directory")
    p.add_argument("--list", action="store_true", help="list the built-in architectures")
    p.add_argument(
        "--budget",
        action="store_true",
        help="also print the largest micro-batch that fits --device-mem (the token budget)",
    )
    p.add_argument("--micro-batch", type=int, default=8, help="sequences per forward/backward")
    p.add_argument("--seq-len", type=int, default=1024, help="prompt + response tokens")
    p.add_argument("--response-len", type=int, default=None, help="response tokens (LM head)")
    p.add_argument("--accum", type=int, default=1, help="micro-batches per optimizer step")
    p.add_argument("--lora", type=int, default=0, metavar="RANK", help="LoRA rank (0 = full)")
    p.add_argument("--weights", default="fp32", help="weight dtype: fp32, bf16, fp16")
    p.add_argument("--compute", default=None, help="autocast dtype with fp32 weights (bf16)")
    p.add_argument("--master-weights", action="store_true", help="fp32 master copy")
    p.add_argument("--optimizer-dtype", default="param", help="AdamW states: param, fp32, bf16")
    p.add_argument("--grad-dtype", default=None, help="gradient dtype (default: the params')")
    p.add_argument("--no-kl", action="store_true", help="kl_coef = 0: no reference model")
    p.add_argument("--grad-ckpt", action="store_true", help="gradient checkpointing")
    p.add_argument("--attention", default="sdpa", help="sdpa, flash_attention_2, eager")
    p.add_argument("--device", default="cuda", help="cuda or cpu")
    p.add_argument("--device-mem", default=None, help="device memory, e.g. 80GiB (bare = GiB)")
    p.add_argument("--rollout", default="hf", help="hf, vllm or none (the update alone)")
    p.add_argument("--gen-batch", type=int, default=32, help="prompts per HF generate call")
    p.add_argument("--vllm-util", type=float, default=None, help="vLLM gpu_memory_utilization")
    p.add_argument("--vllm-max-model-len", type=int, default=None)
    p.add_argument("--vllm-num-seqs", type=int, default=None)
    p.add_argument("--overhead", default=None, help="overhead allowance (default 2GiB on cuda)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: print the table (or JSON). Exit status 1 when a device size is given and the plan
    does not fit, 0 otherwise."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.list:
        for name, arch in ARCHITECTURES.items():
            print(
                f"{name:<24}{_count(arch.num_params):>10}  hidden {arch.hidden_size}, "
                f"{arch.num_layers} layers, vocab {arch.vocab_size}"
            )
        return 0
    if args.model is None:
        parser.error("--model is required (or --list)")
    device_bytes = parse_bytes(args.device_mem) if args.device_mem is not None else None
    config = dict(
        seq_len=args.seq_len,
        response_len=args.response_len,
        grad_accumulation=args.accum,
        lora_rank=args.lora,
        weight_dtype=args.weights,
        compute_dtype=args.compute,
        master_weights=args.master_weights,
        optimizer_dtype=args.optimizer_dtype,
        grad_dtype=args.grad_dtype,
        kl=not args.no_kl,
        gradient_checkpointing=args.grad_ckpt,
        attention=args.attention,
        device=args.device,
        rollout=args.rollout,
        gen_batch_size=args.gen_batch,
        vllm_gpu_memory_utilization=args.vllm_util,
        vllm_max_model_len=args.vllm_max_model_len,
        vllm_num_seqs=args.vllm_num_seqs,
        overhead_bytes=parse_bytes(args.overhead) if args.overhead is not None else None,
    )
    plan = plan_memory(
        args.model, device_bytes=device_bytes, micro_batch_size=args.micro_batch, **config
    )
    if args.json:
        print(json.dumps(plan.to_dict(), indent=2, default=str))
    else:
        print(plan.table())
    if args.budget:
        if device_bytes is None:
            parser.error("--budget needs --device-mem")
        n = max_micro_batch_size(args.model, device_bytes, **config)
        print(f"largest micro-batch that fits: {n} x {args.seq_len} = {n * args.seq_len:,} tokens")
    return 1 if plan.fits is False else 0


if __name__ == "__main__":
    sys.exit(main())
