"""The PPO-clip objective over response tokens, as pure tensor functions.

This module holds:

* :func:`token_logprobs` - log-probabilities of given tokens under temperature-scaled logits.
* :func:`entropy_from_logits` - per-token entropy of the same distribution.
* :func:`broadcast_advantages` - one advantage per step-sample, repeated over its response tokens.
* :func:`kl_k3` - the low-variance ("k3") KL estimator to a frozen reference, clamped like verl.
* :func:`ppo_clip_loss` - the clipped surrogate, summed over masked tokens.
* :func:`ppo_objective` - policy loss + KL penalty, normalised by a token count (``token-mean``).

Shapes: ``(B, T)`` for per-token tensors (``B`` step-samples, ``T`` response positions), ``mask``
is 1.0 on response tokens and 0.0 on padding. Prompt tokens never enter these tensors.
Losses are returned *summed* over tokens and divided by ``num_tokens`` supplied by the caller, so
gradient accumulation over micro-batches gives exactly the full-batch token mean.

>>> import torch
>>> lp = torch.log(torch.tensor([[0.5, 0.5]]))
>>> old = torch.log(torch.tensor([[0.25, 0.5]]))  # ratio 2 on the first token, 1 on the second
>>> loss, stats = ppo_objective(lp, old, old, torch.tensor([[1.0, 1.0]]), torch.ones(1, 2), 2.0,
...                             clip_ratio=0.2, kl_coef=0.0)
>>> round(loss.item(), 4), stats["clip_frac"]
(-1.1, 0.5)
"""

from __future__ import annotations

import torch

__all__ = [
    "token_logprobs",
    "entropy_from_logits",
    "broadcast_advantages",
    "kl_k3",
    "ppo_clip_loss",
    "ppo_objective",
]


def token_logprobs(
    logits: torch.Tensor, tokens: torch.Tensor, temperature: float = 1.0
) -> torch.Tensor:
    """``log softmax(logits / temperature)[tokens]``: logits ``(B, T, V)``, tokens ``(B, T)`` -> ``(B, T)``."""
    logp = torch.log_softmax(logits.float() / temperature, dim=-1)
    return logp.gather(-1, tokens.long().unsqueeze(-1)).squeeze(-1)


def entropy_from_logits(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Entropy (nats) of ``softmax(logits / temperature)``: ``(B, T, V)`` -> ``(B, T)``."""
    logp = torch.log_softmax(logits.float() / temperature, dim=-1)
    return -(logp.exp() * logp).sum(-1)


def broadcast_advantages(advantages: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Repeat each step's advantage ``(B,)`` over its response tokens: ``(B, T)``, zero on padding.

    >>> broadcast_advantages(torch.tensor([2.0, -1.0]), torch.tensor([[1.0, 1.0], [1.0, 0.0]]))
    tensor([[ 2.,  2.],
            [-1., -0.]])
    """
    return advantages.float().unsqueeze(-1) * mask


def kl_k3(logprobs: torch.Tensor, ref_logprobs: torch.Tensor, bound: float = 10.0) -> torch.Tensor:
    """Schulman's k3 estimate of KL(pi || ref) per token: ``exp(r) - r - 1`` with ``r = ref - logp``.

    Non-negative, unbiased for the KL when tokens are sampled from pi; clamped to ``[-bound, bound]``
    as verl's ``low_var_kl``.

    >>> kl_k3(torch.tensor([0.0]), torch.log(torch.tensor([0.5])))
    tensor([0.1931])
    """
    r = ref_logprobs - logprobs
    return torch.clamp(torch.exp(r) - r - 1.0, min=-bound, max=bound)


def ppo_clip_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_ratio: float = 0.2,
    clip_ratio_high: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed clipped surrogate ``-min(r A, clip(r, 1-e, 1+e_high) A)`` over masked tokens.

    ``advantages`` is per token ``(B, T)`` (see :func:`broadcast_advantages`). Returns the sum and the
    number of masked tokens where clipping was active (the min chose the clipped term).
    """
    ratio = torch.exp(logprobs - old_logprobs)
    high = clip_ratio if clip_ratio_high is None else clip_ratio_high
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1.0 - clip_ratio, 1.0 + high)
    per_token = torch.maximum(unclipped, clipped)
    clipped_count = ((clipped > unclipped).float() * mask).sum()
    return (per_token * mask).sum(), clipped_count


def ppo_objective(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    ref_logprobs: torch.Tensor | None,
    token_advantages: torch.Tensor,
    mask: torch.Tensor,
    num_tokens: float,
    *,
    clip_ratio: float = 0.2,
    clip_ratio_high: float | None = None,
    kl_coef: float = 0.01,
) -> tuple[torch.Tensor, dict[str, float]]:
    """``(pg_sum + kl_coef * kl_sum) / num_tokens`` and its parts as floats (also per ``num_tokens``).

    ``ref_logprobs`` may be ``None`` when ``kl_coef`` is 0.
    """
    pg_sum, clipped = ppo_clip_loss(
        logprobs, old_logprobs, token_advantages, mask, clip_ratio, clip_ratio_high
    )
    loss = pg_sum
    kl_sum = torch.zeros(())
    if kl_coef and ref_logprobs is not None:
        kl_sum = (kl_k3(logprobs, ref_logprobs) * mask).sum()
        loss = loss + kl_coef * kl_sum
    stats = {
        "pg_loss": pg_sum.item() / num_tokens,
        "kl": kl_sum.item() / num_tokens,
        "clip_frac": clipped.item() / num_tokens,
    }
    return loss / num_tokens, stats
