"""Responses that stop where the env's action ends, and truncated responses flagged: the HF sampler
on a tiny model taught to keep talking after ``</action>``, the Sampler's stop bookkeeping with
scripted generators."""

import dataclasses

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from agentenvs.learners.llm.generation import (  # noqa: E402
    HFGenerator,
    Sample,
    response_end,
    trim_response,
)
from agentenvs.learners.llm.loss import token_logprobs  # noqa: E402
from agentenvs.learners.llm.policy import Policy, collate, response_logits  # noqa: E402
from agentenvs.learners.llm.rollout import Response, Sampler, take_samples  # noqa: E402
from agentenvs.learners.llm.tiny import build_tiny_tokenizer  # noqa: E402
from llm_fixtures import tiny_policy  # noqa: E402

from agentenvs.core import EpisodeMemory, GenericPrompt, Step, Trajectory  # noqa: E402
from agentenvs.sokoban.prompts import CompactSokobanPrompt  # noqa: E402

#: What the taught model says after the prompt's ``<think>`` prefix: an action, then more moves.
CHATTY = "go</think><action>up</action> down left right up down"
GRIDS = ("#P X#", "#PX_O#\n#__#", "#_P_#\n#_X_#\n#_O_#")


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _requests():
    prompt = CompactSokobanPrompt()
    return [(prompt, EpisodeMemory(), grid, {}) for grid in GRIDS]


@pytest.fixture(scope="module")
def chatty():
    """The tiny model taught (150 steps, a few seconds) to answer every compact Sokoban prompt
    with ``CHATTY``: without a stop string it talks on past ``</action>``, and never says EOS."""
    torch.manual_seed(0)
    policy = tiny_policy(seed=0)
    tok = policy.tokenizer
    prompts = [
        policy.chat_ids(p.messages(m, obs, info), p.response_prefix)
        for p, m, obs, info in _requests()
    ]
    answer = tok.encode(CHATTY, add_special_tokens=False)
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=3e-3)  # 1e-2 diverges (2 heads)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for _ in range(150):
            batch = collate(prompts, [answer] * len(prompts), policy.pad_id)
            lp = token_logprobs(response_logits(policy.model, batch), batch.response_ids)
            loss = -(lp * batch.response_mask).sum() / batch.response_mask.sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    finally:
        torch.set_num_threads(threads)
    policy.model.eval()
    return policy, prompts


def _recomputed(policy, prompts, samples, temperature):
    batch = collate(prompts, [s.token_ids for s in samples], policy.pad_id)
    with torch.no_grad():
        return token_logprobs(response_logits(policy.model, batch), batch.response_ids, temperature)


def test_hf_responses_end_at_the_stop_string_with_consistent_logprobs(chatty):
    policy, prompts = chatty
    action_end = policy.tokenizer.encode("</action>", add_special_tokens=False)
    gen = HFGenerator(policy, max_new_tokens=24, temperature=1.0)
    on = gen.generate(prompts, greedy=True, stop=("</action>",))
    off = gen.generate(prompts, greedy=True)
    for s, t in zip(on, off, strict=True):
        assert s.text == "go</think><action>up</action>" and s.text.endswith("</action>")
        assert s.token_ids[-len(action_end) :] == action_end  # the stop string's tokens kept
        assert len(s.token_ids) == len(s.logprobs) and not s.truncated
        assert policy.tokenizer.decode(s.token_ids, skip_special_tokens=True) == s.text
        # without the stop string the same row talks on (to the budget: truncated)
        assert t.text.startswith(s.text) and len(t.text) > len(s.text)
        assert t.token_ids[: len(s.token_ids)] == s.token_ids and t.truncated
        assert len(t.token_ids) == 24
    lp = _recomputed(policy, prompts, on, 1.0)
    for i, s in enumerate(on):
        assert torch.allclose(lp[i, : len(s.logprobs)], torch.tensor(s.logprobs), atol=1e-4)


