"""Images in the LLM learner: a vision-language policy's image side, from prompt to forward pass.

This module holds:

* :class:`ImageInputs` - a VLM's image processor and image tokens: it checks a step's images,
  expands the prompt's image marks into the model's image tokens (:meth:`ImageInputs.expand`,
  undone by :meth:`ImageInputs.collapse`) and
  turns the images of a batch of rows into the model's pixel inputs (:meth:`ImageInputs.pixels`).
* :func:`vision_kwargs` - the keyword arguments a VLM forward or ``generate`` takes for those
  pixel inputs (``pixel_values``, ``image_grid_thw`` and the image-token mask).
* :func:`mark_ids` and :func:`mask_marks` - the image and video marks a response may not hold
  (sampling suppresses them; training's logits exclude them, so both see one distribution).
* :func:`images_of` - the images of each step's prompt (``Step.extras["images"]``).
* :func:`is_vision_config` - whether a model config is a vision-language one.
* :func:`check_modalities` - a one-line error when a text model meets an image env or a VLM a
  text env.

The layout is Qwen2-VL's (Qwen2-VL and Qwen2.5-VL): a prompt's image is
``<|vision_start|>``, ``n`` copies of ``<|image_pad|>``, ``<|vision_end|>``, where ``n`` is the
image's patch grid ``t * h * w`` over ``merge_size ** 2``; a batch's pixel inputs are the rows'
images concatenated in row order (``pixel_values`` ``(patches, channels * t * patch ** 2)``,
``image_grid_thw`` ``(images, 3)``), so rows with different numbers of images batch together.
Images are stored with each step as the env gave them (uint8 ``(H, W, 3)``) and encoded again
wherever a batch needs them: the processor is deterministic, so the pixels the update sees are
the pixels the sample was drawn from.

>>> import numpy as np
>>> from agentenvs.learners.llm.tiny_vl import build_tiny_image_processor, build_tiny_vl_tokenizer
>>> tok = build_tiny_vl_tokenizer()
>>> inputs = ImageInputs(build_tiny_image_processor(), tok)
>>> board = np.zeros((96, 96, 3), np.uint8)
>>> ids = tok.encode(inputs.mark, add_special_tokens=False)
>>> expanded = inputs.expand(ids, [board])  # 9 image tokens for a 96x96 board
>>> len(ids), len(expanded), inputs.collapse(expanded) == ids
(3, 11, True)
>>> {k: tuple(v.shape) for k, v in inputs.pixels([[board], [], [board]]).items()}
{'pixel_values': (72, 1176), 'image_grid_thw': (2, 3)}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

__all__ = [
    "ImageInputs",
    "vision_kwargs",
    "mark_ids",
    "mask_marks",
    "images_of",
    "is_vision_config",
    "check_modalities",
]

#: The config fields naming the marks a response may not hold (Qwen2-VL's names).
_MARK_FIELDS = ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")


def is_vision_config(config: Any) -> bool:
    """Whether ``config`` (a transformers config) is a vision-language model's."""
    return getattr(config, "vision_config", None) is not None


