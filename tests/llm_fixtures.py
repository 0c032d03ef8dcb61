"""The tiny test model's tokenizer and policies, shared by the LLM test modules (no tests here).

Import it after ``pytest.importorskip("torch")`` (and ``transformers``): it imports both.
The ``tiny_dir`` fixture (the tiny model saved as a Hugging Face directory) is in conftest.py.
"""

from __future__ import annotations

import functools

from learners.llm.policy import Policy
from learners.llm.tiny import build_tiny_model, build_tiny_tokenizer

__all__ = ["tiny_policy", "tiny_tokenizer"]


@functools.cache
def tiny_tokenizer():
    """The tiny model's tokenizer, built once per process (it is never modified)."""
    return build_tiny_tokenizer()


def tiny_policy(seed: int = 0) -> Policy:
    """A fresh tiny model (weights drawn from ``seed``) with :func:`tiny_tokenizer`."""
    return Policy(build_tiny_model(tiny_tokenizer(), seed=seed), tiny_tokenizer())
