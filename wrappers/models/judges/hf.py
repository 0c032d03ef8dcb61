"""A judge that runs a local Hugging Face causal LM (transformers), batched and greedy.

This module holds :class:`HFJudge`. torch and transformers are imported when the judge is built,
never at ``import agentenvs.wrappers``. Decoding is in docs/triage.md, section 5.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentenvs.wrappers.models.hf import default_device, load_causal_lm
from agentenvs.wrappers.models.judges.prompt import judge_messages, parse_judge_output
from agentenvs.wrappers.models.judges.request import JudgeRequest, JudgeResult, JudgeUsage

__all__ = ["HFJudge"]


class HFJudge:
    """Label requests with a local causal LM (a Hugging Face model directory).

    Args:
        model: a model directory (``config.json`` and tokenizer files), or a loaded model.
        tokenizer: the tokenizer when ``model`` is a loaded model (else loaded from the directory).
        max_new_tokens: generation budget per request (default 512; thinking judges need more).
        batch_size: requests generated together (left-padded), default 8.
        device: ``"cpu"``, ``"cuda"``...; default: CUDA when available.
        thinking: passed to the chat template as ``enable_thinking`` (Qwen3 templates read it;
            others ignore it).

    The prompt is :func:`~agentenvs.wrappers.models.judges.prompt.judge_messages` rendered with the tokenizer's
    chat template when it has one (plain text otherwise). Decoding is greedy. Each result counts
    its prompt tokens plus the tokens generated up to the end-of-sequence token. A batch that
    fails to generate (e.g. out of memory) gives ``role=None`` for its requests; it does not
    raise. :attr:`usage` keeps the totals.
    """

    def __init__(
        self,
        model: str | Path | Any,
        tokenizer: Any = None,
        *,
        max_new_tokens: int = 512,
        batch_size: int = 8,
        device: str | None = None,
        thinking: bool = True,
    ) -> None:
        if max_new_tokens < 1 or batch_size < 1:
            raise ValueError("max_new_tokens and batch_size must be >= 1")
        if isinstance(model, (str, Path)):
            self.name = str(model)
            model, loaded = load_causal_lm(model, device)
            tokenizer = tokenizer or loaded
        elif tokenizer is None:
            raise ValueError("pass the tokenizer with a loaded model")
        else:
            self.name = type(model).__name__
        self.device = default_device(device)
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.thinking = thinking
        self.usage = JudgeUsage()

    def prompt_text(self, request: JudgeRequest) -> str:
        """The exact text fed to the model for ``request``."""
        messages = judge_messages(request)
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True, enable_thinking=self.thinking
            )
        return messages[0]["content"]

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeResult]:
        start = time.perf_counter()
        results: list[JudgeResult] = []
        for i in range(0, len(requests), self.batch_size):
            results += self._batch(requests[i : i + self.batch_size])
        mode = requests[0].mode if requests else "roles"
        self.usage.add(results, time.perf_counter() - start, mode)
        return results

    def _batch(self, requests: Sequence[JudgeRequest]) -> list[JudgeResult]:
        import torch

        texts = [self.prompt_text(r) for r in requests]
        try:
            enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
            enc = {k: v.to(self.device) for k, v in enc.items()}
            with torch.no_grad():
                out = self.model.generate(
                    **enc,
                    max_new_tokens=self.max_new_tokens,
                    do_sample=False,
                    pad_token_id=self.tokenizer.pad_token_id,
                )
        except (RuntimeError, ValueError) as error:  # OOM, bad inputs: fall back, never raise
            return [JudgeResult(None, raw=f"generation failed: {error}") for _ in requests]
        width = enc["input_ids"].shape[1]
        prompt_tokens = enc["attention_mask"].sum(dim=1).tolist()
        eos = self.tokenizer.eos_token_id
        results = []
        for request, row, n_prompt in zip(
            requests, out[:, width:].tolist(), prompt_tokens, strict=True
        ):
            if eos in row:
                row = row[: row.index(eos) + 1]
            text = self.tokenizer.decode(row, skip_special_tokens=True)
            result = parse_judge_output(text, request.current_index)
            result.tokens = int(n_prompt) + len(row)
            results.append(result)
        return results

    def __repr__(self) -> str:
        return f"HFJudge({self.name!r}, max_new_tokens={self.max_new_tokens})"