def test_sampled_rows_stop_at_their_own_stop_string_in_a_mixed_batch(chatty):
    policy, prompts = chatty
    gen = HFGenerator(policy, max_new_tokens=16, temperature=1.5, prefix_cache=False)
    torch.manual_seed(3)
    samples = gen.generate(prompts * 4, stop=("</action>",))
    stopped = [s for s in samples if "</action>" in s.text]
    # at temperature 1.5 some rows stop (short, padded up to the longest row, then trimmed) and
    # some never say </action> within the budget (truncated)
    assert stopped and len(stopped) < len(samples)
    decode = policy.tokenizer.decode
    for s in samples:
        assert len(s.token_ids) == len(s.logprobs)
        assert decode(s.token_ids, skip_special_tokens=True) == s.text
        if "</action>" in s.text:
            # the last token completes the stop string: it ends the text, or the token reaches
            # past it (a sampled "><" token) and stays whole
            assert "</action>" not in decode(s.token_ids[:-1], skip_special_tokens=True)
            assert s.text.count("</action>") == 1 and not s.truncated and len(s.token_ids) <= 16
        else:
            assert s.truncated and len(s.token_ids) == 16
    assert any(s.text.endswith("</action>") for s in stopped)
    lp = _recomputed(policy, prompts * 4, samples, 1.5)
    for i, s in enumerate(samples):
        assert torch.allclose(lp[i, : len(s.logprobs)], torch.tensor(s.logprobs), atol=1e-4)


def test_stop_strings_with_the_shared_prefix_cache(chatty):
    policy, prompts = chatty
    plain = HFGenerator(policy, max_new_tokens=24, prefix_cache=False)
    cached = HFGenerator(policy, max_new_tokens=24, prefix_cache=True, min_shared_prefix=4)
    a = plain.generate(prompts, greedy=True, stop=("</action>",))
    b = cached.generate(prompts, greedy=True, stop=("</action>",))
    assert [s.token_ids for s in a] == [s.token_ids for s in b]
    assert all(s.text.endswith("</action>") for s in b)


