"""Batched sampling with HF ``generate`` (CPU or GPU), and what every sampling backend shares.

This module holds:

* :class:`Sample` - one response: token ids (ending with the stop token or the stop string when it
  stopped), the per-token log-probabilities of the sampling policy, the decoded text, and whether
  it was truncated (hit ``max_new_tokens`` without stopping).
* :class:`HFGenerator` - left-padded batches through ``model.generate``.
* :class:`SampledLogprobs` - the logits processor that records the sampled tokens' log-probs.
* :func:`response_end` and :func:`trim_response` - the backend-independent bookkeeping.

The vLLM backend lives in :mod:`agentenvs.learners.llm.vllm_generator`. Every backend has the same methods:
``generate``, ``score`` (temperature-1 log-probs of given responses under the backend's current
weights, for the trainer's sync check), ``sync_weights`` (after each update), ``sleep`` /
``wake_up`` (around the update) and ``exact_logprobs`` (whether ``generate``'s log-probs are the
trainer's; if not, the trainer recomputes the PPO "old" log-probs).

Both backends' ``generate(prompt_ids, *, greedy=False, stop=(), images=None)`` take stop
strings (an env prompt's ``AgentPrompt.stop``, e.g. ``("</action>",)``): a response ends right
after the first one, which belongs to the response (HF: transformers' ``StopStringCriteria``;
vLLM: ``stop`` with ``include_stop_str_in_output``), as it ends after a stop token (EOS). Token
ids, log-probs and text stay consistent: the text is the decoded token ids, so when the token that
completes a stop string reaches past it (a token such as ``">\n"``), its tail stays in the text.
``images``: each prompt's images, for a vision-language policy (``Policy.images``; tested on HF,
the vLLM requests are built but unverified on the engine, docs/visual-agents.md); a caller passes
it only when some prompt has one, so a backend without images needs no such argument.

Log-probabilities are ``log softmax(logits / temperature)`` of the sampled token (the full,
temperature-scaled distribution; with ``top_p < 1`` this is the distribution before truncation, as
verl's recomputed ``old_log_prob``). Greedy decoding reports temperature-1 log-probabilities.
HF generation keeps them on the device as it goes (:class:`SampledLogprobs`, one float per row and
step) instead of asking ``generate`` for every step's full-vocabulary logits; it runs in the
model's dtype. Temperature and top-p are applied by that processor, and every other sampling
setting a model's ``generation_config.json`` may carry (top-k, repetition penalty, ...) is
neutralised, so the sampling distribution is exactly the one the log-probabilities describe.

>>> trim_response([7, 8, 2, 0, 0], [-0.1, -0.2, -0.3, 0.0, 0.0], stop_ids=[2], pad_id=0)
([7, 8, 2], [-0.1, -0.2, -0.3])
>>> letters = lambda ids: "".join("abcdefgh"[i] for i in ids)
>>> trim_response([0, 1, 2, 3, 4], [-1.0] * 5, [7], 6, stop=("cd",), decode=letters)
([0, 1, 2, 3], [-1.0, -1.0, -1.0, -1.0])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from agentenvs.learners.llm.policy import (
    Policy,
    cache_kwargs,
    common_prefix_length,
    prefix_cache,
    response_logprobs,
)
from agentenvs.learners.llm.vision import mark_ids, vision_kwargs

__all__ = ["Sample", "HFGenerator", "SampledLogprobs", "response_end", "trim_response"]


@dataclass
class Sample:
    """One sampled response: ``token_ids`` and ``logprobs`` have the same length.

    ``truncated``: the response hit the token budget without a stop token or stop string.
    """

    token_ids: list[int]
    logprobs: list[float]
    text: str
    truncated: bool = False


def response_end(
    token_ids: Sequence[int],
    stop_ids: Sequence[int],
    stop: Sequence[str] = (),
    decode: Callable[[list[int]], str] | None = None,
) -> int | None:
    """Length of a response through its first stop token or through the token that completes its
    first stop string (found in ``decode`` of the ids), whichever comes first; ``None`` if neither.

    >>> response_end([5, 2, 9], stop_ids=[2]), response_end([5, 9], stop_ids=[2])
    (2, None)
    """
    ids = list(token_ids)
    end = next((i + 1 for i, t in enumerate(ids) if t in stop_ids), None)
    if not stop or decode is None:
        return end
    limit = len(ids) if end is None else end

    def found(k: int) -> bool:
        text = decode(ids[:k])
        return any(s in text for s in stop)

    if not found(limit):
        return end
    lo, hi = 1, limit  # the shortest prefix holding a stop string (containment grows with k)
    while lo < hi:
        mid = (lo + hi) // 2
        if found(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def trim_response(
    token_ids: Sequence[int],
    logprobs: Sequence[float],
    stop_ids: Sequence[int],
    pad_id: int,
    stop: Sequence[str] = (),
    decode: Callable[[list[int]], str] | None = None,
) -> tuple[list[int], list[float]]:
    """Cut a generated row after its first stop token or stop string (kept; see
    :func:`response_end`), or drop trailing padding when it has neither."""
    return _cut(token_ids, logprobs, response_end(token_ids, stop_ids, stop, decode), pad_id)


def _cut(
    token_ids: Sequence[int], logprobs: Sequence[float], end: int | None, pad_id: int
) -> tuple[list[int], list[float]]:
    ids = list(token_ids)
    if end is None:
        end = len(ids)
        while end > 0 and ids[end - 1] == pad_id:
            end -= 1
    return ids[:end], list(logprobs[:end])


class SampledLogprobs:
    """A ``generate`` logits processor: scores ``log softmax(logits / temperature)`` (top-p
    filtered when ``top_p < 1``) and records, per row, the log-prob of each chosen token.

    The token of step ``t`` is chosen after the processor ran, so it is read at step ``t + 1``
    (the last column of ``input_ids``) from the stored log-softmax, and the last one by
    :meth:`finish`. Only one ``(rows, V)`` float32 tensor is kept between steps.

    >>> proc = SampledLogprobs(temperature=1.0)
    >>> scores = proc(torch.tensor([[5]]), torch.log(torch.tensor([[0.25, 0.75]])))
    >>> _ = proc(torch.tensor([[5, 1]]), torch.zeros(1, 2))  # token 1 was chosen at step 0
    >>> proc.finish(torch.tensor([[5, 1, 0]])).exp()  # then token 0 at step 1
    tensor([[0.7500, 0.5000]])
    """

    def __init__(self, temperature: float = 1.0, top_p: float = 1.0) -> None:
        from transformers import TopPLogitsWarper

        self.temperature = temperature
        self.top_p = TopPLogitsWarper(top_p) if top_p < 1.0 else None
        self.steps: list[torch.Tensor] = []
        self._last: torch.Tensor | None = None

    def _record(self, chosen: torch.Tensor) -> None:
        if self._last is not None:
            self.steps.append(self._last.gather(-1, chosen.unsqueeze(-1)).squeeze(-1))

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        self._record(input_ids[:, -1])
        self._last = torch.log_softmax(scores.float() / self.temperature, dim=-1)
        return self._last if self.top_p is None else self.top_p(input_ids, self._last)

    def finish(self, sequences: torch.Tensor) -> torch.Tensor:
        """The ``(rows, steps)`` log-probs, given ``generate``'s output (the last token read)."""
        self._record(sequences[:, -1])
        self._last = None
        return torch.stack(self.steps, dim=1)


