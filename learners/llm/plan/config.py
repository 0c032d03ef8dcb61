"""The memory planner's input and output (see :mod:`agentenvs.learners.llm.plan`).

This module holds :class:`PlanConfig` (the training knobs that change memory: micro-batch, dtypes,
LoRA, KL, gradient checkpointing, attention kernel, rollout backend, a VLM's images and whether
its vision tower trains) and :class:`MemoryPlan` (the estimate: persistent tensors, each phase's
transients, the peak, the total; :meth:`MemoryPlan.table` renders it). Pure Python.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from agentenvs.learners.llm.plan.arch import GIB, dtype_name

__all__ = ["MemoryPlan", "PlanConfig"]


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
            (``agentenvs.learners.llm.loss.LOGIT_CHUNK_ELEMENTS``).
        train_vision: a vision-language model's vision tower trains too (``--train-vision``);
            by default it is frozen (weights only: no gradients, AdamW states or saved
            activations). With LoRA the tower's base stays frozen and, with this on, its blocks
            get adapters as the learner's (their attention and, in Qwen2-VL, MLP projections).
        images_per_prompt: images in each prompt of a vision-language model (0: text prompts).
            Each adds its image tokens to the sequence, on top of ``seq_len``.
        image_size: the images' size in pixels after the processor's resize limits: a side
            (square) or ``(height, width)``; sides round to multiples of 28 (patch 14 x merge 2),
            448 x 448 = 1024 patches through the tower and 256 image tokens.
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
    train_vision: bool = False
    images_per_prompt: int = 0
    image_size: int | tuple[int, int] = 448

    def __post_init__(self) -> None:
        for name in ("micro_batch_size", "seq_len", "grad_accumulation", "gen_batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.response_len is not None and not 1 <= self.response_len <= self.seq_len:
            raise ValueError(f"response_len must be in [1, seq_len], got {self.response_len}")
        if self.lora_rank < 0 or self.optimizer_states < 0:
            raise ValueError("lora_rank and optimizer_states must be >= 0")
        if self.images_per_prompt < 0:
            raise ValueError(f"images_per_prompt must be >= 0, got {self.images_per_prompt}")
        size = self.image_size
        sides = [size] if isinstance(size, int) else list(size)
        if len(sides) not in (1, 2) or not all(isinstance(x, int) and x >= 1 for x in sides):
            raise ValueError(f"image_size must be pixels, a side or (height, width), got {size!r}")
        self.image_size = sides[0] if len(sides) == 1 else (sides[0], sides[1])
        self.weight_dtype = dtype_name(self.weight_dtype)
        self.lora_dtype = dtype_name(self.lora_dtype)
        self.vllm_dtype = dtype_name(self.vllm_dtype)
        for name in ("compute_dtype", "grad_dtype", "ref_dtype"):
            if getattr(self, name) is not None:
                setattr(self, name, dtype_name(getattr(self, name)))
        if self.optimizer_dtype != "param":
            self.optimizer_dtype = dtype_name(self.optimizer_dtype)
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
        """Text tokens per micro-batch (padding included: it runs through the model); a VLM's
        image tokens come on top (the plan's ``details["tokens"]`` counts both)."""
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
        image_tokens = d.get("image_tokens_per_prompt", 0)
        seq = f"({c.seq_len} + {image_tokens} image)" if image_tokens else f"{c.seq_len}"
        lines = [
            f"{self.model}: {count_text(self.params)} params, {mode} "
            f"({count_text(self.trainable_params)} trainable)",
            f"micro-batch {c.micro_batch_size} x {seq} tokens "
            f"({self.details['logit_rows']} logit rows), {w} weights{compute}, "
            f"grad checkpointing {'on' if c.gradient_checkpointing else 'off'}, "
            f"KL {'on' if c.kl else 'off'}, rollout {c.rollout}, device {c.device}",
        ]
        if "vision_params" in d:
            height, width = d["image_pixels"]
            state = "trained" if d["vision_trains"] else "frozen"
            if d["vision_trains"] and c.lora_rank:
                state = f"LoRA r={c.lora_rank}"
            lines.append(
                f"vision tower: {count_text(d['vision_params'])} params ({state}); "
                f"{c.images_per_prompt} image(s) per prompt of {height}x{width} px: "
                f"{d['patches_per_image']} patches, {d['tokens_per_image']} image tokens each"
                if c.images_per_prompt
                else f"vision tower: {count_text(d['vision_params'])} params ({state}); "
                "text prompts (no images)"
            )
        lines += ["", f"{'':<44}{unit_name:>9}"]

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
                note = ""
                if key in ("weights", "reference") and "vision_params" in d:
                    tower = value * d["vision_params"] // self.params
                    if key == "weights":
                        tower = d["vision_weights"]
                    note = f"vision tower {tower / unit:.2f} of it"
                row("  " + labels[key], value, note)
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
        if "vision_block_bytes_per_patch" in d:
            per = d["vision_block_bytes_per_patch"]
            lines.append(
                f"vision tower: {d['vision_patches']:,} patches per micro-batch, "
                + (
                    f"{per:,} bytes/patch/block (f = {per / d['vision_width']:.1f})"
                    if d["vision_trains"]
                    else "frozen: nothing saved for backward"
                )
            )
        lines.append(self.summary())
        return "\n".join(lines)


def count_text(n: int) -> str:
    return f"{n / 1e9:.2f} B" if n >= 1e9 else f"{n / 1e6:.1f} M"


_PHASE_LABELS = {
    "forward": "forward (end)",
    "lm_head_backward": "backward: LM head",
    "layer_backward": "backward: top layer",
    "backward_end": "backward: end (embedding)",
    "optimizer_step": "optimizer step",
    "reference_pass": "reference log-prob pass",
    "generate": "HF generate (rollout)",
    "vision_forward": "vision tower forward (end)",
    "vision_backward": "backward: vision tower",
    "generate_vision": "HF generate: vision tower (prefill)",
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
    "pixel_values": "pixel values (float32 patches)",
    "vision_activations": "vision tower: saved activations",
    "vision_autocast_weights": "vision tower: autocast weight copies",
    "vision_transient": "vision tower: a block's tensors in flight",
    "vision_recompute": "vision tower: recomputed block",
    "vision_workspace": "vision tower: backward workspace",
}
