"""The LLM policy: a causal LM, its tokenizer and chat template, and the response-token forward pass.

This module holds:

* :class:`Policy` - model + tokenizer + device (+ the image side of a vision-language model);
  :meth:`Policy.chat_ids` renders chat messages with the chat template (generation prompt
  appended) into token ids, a VLM's image marks expanded into its image tokens.
* :func:`load_policy` - load a local HF model directory, text or vision-language (optionally
  wrapped in a LoRA adapter on the language part).
* :func:`enable_gradient_checkpointing` - HF non-reentrant checkpointing of every decoder layer.
* :func:`collate` - pack (prompt, response) pairs: prompts left-padded so every response starts at
  the same column, responses right-padded; optionally a shared prompt prefix split off, or the
  rows' pixel inputs carried along.
* :func:`common_prefix_length` - the token prefix a batch of prompts shares.
* :func:`response_logits` - the logits that predict each response token, ``(B, T, V)``, without
  computing the LM head over the prompt.
* :func:`response_logprobs` - per-token log-probabilities of given responses, in batches.
* :func:`prefix_cache` and :func:`cache_kwargs` - a prompt prefix's KV cache, and the keyword that
  hands it back to the model (``cache`` in newer transformers, ``past_key_values`` in older ones).

>>> from agentenvs.learners.llm.tiny import build_tiny_model, build_tiny_tokenizer
>>> tok = build_tiny_tokenizer()
>>> policy = Policy(build_tiny_model(tok), tok)
>>> batch = collate([[5, 6, 7], [8]], [[9], [10, 11]], pad_id=0)
>>> batch.input_ids.tolist(), batch.response_mask.tolist()
([[5, 6, 7, 9, 0], [0, 0, 8, 10, 11]], [[1.0, 0.0], [1.0, 1.0]])
>>> tuple(response_logits(policy.model, batch).shape) == (2, 2, len(tok))
True
>>> [len(lp) for lp in response_logprobs(policy, [[5, 6, 7], [8]], [[9], [10, 11]])]
[1, 2]
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from agentenvs.learners.llm.loss import token_logprobs
from agentenvs.learners.llm.vision import ImageInputs, is_vision_config, mask_marks, vision_kwargs

from agentenvs.core.prompting import IMAGE_PLACEHOLDER

__all__ = [
    "Policy",
    "PackedBatch",
    "load_policy",
    "enable_gradient_checkpointing",
    "collate",
    "common_prefix_length",
    "response_logits",
    "response_logprobs",
    "prefix_cache",
    "cache_kwargs",
]


@dataclass
class Policy:
    """A causal LM with its tokenizer; ``device`` is where the model lives; ``images``: a
    vision-language model's image side (``None`` for a text model)."""

    model: Any
    tokenizer: Any
    device: str = "cpu"
    images: ImageInputs | None = None

    def chat_ids(
        self,
        messages: Sequence[dict[str, str]],
        response_prefix: str = "",
        images: Sequence[Any] = (),
    ) -> list[int]:
        """Token ids of the chat ``messages`` (e.g. ``AgentPrompt.messages``) + the generation prompt.

        ``response_prefix`` (e.g. ``"<think>"``) is appended after the generation prompt: the
        model continues from it. A VLM replaces each ``<image>`` of the messages
        (:data:`~agentenvs.core.prompting.IMAGE_PLACEHOLDER`) with the tokens of the next of
        ``images`` (uint8 ``(H, W, 3)`` arrays, e.g. ``AgentPrompt.images``); a text model given
        images raises ``ValueError``.
        """
        if self.images is None and len(images):
            raise ValueError("this policy's model is text-only: it cannot take the prompt's images")
        if self.images is not None:
            mark = self.images.mark
            messages = [
                {**m, "content": m["content"].replace(IMAGE_PLACEHOLDER, mark)} for m in messages
            ]
        ids = self.tokenizer.apply_chat_template(
            list(messages), add_generation_prompt=True, tokenize=True
        )
        if hasattr(ids, "keys"):  # transformers 5 returns a BatchEncoding
            ids = ids["input_ids"]
        prefix = (
            self.tokenizer.encode(response_prefix, add_special_tokens=False)
            if response_prefix
            else []
        )
        ids = list(ids) + list(prefix)
        return ids if self.images is None else self.images.expand(ids, images)

    def pixels(self, rows: Sequence[Sequence[Any]] | None) -> dict[str, torch.Tensor] | None:
        """The model's pixel inputs for the images of ``rows`` (one sequence per prompt, in
        order), or ``None`` for a text model, no rows or rows without images."""
        if self.images is None or rows is None:
            return None
        return self.images.pixels(rows)

    @property
    def stop_ids(self) -> list[int]:
        """Token ids that end a response (the tokenizer's and the model config's EOS)."""
        ids = {self.tokenizer.eos_token_id}
        eos = getattr(self.model.generation_config, "eos_token_id", None)
        ids.update(eos if isinstance(eos, list) else [eos])
        return sorted(i for i in ids if i is not None)

    @property
    def pad_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        return self.tokenizer.eos_token_id if pad is None else pad


