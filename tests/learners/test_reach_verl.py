"""Our credit methods inside the real verl (``agentenvs.learners.verl``; run in verl's own venv by
scripts/test_reach.sh: verl pins an older transformers than ours).

The quality bar of docs/integrations.md: on 500 random groups per method, built as verl
``DataProto`` batches (rows in random order, variable response lengths, the reward at each row's
last response token), verl's ``get_adv_estimator_fn("agentenvs_<m>")`` gives each row our own
step advantage (what the credit wrappers write) over its response mask, within 1e-6; and verl's
``compute_advantage`` dispatch runs every method.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

pytestmark = pytest.mark.reach
verl = pytest.importorskip("verl")
torch = pytest.importorskip("torch")

from agentenvs.learners import verl as ours  # noqa: E402
from agentenvs.wrappers.registry import METHODS, assign_advantages, make_config, method_names  # noqa: E402
from tensordict import TensorDict  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.trainer.config import AlgoConfig  # noqa: E402
from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, get_adv_estimator_fn  # noqa: E402

from agentenvs.core import Step, Trajectory  # noqa: E402

#: Options for the comparison: the online models of SPA and HISR learn from every call (two
#: calls on one batch differ by design). SPA's ``mean`` source is a pure function of the batch;
#: HISR runs frozen (``online=False``) on small models the fixture fits first.
OPTIONS = {"spa": {"contribution_source": "mean"}, "hisr": {"online": False}}


def hisr_models() -> dict:
    """HISR's models (SPRM, hindsight and policy scorers: they read the step texts), small (20
    epochs per fit) and fitted on 16 random groups, so HISR's values depend on the texts."""
    from agentenvs.wrappers.hisr import HISRConfig, HISRState
    from agentenvs.wrappers.models.hindsight import FeatureScorer
    from agentenvs.wrappers.models.progress import FeatureProgressEstimator

    models = {
        "sprm": FeatureProgressEstimator(epochs=20),
        "hindsight": FeatureScorer("hindsight", epochs=20),
        "policy_scorer": FeatureScorer("policy", epochs=20),
    }
    config = HISRConfig(**models)
    groups = random_groups(np.random.default_rng(99), 16)
    online = HISRState(config)  # its models are the objects above
    online.trainer.observe([t for g in groups for t in g], len(groups), config, online)
    assert all(m.trained for m in models.values())
    return models


@pytest.fixture
def configured(method):
    """verl's ``algorithm`` config (a dict) selecting ``method`` with :data:`OPTIONS` (and
    :func:`hisr_models`, objects: a Python caller's config may hold them) under ``agentenvs``."""
    extra = hisr_models() if method == "hisr" else {}
    options = make_config(method, **OPTIONS.get(method, {}), **extra)
    return {"adv_estimator": f"agentenvs_{method}", "agentenvs": options}


def random_groups(rng: np.random.Generator, n_groups: int) -> list[list[Trajectory]]:
    """Groups of 2-6 trajectories over a small state alphabet (states recur across and inside
    trajectories); 1-6 steps, random rewards (multiples of 1/64: verl's float32 reward tensor
    holds them exactly), some invalid actions, some wins, privileged progress changes (rises,
    falls, none) and observation texts (the final one included)."""
    groups = []
    for g in range(n_groups):
        group = []
        for k in range(int(rng.integers(2, 7))):
            n = int(rng.integers(1, 7))
            states = [f"s{int(s)}" for s in rng.integers(0, 5, n + 1)]
            steps = [
                Step(
                    f"obs {states[t]}",
                    f"<action>{'abc'[int(rng.integers(3))]}</action>",
                    float(np.round(rng.normal() * 64) / 64),  # exact in float32
                    state_key=states[t],
                    next_state_key=states[t + 1],
                    action_valid=bool(rng.random() > 0.1),
                    progress=float(rng.choice([0.0, 0.0, 0.25, -0.25, 0.5])),
                )
                for t in range(n)
            ]
            won = bool(rng.random() < 0.4)
            group.append(
                Trajectory(
                    f"task{g}", f"g{g}", steps, won, f"t{k}", final_observation=f"obs {states[n]}"
                )
            )
        groups.append(group)
    return groups


