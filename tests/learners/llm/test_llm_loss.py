"""The PPO objective with hand-computed numbers, and its consistency with the tiny model."""

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from agentenvs.learners.llm.generation import HFGenerator  # noqa: E402
from agentenvs.learners.llm.loss import (  # noqa: E402
    LOSS_AGG_MODES,
    aggregate,
    broadcast_advantages,
    entropy_from_logits,
    kl_k3,
    loss_normaliser,
    ppo_objective,
    ppo_token_losses,
    token_logprobs,
)
from agentenvs.learners.llm.policy import collate, response_logits  # noqa: E402
from agentenvs.learners.llm.tiny import build_tiny_model  # noqa: E402
from llm_fixtures import tiny_policy  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _log(x):
    return torch.log(torch.tensor(x, dtype=torch.float32))


def test_clip_cases_by_hand():
    # ratios 1.5, 0.5, 1.0, 0.5; advantages +1, -1, +2, +1
    old = _log([[0.2, 0.4, 0.3, 0.4]])
    new = _log([[0.3, 0.2, 0.3, 0.2]])
    adv = torch.tensor([[1.0, -1.0, 2.0, 1.0]])
    losses, clipped, _ = ppo_token_losses(new, old, adv, clip_ratio=0.2)
    # max(-A r, -A clip(r)): -1.2 (clipped), 0.8 (clipped), -2.0, -0.5 (unclipped: pessimistic)
    assert losses.sum().item() == pytest.approx(-1.2 + 0.8 - 2.0 - 0.5, abs=1e-6)
    assert clipped.sum().item() == 2


def test_asymmetric_clip_high():
    new, old = _log([[0.3]]), _log([[0.2]])  # ratio 1.5
    losses, _, _ = ppo_token_losses(new, old, torch.ones(1, 1), 0.2, clip_ratio_high=0.28)
    assert losses.sum().item() == pytest.approx(-1.28, abs=1e-6)


def test_padding_never_counts():
    old = _log([[0.5, 0.5]])
    new = _log([[0.5, 0.99]])  # the padded token has a wild ratio and a huge advantage
    adv = torch.tensor([[1.0, 1000.0]])
    mask = torch.tensor([[1.0, 0.0]])
    loss, stats = ppo_objective(new, old, _log([[0.1, 0.1]]), adv, mask, 1.0, kl_coef=0.5)
    kl_first = 0.2 - math.log(0.2) - 1.0  # k3 with ref/pi = 0.1/0.5
    assert loss.item() == pytest.approx(-1.0 + 0.5 * kl_first, abs=1e-5)
    assert stats["clip_frac"] == 0.0


def test_dual_clip_bounds_negative_advantages_by_hand():
    # ratios 5, 5, 0.5, 2.5 (all inside the [-20, 20] log clamp); advantages -1, +1, -2, -1
    old = _log([[0.1, 0.1, 0.4, 0.2]])
    new = _log([[0.5, 0.5, 0.2, 0.5]])
    adv = torch.tensor([[-1.0, 1.0, -2.0, -1.0]])
    losses, clipped, dual = ppo_token_losses(new, old, adv, clip_ratio=0.2, clip_ratio_c=3.0)
    # token 0: max(-A r, -A clip(r)) = max(5, 1.2) = 5 > c |A| = 3 -> dual clip: 3
    # token 1: A > 0: max(-5, -1.2) = -1.2 (PPO clip), never dual-clipped
    # token 2: max(2 * 0.5, 2 * 0.8) = 1.6 (PPO clip) < 3 * 2 = 6: kept
    # token 3: max(2.5, 1.2) = 2.5 < 3: kept (ratio below c)
    assert losses[0].tolist() == pytest.approx([3.0, -1.2, 1.6, 2.5], abs=1e-5)
    assert clipped.tolist() == [[0.0, 1.0, 1.0, 0.0]]
    assert dual.tolist() == [[1.0, 0.0, 0.0, 0.0]]
    off, _, dual_off = ppo_token_losses(new, old, adv, clip_ratio=0.2, clip_ratio_c=None)
    assert off[0].tolist() == pytest.approx([5.0, -1.2, 1.6, 2.5], abs=1e-5)
    assert dual_off.sum().item() == 0.0
    # the dual-clipped token has no gradient (a constant bound); the others keep theirs
    new = new.clone().requires_grad_(True)
    ppo_token_losses(new, old, adv, clip_ratio_c=3.0)[0].sum().backward()
    assert new.grad[0, 0].item() == 0.0 and new.grad[0, 3].item() == pytest.approx(2.5, abs=1e-5)
    # stats: clip_frac 2 of 4 tokens, clip_frac_lower 1 of 4 tokens
    _, stats = ppo_objective(new.detach(), old, None, adv, torch.ones(1, 4), 4.0, kl_coef=0.0)
    assert stats["clip_frac"] == 0.5 and stats["clip_frac_lower"] == 0.25
    assert stats["pg_loss"] == pytest.approx((3.0 - 1.2 + 1.6 + 2.5) / 4, abs=1e-5)


