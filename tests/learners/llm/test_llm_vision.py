"""Visual agents in the LLM learner (docs/visual-agents.md): the tiny VLM on SokobanVisual, images
from the env's prompt to the forward pass and the update, batched rollouts, exact token ids,
unchanged credit, resume, LoRA on the language part, and the errors for mismatched inputs."""

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from agentenvs.learners.llm.config import TrainConfig  # noqa: E402
from agentenvs.learners.llm.generation import HFGenerator  # noqa: E402
from agentenvs.learners.llm.policy import (  # noqa: E402
    collate,
    load_policy,
    response_logits,
    response_logprobs,  # noqa: E402
)
from agentenvs.learners.llm.rollout import Sampler, prompt_ids  # noqa: E402
from agentenvs.learners.llm.tiny_vl import save_tiny_vl  # noqa: E402
from agentenvs.learners.llm.trainer import Trainer  # noqa: E402
from agentenvs.learners.llm.vision import ImageInputs, check_modalities, mark_ids  # noqa: E402
from agentenvs.wrappers import GiGPOCreditWrapper, GraphCreditWrapper  # noqa: E402
from llm_fixtures import tiny_policy, tiny_vl_policy  # noqa: E402

import agentenvs  # noqa: E402, F401
from agentenvs.core import EpisodeMemory  # noqa: E402

VISUAL = "agentenvs/SokobanVisual-v0"
SMALL = dict(max_new_tokens=6, eval_tasks=2, lr=1e-3, micro_batch_size=3, torch_threads=1)


@pytest.fixture(autouse=True)
def _restore_torch_threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def _first_prompt(policy, task="seed-3"):
    env = gym.make(VISUAL)
    obs, info = env.reset(options={"task_id": task})
    prompt = env.unwrapped.agent_prompt("compact")
    memory = EpisodeMemory()
    ids = prompt_ids(policy, prompt, memory, obs, info)
    return ids, prompt.images(memory, obs, info), obs


def test_the_prompt_carries_the_board_as_image_tokens():
    policy = tiny_vl_policy()
    ids, images, obs = _first_prompt(policy)
    assert len(images) == 1 and images[0] is obs["image"] and images[0].shape == (96, 96, 3)
    image_token = policy.images.image_token_id
    assert ids.count(image_token) == 9  # 96x96 -> 84x84: 6x6 patches, 2x2 merged
    # the text model cannot take it: one line that says why
    with pytest.raises(ValueError, match="text-only"):
        prompt_ids(tiny_policy(), gym.make(VISUAL).unwrapped.agent_prompt("compact"),
                   EpisodeMemory(), obs, {})  # fmt: skip


def test_the_image_reaches_the_logits_and_the_vision_tower_gets_a_gradient():
    policy = tiny_vl_policy()
    ids, images, _ = _first_prompt(policy)
    answer = policy.tokenizer.encode("</think><action>up</action>", add_special_tokens=False)
    other = np.full_like(images[0], 255)

    def logits(board):
        pixels = policy.pixels([[board]])
        return response_logits(policy.model, collate([ids], [answer], policy.pad_id, pixels=pixels))

    assert not torch.allclose(logits(images[0]), logits(other))  # the pixels condition the text
    policy.model.zero_grad()
    logits(images[0]).sum().backward()
    grad = policy.model.model.visual.patch_embed.proj.weight.grad
    assert grad is not None and grad.abs().sum() > 0


def test_sampled_logprobs_equal_recomputed_ones_and_eight_envs_share_one_generate_call():
    policy = tiny_vl_policy()
    generator = HFGenerator(policy, max_new_tokens=8, batch_size=32)
    calls = []
    real_generate = policy.model.generate

    def counted(*args, **kwargs):
        calls.append(kwargs["pixel_values"].shape[0])
        return real_generate(*args, **kwargs)

    policy.model.generate = counted
    envs = [gym.make(VISUAL) for _ in range(8)]
    requests = []
    for k, env in enumerate(envs):
        obs, info = env.reset(options={"task_id": f"seed-{k}"})
        requests.append((env.unwrapped.agent_prompt("compact"), EpisodeMemory(), obs, info))
    torch.manual_seed(0)
    responses = Sampler(policy, generator)(requests)
    assert calls == [8 * 36]  # one call, the patches of the 8 boards
    recomputed = response_logprobs(
        policy,
        [r.prompt_ids.tolist() for r in responses],
        [r.response_ids.tolist() for r in responses],
        images=[r.images for r in responses],
    )
    for r, lp in zip(responses, recomputed, strict=True):
        assert len(r.images) == 1 and len(lp) == len(r.response_ids) > 0
        np.testing.assert_allclose(r.logprobs, lp, atol=1e-3)