def as_data_proto(trajectories: list[Trajectory], rng: np.random.Generator) -> DataProto:
    """One row per step, rows shuffled; responses of 1-12 tokens padded to 12; each step's reward
    at its last response token."""
    columns = ours.step_columns(trajectories)
    rewards = np.array([s.reward for t in trajectories for s in t.steps])
    n, width = len(rewards), 12
    perm = rng.permutation(n)
    lengths = rng.integers(1, width + 1, n)
    mask = torch.zeros(n, width, dtype=torch.int64)
    token_rewards = torch.zeros(n, width, dtype=torch.float32)
    for row, (i, length) in enumerate(zip(perm, lengths, strict=True)):
        mask[row, :length] = 1
        token_rewards[row, length - 1] = float(rewards[i])
    batch = TensorDict(
        {"response_mask": mask, "token_level_rewards": token_rewards}, batch_size=[n]
    )
    return DataProto(batch=batch, non_tensor_batch={k: v[perm] for k, v in columns.items()})


def expected_tokens(groups, method, data: DataProto, perm_source, config=None) -> torch.Tensor:
    assign_advantages(groups, method, config)
    adv = np.array([s.advantage for g in groups for t in g for s in t.steps])
    rows = adv[perm_source]
    return torch.as_tensor(rows).unsqueeze(-1) * data.batch["response_mask"].double()


def test_every_method_registered_under_the_prefix():
    names = ours.register()
    assert names == [f"agentenvs_{m}" for m in method_names()]
    assert all(ADV_ESTIMATOR_REGISTRY[n] is get_adv_estimator_fn(n) for n in names)
    assert "grpo" in ADV_ESTIMATOR_REGISTRY and ADV_ESTIMATOR_REGISTRY[
        "grpo"
    ].__module__.startswith("verl")  # verl's own GRPO untouched


@pytest.mark.parametrize("method", method_names())
def test_estimators_equal_our_step_advantages_on_500_groups(method, configured):
    rng = np.random.default_rng(sum(map(ord, method)))
    fn = get_adv_estimator_fn(f"agentenvs_{method}")
    worst = 0.0
    for _ in range(50):  # 50 batches of 10 groups
        groups = random_groups(rng, 10)
        trajectories = [t for g in groups for t in g]
        data = as_data_proto(trajectories, rng)
        ours.attach_step_uids(data)
        order = _source_rows(data, trajectories)
        want = expected_tokens(groups, method, data, order, configured["agentenvs"])
        adv, returns = fn(
            token_level_rewards=data.batch["token_level_rewards"],
            response_mask=data.batch["response_mask"],
            index=data.non_tensor_batch["uid"],
            config=configured,
        )
        assert adv.shape == data.batch["response_mask"].shape and adv.dtype == torch.float32
        assert torch.equal(adv, returns)
        assert torch.all(adv[data.batch["response_mask"] == 0] == 0)
        worst = max(worst, float((adv.double() - want).abs().max()))
    assert worst <= 1e-6, worst


def _source_rows(data: DataProto, trajectories: list[Trajectory]) -> np.ndarray:
    """For each row of ``data``, its step's position in the flat step order of ``trajectories``."""
    position = {}
    for t in trajectories:
        for k in range(len(t.steps)):
            position[(t.group_id, t.traj_id, k)] = len(position)
    return np.array(
        [position[(str(u), u.traj_uid, u.step_index)] for u in data.non_tensor_batch["uid"]]
    )


@pytest.mark.parametrize("method", method_names())
def test_verl_compute_advantage_dispatch_runs_ours(method, configured):
    from verl.trainer.ppo.ray_trainer import compute_advantage

    rng = np.random.default_rng(0)
    trajectories = [t for g in random_groups(rng, 4) for t in g]
    data = ours.attach_step_uids(as_data_proto(trajectories, rng))
    name = f"agentenvs_{method}"
    out = compute_advantage(data, adv_estimator=name, config=configured)
    adv = out.batch["advantages"]
    assert adv.shape == out.batch["response_mask"].shape
    assert torch.isfinite(adv).all() and adv.abs().sum() > 0


# -- verl-agent's layout --------------------------------------------------------------------------
#: What each method reads that verl-agent's rollout does not put in its batch (our names): the
#: privileged progress, the observation texts, and the state after a trajectory's last step.
VERL_AGENT_LACKS = {
    "grpo": (),
    "gigpo": (),
    "graphgpo": ("next_state_key",),
    "rtmc": (),
    "spa": ("observation", "next_observation"),
    "triage": ("next_state_key", "progress", "observation", "next_observation"),
    "hisr": ("progress", "observation", "next_observation"),
}


