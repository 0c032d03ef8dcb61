"""The memory planner's architectures and dtype sizes (see :mod:`agentenvs.learners.llm.plan`).

This module holds :data:`GIB`, :data:`DTYPE_BYTES`, :class:`ModelArch` (the architecture numbers
that set memory and the parameter counts derived from them), :class:`VisionArch` (a
vision-language model's vision tower: its parameters and the patches and image tokens of an
image), :data:`ARCHITECTURES` (published architectures and the repo's random models, tiny,
tiny-vl and random-60m, as constants) and :func:`load_arch` (a model name, a local HF directory, a
``config.json`` path or its dict -> :class:`ModelArch`). Pure Python.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ARCHITECTURES", "DTYPE_BYTES", "GIB", "ModelArch", "VisionArch", "load_arch"]

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


#: Qwen2-VL-layout vision towers the planner counts (the ``model_type`` prefixes).
_VISION_LAYOUTS = ("qwen2_vl", "qwen2_5_vl")


@dataclass(frozen=True)
class VisionArch:
    """A Qwen2-VL-layout vision tower (Qwen2-VL, Qwen2.5-VL): a patch embedding, ``depth`` blocks,
    a patch merger.

    An image is resized to multiples of ``patch_size x spatial_merge_size`` pixels (28) and cut
    into ``patch_size``-pixel patches (``temporal_patch_size`` frames deep: an image is one
    temporal patch), which run through the blocks; the merger concatenates each 2 x 2 group of
    patches into one image token of the decoder's width. Per block: two norms (LayerNorm with
    weight and bias in Qwen2-VL, RMSNorm in Qwen2.5-VL), a fused ``qkv`` (``E -> 3E``) and an
    output ``proj`` (``E -> E``), and an MLP: ``fc1`` (``E -> I``), ``fc2`` (``I -> E``) in
    Qwen2-VL, a gated ``gate, up`` (``E -> I``), ``down`` (``I -> E``) in Qwen2.5-VL; every
    projection has a bias. The patch embedding is a bias-free ``Conv3d``
    (``in_channels x temporal_patch_size x patch_size^2 -> E``); the merger is a norm, a
    ``4E -> 4E`` and a ``4E -> out_hidden_size`` projection (both with biases).

    Attributes:
        layout: ``"qwen2_vl"`` or ``"qwen2_5_vl"``.
        depth, width, num_heads: blocks, their width ``E`` (Qwen2-VL's ``embed_dim``, Qwen2.5-VL's
            ``hidden_size``) and attention heads.
        intermediate_size: the MLP's width ``I`` (Qwen2-VL: ``int(embed_dim * mlp_ratio)``).
        out_hidden_size: the merger's output, the decoder's width (Qwen2-VL's ``hidden_size``,
            Qwen2.5-VL's ``out_hidden_size``).
        patch_size, temporal_patch_size, spatial_merge_size, in_channels: as in ``vision_config``.
        hidden_act: the MLP's activation (``quick_gelu`` in Qwen2-VL, ``silu`` in Qwen2.5-VL).
        window_size: Qwen2.5-VL's attention window in pixels (0: every block attends to the whole
            image); ``full_attention_blocks`` are the blocks that do anyway.
    """

    layout: str
    depth: int
    width: int
    num_heads: int
    intermediate_size: int
    out_hidden_size: int
    patch_size: int = 14
    temporal_patch_size: int = 2
    spatial_merge_size: int = 2
    in_channels: int = 3
    hidden_act: str = "quick_gelu"
    window_size: int = 0
    full_attention_blocks: tuple[int, ...] = ()

    @property
    def gated(self) -> bool:
        """The MLP is gated (Qwen2.5-VL's ``gate, up, down``) rather than ``fc1, fc2``."""
        return self.layout == "qwen2_5_vl"

    @property
    def patch_dim(self) -> int:
        """Pixel values per patch: ``in_channels x temporal_patch_size x patch_size^2`` (1176)."""
        return self.in_channels * self.temporal_patch_size * self.patch_size**2

    @property
    def factor(self) -> int:
        """Image sides are resized to multiples of this many pixels (``patch x merge``: 28)."""
        return self.patch_size * self.spatial_merge_size

    def linear_shapes(self) -> list[tuple[int, int]]:
        """``(in, out)`` of one block's projections: ``qkv, proj`` and the MLP's."""
        e, i = self.width, self.intermediate_size
        mlp = [(e, i), (e, i), (i, e)] if self.gated else [(e, i), (i, e)]
        return [(e, 3 * e), (e, e), *mlp]

    def merger_shapes(self) -> list[tuple[int, int]]:
        """``(in, out)`` of the patch merger's two projections."""
        wide = self.width * self.spatial_merge_size**2
        return [(wide, wide), (wide, self.out_hidden_size)]

    @property
    def block_params(self) -> int:
        """All parameters of one block: projections with their biases, two norms."""
        norms = 2 * self.width * (1 if self.gated else 2)  # RMSNorm: weight; LayerNorm: + bias
        return sum(a * b + b for a, b in self.linear_shapes()) + norms

    @property
    def merger_params(self) -> int:
        norm = self.width * (1 if self.gated else 2)
        return norm + sum(a * b + b for a, b in self.merger_shapes())

    @property
    def num_params(self) -> int:
        """Total: the patch embedding, the blocks and the merger."""
        return self.patch_dim * self.width + self.depth * self.block_params + self.merger_params

    def lora_shapes(self) -> list[tuple[int, int]]:
        """The projections of a block the learner's LoRA adapts when the tower trains (its
        ``visual.blocks.*.(qkv|attn.proj|fc1|fc2)`` targets: Qwen2.5-VL's gated MLP is not
        among them)."""
        return self.linear_shapes()[: 2 if self.gated else 4]

    def lora_params(self, rank: int) -> int:
        """Adapter parameters of LoRA on :meth:`lora_shapes` of every block."""
        return self.depth * rank * sum(a + b for a, b in self.lora_shapes())

    def grid(self, image_size: int | tuple[int, int]) -> tuple[int, int]:
        """Patches down and across an image of ``image_size`` pixels (a side, or ``(H, W)``),
        resized as Qwen2-VL's processor does (each side rounded to the nearest multiple of
        :attr:`factor`, at least one; the processor's min/max pixel limits are not applied:
        give the size it resizes to).

        >>> tower = ARCHITECTURES["Qwen2-VL-2B-Instruct"].vision
        >>> tower.grid(448), tower.grid((96, 96)), tower.grid((500, 300))
        ((32, 32), (6, 6), (36, 22))
        """
        h, w = (image_size, image_size) if isinstance(image_size, int) else image_size
        f = self.factor
        sides = (max(f, round(h / f) * f), max(f, round(w / f) * f))
        return sides[0] // self.patch_size, sides[1] // self.patch_size

    def patches(self, image_size: int | tuple[int, int]) -> int:
        """Patches of one image through the blocks (448 x 448: 32 x 32 = 1024)."""
        rows, cols = self.grid(image_size)
        return rows * cols

    def tokens(self, image_size: int | tuple[int, int]) -> int:
        """Image tokens of one image in the decoder's sequence: patches / merge^2 (448: 256)."""
        return self.patches(image_size) // self.spatial_merge_size**2

    def attention_span(self, image_size: int | tuple[int, int]) -> int:
        """Patches each patch attends to, averaged over the blocks: the whole image, or in
        Qwen2.5-VL's windowed blocks its window (``window_size`` pixels square, cut at the
        image's edge; the eager kernel saves that many probabilities per patch and head)."""
        rows, cols = self.grid(image_size)
        if not self.window_size:
            return rows * cols
        side = self.window_size // self.patch_size
        window = min(side, rows) * min(side, cols)
        full = sum(1 for b in self.full_attention_blocks if 0 <= b < self.depth)
        return (full * rows * cols + (self.depth - full) * window) // self.depth

    @classmethod
    def from_hf_config(
        cls, vision: Mapping[str, Any], model_type: str = "", text_hidden: int | None = None
    ) -> VisionArch:
        """Read a ``vision_config`` dict; ``model_type`` is the whole model's (the layout comes
        from it or the vision config's own, else from the keys: ``embed_dim`` is Qwen2-VL's,
        ``out_hidden_size`` Qwen2.5-VL's). Missing keys take transformers' defaults, except the
        merger's output, which defaults to the decoder's width ``text_hidden``.

        Raises:
            ValueError: a vision tower of another layout (only Qwen2-VL's are planned).
        """
        kinds = [str(vision.get("model_type") or ""), str(model_type or "")]
        layout = next(
            (lay for kind in kinds for lay in _VISION_LAYOUTS[::-1] if kind.startswith(lay)), None
        )
        if layout is None and not any(kinds):
            if "out_hidden_size" in vision or "fullatt_block_indexes" in vision:
                layout = "qwen2_5_vl"
            elif "embed_dim" in vision:
                layout = "qwen2_vl"
        if layout is None:
            kind = next((k for k in kinds if k), "unknown")
            raise ValueError(
                f"a vision tower of model type {kind!r}: only Qwen2-VL and Qwen2.5-VL towers "
                "are planned"
            )

        def first(value: Any) -> int:  # transformers allows a patch size per axis
            return int(value[0] if isinstance(value, list | tuple) else value)

        window = 0  # Qwen2-VL: every block attends to the whole image
        full: tuple[int, ...] = ()
        if layout == "qwen2_vl":
            width = int(vision.get("embed_dim", 1280))
            inter = int(width * float(vision.get("mlp_ratio", 4)))
            out, act = vision.get("hidden_size"), str(vision.get("hidden_act", "quick_gelu"))
        else:
            width = int(vision.get("hidden_size", 3584))
            inter = int(vision.get("intermediate_size", 3420))
            out, act = vision.get("out_hidden_size"), str(vision.get("hidden_act", "silu"))
            window = int(vision.get("window_size", 112))
            full = tuple(int(b) for b in vision.get("fullatt_block_indexes", (7, 15, 23, 31)))
        return cls(
            layout=layout,
            depth=int(vision.get("depth", 32)),
            width=width,
            num_heads=int(vision.get("num_heads", 16)),
            intermediate_size=inter,
            out_hidden_size=int(out or text_hidden or 3584),
            patch_size=first(vision.get("patch_size", 14)),
            temporal_patch_size=first(vision.get("temporal_patch_size", 2)),
            spatial_merge_size=int(vision.get("spatial_merge_size", 2)),
            in_channels=int(vision.get("in_channels", vision.get("in_chans", 3))),
            hidden_act=act,
            window_size=window,
            full_attention_blocks=full,
        )


@dataclass(frozen=True)
class ModelArch:
    """A decoder-only transformer with RMSNorm, rotary positions and a gated (SwiGLU) MLP.

    That covers Qwen2/Qwen2.5, Llama and SmolLM2: per layer ``q, k, v, o`` projections (``q``/``o``
    ``heads x head_dim`` wide, ``k``/``v`` ``kv_heads x head_dim``), ``gate, up`` (``h -> I``),
    ``down`` (``I -> h``) and two norms; an embedding and an LM head (one matrix when tied). A
    vision-language model (Qwen2-VL's layout) is that decoder plus its ``vision`` tower.

    Attributes:
        name: a label for tables.
        hidden_size, intermediate_size, num_layers, num_heads, num_kv_heads, vocab_size: as in
            ``config.json`` (``num_hidden_layers``, ``num_attention_heads``, ``num_key_value_heads``).
        head_dim: ``None`` = ``hidden_size // num_heads``.
        tie_word_embeddings: the LM head reuses the embedding matrix.
        qkv_bias: ``q, k, v`` have biases (Qwen2); ``mlp_bias``: the MLP projections do.
        vision: the vision tower of a vision-language model (``None``: a text model).
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
    vision: VisionArch | None = None

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
    def text_params(self) -> int:
        """The decoder's parameters: embedding, layers, final norm, LM head unless tied."""
        head = 0 if self.tie_word_embeddings else self.embedding_params
        return self.embedding_params + self.num_layers * self.layer_params + self.hidden_size + head

    @property
    def num_params(self) -> int:
        """Total parameters: the decoder's and the vision tower's (``model.num_parameters()``)."""
        return self.text_params + (self.vision.num_params if self.vision else 0)

    def lora_params(self, rank: int) -> int:
        """Adapter parameters of peft LoRA on all seven projections of every decoder layer (``A``:
        in x r, ``B``: r x out; peft's ``target_modules="all-linear"`` leaves the LM head out; a
        trained vision tower's adapters are :meth:`VisionArch.lora_params`)."""
        return self.num_layers * rank * sum(a + b for a, b in self.linear_shapes())

    @classmethod
    def from_hf_config(cls, config: Mapping[str, Any], name: str | None = None) -> ModelArch:
        """Read a ``config.json`` dict (Qwen2 / Llama / Mistral style keys). A vision-language
        model's decoder is its ``text_config`` (or the top level, in Qwen2-VL's original flat
        files) and its ``vision_config`` the tower (:meth:`VisionArch.from_hf_config`)."""
        top = dict(config)
        config = dict(top.get("text_config") or top)
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
        vision = top.get("vision_config")
        tower = None
        if vision:
            tower = VisionArch.from_hf_config(
                vision, model_type=str(top.get("model_type", "")), text_hidden=hidden
            )
        return cls(
            name=name
            or top.get("_name_or_path")
            or config.get("_name_or_path")
            or top.get("model_type")
            or model_type
            or "model",
            hidden_size=int(config["hidden_size"]),
            intermediate_size=int(config["intermediate_size"]),
            num_layers=int(config["num_hidden_layers"]),
            num_heads=int(config["num_attention_heads"]),
            num_kv_heads=int(config.get("num_key_value_heads") or config["num_attention_heads"]),
            vocab_size=int(config["vocab_size"]),
            head_dim=head_dim if head_dim != hidden // heads else None,
            # a VLM ties when either level says so (transformers' Qwen2VLConfig does the same)
            tie_word_embeddings=bool(
                top.get("tie_word_embeddings") or config.get("tie_word_embeddings", False)
            ),
            qkv_bias=bool(config.get("attention_bias", model_type.startswith("qwen2"))),
            mlp_bias=bool(config.get("mlp_bias", False)),
            vision=tower,
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


def _qwen2_vl_tower(out_hidden_size: int) -> VisionArch:
    # Qwen2-VL's vision_config: depth 32, embed_dim 1280, num_heads 16, mlp_ratio 4
    return VisionArch("qwen2_vl", 32, 1280, 16, 5120, out_hidden_size)


def _qwen2_5_vl_tower(out_hidden_size: int) -> VisionArch:
    # Qwen2.5-VL's vision_config: depth 32, hidden_size 1280, num_heads 16, intermediate_size 3420,
    # window_size 112, fullatt_block_indexes [7, 15, 23, 31], hidden_act silu
    return VisionArch(
        "qwen2_5_vl", 32, 1280, 16, 3420, out_hidden_size, 14, 2, 2, 3, "silu", 112, (7, 15, 23, 31)
    )


#: Vision-language models (Qwen2-VL's layout): the decoder's numbers as in ``_PUBLISHED`` (from
#: ``config.json``'s ``text_config``, or its top level in the original flat files), then the
#: tower's (its ``vision_config``; the merger projects to the decoder's width). Parameter counts,
#: the whole model's, in the comments.
_PUBLISHED_VL: list[tuple[str, int, int, int, int, int, int, bool, bool, VisionArch]] = [
    ("Qwen2-VL-2B-Instruct", 1536, 8960, 28, 12, 2, 151936, True, True, _qwen2_vl_tower(1536)),
    # 2,208,985,600 (tower 665,271,296)
    ("Qwen2-VL-7B-Instruct", 3584, 18944, 28, 28, 4, 152064, False, True, _qwen2_vl_tower(3584)),
    # 8,291,375,616 (tower 675,759,104)
    ("Qwen2.5-VL-3B-Instruct", 2048, 11008, 36, 16, 2, 151936, True, True, _qwen2_5_vl_tower(2048)),
    # 3,754,622,976 (tower 668,684,288)
    (
        "Qwen2.5-VL-7B-Instruct",
        3584,
        18944,
        28,
        28,
        4,
        152064,
        False,
        True,
        _qwen2_5_vl_tower(3584),
    ),
    # 8,292,166,656 (tower 676,550,144)
    # the repo's random VLM (learners/llm/tiny_vl.py defaults, the tiny tokenizer + 4 image marks)
    ("tiny-vl", 64, 128, 2, 2, 2, 516, True, True, VisionArch("qwen2_vl", 2, 64, 2, 128, 64)),
    # 340,224 (tower 224,576)
]

#: The built-in architectures by name (see ``_PUBLISHED`` and ``_PUBLISHED_VL`` for the numbers
#: and their source).
ARCHITECTURES: dict[str, ModelArch] = {
    row[0]: ModelArch(*row[:7], tie_word_embeddings=row[7], qkv_bias=row[8]) for row in _PUBLISHED
}
ARCHITECTURES.update(
    (row[0], ModelArch(*row[:7], tie_word_embeddings=row[7], qkv_bias=row[8], vision=row[9]))
    for row in _PUBLISHED_VL
)

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