def test_responses_never_hold_image_marks_and_training_sees_the_same_distribution():
    """A response holding <|image_pad|> would claim an image without pixels (the forward then
    fails): sampling suppresses the marks and the trainer's logits exclude them, so the sampled
    log-probs still equal the recomputed ones. The marks' embeddings are scaled up here so that,
    unmasked, they would be the likeliest tokens."""
    policy = tiny_vl_policy()
    marks = mark_ids(policy.model)
    assert len(marks) == 4 and policy.images.image_token_id in marks
    with torch.no_grad():
        policy.model.get_input_embeddings().weight[marks] *= 50.0
    ids, images, _ = _first_prompt(policy)
    for greedy in (True, False):
        (sample,) = HFGenerator(policy, max_new_tokens=8).generate(
            [ids], images=[images], greedy=greedy
        )
        assert not set(sample.token_ids) & set(marks)
        if not greedy:
            (lp,) = response_logprobs(policy, [ids], [sample.token_ids], images=[images])
            np.testing.assert_allclose(sample.logprobs, lp, atol=1e-3)


def test_the_update_trains_on_the_sampled_tokens_and_resume_is_exact(tmp_path):
    """The steps keep the sampled prompt and response ids and the board; the update's batch is
    built from them; a resumed run's next loss equals the straight run's."""

    def run(out, iterations, resume_from=None):
        config = TrainConfig(iterations=iterations, seed=3, kl_coef=0.05, **SMALL)
        envs = [lambda: GraphCreditWrapper(gym.make(VISUAL, max_steps=2), group_size=2)] * 2
        trainer = Trainer(config, tiny_vl_policy(), out, envs, tensorboard=False, progress=False)
        if resume_from is not None:
            trainer.load_checkpoint(resume_from)
        losses = []
        for _ in range(iterations - trainer.iteration):
            groups, _, _ = trainer.collect()
            steps = [s for g in groups for t in g for s in t.steps]
            for s in steps:  # the ids are the prompt's, its board's tokens included
                assert s.extras["images"][0].dtype == np.uint8
                assert (
                    s.extras["prompt_ids"].tolist().count(trainer.policy.images.image_token_id) == 9
                )
                s.advantage = 1.0 if len(s.extras["response_ids"]) % 2 else -1.0  # from the sample
            losses.append(trainer.update(steps)["loss"])
            trainer.iteration += 1
        trainer.close()
        return trainer, losses

    _, straight = run(tmp_path / "a", 2)
    first, _ = run(tmp_path / "b", 1)
    resumed, after = run(tmp_path / "c", 2, resume_from=first.save_checkpoint())
    assert straight[1] != 0.0 and after == [straight[1]]


def _scripted_groups(wrapper_cls, env_id):
    """A group of 3 episodes of one room under ``wrapper_cls`` (no model): the expert's moves,
    the expert's first move then ``left``, and ``left`` only."""
    env = wrapper_cls(gym.make(env_id, max_steps=4), group_size=3)
    for expert_moves in (4, 1, 0):
        env.reset(options={"task_id": "seed-7"})
        for t in range(4):
            move = env.unwrapped.expert_action() if t < expert_moves else "left"
            *_, terminated, truncated, info = env.step(f"<think></think><action>{move}</action>")
            if terminated or truncated:
                break
    return info["credit"]


@pytest.mark.parametrize("wrapper_cls", [GraphCreditWrapper, GiGPOCreditWrapper])
def test_credit_on_the_visual_env_equals_the_text_env_for_the_same_moves(wrapper_cls):
    visual, text = (
        _scripted_groups(wrapper_cls, VISUAL),
        _scripted_groups(wrapper_cls, "agentenvs/Sokoban-v0"),
    )
    got = [(s.state_key, s.advantage) for t in visual for s in t.steps]
    want = [(s.state_key, s.advantage) for t in text for s in t.steps]
    assert got == want and any(a != 0 for _, a in got)