def test_our_calls_raise_no_deprecation_warning(chatty):
    """Shared-prefix generation and the shared-prefix training forward hand the KV cache over by
    the keyword this transformers takes, so neither warns (``--no-progress`` means quiet)."""
    import warnings

    policy, prompts = chatty
    cached = HFGenerator(policy, max_new_tokens=8, prefix_cache=True, min_shared_prefix=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        warnings.simplefilter("error", DeprecationWarning)
        samples = cached.generate(prompts, greedy=False, stop=("</action>",))
        batch = collate(prompts, [s.token_ids for s in samples], policy.pad_id, min_shared_prefix=4)
        assert batch.prefix_ids is not None
        response_logits(policy.model, batch).sum().backward()


def test_a_budget_too_small_for_the_action_truncates(chatty):
    policy, prompts = chatty
    samples = HFGenerator(policy, max_new_tokens=4).generate(
        prompts, greedy=True, stop=("</action>",)
    )
    assert all(s.truncated and len(s.token_ids) == 4 for s in samples)


def test_response_end_by_hand():
    letters = lambda ids: "".join("abcdefghij"[i] for i in ids)  # noqa: E731
    # the stop token (9) comes first, then the stop string: cut after the token
    assert response_end([0, 9, 2, 3], [9], ("cd",), letters) == 2
    # the stop string "cd" is completed by token 3, before the stop token
    assert response_end([0, 2, 3, 9], [9], ("cd",), letters) == 3
    # neither: None; without a decoder stop strings are not looked for
    assert response_end([0, 1], [9], ("cd",), letters) is None
    assert response_end([2, 3], [9], ("cd",)) is None
    # the earliest of several stop strings; a stop string across tokens
    assert response_end([1, 2, 3, 4, 5], [9], ("de", "bc"), letters) == 2  # "bc" in "bcdef"
    # trailing padding (8) is dropped only when the row has no stop
    assert trim_response([0, 1, 8, 8], [-1.0] * 4, [9], 8) == ([0, 1], [-1.0, -1.0])
    assert trim_response([2, 3, 8], [-1.0] * 3, [9], 8, ("cd",), letters) == ([2, 3], [-1.0] * 2)


def test_a_token_reaching_past_the_stop_string_stays_whole():
    # token 1 decodes to "d!" (past the stop string "cd"): ids, log-probs and text stay consistent
    pieces = ["c", "d!", "x"]
    decode = lambda ids: "".join(pieces[i] for i in ids)  # noqa: E731
    ids, lps = trim_response([0, 1, 2], [-0.1, -0.2, -0.3], [9], 8, ("cd",), decode)
    assert ids == [0, 1] and lps == [-0.1, -0.2] and decode(ids) == "cd!"


class Recorder:
    """A scripted generator that records its calls' prompts and stop strings."""

    def __init__(self):
        self.calls = []

    def generate(self, prompts, *, greedy=False, stop=()):
        self.calls.append((len(prompts), stop))
        return [Sample([3, 4], [-0.5, -0.25], f"<action>{len(p)}</action>", True) for p in prompts]


@pytest.fixture(scope="module")
def tok_policy():
    return Policy(None, build_tiny_tokenizer())


def test_sampler_passes_each_prompts_stop_strings(tok_policy):
    gen = Recorder()
    responses = Sampler(tok_policy, gen)(_requests())
    assert gen.calls == [(3, ("</action>",))]  # one call: every request shares its stop strings
    assert all(r.truncated for r in responses)
    gen = Recorder()
    Sampler(tok_policy, gen, stop_at_action_end=False)(_requests())
    assert gen.calls == [(3, ())]  # called without stop strings


def test_sampler_groups_requests_by_their_stop_strings(tok_policy):
    other = dataclasses.replace(GenericPrompt(), stop=("</answer>",))  # another env's stop
    sokoban = _requests()
    mixed = [sokoban[0], (other, EpisodeMemory(), "o", {}), sokoban[1]]
    gen = Recorder()
    responses = Sampler(tok_policy, gen)(mixed)
    # one call per distinct tuple: the Sokoban rows stop at </action>, the other row at its own
    # string only; the responses come back in request order
    assert sorted(gen.calls) == [(1, ("</answer>",)), (2, ("</action>",))]
    ids = [tok_policy.chat_ids(p.messages(m, o, i), p.response_prefix) for p, m, o, i in mixed]
    assert [str(r) for r in responses] == [
        p.response_prefix + f"<action>{len(i)}</action>"
        for (p, *_), i in zip(mixed, ids, strict=True)
    ]
    assert [r.prompt_ids.tolist() for r in responses] == ids


def test_truncated_reaches_the_step_extras():
    import pickle

    steps = [Step("o", Response("t", [1], [2, 3], [-0.5, -0.5], truncated=t), 0.0) for t in (1, 0)]
    steps[0].action = pickle.loads(pickle.dumps(steps[0].action))  # async vector env workers
    assert take_samples([Trajectory("t", "g", steps)])
    assert [s.extras["truncated"] for s in steps] == [True, False]
    assert [s.action for s in steps] == ["t", "t"]


@pytest.mark.parametrize(
    "greedy, top_p, prefix", [(True, 1.0, True), (False, 1.0, False), (False, 0.7, True)]
)
def test_hf_tokens_and_logprobs_equal_the_training_forward(chatty, greedy, top_p, prefix):
    """The log-probs recorded on the device during ``generate`` equal a recomputation by the
    trainer's forward on prompt + response; greedy tokens are that forward's argmax, sampled
    tokens lie in its top-p nucleus. No full-vocabulary logits come back from ``generate``."""
    policy, prompts = chatty
    gen = HFGenerator(
        policy,
        max_new_tokens=10,
        temperature=2.0,
        top_p=top_p,
        prefix_cache=prefix,
        min_shared_prefix=4,
    )
    calls = []
    generate = policy.model.generate

    def spy(*args, **kwargs):
        calls.append(kwargs["generation_config"])
        return generate(*args, **kwargs)

    policy.model.generate = spy
    try:
        torch.manual_seed(5)
        samples = gen.generate(prompts * 3, greedy=greedy)
    finally:
        del policy.model.generate
    assert calls and not calls[0].output_logits and not calls[0].return_dict_in_generate
    temperature = 1.0 if greedy else 2.0
    batch = collate(prompts * 3, [s.token_ids for s in samples], policy.pad_id)
    with torch.no_grad():
        logits = response_logits(policy.model, batch).float()
    lp = token_logprobs(logits, batch.response_ids, temperature)
    assert len({tuple(s.token_ids) for s in samples}) > (1 if not greedy else 0)
    for i, s in enumerate(samples):
        n = len(s.token_ids)
        assert torch.allclose(lp[i, :n], torch.tensor(s.logprobs), atol=1e-4)
        probs = torch.softmax(logits[i, :n] / temperature, dim=-1)
        if greedy:
            assert s.token_ids == probs.argmax(-1).tolist()
        else:  # the mass of strictly likelier tokens is below top_p
            chosen = probs.gather(-1, torch.tensor(s.token_ids)[:, None])
            assert ((probs * (probs > chosen)).sum(-1) < top_p + 1e-5).all()
