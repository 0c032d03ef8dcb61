"""A random vision-language model built in code: ``--model tiny-vl`` (Qwen2-VL's architecture).

This module holds :data:`VISION_TOKENS` (the image marks the tokenizer gains), :func:`build_tiny_vl_tokenizer`,
:func:`build_tiny_image_processor`, :func:`build_tiny_vl_model`, :func:`save_tiny_vl` and
:func:`tiny_vl_fingerprint`.

Nothing is downloaded. The tokenizer is the text model's (:func:`~agentenvs.learners.llm.tiny.build_tiny_tokenizer`)
plus Qwen2-VL's image marks as special tokens; the image processor is Qwen2-VL's (14-pixel
patches, 2x2 merged into one token, images resized to multiples of 28 pixels between 28x28 and
224x224: a 96x96 Sokoban board becomes 84x84, 36 patches, 9 image tokens, one token per 2x2 tiles);
the model is ``Qwen2VLForConditionalGeneration`` with a 2-layer vision tower and the text model's
2-layer decoder, initialised from a seed.

>>> tok = build_tiny_vl_tokenizer()
>>> model = build_tiny_vl_model(tok, seed=0)
>>> model.config.image_token_id == tok.convert_tokens_to_ids("<|image_pad|>")
True
>>> model.num_parameters() < 1_000_000
True
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentenvs.learners.llm.tiny import CORPUS_FILE, build_tiny_tokenizer, seeded_model

if TYPE_CHECKING:  # the llm extra's; imported where the model is built
    from transformers import PreTrainedTokenizerFast, Qwen2VLForConditionalGeneration

__all__ = [
    "VISION_TOKENS",
    "build_tiny_vl_tokenizer",
    "build_tiny_image_processor",
    "build_tiny_vl_model",
    "save_tiny_vl",
    "tiny_vl_fingerprint",
]

#: Qwen2-VL's image marks: an image is ``<|vision_start|>``, one ``<|image_pad|>`` per image token,
#: ``<|vision_end|>`` (``<|video_pad|>``, the video mark, is there because the config needs one).
VISION_TOKENS = ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")


def build_tiny_vl_tokenizer() -> PreTrainedTokenizerFast:
    """The tiny text tokenizer with :data:`VISION_TOKENS` added as special tokens (516 entries)."""
    tok = build_tiny_tokenizer()
    tok.add_special_tokens({"additional_special_tokens": list(VISION_TOKENS)})
    return tok


def build_tiny_image_processor() -> Any:
    """Qwen2-VL's image processor (its PIL backend: no torchvision needed), sized for small boards."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )

    return Qwen2VLImageProcessorPil(
        size={"shortest_edge": 28 * 28, "longest_edge": 224 * 224},
        patch_size=14,
        merge_size=2,
        temporal_patch_size=2,
    )


def build_tiny_vl_model(
    tokenizer: PreTrainedTokenizerFast,
    *,
    seed: int = 0,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 2,
    vision_layers: int = 2,
) -> Qwen2VLForConditionalGeneration:
    """A random ``Qwen2VLForConditionalGeneration`` sized to ``tokenizer`` (fp32, eval mode).

    The decoder matches :func:`~agentenvs.learners.llm.tiny.build_tiny_model` (head size
    ``hidden_size // num_heads``, MLP ``2 * hidden_size``, tied embeddings); the vision tower has
    ``vision_layers`` blocks of width ``hidden_size`` and projects into the decoder's width.
    M-RoPE splits each head's rotary pairs into time, height and width sections (1:1.5:1.5, as
    Qwen2-VL's 16:24:24).
    """
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    pairs = hidden_size // num_heads // 2
    section = [pairs - 2 * (3 * pairs // 8), 3 * pairs // 8, 3 * pairs // 8]
    ids: dict[str, Any] = {name: tokenizer.convert_tokens_to_ids(name) for name in VISION_TOKENS}
    config = Qwen2VLConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": hidden_size,
            "intermediate_size": 2 * hidden_size,
            "num_hidden_layers": num_layers,
            "num_attention_heads": num_heads,
            "num_key_value_heads": num_heads,
            "max_position_embeddings": 4096,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 10000.0,
                "mrope_section": section,
            },
            "tie_word_embeddings": True,
            "bos_token_id": None,
            "eos_token_id": tokenizer.eos_token_id,
            "pad_token_id": tokenizer.pad_token_id,
        },
        vision_config={
            "depth": vision_layers,
            "embed_dim": hidden_size,
            "hidden_size": hidden_size,
            "num_heads": num_heads,
            "mlp_ratio": 2,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "in_channels": 3,
        },
        image_token_id=ids["<|image_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        video_token_id=ids["<|video_pad|>"],
        tie_word_embeddings=True,
    )
    model = seeded_model(Qwen2VLForConditionalGeneration, config, tokenizer, seed)
    model.generation_config.bos_token_id = None
    return model


def save_tiny_vl(path: str | Path, *, seed: int = 0, **model_kwargs: Any) -> Path:
    """Build the tiny VL tokenizer, image processor and model and save them to ``path``."""
    path = Path(path)
    tok = build_tiny_vl_tokenizer()
    tok.save_pretrained(path)
    build_tiny_image_processor().save_pretrained(path)
    build_tiny_vl_model(tok, seed=seed, **model_kwargs).save_pretrained(path)  # config.json last
    return path


def tiny_vl_fingerprint() -> str:
    """8 hex digits of the recipe (this module, the text tokenizer's module and corpus)."""
    text = Path(__file__).with_name("tiny.py")
    digest = hashlib.sha256(
        Path(__file__).read_bytes() + text.read_bytes() + CORPUS_FILE.read_bytes()
    )
    return digest.hexdigest()[:8]