def test_lora_adapts_the_language_part_and_the_vision_tower_stays_frozen(tmp_path):
    path = save_tiny_vl(tmp_path / "vl")
    frozen = load_policy(path, lora_rank=4)
    names = [n for n, p in frozen.model.named_parameters() if p.requires_grad]
    assert names and all("language_model" in n and "lora_" in n for n in names)
    trained = load_policy(path, lora_rank=4, train_vision=True)
    names = [n for n, p in trained.model.named_parameters() if p.requires_grad]
    assert any("visual" in n for n in names) and all("lora_" in n for n in names)
    full = load_policy(path)
    assert isinstance(full.images, ImageInputs)
    assert not any(p.requires_grad for p in full.model.model.visual.parameters())
    assert all(p.requires_grad for p in full.model.model.language_model.parameters())


def test_mismatched_models_envs_and_images_fail_in_one_line():
    visual, text = (
        gym.make(VISUAL).observation_space,
        gym.make("agentenvs/Sokoban-v0").observation_space,
    )
    with pytest.raises(
        ValueError, match="SokobanVisual-v0 observes images but the model tiny is text-only"
    ):
        check_modalities(VISUAL, visual, "tiny", vision=False)
    with pytest.raises(
        ValueError, match="tiny-vl is a vision-language model but agentenvs/Sokoban-v0"
    ):
        check_modalities("agentenvs/Sokoban-v0", text, "tiny-vl", vision=True)
    check_modalities(VISUAL, visual, "tiny-vl", vision=True)
    policy = tiny_vl_policy()
    ids = policy.tokenizer.encode(policy.images.mark, add_special_tokens=False)
    with pytest.raises(
        ValueError,
        match=r"image 0 of the prompt must be a uint8 \(H, W, 3\) RGB array, got float32",
    ):
        policy.images.expand(ids, [np.zeros((96, 96, 3), np.float32)])
    with pytest.raises(ValueError, match=r"got uint8 \(96, 96\)"):
        policy.images.expand(ids, [np.zeros((96, 96), np.uint8)])
    with pytest.raises(ValueError, match="1 image mark.* and 2 image"):
        policy.images.expand(ids, [np.zeros((96, 96, 3), np.uint8)] * 2)


def test_vllm_requests_carry_the_images_and_one_image_mark_each():
    """vLLM expands each image mark itself: the request holds the unexpanded prompt (the same
    ids as before expansion) and the images; text prompts stay plain token prompts."""
    from agentenvs.learners.llm.vllm_generator import engine_requests

    policy = tiny_vl_policy()
    ids, images, _ = _first_prompt(policy)
    messages = gym.make(VISUAL).unwrapped.agent_prompt("compact").messages(EpisodeMemory(), {}, {})
    unexpanded = policy.tokenizer.apply_chat_template(
        [{**m, "content": m["content"].replace("<image>", policy.images.mark)} for m in messages],
        add_generation_prompt=True,
        tokenize=True,
    )
    unexpanded = list(getattr(unexpanded, "input_ids", unexpanded))
    unexpanded += policy.tokenizer.encode("<think>", add_special_tokens=False)
    image_request, text_request = engine_requests([ids, [5, 6]], [images, []], policy.images)
    assert image_request["prompt_token_ids"] == unexpanded
    (picture,) = image_request["multi_modal_data"]["image"]
    assert picture.size == (96, 96) and np.array_equal(np.asarray(picture), images[0])
    assert text_request == {"prompt_token_ids": [5, 6]}
    with pytest.raises(ValueError, match="vision-language policy"):
        engine_requests([ids], [images], None)