@pytest.fixture(scope="module")
def tokenizer():
    """A real Hugging Face tokenizer built offline: byte-level, one token per byte (so any text
    round-trips exactly), ``<pad>`` (0) and ``<eos>`` (1) special."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<eos>": 1}
    for ch in sorted(pre_tokenizers.ByteLevel.alphabet()):
        vocab[ch] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")


def parsed_command(text: str):
    """The env's parser (agentenvs text envs report its command as ``info["action_key"]``)."""
    from agentenvs.core.parsing import parse_action

    return parse_action(text, require_think=False).command


def with_env_action_keys(groups: list[list[Trajectory]]) -> list[list[Trajectory]]:
    """Each valid step's ``action_key`` as an agentenvs env reports it (the parsed command)."""
    for s in (s for g in groups for t in g for s in t.steps):
        s.action_key = parsed_command(s.action) if s.action_valid else None
    return groups


def verl_agent_batch(trajectories: list[Trajectory], tokenizer, extra=()) -> DataProto:
    """Rows as verl-agent's rollout gathers them: trajectory by trajectory, in step order, with its
    ``non_tensor_batch`` names (``uid``, ``traj_uid``, ``anchor_obs``, ``is_action_valid``, the
    ``won`` users add, and ``rewards``/``active_masks`` that we ignore) plus our columns ``extra``;
    ``responses`` hold the action text's tokens and ``<eos>``, right-padded; the step's reward at its
    last response token."""
    cols = ours.step_columns(trajectories)
    n = len(cols["uid"])
    rewards = np.array([s.reward for t in trajectories for s in t.steps])
    nt = {
        "uid": cols["uid"],
        "traj_uid": cols["traj_uid"],
        "anchor_obs": cols["state_key"],
        "is_action_valid": cols["action_valid"].astype(bool),
        "won": cols["won"].astype(bool),
        "rewards": rewards.astype(object),
        "active_masks": np.ones(n, object),
        **{k: cols[k] for k in extra},
    }
    ids = [tokenizer.encode(a, add_special_tokens=False) + [1] for a in cols["action"]]
    width = max(map(len, ids))
    responses = torch.zeros(n, width, dtype=torch.int64)
    mask = torch.zeros(n, width, dtype=torch.int64)
    token_rewards = torch.zeros(n, width, dtype=torch.float32)
    for i, row in enumerate(ids):
        responses[i, : len(row)] = torch.tensor(row)
        mask[i, : len(row)] = 1
        token_rewards[i, len(row) - 1] = float(rewards[i])
    tensors = {"responses": responses, "response_mask": mask, "token_level_rewards": token_rewards}
    return DataProto(batch=TensorDict(tensors, batch_size=[n]), non_tensor_batch=nt)


def attach_and_shuffle(data: DataProto, tokenizer, rng: np.random.Generator) -> DataProto:
    """``attach_step_uids`` where verl-agent's rollout hands over the batch (rows in step order,
    the env's parser for action keys), then the rows shuffled as verl's ``balance_batch`` does."""
    ours.attach_step_uids(data, tokenizer=tokenizer, action_key=parsed_command)
    data.reorder(torch.as_tensor(rng.permutation(len(data))))
    return data


def _run(method, data, config=None, **columns) -> torch.Tensor:
    adv, _ = get_adv_estimator_fn(f"agentenvs_{method}")(
        token_level_rewards=data.batch["token_level_rewards"],
        response_mask=data.batch["response_mask"],
        config=config,
        **(columns or {"index": data.non_tensor_batch["uid"]}),
    )
    return adv


@pytest.mark.parametrize("method", method_names())
def test_verl_agent_columns_give_our_advantages_on_500_groups(method, configured, tokenizer):
    """verl-agent's columns (plus what its batch lacks, :data:`VERL_AGENT_LACKS`) give the native
    wrapper's advantages, nothing blanked: the step index and next state come from the row order,
    the action from the decoded responses and the env's parser; rows shuffled after attaching."""
    rng = np.random.default_rng(7 + sum(map(ord, method)))
    worst = 0.0
    for _ in range(50):  # 50 batches of 10 groups
        groups = with_env_action_keys(random_groups(rng, 10))
        trajectories = [t for g in groups for t in g]
        data = verl_agent_batch(trajectories, tokenizer, VERL_AGENT_LACKS[method])
        data = attach_and_shuffle(data, tokenizer, rng)
        want = expected_tokens(
            groups, method, data, _source_rows(data, trajectories), configured["agentenvs"]
        )
        worst = max(worst, float((_run(method, data, configured).double() - want).abs().max()))
    assert worst <= 1e-6, worst