def test_dual_clip_bound_must_exceed_one():
    with pytest.raises(ValueError, match="clip_ratio_c"):
        ppo_token_losses(_log([[0.5]]), _log([[0.5]]), torch.ones(1, 1), clip_ratio_c=1.0)


def test_extreme_logprobs_give_finite_loss_and_gradients():
    # logp = -1e4 against old = 0 and ref = 0: unclamped, exp(1e4) overflows the k3 KL to inf and
    # its gradient to nan; the log-ratios are clamped to [-20, 20] before exp instead
    lp = torch.tensor([[-1e4, -1e4, -0.5]], requires_grad=True)
    old = torch.tensor([[0.0, -1e4, 0.0]])
    ref = torch.tensor([[0.0, 0.0, 0.0]])
    adv = torch.tensor([[1.0, -1.0, -1.0]])
    for mode in LOSS_AGG_MODES:
        lp.grad = None
        loss, stats = ppo_objective(
            lp, old, ref, adv, torch.ones(1, 3), 1.0, kl_coef=0.5, loss_agg_mode=mode
        )
        loss.backward()
        assert torch.isfinite(loss) and all(math.isfinite(v) for v in stats.values())
        assert torch.isfinite(lp.grad).all()
    assert kl_k3(torch.tensor([-1e4]), torch.tensor([0.0])).item() == 10.0  # the k3 bound
    # the reverse direction (logp far above old) is bounded too: ratio exp(20), then dual clip
    big = torch.tensor([[1e4]], requires_grad=True)
    loss, _ = ppo_objective(big, torch.zeros(1, 1), None, -torch.ones(1, 1), torch.ones(1, 1), 1.0)
    loss.backward()
    assert loss.item() == pytest.approx(3.0) and torch.isfinite(big.grad).all()


