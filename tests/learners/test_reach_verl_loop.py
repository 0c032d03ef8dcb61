"""Our multi-turn agent loop and step-credit trainer inside the real verl 0.9.1 (CPU; the reach venv).

What runs here is verl's own code around ours: Hydra's composition of verl's ``ppo_trainer``
config, ``RLHFDataset`` on :func:`write_dataset`'s parquet, the trainer's dataloader and
``_submit_batch_to_rollout``, ``AgentLoopManagerTQ`` and its ``AgentLoopWorkerTQ`` Ray actor (which
instantiates :class:`EnvAgentLoop` from the shipped agent-loop YAML and stores every step in a real
TransferQueue), the sync ``ReplayBuffer``, verl's batch padding and the V1 trainer's
``_compute_advantage``. The rollout server is ours: a tiny random HF model, or a scripted one
(verl's servers need vLLM or SGLang on a GPU). The trainer is built with its ``__init__`` but
not ``init()`` (that builds the FSDP workers and the inference engine).
"""

from __future__ import annotations

import asyncio
import os
import time

import numpy as np
import pytest

pytestmark = pytest.mark.reach
verl = pytest.importorskip("verl")
ray = pytest.importorskip("ray")
tq = pytest.importorskip("transfer_queue")
torch = pytest.importorskip("torch")

import gymnasium as gym  # noqa: E402
from agentenvs.learners.llm.generation import HFGenerator  # noqa: E402
from agentenvs.learners.llm.policy import Policy  # noqa: E402
from agentenvs.learners.llm.rollout import prompt_ids  # noqa: E402
from agentenvs.learners.llm.tiny import save_tiny  # noqa: E402
from agentenvs.learners.verl import row_advantages  # noqa: E402
from agentenvs.learners.verl.agent_loop import (  # noqa: E402
    CONFIG_FILE,
    EXTRA_KEY,
    EnvAgentLoop,
    write_dataset,
)
from agentenvs.learners.verl.trainer import StepCreditTrainer, write_step_rows  # noqa: E402
from agentenvs.wrappers import CreditWrapper  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402
from verl.experimental.agent_loop.agent_loop import DictConfigWrap  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

from agentenvs.core import EpisodeMemory  # noqa: E402
from agentenvs.core.prompting import agent_prompt_for  # noqa: E402

ENV_ID = "agentenvs/Sokoban-v0"
# rooms solved in at most 2 moves (short episodes: the scripted server wins them at chosen steps)
ENV_KWARGS = {"max_steps": 6, "max_solution_steps": 2, "curriculum_size": [8, 2]}
TASKS = ["seed-1", "seed-3", "seed-4"]
GROUP = 4  # actor_rollout_ref.rollout.n
STYLE = "compact"
LOOP_NAME = "agentenvs_compact"  # the YAML's loop with its options (not AGENT_NAME: see the module)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    path = tmp_path_factory.mktemp("verl_loop")
    save_tiny(path / "tiny")
    write_dataset(
        path / "train.parquet",
        ENV_ID,
        TASKS,
        env_kwargs=ENV_KWARGS,
        prompt_style=STYLE,
        agent_name=LOOP_NAME,
    )
    (path / "loop.yaml").write_text(
        f"- name: {LOOP_NAME}\n"
        "  _target_: agentenvs.learners.verl.agent_loop.EnvAgentLoop\n"
        f"  prompt_style: {STYLE}\n"
    )
    return path


def verl_config(workdir, *overrides: str):
    """verl's own ``ppo_trainer`` config, composed by Hydra (struct mode kept)."""
    config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        config = compose(
            "ppo_trainer",
            overrides=[
                f"actor_rollout_ref.model.path={workdir / 'tiny'}",
                f"data.train_files={workdir / 'train.parquet'}",
                f"data.val_files={workdir / 'train.parquet'}",
                f"data.train_batch_size={len(TASKS)}",
                "data.dataloader_num_workers=0",
                "data.filter_overlong_prompts_workers=1",
                f"actor_rollout_ref.rollout.n={GROUP}",
                "actor_rollout_ref.rollout.prompt_length=1024",
                "actor_rollout_ref.rollout.response_length=48",
                "actor_rollout_ref.rollout.name=vllm",  # never started: the server is ours
                "actor_rollout_ref.rollout.calculate_log_probs=true",
                "actor_rollout_ref.rollout.agent.num_workers=1",
                f"actor_rollout_ref.rollout.agent.agent_loop_config_path={workdir / 'loop.yaml'}",
                f"actor_rollout_ref.actor.ppo_mini_batch_size={len(TASKS)}",
                "algorithm.adv_estimator=agentenvs_graphgpo",
                "trainer.v1.trainer_mode=agentenvs",
                *overrides,
            ],
        )
    OmegaConf.resolve(config)
    return config