def load_policy(
    path: str | Path,
    *,
    device: str = "cpu",
    dtype: torch.dtype = torch.float32,
    lora_rank: int = 0,
    lora_alpha: int = 32,
    train_vision: bool = False,
) -> Policy:
    """Load a local HF model directory; ``lora_rank > 0`` wraps it in a peft LoRA adapter.

    With LoRA only the adapter trains and the reference policy is the base model (adapter disabled).
    A vision-language directory (its config has a ``vision_config``; Qwen2-VL's layout) loads with
    its image processor; its vision tower is frozen unless ``train_vision`` (with LoRA: the
    adapter covers the language model's linear layers, and the vision tower's too with
    ``train_vision``).
    """
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    vision = is_vision_config(AutoConfig.from_pretrained(str(path), local_files_only=True))
    images = None
    if vision:
        from transformers import AutoImageProcessor, AutoModelForImageTextToText

        processor = AutoImageProcessor.from_pretrained(str(path), local_files_only=True)
        images = ImageInputs(processor, tokenizer)
        loader: Any = AutoModelForImageTextToText
    else:
        loader = AutoModelForCausalLM
    # Policy.model's type: the transformers model, or its peft wrapper below
    model: Any = loader.from_pretrained(str(path), dtype=dtype, local_files_only=True)
    if vision and not train_vision:
        model.model.visual.requires_grad_(False)
    if lora_rank > 0:
        try:
            from peft import LoraConfig, get_peft_model
        except ImportError as exc:
            raise ImportError("LoRA needs peft: pip install 'agentenvs[llm]'") from exc
        targets: Any = "all-linear"
        if vision:  # peft's "all-linear" would adapt the vision tower too
            targets = (
                r".*language_model\..*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)"
            )
            if train_vision:
                targets = rf"({targets})|(.*visual\.blocks\..*\.(qkv|attn\.proj|fc1|fc2))"
        config = LoraConfig(
            r=lora_rank, lora_alpha=lora_alpha, target_modules=targets, task_type="CAUSAL_LM"
        )
        model = get_peft_model(model, config)
    return Policy(model.to(device), tokenizer, device, images)


def enable_gradient_checkpointing(model: Any) -> None:
    """Recompute each decoder layer in backward (HF checkpointing, ``use_reentrant=False``).

    Works on peft models (the call reaches the wrapped transformers model, which also makes the
    embedding output require gradients, as a frozen-embedding LoRA model needs with reentrant
    checkpointing). Only active in ``train()`` mode, where it turns the KV cache off: a
    checkpointed layer would write the cache again when it is recomputed, so training forwards
    must not use :func:`collate`'s shared prefix (``min_shared_prefix=0``).
    """
    kwargs = {"use_reentrant": False}
    enable = getattr(model, "activation_checkpointing_enable", None)  # transformers >= 5
    if enable is not None:
        enable(kwargs)
    else:
        model.gradient_checkpointing_enable(kwargs)


