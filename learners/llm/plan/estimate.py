"""The memory estimate: :func:`plan_memory`, :func:`check_fits`, :func:`max_micro_batch_size`.

This module holds the planner's entry points (see :mod:`agentenvs.learners.llm.plan` for the overview) and
:func:`train_config_kwargs`, which maps a :class:`~agentenvs.learners.llm.config.TrainConfig` onto planner
keywords.

The numbers model *this* learner's update step (see ``docs/learner-memory.md`` for the derivation
and the CPU calibration): one process on one device, torch AdamW (on fp32 masters with
low-precision weights), the frozen reference as a deep copy of the policy (optionally offloaded to
the host) whose log-probs come from one no-grad pass per update, and log-probabilities and entropy
computed from the logits of the response columns in float32 blocks (no float32 copy of the whole
logits).

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
  tensors; plus vLLM's share and an overhead allowance;
* a vision-language model: the tower's parameters join ``P`` (and ``P_t`` with ``train_vision``);
  each prompt's ``images_per_prompt`` images add their image tokens to the decoder's sequence
  (``S`` above); a trained tower saves ``patches x depth x E x f_v`` bytes (``f_v`` per patch,
  block and width, :func:`_vision_bytes_per_patch`) plus the merger's and the patch embedding's,
  a frozen one nothing (no tensor in it needs a gradient): it only has one block's tensors in
  flight while it runs (the ``vision_forward`` phase, the reference pass and HF generation's
  prefill), and a trained one adds the ``vision_backward`` phase.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from agentenvs.learners.llm.plan.arch import (
    DTYPE_BYTES,
    GIB,
    ModelArch,
    VisionArch,
    dtype_name,
    load_arch,
)
from agentenvs.learners.llm.plan.config import MemoryPlan, PlanConfig

__all__ = ["check_fits", "max_micro_batch_size", "plan_memory", "train_config_kwargs"]


def _layer_bytes_per_token(arch: ModelArch, cfg: PlanConfig, seq_len: int) -> dict[str, int]:
    """Bytes one decoder layer saves for backward per token, by part (see the module doc), for
    sequences of ``seq_len`` tokens (a VLM's image tokens included).

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
        qkv_out = c * 3 * q + arch.num_heads * seq_len * (4 + (c if c != 4 else 0))
    # SDPA turns the boolean padding mask into a float mask of the query dtype on every call and
    # saves it for backward: batch x seq x seq per layer, i.e. seq elements per token.
    mask = seq_len * c if cfg.attention == "sdpa" else 0
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


def _vision_bytes_per_patch(tower: VisionArch, cfg: PlanConfig, span: int) -> dict[str, int]:
    """Bytes one block of a training vision tower saves for backward per patch, by part.

    As :func:`_layer_bytes_per_token`, op by op in transformers' Qwen2-VL / Qwen2.5-VL block:
    the norms (LayerNorm: its input, mean and 1/std; RMSNorm: as the decoder's), the fused
    ``qkv``'s input, attention (the whole ``qkv`` output, which ``v``, a view of it, keeps alive,
    the rotated ``q`` and ``k``, SDPA's output and float32 log-sum-exp; eager: the float32
    probabilities over ``span`` patches instead of the last two), ``proj``'s input and the MLP's
    (``quick_gelu`` saves its input and its sigmoid). With LoRA the base is frozen: the adapted
    projections (:meth:`VisionArch.lora_shapes`) save their input through their adapter, the
    others nothing, and a norm's weight needs no saved output.

    The tower's residual stream has the patch embedding's output dtype, the compute dtype ``C``
    (bf16 under autocast, where CUDA runs LayerNorm in float32: its saved input is a float32
    copy, ``R`` bytes with the fp32 weights autocast needs; CPU autocast runs it in bf16).
    """
    e, inter = tower.width, tower.intermediate_size
    r = DTYPE_BYTES[cfg.weight_dtype]
    c = DTYPE_BYTES[cfg.compute_dtype or cfg.weight_dtype]
    lora = cfg.lora_rank > 0
    saver = c if (cfg.autocast or not lora) else DTYPE_BYTES[cfg.lora_dtype]

    def saved_input(consumers: int, dim: int, input_bytes: int) -> int:
        copies = 1 if input_bytes == saver else consumers
        return copies * saver * dim

    norm = _vision_norm_bytes(tower, cfg)
    if cfg.attention == "eager":
        attention = 5 * c * e + tower.num_heads * span * (4 + (c if c != 4 else 0))
    else:
        attention = 6 * c * e + 4 * tower.num_heads
    if tower.gated:  # gate, up (one input), silu, product; LoRA adapts none of them
        mlp_input = 0 if lora else saved_input(2, e, r)
        mlp = 3 * c * inter + (0 if lora else saved_input(1, inter, c))
    else:  # fc1, the activation, fc2 (adapted with LoRA)
        mlp_input = saved_input(1, e, r)
        mlp = (2 if tower.hidden_act == "quick_gelu" else 1) * c * inter
        mlp += saved_input(1, inter, c)
    return {
        "norms": 2 * norm,
        "attention_input": saved_input(1, e, r),
        "attention": attention,
        "proj_input": saved_input(1, e, c),
        "mlp_input": mlp_input,
        "mlp": mlp,
        "lora": len(tower.lora_shapes()) * cfg.lora_rank * saver if lora else 0,
    }


def _vision_norm_bytes(tower: VisionArch, cfg: PlanConfig) -> int:
    """Bytes a vision norm saves per patch: LayerNorm its input (float32 under autocast), mean
    and 1/std; RMSNorm the float32 upcast and 1/rms, and the normalised tensor (in the
    residual's dtype) when its weight trains."""
    e = tower.width
    r = DTYPE_BYTES[cfg.weight_dtype]
    c = DTYPE_BYTES[cfg.compute_dtype or cfg.weight_dtype]
    if tower.gated:
        return 4 * e + 4 + (0 if cfg.lora_rank else c * e)
    return r * e + 8


def _vision_once_per_patch(tower: VisionArch, cfg: PlanConfig) -> int:
    """Bytes a training tower saves per patch outside its blocks: the patch embedding's input
    (full fine-tune) and the merger's norm, projections (frozen with LoRA) and GELU."""
    e = tower.width
    c = DTYPE_BYTES[cfg.compute_dtype or cfg.weight_dtype]
    norm = _vision_norm_bytes(tower, cfg)
    if cfg.lora_rank:
        return norm + c * e  # the GELU's input
    # the convolution saves the pixels cast to the compute dtype (the float32 pixel values
    # themselves, counted apart, when that is float32)
    embed = 0 if c == 4 else c * tower.patch_dim
    return embed + norm + 3 * c * e  # + the two projections' inputs and the GELU's


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
        ValueError: an unknown model, a bad config, a vLLM utilisation without ``device_bytes``,
            or images for a text model.
    """
    arch = load_arch(model)
    cfg = config if config is not None else PlanConfig(**kwargs)
    if config is not None and kwargs:
        cfg = PlanConfig(**{**asdict(config), **kwargs})
    tower = arch.vision
    if cfg.images_per_prompt and tower is None:
        raise ValueError(f"{arch.name} is a text model: images_per_prompt needs a vision tower")
    images = cfg.images_per_prompt if tower is not None else 0
    train_tower = tower is not None and cfg.train_vision
    # the decoder's sequence: the text tokens plus each image's tokens
    image_tokens = images * tower.tokens(cfg.image_size) if tower is not None else 0
    seq = cfg.seq_len + image_tokens
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
    if lora:  # the language model's adapters, and the tower's when it trains
        trainable = arch.lora_params(cfg.lora_rank)
        if tower is not None and train_tower:
            trainable += tower.lora_params(cfg.lora_rank)
    else:  # a frozen tower's weights are not the optimizer's
        trainable = arch.text_params + (tower.num_params if tower and train_tower else 0)
    adapter = trainable if lora else 0
    reference = params * DTYPE_BYTES[ref_dtype] if (cfg.kl and not lora) else 0
    persistent = {
        "weights": params * b_w + adapter * DTYPE_BYTES[cfg.lora_dtype],
        "master_weights": 4 * trainable if masters else 0,
        "optimizer_states": cfg.optimizer_states * trainable * b_o,
        "reference": reference if not cfg.ref_offload else 0,
    }

    h, vocab, layers = arch.hidden_size, arch.vocab_size, arch.num_layers
    tok = cfg.micro_batch_size * seq
    rows = cfg.logit_rows if cfg.response_len is not None else tok
    parts = _layer_bytes_per_token(arch, cfg, seq)
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
        # gradient) though the per-layer count includes it: the two cancel. A training vision
        # tower's image embeddings do need one: the first norm saves too, the upcast stays.
        final_norm = tok * (4 * h + 4) if train_tower and images else 0
    else:
        # norm input and output, plus the LM head's input: the response rows, copied out of the
        # sequence by the slice (in the compute dtype under autocast)
        final_norm = tok * (4 + b_r) * h + rows * b_c * h
    # the model's own mask, once: boolean for SDPA, additive in the weights' dtype for eager
    mask = {"sdpa": 1, "eager": b_r, "flash_attention_2": 0}[cfg.attention]
    attention_mask = cfg.micro_batch_size * seq**2 * mask
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
    shapes = arch.linear_shapes()
    if tower is not None and train_tower:
        shapes = shapes + (tower.lora_shapes() if lora else tower.merger_shapes())
    if lora:  # the largest single trainable tensor: one adapter matrix, or the embedding
        largest = cfg.lora_rank * max(max(s) for s in shapes)
    else:
        largest = max(vocab * h, max(a * b for a, b in shapes))
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
    vision = _vision_terms(tower, cfg, images, train_tower, grads) if tower and images else None
    if vision is not None:  # the micro-batch's pixels, and what a training tower saves
        for phase in ("forward", "lm_head_backward", "layer_backward"):
            terms[phase].update(vision["base"])
        terms["vision_forward"] = vision["vision_forward"]
        if train_tower:
            terms["vision_backward"] = vision["vision_backward"]
    if cfg.kl:  # the reference log-probs: one no-grad pass per update, before the micro-batches
        # a layer's tensors in flight (two residuals, q/k/v/output, the MLP's three
        # intermediates, SDPA's float mask), then the logits and the log-prob function's blocks
        layer = tok * (2 * b_r * h + 4 * b_c * arch.q_dim + 3 * b_c * arch.intermediate_size)
        layer += cfg.micro_batch_size * seq**2 * b_c if cfg.attention == "sdpa" else 0
        terms["reference_pass"] = {
            "reference_weights": reference if cfg.ref_offload else 0,
            "attention_mask": attention_mask,
            "pass_transient": max(layer, logits_one + 2 * block),
        }
        if vision is not None:  # or the tower's block in flight (a deep copy's or the base's)
            terms["reference_pass"]["pixel_values"] = vision["base"]["pixel_values"]
            terms["reference_pass"]["pass_transient"] = max(
                terms["reference_pass"]["pass_transient"], vision["pass"]
            )
    if cfg.rollout == "hf":
        kv_per_token = 2 * layers * arch.kv_dim * b_w
        terms["generate"] = {
            "kv_cache": cfg.gen_batch_size * seq * kv_per_token,
            # the step's float32 logits, their log-softmax and the processed scores
            "gen_logits": 3 * cfg.gen_batch_size * vocab * 4,
        }
        if vision is not None:  # the prefill's tower pass over every prompt's images
            terms["generate_vision"] = vision["generate_vision"]
    if vision is not None:  # the tower's phases where they happen in the iteration
        order = ["vision_forward", "forward", "lm_head_backward", "layer_backward"]
        order += ["vision_backward", "backward_end", "optimizer_step"]
        terms = {k: terms[k] for k in [*order, *terms] if k in terms}
    phases = {k: sum(v.values()) for k, v in terms.items()}
    peak_phase = max(phases, key=lambda k: phases[k])

    vllm, vllm_note = 0, ""
    if cfg.rollout == "vllm":
        util = cfg.vllm_gpu_memory_utilization
        if util is None and cfg.vllm_max_model_len is not None and cfg.vllm_num_seqs is not None:
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
    if tower is not None:
        details.update(
            vision_params=tower.num_params,
            vision_weights=tower.num_params * b_w,
            vision_trains=train_tower,
            seq_len=seq,
            image_tokens_per_prompt=image_tokens,
            patches_per_image=tower.patches(cfg.image_size),
            tokens_per_image=tower.tokens(cfg.image_size),
            image_pixels=tuple(n * tower.patch_size for n in tower.grid(cfg.image_size)),
        )
        if vision is not None:
            details.update(
                vision_width=tower.width,
                vision_patches=vision["patches"],
                vision_block_bytes_per_patch=vision["per_block"],
                vision_block_parts=vision["parts"],
            )
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


def _vision_terms(
    tower: VisionArch, cfg: PlanConfig, images: int, train: bool, grads: int
) -> dict[str, Any]:
    """The vision tower's terms for ``images`` images per prompt (see the module doc): ``base``
    (the pixel values and what a training tower saves, alive through forward and backward),
    the ``vision_forward``, ``vision_backward`` and ``generate_vision`` phases, ``pass`` (one
    block's tensors in flight without gradients, for the reference pass), and the factors."""
    e, inter = tower.width, tower.intermediate_size
    b_c = DTYPE_BYTES[cfg.compute_dtype or cfg.weight_dtype]  # also the tower's residual stream
    per_image = tower.patches(cfg.image_size)
    patches = cfg.micro_batch_size * images * per_image
    parts = _vision_bytes_per_patch(tower, cfg, tower.attention_span(cfg.image_size))
    per_block = sum(parts.values())
    c_prob = 4 + (b_c if b_c != 4 else 0)

    def in_flight(n_patches: int) -> int:
        """One block without gradients: two residuals, q/k/v/output, the MLP's three
        intermediates (eager: one image's float32 probabilities and their cast)."""
        block = n_patches * (6 * b_c * e + 3 * b_c * inter)
        if cfg.attention == "eager":
            block += tower.num_heads * per_image**2 * c_prob
        return block

    def pixels(n_patches: int) -> int:  # the processor's float32 patches
        return n_patches * tower.patch_dim * 4

    saved = cast = recompute = 0
    if train:
        once = patches * _vision_once_per_patch(tower, cfg)
        if cfg.gradient_checkpointing:  # each block keeps its input, one is recomputed
            saved = tower.depth * patches * b_c * e + once
            recompute = patches * per_block
        else:
            saved = tower.depth * patches * per_block + once
        if cfg.autocast:  # cast weight copies, saved by the ops whose input needs a gradient
            blocks = 1 if cfg.gradient_checkpointing else tower.depth
            block_linear = sum(a * b for a, b in tower.linear_shapes())
            adapter = tower.lora_params(cfg.lora_rank) // tower.depth if cfg.lora_rank else 0
            merger = sum(a * b for a, b in tower.merger_shapes())
            embed = 0 if cfg.lora_rank else tower.patch_dim * e
            cast = b_c * (blocks * (block_linear + adapter) + merger + embed)
    base = {"pixel_values": pixels(patches), "vision_activations": saved}
    if cast:
        base["vision_autocast_weights"] = cast
    accumulating = cfg.grad_accumulation > 1
    gen_patches = cfg.gen_batch_size * images * per_image
    return {
        "base": base,
        # the tower's last block: all it saved so far, the block's own tensors in flight
        "vision_forward": {
            "live_grads": grads if accumulating else 0,
            **base,
            "vision_transient": in_flight(patches),
        },
        # the decoder's gradients are all there; the tower's activations not yet freed
        "vision_backward": {
            "gradients": grads,
            **base,
            "vision_recompute": recompute,
            "vision_workspace": patches * b_c * (e + 3 * inter),
        },
        "generate_vision": {
            "pixel_values": pixels(gen_patches),
            "vision_transient": in_flight(gen_patches),
        },
        "pass": in_flight(patches),
        "patches": patches,
        "per_block": per_block,
        "parts": parts,
    }


def check_fits(
    model_config_or_path: str | Path | Mapping[str, Any] | ModelArch,
    device_bytes: int,
    **config: Any,
) -> tuple[bool, MemoryPlan]:
    """``(fits, plan)`` for a device of ``device_bytes``: a trainer can warn before a run that
    cannot fit. Meant to be called once before the first update, for example::

        import warnings, torch
        from agentenvs.learners.llm.plan import check_fits, train_config_kwargs

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
    share is ``vllm_gpu_memory_utilization`` and a VLM's tower trains with ``train_vision`` when
    it has them).

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
    weights = dtype_name(getattr(train_config, "weight_dtype", "float32"))
    mode = getattr(train_config, "autocast", "auto")
    if mode == "auto":
        compute = "bf16" if device == "cuda" and weights == "fp32" else None
    else:
        compute = None if mode == "none" else dtype_name(mode)
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
        "train_vision": bool(getattr(train_config, "train_vision", False)),
    }
    out.update(overrides)
    return out
