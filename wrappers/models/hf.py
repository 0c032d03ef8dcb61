"""Local Hugging Face causal LMs for the model-based credit methods (TRIAGE's judge, SPA's and
HISR's estimators, HISR's scorers).

This module holds:

* :func:`is_model_dir` - whether a path is a local HF model directory (it has ``config.json``).
* :func:`check_model_dir` - the same, raising a clear error otherwise.
* :func:`default_device` - the device to use: the one asked for, else CUDA when available.
* :func:`load_causal_lm` - tokenizer and model from a directory, on a device, in eval mode.

Nothing is ever downloaded: a model is a directory the user provides. torch and transformers are
imported only when a model is loaded.

>>> is_model_dir("/nonexistent"), check_model_dir.__name__
(False, 'check_model_dir')
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["is_model_dir", "check_model_dir", "default_device", "load_causal_lm"]


def is_model_dir(path: str | Path) -> bool:
    """``path`` is a directory holding ``config.json`` (``~`` expanded)."""
    return (Path(path).expanduser() / "config.json").is_file()


def check_model_dir(path: str | Path) -> Path:
    """``path`` (``~`` expanded) when :func:`is_model_dir`; ``ValueError`` (a bad model spec)
    otherwise."""
    path = Path(path).expanduser()
    if not is_model_dir(path):
        raise ValueError(f"{path} is not a local HF model directory (no config.json)")
    return path


def default_device(device: str | None = None) -> str:
    """``device`` when given, else ``"cuda"`` when torch sees a GPU, else ``"cpu"``."""
    if device is not None:
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load_causal_lm(
    path: str | Path, device: str | None = None, dtype: str | None = None
) -> tuple[Any, Any]:
    """``(model, tokenizer)`` of the causal LM in directory ``path``: the model on ``device``
    (:func:`default_device`), in eval mode, in ``dtype`` (a torch dtype name such as
    ``"bfloat16"``; ``None``: as saved)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = check_model_dir(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    options = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    model = AutoModelForCausalLM.from_pretrained(path, **options)
    # transformers types .to() through a decorator that loses the bound model
    return model.to(default_device(device)).eval(), tokenizer  # type: ignore[arg-type]
