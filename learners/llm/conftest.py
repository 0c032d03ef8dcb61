"""Doctest collection guard: without the ``llm`` extra (torch, transformers) skip these modules."""

import importlib.util

collect_ignore_glob = (
    []
    if all(importlib.util.find_spec(m) for m in ("torch", "transformers", "tokenizers"))
    else ["*.py"]
)