def test_train_llm_trains_the_tiny_vlm_and_exports_a_directory_that_loads_back(tmp_path):
    """``train_llm.py agentenvs/SokobanVisual-v0 --model tiny-vl`` (its recipe, cut to a short
    warm start and one iteration) runs end to end; the exported policy is a VLM again."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[3] / "examples" / "train_llm.py"
    run = subprocess.run(
        [sys.executable, str(script), VISUAL, "--model", "tiny-vl", "--iterations", "1",
         "--warm-start-steps", "20", "--groups", "2", "--group-size", "2", "--eval-tasks", "4",
         "--out", str(tmp_path / "run"), "--no-progress"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "test success (greedy, 4 tasks)" in run.stdout
    exported = load_policy(tmp_path / "run" / "policy")
    assert isinstance(exported.images, ImageInputs)
    assert exported.model.config.image_token_id == exported.images.image_token_id


def test_train_llm_names_the_env_and_the_model_when_they_do_not_fit(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[3] / "examples" / "train_llm.py"
    run = subprocess.run(
        [sys.executable, str(script), VISUAL, "--model", "tiny", "--iterations", "1",
         "--out", str(tmp_path / "run"), "--no-progress"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode != 0
    last = run.stderr.strip().splitlines()[-1]
    assert last == (
        f"train_llm.py: {VISUAL} observes images but the model tiny is text-only: use a "
        "vision-language model (--model tiny-vl or a local Qwen2-VL directory)"
    )


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_webshop_screenshot_episode_trains_end_to_end(tmp_path):
    """WebShopBrowser-v0's screenshot mode through rollout and update: each step's prompt holds
    the 1280x800 page as 60 image tokens (resized to 280x168), and the update takes them."""
    import os

    pytest.importorskip("selenium")
    if not all(os.path.exists(p) for p in ("/usr/bin/chromium", "/usr/bin/chromedriver")):
        pytest.skip("Chromium and chromium-driver are not installed")

    def make_env():
        env = gym.make("agentenvs/WebShopBrowser-v0", observation_mode="screenshot", max_steps=2)
        return GraphCreditWrapper(env, group_size=2)

    config = TrainConfig(iterations=1, seed=0, max_new_tokens=8, eval_tasks=1, torch_threads=1)
    trainer = Trainer(
        config, tiny_vl_policy(), tmp_path, [make_env], tensorboard=False, progress=False
    )
    try:
        groups, _, _ = trainer.collect()
        steps = [s for g in groups for t in g for s in t.steps]
        assert len(steps) == 4  # 2 episodes of 2 steps
        for s in steps:
            assert s.extras["images"][0].shape == (800, 1280, 3)
            assert s.extras["prompt_ids"].tolist().count(trainer.policy.images.image_token_id) == 60
            s.advantage = 1.0 if len(s.extras["response_ids"]) % 2 else -1.0
        assert np.isfinite(trainer.update(steps)["loss"])
    finally:
        trainer.close()


def test_the_memory_check_plans_the_images_and_the_tower(tmp_path, monkeypatch):
    """Before the first update the trainer plans a VLM with its images: one 84x84 board per
    prompt (9 image tokens, counted once), and the tower's training state only when it trains."""
    import agentenvs.learners.llm.memcheck as memcheck

    seen = []
    monkeypatch.setattr(memcheck, "device_memory", lambda device: 2**40)
    monkeypatch.setattr(
        memcheck, "check_fits", lambda hf, budget, **kw: seen.append(kw) or (True, None)
    )
    config = TrainConfig(iterations=1, seed=3, **SMALL)
    envs = [lambda: GraphCreditWrapper(gym.make(VISUAL, max_steps=2), group_size=2)] * 2
    for train_vision in (False, True):
        policy = tiny_vl_policy()
        policy.model.model.visual.requires_grad_(train_vision)
        trainer = Trainer(
            config, policy, tmp_path / str(train_vision), envs, tensorboard=False, progress=False
        )
        groups, _, _ = trainer.collect()
        steps = [s for g in groups for t in g for s in t.steps]
        for s in steps:
            s.advantage = 1.0
        trainer.update(steps)
        trainer.close()
        plan = seen[-1]
        longest = max(len(s.extras["prompt_ids"]) for s in steps)
        assert plan["images_per_prompt"] == 1 and plan["image_size"] == (84, 84)
        assert plan["train_vision"] is train_vision
        assert plan["seq_len"] == longest - 9 + SMALL["max_new_tokens"]
