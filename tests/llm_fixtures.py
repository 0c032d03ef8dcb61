"""The tiny test model's tokenizer and policies, and a check of the report's intervals, shared by
the LLM test modules (no tests here).

Import it after ``pytest.importorskip("torch")`` (and ``transformers``): it imports both.
The ``tiny_dir`` fixture (the tiny model saved as a Hugging Face directory) is in conftest.py.
"""

from __future__ import annotations

import functools
import re

from agentenvs.learners.llm.policy import Policy
from agentenvs.learners.llm.tiny import build_tiny_model, build_tiny_tokenizer
from agentenvs.learners.llm.tiny_vl import (
    build_tiny_image_processor,
    build_tiny_vl_model,
    build_tiny_vl_tokenizer,
)
from agentenvs.learners.llm.vision import ImageInputs

__all__ = ["tiny_policy", "tiny_tokenizer", "tiny_vl_policy", "assert_intervals_in_range"]


@functools.cache
def tiny_tokenizer():
    """The tiny model's tokenizer, built once per process (it is never modified)."""
    return build_tiny_tokenizer()


def tiny_policy(seed: int = 0) -> Policy:
    """A fresh tiny model (weights drawn from ``seed``) with :func:`tiny_tokenizer`."""
    return Policy(build_tiny_model(tiny_tokenizer(), seed=seed), tiny_tokenizer())


def tiny_vl_policy(seed: int = 0) -> Policy:
    """A fresh tiny vision-language model (weights drawn from ``seed``), its tokenizer and image
    processor; every parameter trains (the vision tower too)."""
    tok = build_tiny_vl_tokenizer()
    images = ImageInputs(build_tiny_image_processor(), tok)
    return Policy(build_tiny_vl_model(tok, seed=seed), tok, images=images)


#: A report line's gain and its interval: ``gain +0.250 (95% interval -0.010 to +0.480)``.
GAIN = re.compile(r"gain ([+-]\d\.\d+) \(95% interval ([+-]\d\.\d+) to ([+-]\d\.\d+)\)")


def assert_intervals_in_range(lines: list[str]) -> int:
    """Every gain on ``lines`` lies in its interval, inside [-1, 1]; returns how many there were."""
    found = [tuple(map(float, m)) for line in lines for m in GAIN.findall(line)]
    for gain, low, high in found:
        assert -1.0 <= low <= gain <= high <= 1.0, (gain, low, high)
    return len(found)