class ImageInputs:
    """A VLM's image processor and its image tokens (Qwen2-VL's layout, see the module docs).

    Args:
        processor: the model's image processor (``AutoImageProcessor.from_pretrained``).
        tokenizer: the model's tokenizer; it must know ``<|vision_start|>``, ``<|image_pad|>``
            and ``<|vision_end|>``.
    """

    #: The marks one image takes in a prompt's text before expansion.
    mark = "<|vision_start|><|image_pad|><|vision_end|>"

    def __init__(self, processor: Any, tokenizer: Any) -> None:
        self.processor = processor
        self.image_token_id = int(tokenizer.convert_tokens_to_ids("<|image_pad|>"))
        if self.image_token_id == tokenizer.unk_token_id or self.image_token_id is None:
            raise ValueError("the tokenizer has no <|image_pad|> token: not a Qwen2-VL-style VLM")
        self.merge = int(getattr(processor, "merge_size", 2))

    @staticmethod
    def check(images: Sequence[Any]) -> list[np.ndarray]:
        """``images`` as uint8 ``(H, W, 3)`` arrays, else ``ValueError`` saying which and why."""
        out = []
        for k, image in enumerate(images):
            a = np.asarray(image)
            if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] != 3 or min(a.shape[:2]) < 1:
                raise ValueError(
                    f"image {k} of the prompt must be a uint8 (H, W, 3) RGB array, got "
                    f"{a.dtype} {a.shape}"
                )
            out.append(a)
        return out

    def _encode(self, images: Sequence[np.ndarray]) -> dict[str, torch.Tensor]:
        return dict(self.processor(images=list(images), return_tensors="pt"))

    def expand(self, ids: Sequence[int], images: Sequence[Any]) -> list[int]:
        """``ids`` with its ``k``-th ``<|image_pad|>`` repeated as often as image ``k`` has tokens.

        Raises ``ValueError`` when the prompt's image marks and ``images`` differ in number.
        """
        marks = sum(1 for i in ids if i == self.image_token_id)
        if marks != len(images):
            raise ValueError(
                f"the prompt has {marks} image mark(s) (<image> in its text) and {len(images)} "
                "image(s): an env's AgentPrompt.images must give one image per mark"
            )
        if not images:
            return list(ids)
        grid = self._encode(self.check(images))["image_grid_thw"]
        counts = iter((grid.prod(-1) // self.merge**2).tolist())
        out: list[int] = []
        for i in ids:
            out.extend([i] * next(counts) if i == self.image_token_id else [i])
        return out

    def collapse(self, ids: Sequence[int]) -> list[int]:
        """:meth:`expand` undone: each run of ``<|image_pad|>`` back to one (the form a serving
        engine that expands images itself, such as vLLM, takes)."""
        out: list[int] = []
        for i in ids:
            if not (i == self.image_token_id and out and out[-1] == i):
                out.append(i)
        return out

    def pixels(self, rows: Sequence[Sequence[Any]]) -> dict[str, torch.Tensor] | None:
        """The pixel inputs of the images of ``rows`` (one sequence of images per row), in row
        order; ``None`` when no row has an image."""
        images = [image for row in rows for image in row]
        return self._encode(self.check(images)) if images else None


def _config(model: Any) -> Any:
    base = getattr(model, "module", model)  # DDP's wrapper
    base = base.get_base_model() if hasattr(base, "get_base_model") else base  # peft's
    return base.config


def mark_ids(model: Any) -> list[int]:
    """The token ids of a VLM's image and video marks (``[]`` for a text model). A sampled
    response holding one would claim an image that has no pixels, so responses never do."""
    config = _config(model)
    if not is_vision_config(config):
        return []
    return sorted({int(i) for f in _MARK_FIELDS if (i := getattr(config, f, None)) is not None})


def mask_marks(model: Any, logits: torch.Tensor) -> torch.Tensor:
    """``logits`` ``(..., V)`` with the :func:`mark_ids` columns pushed to a quarter of the dtype's
    lowest value (probability 0, finite entropy): the distribution sampling draws from, where
    ``generate`` suppresses those tokens. Unchanged for a text model."""
    ids = mark_ids(model)
    if not ids:
        return logits
    index = torch.tensor(ids, device=logits.device)
    return logits.index_fill(-1, index, torch.finfo(logits.dtype).min / 4)


def vision_kwargs(
    model: Any, input_ids: torch.Tensor, pixels: dict[str, torch.Tensor] | None
) -> dict[str, Any]:
    """The keywords a Qwen2-VL-style forward or ``generate`` needs for ``pixels`` (``{}`` when
    ``None``): the pixel inputs on ``input_ids``' device and ``mm_token_type_ids`` (1 on image
    tokens), from which the model builds its multimodal rotary positions."""
    if pixels is None:
        return {}
    image_token = _config(model).image_token_id
    moved = {k: v.to(input_ids.device) for k, v in pixels.items()}
    return {**moved, "mm_token_type_ids": (input_ids == image_token).int()}


def images_of(steps: Sequence[Any]) -> list[tuple[np.ndarray, ...]] | None:
    """Each step's prompt images (its ``extras["images"]``, ``()`` where absent), or ``None``
    when no step has any (a text batch)."""
    rows = [tuple(step.extras.get("images", ())) for step in steps]
    return rows if any(rows) else None


def check_modalities(env_id: str, observation_space: Any, model_id: str, vision: bool) -> None:
    """``ValueError`` naming both when ``env_id`` observes images (a ``Dict`` space with an
    ``"image"`` key) and the model ``model_id`` is text-only, or the reverse."""
    keys = getattr(observation_space, "spaces", None)
    visual = isinstance(keys, dict) and "image" in keys
    if visual and not vision:
        raise ValueError(
            f"{env_id} observes images but the model {model_id} is text-only: use a "
            "vision-language model (--model tiny-vl or a local Qwen2-VL directory)"
        )
    if vision and not visual:
        raise ValueError(
            f"the model {model_id} is a vision-language model but {env_id} observes text only: "
            "use a text model, or the env's visual variant"
        )
