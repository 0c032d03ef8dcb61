"""The vLLM backend and the CUDA training path on a real GPU: log-probs against the trainer's,
full-weight and LoRA sync (a stale engine shows a large gap), sleep/wake round trips, a training
iteration with bf16 autocast and vLLM, and vLLM serving an exported policy.

Every test is marked ``gpu`` (the default run deselects them) and skips without CUDA or vLLM.
On a CUDA machine:

    pip install 'vllm>=0.10.2'
    python -m pytest -m gpu tests/learners/llm/test_llm_gpu.py

Each test starts its own small engine on the tiny model (saved with ``save_tiny``, hidden size 128
so the head size is 64; ``gpu_memory_utilization`` 0.15, ``max_model_len`` 1024) and shuts it down
afterwards. vLLM runs the model in bf16 and the trainer in fp32, so log-probs agree to about
1e-2 nats, not exactly; the bounds below leave room for that and are far below what a stale
engine shows.
"""

import gc
from contextlib import contextmanager

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]
vllm = pytest.importorskip("vllm")

import gymnasium as gym  # noqa: E402
from agentenvs.learners.llm.config import TrainConfig  # noqa: E402
from agentenvs.learners.llm.export import export_policy  # noqa: E402
from agentenvs.learners.llm.logprob_gap import logprob_gap  # noqa: E402
from agentenvs.learners.llm.policy import load_policy, response_logprobs  # noqa: E402
from agentenvs.learners.llm.tiny import save_tiny  # noqa: E402
from agentenvs.learners.llm.trainer import Trainer  # noqa: E402
from agentenvs.learners.llm.vllm_generator import VLLMGenerator  # noqa: E402
from agentenvs.wrappers import GraphCreditWrapper  # noqa: E402

ENGINE = dict(gpu_memory_utilization=0.15, max_model_len=1024)
#: Mean |vLLM - trainer| per token (nats) of an engine holding the trainer's weights (bf16 vs fp32).
SYNCED = 0.05
#: ... and the least of an engine left with weights before a deliberate, large change.
STALE = 0.2


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return save_tiny(tmp_path_factory.mktemp("tiny"), hidden_size=128, num_heads=2)


@contextmanager
def _engine(policy, path, **kwargs):
    """A :class:`VLLMGenerator`, shut down and its GPU memory freed on exit."""
    from vllm.distributed.parallel_state import cleanup_dist_env_and_memory

    gen = VLLMGenerator(policy, str(path), **{**ENGINE, **kwargs})
    try:
        yield gen
    finally:
        del gen.llm
        del gen
        gc.collect()
        cleanup_dist_env_and_memory()
        torch.cuda.empty_cache()