@pytest.mark.parametrize("method", method_names())
def test_verl_agent_columns_alone_name_what_they_lack(method, configured, tokenizer):
    """With verl-agent's columns only, a method that reads more raises a ``ValueError`` naming each
    column it lacks, never another value; GRPO and GiGPO need nothing more (also through
    ``non_tensor_batch=``, without ``attach_step_uids``); RTMC without the decoded responses lacks
    the action."""
    rng = np.random.default_rng(11)
    groups = with_env_action_keys(random_groups(rng, 6))
    trajectories = [t for g in groups for t in g]
    lacks = VERL_AGENT_LACKS[method]
    data = attach_and_shuffle(verl_agent_batch(trajectories, tokenizer), tokenizer, rng)
    if not lacks:
        want = expected_tokens(
            groups, method, data, _source_rows(data, trajectories), configured["agentenvs"]
        )
        assert float((_run(method, data, configured).double() - want).abs().max()) <= 1e-6
    else:
        with pytest.raises(ValueError, match=r"\[" + ", ".join(f"'{k}'" for k in lacks) + r"\]"):
            _run(method, data, configured)
    plain = verl_agent_batch(trajectories, tokenizer)  # no tokenizer: no action text
    if method in ("grpo", "gigpo"):
        nt = dict(plain.non_tensor_batch)
        want = expected_tokens(groups, method, plain, np.arange(len(plain)))
        assert float((_run(method, plain, non_tensor_batch=nt).double() - want).abs().max()) < 1e-6
    elif method == "rtmc":
        with pytest.raises(ValueError, match=r"\['action_key'\].*tokenizer="):
            _run(method, ours.attach_step_uids(plain), configured)


def test_graphgpo_needs_no_final_state_after_a_win(tokenizer):
    """GraphGPO ties a won trajectory's last step to the success sink: where every trajectory is
    won, verl-agent's columns alone give its advantages (next states from the row order)."""
    rng = np.random.default_rng(12)
    groups = random_groups(rng, 20)
    for t in (t for g in groups for t in g):
        t.success = True
    trajectories = [t for g in groups for t in g]
    data = attach_and_shuffle(verl_agent_batch(trajectories, tokenizer), tokenizer, rng)
    want = expected_tokens(groups, "graphgpo", data, _source_rows(data, trajectories))
    assert float((_run("graphgpo", data).double() - want).abs().max()) <= 1e-6


def test_step_uids_derive_the_step_order_from_the_rows():
    """Within a ``(uid, traj_uid)``: ``step_index`` is the row's rank, ``next_state_key`` the next
    row's ``anchor_obs``, and the last row has none; interleaved trajectories are kept apart; a
    given ``step_index`` orders the rows instead; an env parser keys valid actions only."""
    nt = {
        "uid": np.array(["g", "g", "g", "h", "g"], object),
        "traj_uid": np.array(["a", "b", "a", "a", "a"], object),
        "anchor_obs": np.array(["A", "X", "B", "P", "C"], object),
        "is_action_valid": np.array([True, True, False, True, True]),
    }
    texts = ["<action>up</action>", "x", "y", "<action>go</action>", "<action>down</action>"]
    uids = ours.step_uids(nt, actions=texts, action_key=parsed_command)
    assert [u.step_index for u in uids] == [0, 0, 1, 0, 2]
    assert [getattr(u, "next_state_key", "-") for u in uids] == ["B", "-", "C", "-", "-"]
    assert [u.action_key for u in uids] == ["up", None, None, "go", "down"]
    assert uids[2].action == "y" and list(uids) == list(nt["uid"])
    nt["step_index"] = np.array([2, 0, 0, 0, 1], object)  # rows not in step order
    uids = ours.step_uids(nt)
    assert [getattr(u, "next_state_key", "-") for u in uids] == ["-", "-", "C", "-", "A"]


def test_response_texts_decode_under_the_mask(tokenizer):
    """What verl-agent's rollout sends to its envs: the response's tokens, special ones skipped."""
    ids = [tokenizer.encode(t, add_special_tokens=False) for t in ["<think>é</think> up", "go"]]
    responses = torch.zeros(2, 32, dtype=torch.int64)
    mask = torch.zeros(2, 32, dtype=torch.int64)
    for i, row in enumerate(ids):
        responses[i, : len(row) + 1] = torch.tensor(row + [1])
        mask[i, : len(row) + 1] = 1
    responses[1, 25] = ids[0][0]  # a stray token past the mask is not part of the response
    texts = ours.columns.response_texts(responses, mask, tokenizer)
    assert texts == ["<think>é</think> up", "go"]


