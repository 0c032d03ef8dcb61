"""Export a trained policy: a plain HF model directory (LoRA merged in) or a peft adapter directory.

This module holds :func:`export_policy` and :func:`merged_state_dict`.

* ``merged=True``: a directory ``transformers.AutoModelForCausalLM.from_pretrained`` loads (and
  vLLM serves as a model): the weights, with each LoRA layer's ``scaling * B @ A`` added to its
  base weight, under the base model's own names (no ``base_model.model.`` prefix, no
  ``.base_layer``, no ``lora_`` tensors), plus the config, the generation config and the
  tokenizer (and a vision-language model's image processor: ``load_policy`` loads it back as a
  VLM). The training model is left as it was: merged weights are new CPU tensors, and
  nothing is merged in place.
* ``merged=False`` (LoRA policies only): the peft adapter (``adapter_config.json`` and
  ``adapter_model.safetensors``), which ``peft.PeftModel.from_pretrained(base, path)`` loads onto
  the base model and vLLM serves with ``LoRARequest(name, id, path)``.

Plain LoRA adapters are supported (not DoRA, not peft's ``modules_to_save``).

>>> import tempfile
>>> from transformers import AutoModelForCausalLM
>>> from agentenvs.learners.llm.policy import Policy
>>> from agentenvs.learners.llm.tiny import build_tiny_model, build_tiny_tokenizer
>>> tok = build_tiny_tokenizer()
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = export_policy(Policy(build_tiny_model(tok), tok), tmp)
...     type(AutoModelForCausalLM.from_pretrained(path)).__name__
'Qwen2ForCausalLM'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from agentenvs.learners.llm.policy import Policy

__all__ = ["export_policy", "merged_state_dict"]


def _is_peft(model: Any) -> bool:
    return hasattr(model, "peft_config")


def merged_state_dict(model: Any) -> dict[str, torch.Tensor]:
    """The model's weights on CPU under the base model's names, each active LoRA adapter merged in.

    Tensors that share storage (tied embeddings) still share it; CPU tensors that need no merge are
    the model's own (not copies). Merged weights keep the base weight's dtype.
    """
    copies: dict[int, torch.Tensor] = {}

    def on_cpu(tensor: torch.Tensor) -> torch.Tensor:  # one copy per storage: ties survive
        key = tensor.data_ptr()
        if key not in copies:
            copies[key] = tensor.detach().cpu()
        return copies[key]

    if not _is_peft(model):
        return {k: on_cpu(v) for k, v in model.state_dict().items()}
    from peft.tuners.lora import LoraLayer

    base = model.get_base_model()
    deltas: dict[str, torch.Tensor] = {}
    for name, module in base.named_modules():
        if not isinstance(module, LoraLayer) or module.merged:
            continue  # a merged layer's base weight already holds its adapters
        for adapter in module.active_adapters:
            if module.use_dora.get(adapter, False):
                raise ValueError(f"{name}: DoRA adapters are not supported")
            if adapter in module.scaling:
                # peft's LoraLayer subclasses (Linear, Embedding, Conv) define get_delta_weight
                delta = module.get_delta_weight(adapter).detach().float().cpu()  # type: ignore[attr-defined]
                key = f"{name}.weight"
                deltas[key] = deltas[key] + delta if key in deltas else delta
    out = {}
    for key, value in base.state_dict().items():
        if "modules_to_save" in key or "original_module" in key:
            raise ValueError(f"{key}: peft modules_to_save are not supported")
        if "lora_" in key:
            continue
        key = key.replace(".base_layer.", ".")
        weight = on_cpu(value)
        out[key] = (weight.float() + deltas[key]).to(weight.dtype) if key in deltas else weight
    return out


def export_policy(policy: Policy, path: str | Path, merged: bool = True) -> Path:
    """Write ``policy`` to the directory ``path`` (created); returns it. See the module doc.

    Raises:
        ValueError: ``merged=False`` for a policy without a LoRA adapter.
    """
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    model = policy.model
    if not merged:
        if not _is_peft(model):
            raise ValueError("an adapter export needs a LoRA policy; use merged=True")
        model.save_pretrained(str(path))
        return path
    target = model.get_base_model() if _is_peft(model) else model
    target.save_pretrained(str(path), state_dict=merged_state_dict(model))
    policy.tokenizer.save_pretrained(str(path))
    if policy.images is not None:  # a VLM's directory loads with its image processor
        policy.images.processor.save_pretrained(str(path))
    return path
