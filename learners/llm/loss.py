"""The PPO-clip objective over response tokens, as pure tensor functions (verl's actor loss).

This module holds:

* :func:`token_logprobs` - log-probabilities of given tokens under temperature-scaled logits.
* :func:`entropy_from_logits` - per-token entropy of the same distribution.
* :data:`LOGIT_CHUNK_ELEMENTS` - how many logits those two turn into float32 at a time.
* :func:`broadcast_advantages` - one advantage per step-sample, repeated over its response tokens.
* :func:`kl_k3` - the low-variance ("k3") KL estimator to a frozen reference, clamped like verl.
* :func:`ppo_token_losses` - the per-token clipped surrogate with verl's dual clip for negative
  advantages, and where each clip was active.
* :data:`LOSS_AGG_MODES`, :func:`loss_normaliser` and :func:`aggregate` - verl's loss aggregation
  modes, with the normaliser supplied by the caller (see below).
* :func:`ppo_objective` - policy loss + KL penalty, aggregated by one of the modes.

Shapes: ``(B, T)`` for per-token tensors (``B`` step-samples, ``T`` response positions), ``mask``
is 1.0 on response tokens and 0.0 on padding (and on samples given zero weight). Prompt tokens
never enter these tensors.

Aggregation (``loss_agg_mode``, as verl defines the modes over one mini-batch):

* ``"token-mean"``: the sum over every response token of the mini-batch / its token count;
* ``"seq-mean-token-sum"``: the mean over sequences of each sequence's token sum;
* ``"seq-mean-token-mean"``: the mean over sequences of each sequence's token mean.

:func:`aggregate` returns the *sum* of a micro-batch's contributions divided by ``normaliser``,
the whole mini-batch's token count (token-mean) or sequence count (seq-mean modes), as
:func:`loss_normaliser` gives it; so gradient accumulation over micro-batches gives exactly the
mini-batch loss. A sequence with no unmasked token counts in no mode (verl's ``seq_mask``).

Memory: :func:`token_logprobs` and :func:`entropy_from_logits` never build a float32 copy of the
whole ``(B, T, V)`` logits. They run over blocks of at most :data:`LOGIT_CHUNK_ELEMENTS` logits (a
Qwen vocabulary has 152k entries: a few rows per block), save only the logits (alive anyway) and one
float per token for backward, and recompute each block's softmax in backward. Values and gradients
equal those of ``log_softmax`` (up to float rounding).

Numerics (verl): the log-ratios ``logp - old_logp`` and ``ref_logp - logp`` are clamped to
``[-20, 20]`` before ``exp``, so extreme log-probabilities give finite losses and gradients.

>>> import torch
>>> lp = torch.log(torch.tensor([[0.5, 0.5]]))
>>> old = torch.log(torch.tensor([[0.25, 0.5]]))  # ratio 2 on the first token, 1 on the second
>>> loss, stats = ppo_objective(lp, old, old, torch.tensor([[1.0, 1.0]]), torch.ones(1, 2), 2.0,
...                             clip_ratio=0.2, kl_coef=0.0)
>>> round(loss.item(), 4), stats["clip_frac"]
(-1.1, 0.5)
"""

from __future__ import annotations

from typing import Any

import torch
from agentenvs.learners.llm.config import LOSS_AGG_MODES

__all__ = [
    "LOG_RATIO_BOUND",
    "LOGIT_CHUNK_ELEMENTS",
    "LOSS_AGG_MODES",
    "token_logprobs",
    "entropy_from_logits",
    "broadcast_advantages",
    "kl_k3",
    "ppo_token_losses",
    "loss_normaliser",
    "aggregate",
    "ppo_objective",
]

#: Log-ratios are clamped to ``[-LOG_RATIO_BOUND, LOG_RATIO_BOUND]`` before ``exp`` (verl: 20).
LOG_RATIO_BOUND = 20.0


#: Logits turned into float32 at a time by :func:`token_logprobs` / :func:`entropy_from_logits`
#: (2^24: 64 MiB per float32 temporary; about 110 rows of a 152k vocabulary).
LOGIT_CHUNK_ELEMENTS = 2**24