def test_copied_rows_are_an_error_not_a_longer_trajectory():
    """verl-agent's ``adjust_batch`` (mode ``copy``) duplicates rows: two rows of one step."""
    cols = ours.step_columns([t for g in random_groups(np.random.default_rng(3), 1) for t in g])
    uids = ours.step_uids(cols)
    uids = np.concatenate([uids, uids[:1]])
    with pytest.raises(ValueError, match="same step"):
        ours.trajectories_of(uids, np.zeros(len(uids)))


def test_plain_uids_get_a_clear_error():
    rng = np.random.default_rng(2)
    data = as_data_proto([t for g in random_groups(rng, 2) for t in g], rng)
    with pytest.raises(ValueError, match="attach_step_uids"):
        get_adv_estimator_fn("agentenvs_gigpo")(
            token_level_rewards=data.batch["token_level_rewards"],
            response_mask=data.batch["response_mask"],
            index=data.non_tensor_batch["uid"],
        )


def test_step_uids_survive_pickle_and_group_like_their_uid():
    u = ours.step_uids({"uid": np.array(["g1"], object), "traj_uid": np.array(["t"], object)})[0]
    back = pickle.loads(pickle.dumps(u))
    assert back == "g1" and hash(back) == hash("g1") and back.traj_uid == "t"
    assert isinstance(back, ours.StepUid) and {back: 1}["g1"] == 1


def test_options_come_from_verls_algorithm_config():
    """``algorithm.agentenvs`` (a DictConfig, as verl's trainers pass it) changes what runs; the
    defaults stay the defaults; an unknown option is an error naming the method's options."""
    from omegaconf import OmegaConf

    rng = np.random.default_rng(3)
    trajectories = [t for g in random_groups(rng, 6) for t in g]
    data = ours.attach_step_uids(as_data_proto(trajectories, rng))
    fn = get_adv_estimator_fn("agentenvs_graphgpo")
    kwargs = dict(
        token_level_rewards=data.batch["token_level_rewards"],
        response_mask=data.batch["response_mask"],
        index=data.non_tensor_batch["uid"],
    )
    default = fn(**kwargs, config=AlgoConfig())[0]
    algorithm = OmegaConf.create({"adv_estimator": "agentenvs_graphgpo"})
    assert torch.equal(fn(**kwargs, config=algorithm)[0], default)
    algorithm.agentenvs = {"distance_discount": 0.9}
    assert not torch.allclose(fn(**kwargs, config=algorithm)[0], default)
    assert ours.method_config("graphgpo", algorithm).distance_discount == 0.9
    assert METHODS["graphgpo"].config().distance_discount == 0.1
    algorithm.agentenvs = {"distance_discunt": 0.9}
    with pytest.raises(ValueError, match="has no option 'distance_discunt'; its options: "):
        fn(**kwargs, config=algorithm)


def test_online_state_persists_across_calls_with_the_same_options():
    """One config object per (method, options) in a process: SPA's online estimator keeps
    training from one training step to the next."""
    from omegaconf import OmegaConf

    algorithm = OmegaConf.create({"agentenvs": {"contribution_source": "mean"}})
    assert ours.method_config("spa", algorithm) is ours.method_config("spa", algorithm)
    assert ours.method_config("spa") is not ours.method_config("spa", algorithm)


def test_docs_snippet_runs(capsys):
    """The python block of docs/integrations.md's verl section runs as written and prints
    per-step values."""
    import re
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"
    verl = doc.read_text(encoding="utf-8").split("\n## verl\n")[1].split("\n## ")[0]
    (code,) = re.findall(r"```python\n(.*?)```", verl, flags=re.S)
    exec(compile(code, "docs/integrations.md", "exec"), {"__name__": "__doc__"})
    assert "tensor([" in capsys.readouterr().out


def test_reach_benchmark_verl_table_runs(capsys):
    """benchmarks/reach.py's verl table (small): every row timed, GraphGPO through verl equal to
    native."""
    import re

    from benchmarks.reach import verl_section

    verl_section(3000, 1)
    out = capsys.readouterr().out
    assert out.count("| `attach_step_uids`") == 5 and "ratio to verl's GRPO" in out
    diff = float(re.search(r"max \|verl GraphGPO - native\| = (\S+)", out).group(1))
    assert diff <= 1e-6, diff