def test_loss_aggregation_modes_by_hand():
    # ratio 1 everywhere, so each token's loss is -A: sequence 0 has losses [1, 3], sequence 1
    # has [5] and two padded positions (huge values that must never count)
    lp = torch.zeros(2, 3)
    adv = torch.tensor([[-1.0, -3.0, 1e6], [-5.0, 1e6, 1e6]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    expected = {
        "token-mean": (1 + 3 + 5) / 3,  # 9 / 3 tokens = 3.0
        "seq-mean-token-sum": ((1 + 3) + 5) / 2,  # (4 + 5) / 2 sequences = 4.5
        "seq-mean-token-mean": ((1 + 3) / 2 + 5 / 1) / 2,  # (2 + 5) / 2 sequences = 3.5
    }
    assert loss_normaliser(mask, "token-mean") == 3.0
    assert loss_normaliser(mask, "seq-mean-token-sum") == 2.0
    for mode, value in expected.items():
        norm = loss_normaliser(mask, mode)
        loss, stats = ppo_objective(lp, lp, None, adv, mask, norm, kl_coef=0.0, loss_agg_mode=mode)
        assert loss.item() == pytest.approx(value) and stats["pg_loss"] == pytest.approx(value)
        assert stats["clip_frac"] == 0.0 and stats["clip_frac_lower"] == 0.0
    # the KL is aggregated the same way: k3 per token with ref/pi = 0.5 is 0.5 + ln 2 - 1 = 0.1931
    # on every token, so token-mean = seq-mean-token-mean = 0.1931, seq-mean-token-sum = 0.1931 *
    # (2 + 1) / 2
    ref = torch.full((2, 3), math.log(0.5))
    k = 0.5 + math.log(2) - 1
    for mode, value in zip(LOSS_AGG_MODES, (k, 1.5 * k, k), strict=True):
        norm = loss_normaliser(mask, mode)
        _, stats = ppo_objective(lp, lp, ref, adv, mask, norm, kl_coef=1.0, loss_agg_mode=mode)
        assert stats["kl"] == pytest.approx(value, abs=1e-6)


def test_fully_masked_sequences_count_in_no_mode():
    # a zero-weight sequence (e.g. a masked truncated sample) changes no mode's value
    values = torch.tensor([[2.0, 4.0], [7.0, 7.0]])
    full = torch.tensor([[1.0, 1.0], [0.0, 0.0]])
    for mode in LOSS_AGG_MODES:
        one = aggregate(values[:1], full[:1], mode, loss_normaliser(full[:1], mode))
        both = aggregate(values, full, mode, loss_normaliser(full, mode))
        assert both.item() == pytest.approx(one.item())
    assert aggregate(values, torch.zeros(2, 2), "token-mean", 0.0).item() == 0.0
    with pytest.raises(ValueError, match="loss_agg_mode"):
        loss_normaliser(full, "seq-sum")


def test_kl_k3_by_hand_and_nonnegative():
    assert kl_k3(_log([0.5]), _log([0.25])).item() == pytest.approx(0.5 + math.log(2) - 1, abs=1e-6)
    assert kl_k3(_log([0.3]), _log([0.3])).item() == 0.0
    x = torch.randn(1000)
    assert (kl_k3(x, torch.randn(1000)) >= 0).all()


def test_objective_token_mean_and_kl_weight():
    lp = _log([[0.5, 0.5, 0.5]])
    ref = _log([[0.25, 0.5, 0.5]])
    adv = broadcast_advantages(torch.tensor([2.0]), torch.ones(1, 3))
    loss, stats = ppo_objective(lp, lp, ref, adv, torch.ones(1, 3), 3.0, kl_coef=0.1)
    kl = (0.5 + math.log(2) - 1) / 3
    assert stats["pg_loss"] == pytest.approx(-2.0)
    assert stats["kl"] == pytest.approx(kl, abs=1e-6)
    assert loss.item() == pytest.approx(-2.0 + 0.1 * kl, abs=1e-6)


def test_advantage_broadcast_per_step():
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    out = broadcast_advantages(torch.tensor([0.5, -3.0]), mask)
    assert out.tolist() == [[0.5, 0.5, 0.5], [-3.0, 0.0, 0.0]]


def test_entropy_of_uniform():
    logits = torch.zeros(1, 2, 8)
    assert torch.allclose(entropy_from_logits(logits), torch.full((1, 2), math.log(8)))


def _softmax_reference(logits, tokens, temperature):
    """The plain formulas: a full float32 log-softmax, gathered; entropy from it."""
    logp = torch.log_softmax(logits.float() / temperature, dim=-1)
    return logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1), -(logp.exp() * logp).sum(-1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("chunk", [1, 7, 11, 40, 10**6])
def test_chunked_logprobs_and_entropy_equal_the_full_softmax(dtype, chunk):
    """Blocks of one logit, of part of a row (7 < V = 11), of one row, of several rows and of
    everything: same values and same gradients (through a sliced, non-contiguous view as
    response_logits returns) as the full float32 log-softmax."""
    gen = torch.Generator().manual_seed(0)
    full = (3 * torch.randn(3, 6, 11, generator=gen)).to(dtype).requires_grad_(True)
    tokens = torch.randint(0, 11, (3, 5), generator=gen)
    g_lp, g_ent = torch.randn(3, 5, generator=gen), torch.randn(3, 5, generator=gen)
    results = []
    for fn in (
        lambda x: (token_logprobs(x, tokens, 0.7, chunk), entropy_from_logits(x, 0.7, chunk)),
        lambda x: _softmax_reference(x, tokens, 0.7),
    ):
        lp, ent = fn(full[:, :-1])
        assert lp.dtype == ent.dtype == torch.float32
        (grad,) = torch.autograd.grad((lp * g_lp).sum() + (ent * g_ent).sum(), full)
        results.append((lp, ent, grad.float()))
    (lp, ent, grad), (lp_ref, ent_ref, grad_ref) = results
    assert torch.allclose(lp, lp_ref, atol=1e-5) and torch.allclose(ent, ent_ref, atol=1e-5)
    atol = 1e-5 if dtype == torch.float32 else 1e-2  # bf16 gradients: rounded to 8 bits
    assert torch.allclose(grad, grad_ref, atol=atol)


def test_chunked_logprob_and_entropy_gradients_pass_gradcheck():
    x = torch.randn(2, 3, 5, dtype=torch.float64, requires_grad=True)
    tokens = torch.randint(0, 5, (2, 3))
    assert torch.autograd.gradcheck(lambda y: token_logprobs(y, tokens, 1.3, chunk=4), (x,))
    assert torch.autograd.gradcheck(lambda y: entropy_from_logits(y, 1.3, chunk=4), (x,))


@pytest.fixture(scope="module")
def tiny():
    return tiny_policy(seed=1)


@pytest.mark.parametrize("mode", LOSS_AGG_MODES)
def test_micro_batches_accumulate_to_full_batch_gradient(tiny, mode):
    prompts = [[5, 6, 7, 8], [9, 10], [11, 12, 13]]
    responses = [[20, 21, 22], [23], [24, 25]]
    adv = torch.tensor([1.0, -2.0, 0.5])
    offsets = torch.tensor([0.1, 0.3, 0.25])
    lengths = torch.tensor([len(r) for r in responses])
    # the whole mini-batch's normaliser: 6 tokens, or 3 sequences
    norm = loss_normaliser((torch.arange(3) < lengths[:, None]).float(), mode)
    assert norm == (6.0 if mode == "token-mean" else 3.0)
    ref_model = build_tiny_model(tiny.tokenizer, seed=2)

    def loss_of(idx):
        batch = collate([prompts[i] for i in idx], [responses[i] for i in idx], tiny.pad_id)
        lp = token_logprobs(response_logits(tiny.model, batch), batch.response_ids)
        with torch.no_grad():
            ref = token_logprobs(response_logits(ref_model, batch), batch.response_ids)
        # ratios e^0.1 (inside the clip range), e^0.3 with A < 0 (unclipped: pessimistic), e^0.25
        # with A > 0 (clipped, no gradient); a k3 KL to another model
        old = (lp.detach() - offsets[idx, None]) * batch.response_mask
        a = broadcast_advantages(adv[idx], batch.response_mask)
        mask = batch.response_mask
        return ppo_objective(lp, old, ref, a, mask, norm, kl_coef=0.1, loss_agg_mode=mode)[0]

    params = list(tiny.model.parameters())
    full = torch.autograd.grad(loss_of([0, 1, 2]), params)
    parts = [torch.autograd.grad(loss_of(i), params) for i in ([0], [1, 2])]
    for g, a, b in zip(full, *parts, strict=True):
        assert torch.allclose(g, a + b, atol=1e-6)


def test_sampling_logprobs_match_training_forward(tiny):
    torch.manual_seed(0)
    gen = HFGenerator(tiny, max_new_tokens=12, temperature=0.7)
    prompts = [
        tiny.chat_ids([{"role": "user", "content": text}])
        for text in ("push the box", "a longer prompt, left padded here")
    ]
    samples = gen.generate(prompts)
    batch = collate(prompts, [s.token_ids for s in samples], tiny.pad_id)
    with torch.no_grad():
        lp = token_logprobs(response_logits(tiny.model, batch), batch.response_ids, 0.7)
    for i, s in enumerate(samples):
        assert len(s.token_ids) == len(s.logprobs) > 0
        assert torch.allclose(lp[i, : len(s.logprobs)], torch.tensor(s.logprobs), atol=1e-4)


def test_shared_prefix_cache_changes_nothing(tiny):
    from agentenvs.core.prompting import EpisodeMemory
    from agentenvs.sokoban.prompts import CompactSokobanPrompt

    p = CompactSokobanPrompt()
    prompts = [
        tiny.chat_ids(p.messages(EpisodeMemory(), grid, {}), p.response_prefix)
        for grid in ("#P X#", "#PX_O#\n#__#", "#")
    ]
    plain = HFGenerator(tiny, max_new_tokens=8, prefix_cache=False).generate(prompts, greedy=True)
    cached = HFGenerator(tiny, max_new_tokens=8, prefix_cache=True).generate(prompts, greedy=True)
    for a, b in zip(plain, cached, strict=True):
        assert a.token_ids == b.token_ids
        assert torch.allclose(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-5)
    torch.manual_seed(0)
    sampled = HFGenerator(tiny, max_new_tokens=8, temperature=0.9).generate(prompts)
    batch = collate(prompts, [s.token_ids for s in sampled], tiny.pad_id)
    with torch.no_grad():
        lp = token_logprobs(response_logits(tiny.model, batch), batch.response_ids, 0.9)
    for i, s in enumerate(sampled):
        assert torch.allclose(lp[i, : len(s.logprobs)], torch.tensor(s.logprobs), atol=1e-4)


def test_shared_prefix_forward_gives_same_values_and_gradients(tiny):
    prompts = [[5, 6, 7, 8, 9, 10], [5, 6, 7, 8, 11], [5, 6, 7, 8, 12, 13, 14]]
    responses = [[20, 21, 22], [23], [24, 25]]
    adv = torch.tensor([1.0, -2.0, 0.5])
    params = list(tiny.model.parameters())
    results = []
    for shared in (0, 2):
        batch = collate(prompts, responses, tiny.pad_id, min_shared_prefix=shared)
        assert (batch.prefix_ids is not None) == bool(shared)
        lp = token_logprobs(response_logits(tiny.model, batch), batch.response_ids)
        loss = -(broadcast_advantages(adv, batch.response_mask) * lp).sum()
        results.append((lp.detach() * batch.response_mask, torch.autograd.grad(loss, params)))
    assert collate(prompts, responses, 0, min_shared_prefix=2).prefix_ids.tolist() == [[5, 6, 7, 8]]
    (lp_a, g_a), (lp_b, g_b) = results
    assert torch.allclose(lp_a, lp_b, atol=1e-5)
    for a, b in zip(g_a, g_b, strict=True):
        assert torch.allclose(a, b, atol=1e-5)