class HFServer:
    """verl's ``generate(request_id, *, prompt_ids, sampling_params) -> TokenOutput`` on the tiny
    HF model (temperature 1, the request's ``max_tokens`` and ``stop``); logs every call."""

    def __init__(self, path) -> None:
        tok = AutoTokenizer.from_pretrained(path)
        self.policy = Policy(AutoModelForCausalLM.from_pretrained(path).eval(), tok)
        self.calls: list[tuple[list[int], list[int]]] = []
        torch.manual_seed(0)

    async def generate(self, request_id, *, prompt_ids, sampling_params, **_) -> TokenOutput:
        gen = HFGenerator(self.policy, max_new_tokens=sampling_params["max_tokens"])
        sample = gen.generate([prompt_ids], stop=tuple(sampling_params.get("stop", ())))[0]
        self.calls.append((list(prompt_ids), list(sample.token_ids)))
        return TokenOutput(token_ids=sample.token_ids, log_probs=sample.logprobs)


def scripts(tokenizer) -> dict[tuple[int, ...], list[list[str]]]:
    """Per task (keyed by its first prompt's token ids, which is what a server sees): session
    ``k``'s moves are ``k`` invalid ones (``jump``: the state stays), then the shortest solution;
    the last session only jumps. So a group holds winners of different lengths and a loser, and
    recurring states."""
    out = {}
    for task in TASKS:
        env = gym.make(ENV_ID, **ENV_KWARGS)
        prompt = agent_prompt_for(env, STYLE)
        obs, info = env.reset(options={"task_id": task})
        first = prompt_ids(Policy(None, tokenizer), prompt, EpisodeMemory(), obs, info)
        solution = []
        while (move := env.unwrapped.expert_action()) is not None:
            solution.append(move)
            env.step(prompt.response_prefix + prompt.answer(move))
        plays = [["jump"] * k + solution for k in range(GROUP - 1)]
        out[tuple(first)] = [*plays, ["jump"] * ENV_KWARGS["max_steps"]]
    return out


class ScriptedServer:
    """A server that plays :func:`scripts` (a session is its sticky request id: the ``n``-th
    session of a task plays script ``n``), every other answer followed by text past the stop
    string (which the loop must cut), with made-up log-probs."""

    def __init__(self, path) -> None:
        self.path = str(path)
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        self.scripts = scripts(self.tokenizer)
        self.started: dict[tuple[int, ...], int] = {}  # task -> sessions started
        self.sessions: dict[str, list[str]] = {}  # request id -> moves left

    def __getstate__(self) -> dict:  # the tokenizer is loaded again in the worker
        return {k: v for k, v in self.__dict__.items() if k != "tokenizer"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, tokenizer=AutoTokenizer.from_pretrained(state["path"]))

    async def generate(self, request_id, *, prompt_ids, sampling_params, **_) -> TokenOutput:
        if request_id not in self.sessions:
            task = tuple(prompt_ids)
            n = self.started[task] = self.started.get(task, -1) + 1
            self.sessions[request_id] = list(self.scripts[task][n])
        moves = self.sessions[request_id]
        tail = "<think>more" if len(moves) % 2 else ""
        text = f"ok</think><action>{moves.pop(0) if moves else 'jump'}</action>{tail}"
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        steps = {"global_steps": 1, "min_global_steps": 1, "max_global_steps": 1}
        return TokenOutput(
            token_ids=ids, log_probs=[-0.5] * len(ids), stop_reason="completed", extra_fields=steps
        )


def dataset(config):
    tok = AutoTokenizer.from_pretrained(config.actor_rollout_ref.model.path)
    return RLHFDataset(config.data.train_files, tok, config.data)


def test_rlhf_dataset_reads_the_written_parquet(workdir):
    rows = dataset(verl_config(workdir))
    assert len(rows) == len(TASKS)
    row = rows[1]
    assert row["agent_name"] == LOOP_NAME
    assert row["extra_info"]["task_id"] == TASKS[1] and row["extra_info"]["env_id"] == ENV_ID
    env = gym.make(ENV_ID, **ENV_KWARGS)
    obs, info = env.reset(options={"task_id": TASKS[1]})
    first = agent_prompt_for(env, STYLE).messages(EpisodeMemory(), obs, info)
    assert list(row["raw_prompt"]) == first  # the first turn's chat, as verl logs it


