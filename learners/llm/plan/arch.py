"""The memory planner's architectures and dtype sizes (see :mod:`agentenvs.learners.llm.plan`).

This module holds :data:`GIB`, :data:`DTYPE_BYTES`, :class:`ModelArch` (the architecture numbers
that set memory and the parameter counts derived from them), :data:`ARCHITECTURES` (published
architectures and the repo's random models, tiny and random-60m, as constants) and :func:`load_arch` (a model name, a
local HF directory, a ``config.json`` path or its dict -> :class:`ModelArch`). Pure Python.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ARCHITECTURES", "DTYPE_BYTES", "GIB", "ModelArch", "load_arch"]

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


def dtype_name(name: str) -> str:
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
    # the GPU recipe's random model (learners/llm/tiny.py RANDOM_MODELS, the same tokenizer)
    ("random-60m", 512, 2048, 14, 8, 8, 512, True, True),  # 59,018,752
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