@dataclass
class PackedBatch:
    """Prompts left-padded to ``prompt_len`` columns, responses right-padded after them.

    Attributes:
        input_ids, attention_mask, position_ids: ``(B, prompt_len + T)`` long tensors.
        response_ids: ``(B, T)`` long; ``response_mask``: ``(B, T)`` float, 1.0 on real tokens.
        prompt_len: columns before the responses.
        prefix_ids: ``(1, P)`` long, the token prefix every prompt shares and that is *not* in
            ``input_ids`` (run once and broadcast by :func:`response_logits`), or ``None``.
        pixels: a VLM's pixel inputs for the rows' images (:meth:`Policy.pixels`), or ``None``.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    position_ids: torch.Tensor
    response_ids: torch.Tensor
    response_mask: torch.Tensor
    prompt_len: int
    prefix_ids: torch.Tensor | None = None
    pixels: dict[str, torch.Tensor] | None = None

    def to(self, device: str) -> PackedBatch:
        moved: dict[str, Any] = {
            k: v.to(device) for k, v in vars(self).items() if isinstance(v, torch.Tensor)
        }
        if self.pixels is not None:
            moved["pixels"] = {k: v.to(device) for k, v in self.pixels.items()}
        return PackedBatch(**{**vars(self), **moved})


def common_prefix_length(prompts: Sequence[Sequence[int]]) -> int:
    """Length of the common token prefix, leaving every prompt at least one token of its own.

    >>> common_prefix_length([[1, 2, 3, 4], [1, 2, 3, 5, 6], [1, 2, 3]])
    2
    """
    limit = min(len(p) for p in prompts) - 1
    n = 0
    while n < limit and all(p[n] == prompts[0][n] for p in prompts):
        n += 1
    return max(n, 0)


def collate(
    prompts: Sequence[Sequence[int]],
    responses: Sequence[Sequence[int]],
    pad_id: int,
    min_shared_prefix: int = 0,
    pixels: dict[str, torch.Tensor] | None = None,
) -> PackedBatch:
    """Pack pairs so all responses start at the same column (see :class:`PackedBatch`).

    With ``min_shared_prefix > 0`` a common prompt prefix at least that long is split off into
    ``prefix_ids`` (positions continue after it); never with ``pixels`` (the rows' images: the
    model places them by their tokens, which must stay in ``input_ids``).
    """
    if len(prompts) != len(responses) or not prompts:
        raise ValueError("need as many responses as prompts, at least one")
    shared = common_prefix_length(prompts) if min_shared_prefix > 0 and pixels is None else 0
    shared = shared if shared >= max(min_shared_prefix, 1) else 0
    rests = [list(p[shared:]) for p in prompts]
    p_len = max(len(p) for p in rests)
    r_len = max(1, max(len(r) for r in responses))
    ids = torch.full((len(prompts), p_len + r_len), pad_id, dtype=torch.long)
    attn = torch.zeros_like(ids)
    for i, (p, r) in enumerate(zip(rests, responses, strict=True)):
        ids[i, p_len - len(p) : p_len] = torch.as_tensor(p, dtype=torch.long)
        ids[i, p_len : p_len + len(r)] = torch.as_tensor(list(r), dtype=torch.long)
        attn[i, p_len - len(p) : p_len + len(r)] = 1
    positions = (attn.cumsum(-1) - 1).clamp(min=0) + shared
    prefix = torch.as_tensor([list(prompts[0][:shared])], dtype=torch.long) if shared else None
    response_mask = attn[:, p_len:].float()
    return PackedBatch(ids, attn, positions, ids[:, p_len:], response_mask, p_len, prefix, pixels)


def cache_kwargs(model: Any, cache: Any) -> dict[str, Any]:
    """``{name: cache}`` with the keyword ``model``'s forward takes a KV cache by: ``cache``
    (newer transformers, where ``past_key_values`` is deprecated) or ``past_key_values``."""
    base = getattr(model, "module", model)  # DDP's wrapper
    base = base.get_base_model() if hasattr(base, "get_base_model") else base  # peft's
    params = inspect.signature(base.forward).parameters
    return {"cache" if "cache" in params else "past_key_values": cache}


def prefix_cache(model: Any, prefix_ids: torch.Tensor) -> Any:
    """The KV cache of ``model`` after ``prefix_ids`` (``(1, L)``), as its output names it."""
    out = model(input_ids=prefix_ids, use_cache=True)
    return out["cache"] if "cache" in out else out.past_key_values


def response_logits(model: Any, batch: PackedBatch) -> torch.Tensor:
    """Logits predicting each response token, ``(B, T, V)`` (the LM head runs on ``T + 1`` columns;
    a VLM's image marks masked out, :func:`~agentenvs.learners.llm.vision.mask_marks`).

    A ``prefix_ids`` batch runs the shared prefix once (with gradients, when enabled) and gives
    every row its KV cache: same values and gradients as the unshared layout, less compute.
    """
    t = batch.response_ids.shape[1]
    cache, attn = None, batch.attention_mask
    if batch.prefix_ids is not None:
        cache = prefix_cache(model, batch.prefix_ids)
        cache.batch_repeat_interleave(batch.input_ids.shape[0])
        ones = torch.ones(
            (attn.shape[0], batch.prefix_ids.shape[1]), dtype=attn.dtype, device=attn.device
        )
        attn = torch.cat([ones, attn], dim=1)
    out = model(
        input_ids=batch.input_ids,
        attention_mask=attn,
        # with images the model builds its own (multimodal rotary) positions from the tokens
        position_ids=batch.position_ids if batch.pixels is None else None,
        **vision_kwargs(model, batch.input_ids, batch.pixels),
        **cache_kwargs(model, cache),
        logits_to_keep=t + 1,
        use_cache=cache is not None,
    )
    return mask_marks(model, out.logits[:, :-1])


@torch.no_grad()
def response_logprobs(
    policy: Policy,
    prompts: Sequence[Sequence[int]],
    responses: Sequence[Sequence[int]],
    *,
    temperature: float = 1.0,
    batch_size: int = 8,
    min_shared_prefix: int = 0,
    images: Sequence[Sequence[Any]] | None = None,
) -> list[list[float]]:
    """``log softmax(logits / temperature)`` of each response token under ``policy.model``'s current
    weights (no gradients; runs in the caller's autocast context, if any): one list per response,
    as long as it, in batches of ``batch_size`` pairs. ``images``: each prompt's images (a VLM)."""
    out: list[list[float]] = []
    for start in range(0, len(prompts), batch_size):
        rows = slice(start, start + batch_size)
        pixels = policy.pixels(None if images is None else images[rows])
        batch = collate(prompts[rows], responses[rows], policy.pad_id, min_shared_prefix, pixels)
        batch = batch.to(policy.device)
        lp = token_logprobs(response_logits(policy.model, batch), batch.response_ids, temperature)
        out += [lp[i, : len(r)].float().cpu().tolist() for i, r in enumerate(responses[rows])]
    return out