def _blocks(shape: torch.Size, max_elements: int) -> list[tuple[slice, slice]]:
    """``(rows, columns)`` slices that tile a ``(B, T, V)`` tensor with at most ``max_elements``
    each (whole rows when ``T V`` fits, else pieces of one row; at least one position each).

    >>> _blocks(torch.Size([3, 2, 4]), 16)
    [(slice(0, 2, None), slice(0, 2, None)), (slice(2, 4, None), slice(0, 2, None))]
    >>> _blocks(torch.Size([1, 3, 4]), 8)
    [(slice(0, 1, None), slice(0, 2, None)), (slice(0, 1, None), slice(2, 4, None))]
    """
    b, t, v = shape
    if t * v <= max_elements:
        step = max(1, max_elements // max(t * v, 1))
        return [(slice(i, i + step), slice(0, t)) for i in range(0, b, step)]
    step = max(1, max_elements // v)
    return [(slice(i, i + 1), slice(j, j + step)) for i in range(b) for j in range(0, t, step)]


def _math_dtype(logits: torch.Tensor) -> torch.dtype:
    """float32, or float64 for float64 logits."""
    return torch.promote_types(logits.dtype, torch.float32)


class _TokenLogprobs(torch.autograd.Function):
    """``z[token] - logsumexp(z)`` with ``z = logits / T``, block by block; backward
    ``(onehot - softmax(z)) g / T`` recomputed per block from the saved logits."""

    @staticmethod
    def forward(
        ctx: Any, logits: torch.Tensor, tokens: torch.Tensor, temperature: float, chunk: int
    ) -> torch.Tensor:
        out = torch.empty(tokens.shape, dtype=_math_dtype(logits), device=logits.device)
        lse = torch.empty_like(out)
        for rows, cols in _blocks(logits.shape, chunk):
            z = logits[rows, cols].to(out.dtype) / temperature
            lse[rows, cols] = torch.logsumexp(z, dim=-1)
            picked = z.gather(-1, tokens[rows, cols].unsqueeze(-1)).squeeze(-1)
            out[rows, cols] = picked - lse[rows, cols]
        ctx.save_for_backward(logits, tokens, lse)
        ctx.temperature, ctx.chunk = temperature, chunk
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        logits, tokens, lse = ctx.saved_tensors
        t = ctx.temperature
        out = torch.empty(logits.shape, dtype=logits.dtype, device=logits.device)
        for rows, cols in _blocks(logits.shape, ctx.chunk):
            g = grad[rows, cols].to(lse.dtype).unsqueeze(-1)
            z = torch.exp(logits[rows, cols].to(lse.dtype) / t - lse[rows, cols].unsqueeze(-1))
            z.mul_(-g).scatter_add_(-1, tokens[rows, cols].unsqueeze(-1), g)
            out[rows, cols] = z.div_(t)
        return out, None, None, None


class _Entropy(torch.autograd.Function):
    """``H = logsumexp(z) - sum softmax(z) z`` with ``z = logits / T``, block by block; backward
    ``-p (log p + H) g / T`` recomputed per block."""

    @staticmethod
    def forward(ctx: Any, logits: torch.Tensor, temperature: float, chunk: int) -> torch.Tensor:
        shape = logits.shape[:-1]
        out = torch.empty(shape, dtype=_math_dtype(logits), device=logits.device)
        lse = torch.empty_like(out)
        for rows, cols in _blocks(logits.shape, chunk):
            z = logits[rows, cols].to(out.dtype) / temperature
            lse[rows, cols] = torch.logsumexp(z, dim=-1)
            p = torch.softmax(z, dim=-1)
            out[rows, cols] = lse[rows, cols] - (p * z).sum(-1)
        ctx.save_for_backward(logits, lse, out)
        ctx.temperature, ctx.chunk = temperature, chunk
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        logits, lse, entropy = ctx.saved_tensors
        t = ctx.temperature
        out = torch.empty(logits.shape, dtype=logits.dtype, device=logits.device)
        for rows, cols in _blocks(logits.shape, ctx.chunk):
            logp = logits[rows, cols].to(lse.dtype) / t - lse[rows, cols].unsqueeze(-1)
            scale = grad[rows, cols].to(lse.dtype).unsqueeze(-1) / -t
            out[rows, cols] = logp.exp() * (logp + entropy[rows, cols].unsqueeze(-1)) * scale
        return out, None, None


def token_logprobs(
    logits: torch.Tensor,
    tokens: torch.Tensor,
    temperature: float = 1.0,
    chunk: int = LOGIT_CHUNK_ELEMENTS,
) -> torch.Tensor:
    """``log softmax(logits / temperature)[tokens]``: logits ``(B, T, V)`` (any float dtype),
    tokens ``(B, T)`` -> float32 ``(B, T)`` (float64 for float64 logits), computed over blocks of
    ``chunk`` logits.

    >>> logits = torch.tensor([[[0.0, 0.0], [2.0, 0.0]]])
    >>> token_logprobs(logits, torch.tensor([[1, 0]]), 2.0)
    tensor([[-0.6931, -0.3133]])
    """
    return _TokenLogprobs.apply(logits, tokens.long(), float(temperature), int(chunk))


def entropy_from_logits(
    logits: torch.Tensor, temperature: float = 1.0, chunk: int = LOGIT_CHUNK_ELEMENTS
) -> torch.Tensor:
    """Entropy (nats) of ``softmax(logits / temperature)``: ``(B, T, V)`` -> float32 ``(B, T)``,
    over blocks of ``chunk`` logits; differentiable (detach the logits for a logged value).

    >>> entropy_from_logits(torch.zeros(1, 1, 4))
    tensor([[1.3863]])
    """
    return _Entropy.apply(logits, float(temperature), int(chunk))


def broadcast_advantages(advantages: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Repeat each step's advantage ``(B,)`` over its response tokens: ``(B, T)``, zero on padding.

    >>> broadcast_advantages(torch.tensor([2.0, -1.0]), torch.tensor([[1.0, 1.0], [1.0, 0.0]]))
    tensor([[ 2.,  2.],
            [-1., -0.]])
    """
    return advantages.float().unsqueeze(-1) * mask


def kl_k3(logprobs: torch.Tensor, ref_logprobs: torch.Tensor, bound: float = 10.0) -> torch.Tensor:
    """Schulman's k3 estimate of KL(pi || ref) per token: ``exp(r) - r - 1`` with ``r = ref - logp``.

    Non-negative, unbiased for the KL when tokens are sampled from pi. As verl's ``low_var_kl``,
    ``r`` is clamped to ``[-20, 20]`` before ``exp`` and the estimate to ``[-bound, bound]``.

    >>> kl_k3(torch.tensor([0.0]), torch.log(torch.tensor([0.5])))
    tensor([0.1931])
    """
    r = torch.clamp(ref_logprobs - logprobs, -LOG_RATIO_BOUND, LOG_RATIO_BOUND)
    return torch.clamp(torch.exp(r) - r - 1.0, min=-bound, max=bound)


def ppo_token_losses(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    clip_ratio: float = 0.2,
    clip_ratio_high: float | None = None,
    clip_ratio_c: float | None = 3.0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-token dual-clip PPO loss (verl's ``compute_policy_loss``), unmasked, ``(B, T)`` each.

    ``L = max(-A r, -A clip(r, 1-e, 1+e_high))`` with ``r = exp(clamp(logp - old, -20, 20))``;
    where ``A < 0`` it is further bounded by ``-A c`` (``c = clip_ratio_c > 1``; ``None`` turns
    the dual clip off). Returns the losses, where the PPO clip was active (the max chose the
    clipped term) and where the dual clip was active (``A < 0`` and ``L > -A c``), as floats.

    >>> lp, old = torch.tensor([[2.0]]), torch.tensor([[0.0]])  # ratio e^2 = 7.39 > c = 3
    >>> [t.item() for t in ppo_token_losses(lp, old, torch.tensor([[-1.0]]))]
    [3.0, 0.0, 1.0]
    """
    if clip_ratio_c is not None and clip_ratio_c <= 1.0:
        raise ValueError(f"clip_ratio_c must be > 1 (dual-clip PPO), got {clip_ratio_c}")
    log_ratio = torch.clamp(logprobs - old_logprobs, -LOG_RATIO_BOUND, LOG_RATIO_BOUND)
    ratio = torch.exp(log_ratio)
    high = clip_ratio if clip_ratio_high is None else clip_ratio_high
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1.0 - clip_ratio, 1.0 + high)
    losses = torch.maximum(unclipped, clipped)
    clip_active = (clipped > unclipped).float()
    if clip_ratio_c is None:
        return losses, clip_active, torch.zeros_like(losses)
    bound = -advantages * clip_ratio_c
    negative = advantages < 0
    dual_active = ((losses > bound) & negative).float()
    losses = torch.where(negative, torch.minimum(losses, bound), losses)
    return losses, clip_active, dual_active


def _check_mode(mode: str) -> None:
    if mode not in LOSS_AGG_MODES:
        raise ValueError(f"loss_agg_mode must be one of {LOSS_AGG_MODES}, got {mode!r}")


def loss_normaliser(mask: torch.Tensor, mode: str = "token-mean") -> float:
    """The denominator of ``mode`` for the (mini-)batch whose response mask is ``mask``: its token
    count (``token-mean``) or the number of sequences with at least one unmasked token.

    >>> m = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    >>> loss_normaliser(m, "token-mean"), loss_normaliser(m, "seq-mean-token-mean")
    (3.0, 2.0)
    """
    _check_mode(mode)
    if mode == "token-mean":
        return float(mask.sum())
    return float((mask.sum(-1) > 0).sum())


def aggregate(
    values: torch.Tensor, mask: torch.Tensor, mode: str, normaliser: float
) -> torch.Tensor:
    """This micro-batch's share of the ``mode`` aggregate of per-token ``values`` ``(B, T)``.

    ``normaliser`` is the whole mini-batch's :func:`loss_normaliser`; summing the results of the
    micro-batches gives the mini-batch aggregate. A zero normaliser (nothing unmasked) gives 0.

    >>> v, m = torch.tensor([[1.0, 3.0], [5.0, 0.0]]), torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    >>> [aggregate(v, m, mode, loss_normaliser(m, mode)).item() for mode in LOSS_AGG_MODES]
    [3.0, 4.5, 3.5]
    """
    _check_mode(mode)
    masked = values * mask
    if mode == "token-mean":
        total = masked.sum()
    elif mode == "seq-mean-token-sum":
        total = masked.sum(-1).sum()
    else:
        total = (masked.sum(-1) / mask.sum(-1).clamp(min=1.0)).sum()
    return total / normaliser if normaliser else total * 0.0


def ppo_objective(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    ref_logprobs: torch.Tensor | None,
    token_advantages: torch.Tensor,
    mask: torch.Tensor,
    normaliser: float,
    *,
    clip_ratio: float = 0.2,
    clip_ratio_high: float | None = None,
    clip_ratio_c: float | None = 3.0,
    kl_coef: float = 0.01,
    loss_agg_mode: str = "token-mean",
    num_tokens: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """``agg(pg) + kl_coef * agg(kl)`` by ``loss_agg_mode`` over ``normaliser`` (see
    :func:`aggregate`), and its parts as floats.

    ``normaliser`` is the mini-batch's :func:`loss_normaliser` for ``loss_agg_mode``;
    ``num_tokens`` its token count, the denominator of the clip fractions (default: the
    normaliser in ``token-mean``, else this batch's masked token count). ``ref_logprobs`` may be
    ``None`` when ``kl_coef`` is 0. Stats: ``pg_loss`` and ``kl`` (aggregated like the loss),
    ``clip_frac`` (tokens where the PPO clip was active) and ``clip_frac_lower`` (tokens where the
    dual clip bounded a negative-advantage loss), fractions of ``num_tokens``.
    """
    losses, clipped, dual = ppo_token_losses(
        logprobs, old_logprobs, token_advantages, clip_ratio, clip_ratio_high, clip_ratio_c
    )
    pg = aggregate(losses, mask, loss_agg_mode, normaliser)
    loss = pg
    kl = torch.zeros(())
    if kl_coef and ref_logprobs is not None:
        kl = aggregate(kl_k3(logprobs, ref_logprobs), mask, loss_agg_mode, normaliser)
        loss = loss + kl_coef * kl
    if num_tokens is None:
        num_tokens = normaliser if loss_agg_mode == "token-mean" else float(mask.sum())
    per_token = 1.0 / num_tokens if num_tokens else 0.0
    stats = {
        "pg_loss": pg.item(),
        "kl": kl.item(),
        "clip_frac": (clipped * mask).sum().item() * per_token,
        "clip_frac_lower": (dual * mask).sum().item() * per_token,
    }
    return loss, stats