#: ``generate`` settings that switch off what a model's ``generation_config.json`` may add to
#: sampling (unset fields are filled from it): temperature and top-p are applied by
#: :class:`SampledLogprobs` instead.
_NEUTRAL_SAMPLING = dict(
    temperature=1.0,
    top_p=1.0,
    top_k=0,
    typical_p=1.0,
    repetition_penalty=1.0,
    no_repeat_ngram_size=0,
)


class HFGenerator:
    """Sample with ``transformers`` ``generate`` in chunks of ``batch_size`` prompts.

    Args:
        policy: the policy to sample from (its current weights; nothing to sync).
        max_new_tokens: response budget in tokens.
        temperature: sampling temperature; 0 means greedy.
        top_p: nucleus sampling mass (1.0 = off).
        batch_size: prompts per ``generate`` call (bounds memory).
        prefix_cache: compute the prompts' common token prefix once per call and share its KV cache
            (rows are laid out ``[prefix][padding][rest]``; results equal the plain path up to
            float rounding). Group members and per-env prompt templates share long prefixes.
        min_shared_prefix: shortest common prefix (tokens) worth caching.
    """

    def __init__(
        self,
        policy: Policy,
        *,
        max_new_tokens: int = 64,
        temperature: float = 1.0,
        top_p: float = 1.0,
        batch_size: int = 32,
        prefix_cache: bool = True,
        min_shared_prefix: int = 16,
    ) -> None:
        self.policy = policy
        self.prefix_cache = prefix_cache
        self.min_shared_prefix = min_shared_prefix
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.batch_size = batch_size
        self._criteria: dict[tuple[str, ...], Any] = {}

    #: ``generate``'s log-probs are the trainer's (the same model, the full distribution).
    exact_logprobs = True

    def sync_weights(self) -> None:
        """Nothing to do: HF generation uses the training model itself."""

    def sleep(self) -> None:
        """Nothing to free: the generator holds no memory of its own between calls."""

    def wake_up(self) -> None:
        """Nothing to restore (see :meth:`sleep`)."""

    def score(
        self,
        prompts: Sequence[Sequence[int]],
        responses: Sequence[Sequence[int]],
        images: Sequence[Sequence[Any]] | None = None,
    ) -> list[list[float]]:
        """Temperature-1 log-probs of each response token given its prompt (and its images), one
        list per pair."""
        return response_logprobs(
            self.policy, prompts, responses, batch_size=self.batch_size, images=images
        )

    def _stop_criteria(self, stop: tuple[str, ...]) -> Any:
        """transformers' ``StopStringCriteria`` for ``stop``, built once per stop tuple (building
        it scans the vocabulary: about half a second for a 49k-token one)."""
        from transformers import StoppingCriteriaList, StopStringCriteria

        if not stop:
            return None
        if stop not in self._criteria:
            self._criteria[stop] = StopStringCriteria(self.policy.tokenizer, list(stop))
        return StoppingCriteriaList([self._criteria[stop]])

    @torch.no_grad()
    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        *,
        greedy: bool = False,
        stop: Sequence[str] = (),
        images: Sequence[Sequence[Any]] | None = None,
    ) -> list[Sample]:
        """One :class:`Sample` per prompt; a row also stops right after any string of ``stop``.
        ``images``: each prompt's images (a vision-language policy), or ``None``."""
        out: list[Sample] = []
        for start in range(0, len(prompts), self.batch_size):
            chunk = slice(start, start + self.batch_size)
            pixels = self.policy.pixels(None if images is None else images[chunk])
            out.extend(self._generate_chunk(prompts[chunk], greedy, tuple(stop), pixels))
        return out

    def _generate_chunk(
        self,
        prompts: Sequence[Sequence[int]],
        greedy: bool,
        stop: tuple[str, ...],
        pixels: dict[str, torch.Tensor] | None = None,
    ) -> list[Sample]:
        from transformers import GenerationConfig, LogitsProcessorList

        policy = self.policy
        pad = policy.pad_id
        was_training = policy.model.training
        policy.model.eval()
        shared = common_prefix_length(prompts) if self.prefix_cache and pixels is None else 0
        if shared < self.min_shared_prefix:
            shared = 0
        cache = None
        if shared:  # run the shared prefix once and give every row a copy of its KV cache
            with torch.no_grad():
                head = torch.as_tensor([list(prompts[0][:shared])], device=policy.device)
                cache = prefix_cache(policy.model, head)
            cache.batch_repeat_interleave(len(prompts))
        width = max(len(p) for p in prompts) - shared
        ids = torch.full((len(prompts), shared + width), pad, dtype=torch.long)
        attn = torch.zeros_like(ids)
        for i, p in enumerate(prompts):
            ids[i, :shared] = torch.as_tensor(list(p[:shared]), dtype=torch.long)
            attn[i, :shared] = 1
            tail = list(p[shared:])
            ids[i, shared + width - len(tail) :] = torch.as_tensor(tail, dtype=torch.long)
            attn[i, shared + width - len(tail) :] = 1
        width += shared
        sample = not greedy and self.temperature > 0
        config = GenerationConfig(
            max_new_tokens=self.max_new_tokens,
            do_sample=sample,
            eos_token_id=policy.stop_ids,
            pad_token_id=pad,
            suppress_tokens=mark_ids(policy.model) or None,  # a VLM's image marks
            # top_k only matters (and is only accepted without a warning) when sampling
            **{k: v for k, v in _NEUTRAL_SAMPLING.items() if sample or k != "top_k"},
        )
        record = SampledLogprobs(self.temperature, self.top_p) if sample else SampledLogprobs()
        ids = ids.to(policy.device)
        try:
            sequences = policy.model.generate(
                input_ids=ids,
                attention_mask=attn.to(policy.device),
                **vision_kwargs(policy.model, ids, pixels),
                **cache_kwargs(policy.model, cache),
                generation_config=config,
                logits_processor=LogitsProcessorList([record]),
                stopping_criteria=self._stop_criteria(stop),
            )
        finally:
            policy.model.train(was_training)
        tokens = sequences[:, width:]
        logp = record.finish(sequences)[:, : tokens.shape[1]].cpu()
        tokens = tokens.cpu()

        def decode(row: list[int]) -> str:
            return policy.tokenizer.decode(row, skip_special_tokens=True)

        samples = []
        for row_ids, row_lp in zip(tokens.tolist(), logp.tolist(), strict=True):
            # a finished row is padded up to the longest one: cut at its stop (token or string)
            end = response_end(row_ids, policy.stop_ids, stop, decode)
            kept, lps = _cut(row_ids, row_lp, end, pad)
            truncated = end is None and len(kept) >= self.max_new_tokens
            samples.append(Sample(kept, lps, decode(kept), truncated))
        return samples