def test_agent_loop_one_row_per_step_with_the_sampled_tokens(workdir):
    """The loop against a tiny HF server: one output per step; each step's prompt is the one our
    learner builds (rollout.prompt_ids), its response the tokens the server sampled, its reward
    and columns the env's."""
    config = verl_config(workdir)
    server = HFServer(workdir / "tiny")
    tok = server.policy.tokenizer
    loop = EnvAgentLoop(
        trainer_config=DictConfigWrap(config),
        server_manager=server,
        tokenizer=tok,
        processor=None,
        dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(config.data),
        prompt_style=STYLE,
    )
    row = dataset(config)[0]
    outputs = asyncio.run(loop.run({"temperature": 1.0, "logprobs": True}, **row))
    assert len(outputs) == len(server.calls) == ENV_KWARGS["max_steps"]  # random model: no win
    env = gym.make(ENV_ID, **ENV_KWARGS)
    prompt = agent_prompt_for(env, STYLE)
    obs, info = env.reset(options={"task_id": TASKS[0]})
    memory = EpisodeMemory()
    for t, (out, (sent, sampled)) in enumerate(zip(outputs, server.calls, strict=True)):
        assert out.prompt_ids == sent == prompt_ids(server.policy, prompt, memory, obs, info)
        assert out.response_ids == sampled and out.response_mask == [1] * len(sampled)
        assert len(out.response_logprobs) == len(sampled)
        text = prompt.response_prefix + tok.decode(sampled, skip_special_tokens=True)
        before = obs
        obs, reward, terminated, truncated, info = env.step(text)
        memory.record(before, prompt.project(text))
        columns = out.extra_fields[EXTRA_KEY]
        assert columns["reward"] == reward and columns["action"] == text
        assert columns["state_key"] is not None and columns["next_state_key"] == info["state_key"]
        assert columns["step_index"] == t and columns["action_valid"] == info["action_valid"]
    assert truncated and outputs[-1].reward_score == pytest.approx(
        sum(o.extra_fields[EXTRA_KEY]["reward"] for o in outputs)
    )
    assert all(o.reward_score is None for o in outputs[:-1])


@pytest.fixture(scope="module")
def cluster():
    import sys

    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the actor gets ScriptedServer
    owned = not ray.is_initialized()
    if owned:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    tq.init(OmegaConf.create({"backend": {"SimpleStorage": {"num_data_storage_units": 1}}}))
    yield
    tq.close()
    if owned:
        ray.shutdown()


def rows_of(batch, fields):
    data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=fields)
    return {f: list(data[f]) for f in fields}


def native_advantages(rows, keys, method: str, tok) -> tuple[dict, dict]:
    """Replay every session's responses (``response_prefix`` + their decoded tokens) through our
    credit wrapper of ``method``: per key, the advantage it writes and the env's reward."""
    sessions: dict[str, dict[int, list[int]]] = {}
    for i, key in enumerate(keys):
        uid, session, step = key.rsplit("_", 2)
        sessions.setdefault(uid, {}).setdefault(int(session), []).append((int(step), i))
    advantage, reward = {}, {}
    for by_session in sessions.values():
        task = rows["extra_info"][by_session[0][0][1]]["task_id"]
        env = CreditWrapper(gym.make(ENV_ID, **ENV_KWARGS), group_size=GROUP, method=method)
        prompt = agent_prompt_for(env, STYLE)
        credit, order = None, []
        for session in sorted(by_session):
            obs, info = env.reset(options={"task_id": task})
            memory = EpisodeMemory()
            for _, i in sorted(by_session[session]):
                shown = prompt_ids(Policy(None, tok), prompt, memory, obs, info)
                assert rows["prompts"][i].tolist() == shown  # the prompt our learner shows
                response = rows["responses"][i].tolist()
                text = prompt.response_prefix + tok.decode(response, skip_special_tokens=True)
                memory.record(obs, prompt.project(text))
                obs, _, _, _, info = env.step(text)
                order.append(keys[i])
            credit = info.get("credit") or credit
        steps = [s for traj in credit for s in traj.steps]
        assert len(steps) == len(order)
        for key, step in zip(order, steps, strict=True):
            advantage[key], reward[key] = step.advantage, step.reward
    return advantage, reward