def _pairs(policy, gen, n=6):
    """``n`` sampled (prompt, response) token-id pairs and the engine's log-probs of them."""
    texts = ["push the box left", "go to the kitchen", "open the fridge"]
    prompts = [policy.chat_ids([{"role": "user", "content": t}]) for t in texts] * (n // 3)
    samples = gen.generate(prompts)
    return prompts, [s.token_ids for s in samples], [s.logprobs for s in samples]


def _gap(policy, gen, prompts, responses):
    """Mean gap between the engine's and the trainer's temperature-1 log-probs."""
    trainer = response_logprobs(policy, prompts, responses)
    return logprob_gap(gen.score(prompts, responses), trainer)[0]


def _perturb(params, scale, seed=0):
    """A large deliberate change (as many updates would make)."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    with torch.no_grad():
        for p in params:
            p.add_(torch.randn(p.shape, generator=gen, device=p.device, dtype=p.dtype) * scale)


def test_sampled_logprobs_are_the_trainers(tiny_dir):
    policy = load_policy(tiny_dir, device="cuda")
    with _engine(policy, tiny_dir, max_new_tokens=24, temperature=0.7) as gen:
        assert gen.exact_logprobs  # processed log-probs (vLLM >= 0.10.2), top_p 1
        prompts, responses, sampled = _pairs(policy, gen)
        assert all(len(r) for r in responses)
        trainer = response_logprobs(policy, prompts, responses, temperature=0.7)
        assert logprob_gap(sampled, trainer)[0] < SYNCED  # temperature-scaled, as the trainer's
        assert _gap(policy, gen, prompts, responses) < SYNCED  # score: temperature 1


def test_full_weight_sync_and_a_stale_engine(tiny_dir):
    policy = load_policy(tiny_dir, device="cuda")
    with _engine(policy, tiny_dir, max_new_tokens=16) as gen:
        prompts, responses, _ = _pairs(policy, gen)
        _perturb(policy.model.parameters(), 0.1)
        assert _gap(policy, gen, prompts, responses) > STALE  # not synced yet
        gen.sync_weights()
        assert _gap(policy, gen, prompts, responses) < SYNCED


def test_sleep_frees_memory_and_level_2_reloads_the_weights(tiny_dir):
    policy = load_policy(tiny_dir, device="cuda")
    with _engine(policy, tiny_dir, max_new_tokens=16, sleep=True) as gen:
        assert gen.sleep_level == 2
        prompts, responses, _ = _pairs(policy, gen)
        free = torch.cuda.mem_get_info()[0]
        gen.sleep()
        assert torch.cuda.mem_get_info()[0] > free + 2**30  # the KV cache at least is freed
        _perturb(policy.model.parameters(), 0.1)  # the update while the engine sleeps
        gen.sync_weights()
        gen.wake_up()
        assert _gap(policy, gen, prompts, responses) < SYNCED
        gen.sleep()
        assert _pairs(policy, gen)[1]  # generating wakes it up (reloading the weights)


def test_lora_adapter_sync_and_level_1_sleep(tiny_dir):
    policy = load_policy(tiny_dir, device="cuda", lora_rank=8)
    with _engine(policy, tiny_dir, max_new_tokens=16, sleep=True) as gen:
        assert gen.sleep_level == 1 and gen.lora_request.lora_int_id == 1
        prompts, responses, _ = _pairs(policy, gen)
        assert _gap(policy, gen, prompts, responses) < SYNCED
        lora = [p for n, p in policy.model.named_parameters() if "lora_B" in n]
        _perturb(lora, 0.3)
        assert _gap(policy, gen, prompts, responses) > STALE  # still adapter v1
        gen.sleep()
        gen.sync_weights()  # writes adapter v2 while the engine sleeps
        gen.wake_up()  # the base weights come back from CPU memory
        assert gen.lora_request.lora_int_id == 2
        assert _gap(policy, gen, prompts, responses) < SYNCED


def test_training_iteration_with_vllm_sleep_and_bf16_autocast(tiny_dir, tmp_path):
    policy = load_policy(tiny_dir, device="cuda")
    config = TrainConfig(
        iterations=1,
        backend="vllm",
        autocast="bfloat16",
        vllm_sleep=True,
        vllm_gpu_memory_utilization=ENGINE["gpu_memory_utilization"],
        vllm_max_model_len=ENGINE["max_model_len"],
        max_new_tokens=8,
        eval_tasks=0,
        lr=1e-3,
    )
    envs = [
        lambda: GraphCreditWrapper(gym.make("agentenvs/Sokoban-v0", max_steps=2), group_size=2)
    ] * 2
    from vllm.distributed.parallel_state import cleanup_dist_env_and_memory

    trainer = Trainer(config, policy, tmp_path, envs, model_path=str(tiny_dir), progress=False)
    try:
        metrics = trainer.train_iteration()
    finally:
        trainer.close()
        del trainer
        gc.collect()
        cleanup_dist_env_and_memory()
    assert metrics["samples"] > 0 and torch.isfinite(torch.tensor(metrics["loss"]))
    assert metrics["sync/logprob_gap"] < SYNCED  # bf16 engine vs bf16-autocast trainer


def test_vllm_serves_an_exported_policy(tiny_dir, tmp_path):
    policy = load_policy(tiny_dir, device="cuda", lora_rank=8)
    _perturb([p for n, p in policy.model.named_parameters() if "lora_B" in n], 0.3)
    path = export_policy(policy, tmp_path / "policy")  # LoRA merged: a plain model directory
    exported = load_policy(path, device="cuda")
    with _engine(exported, path, max_new_tokens=16) as gen:
        prompts, responses, _ = _pairs(exported, gen)
        assert _gap(policy, gen, prompts, responses) < SYNCED  # the trained (LoRA) policy's