def test_worker_rows_in_transferqueue_and_step_credit_advantages(workdir, cluster):
    """verl's manager, worker, replay buffer and V1 ``_compute_advantage`` around our loop and
    hook: the advantages equal our credit wrappers' on the same episodes; verl's stock path (the
    final reward on every step) gives other ones, or, with our estimators, refuses."""
    from verl.trainer.ppo.padding_utils import upsample_batch_to_divisible_size
    from verl.trainer.ppo.v1 import AgentLoopManagerTQ, PPOTrainerSync

    start = time.perf_counter()
    config = verl_config(
        workdir, "algorithm.rollout_correction.bypass_mode=true", "algorithm.use_kl_in_reward=true"
    )
    trainer = StepCreditTrainer(config)  # __init__ only: init() builds the GPU workers
    assert trainer.trainer_mode == "sync" and type(trainer.replay_buffer).__name__ == "ReplayBuffer"
    trainer.global_steps = 1
    trainer._init_tokenizer()
    trainer._init_dataloader()
    trainer.agent_loop_manager = AgentLoopManagerTQ.create(
        config=config, llm_client=ScriptedServer(workdir / "tiny")
    )
    trainer._add_batch_to_generate()  # dataloader -> TQ prompts -> manager -> worker actor
    batch, _ = trainer.replay_buffer.sample(1, "train", len(TASKS))
    fields = ["uid", "extra_info", "prompts", "responses", "rm_scores"]
    rows = rows_of(batch, fields)
    keys = list(batch.keys)
    assert len({k.rsplit("_", 1)[0] for k in keys}) == GROUP * len(TASKS)  # every session
    assert len(keys) > GROUP * len(TASKS)  # ... of several steps: one row per step
    lengths = {
        s: sum(k.startswith(s + "_") for k in keys) for s in {k.rsplit("_", 1)[0] for k in keys}
    }
    assert len(set(lengths.values())) > 1  # episodes end at different steps
    tok = trainer.tokenizer
    for ids in rows["responses"]:  # cut after the stop string the scripted server ran past
        assert tok.decode(ids.tolist()).endswith("</action>")

    trainer._compute_old_log_prob(batch, {})  # bypass mode: the rollout's log-probs, via TQ
    # no reference model here: its log-probs are the rollout's (KL 0), so verl's KL-in-reward runs
    logp = tq.kv_batch_get(keys=keys, partition_id="train", select_fields=["old_log_probs"])
    ref = logp.rename_key_("old_log_probs", "ref_log_prob")
    tq.kv_batch_put(keys=keys, partition_id="train", fields=ref)

    # verl's stock path: every step holds the episode's return; our estimators refuse plain uids
    stock = {k: float(r.sum()) for k, r in zip(keys, rows["rm_scores"], strict=True)}
    with pytest.raises(ValueError, match="attach_step_uids"):
        PPOTrainerSync._compute_advantage(trainer, batch, {})

    batch = upsample_batch_to_divisible_size(batch, len(batch) + 3, tok.eos_token_id)  # 3 pads
    pads = [k for k, tag in zip(batch.keys, batch.tags, strict=True) if tag.get("is_padding")]
    assert len(pads) == 3
    worst = {}
    for method in ("graphgpo", "gigpo", "grpo", "rtmc"):
        trainer.config.algorithm.adv_estimator = f"agentenvs_{method}"
        trainer._compute_advantage(batch, {})
        got = rows_of(batch, ["advantages", "rm_scores", "uid"])
        by_key = dict(zip(batch.keys, range(len(batch.keys)), strict=True))
        expected, rewards = native_advantages(rows, keys, method, tok)
        for key in keys:
            adv, score = got["advantages"][by_key[key]], got["rm_scores"][by_key[key]]
            assert float(score.sum()) == pytest.approx(rewards[key], abs=1e-6)  # env's reward
            assert torch.allclose(adv, adv[:1].expand_as(adv))  # one value over the response
            assert float(adv[0]) == pytest.approx(expected[key], abs=1e-6), (method, key)
        for key in pads:
            assert float(got["advantages"][by_key[key]].abs().sum()) == 0.0
        uids = [got["uid"][by_key[k]] for k in keys]
        fed_stock = row_advantages(method, uids, np.array([stock[k] for k in keys]))
        worst[method] = max(abs(a - expected[k]) for a, k in zip(fed_stock, keys, strict=True))
    # the hook matters
    assert worst["graphgpo"] > 0.1 and worst["gigpo"] > 0.1 and worst["rtmc"] > 0.1, worst
    write_step_rows(type(batch)(partition_id=batch.partition_id, keys=[], tags=[]))  # a no-op
    assert time.perf_counter() - start < 120


def test_shipped_agent_loop_yaml_names_the_loop():
    listed = OmegaConf.load(CONFIG_FILE)
    assert [(c.name, c._target_) for c in listed] == [
        ("agentenvs", "agentenvs.learners.verl.agent_loop.EnvAgentLoop")
    ]


def test_registered_in_a_fresh_verl_process_at_plugin_time():
    """``import verl`` alone (its ``verl.plugins`` entry points: ours name the estimators and the
    trainer module) registers the trainer mode and the agent loop, as verl's ``TaskRunnerV1`` and
    agent-loop worker look them up, without a circular import."""
    import subprocess
    import sys

    code = (
        "import verl.trainer.main_ppo\n"
        "from verl.trainer.ppo.v1 import get_trainer_cls\n"
        "from verl.experimental.agent_loop.agent_loop import _agent_loop_registry as r\n"
        "print(get_trainer_cls('agentenvs').__name__, r['agentenvs']['_target_'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == [
        "StepCreditTrainer",
        "agentenvs.learners.verl.agent_loop.EnvAgentLoop",
    ]
