"""Silent fallbacks made loud, and user extensions (issue 27): every message a new user meets when
an env or a credit method of their own misses part of the contract (docs/custom-env.md)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from agentenvs.wrappers import (
    CreditWrapper,
    GiGPOCreditWrapper,
    GraphCreditWrapper,
    OutcomeCreditWrapper,
    VectorCreditWrapper,
    assign_advantages,
    register_method,
    unregister_method,
)
from agentenvs.wrappers.grouping import GroupAssembler
from agentenvs.wrappers.registry import MissingStateKeyWarning
from gymnasium.utils.env_checker import check_env

import agentenvs
from agentenvs.cli import train, train_flags
from agentenvs.core import EpisodeMemory, Step, TaskPanel, TextAgentEnv, Trajectory, text_space
from agentenvs.core.prompting import agent_prompt_for

ROOT = Path(__file__).resolve().parents[2]


class Counter(TextAgentEnv[str]):
    """A toy env: count up to the task's target with ``inc``; ``info["task"]`` states the goal."""

    description = "Count up to a target number."
    action_space = observation_space = text_space()

    def __init__(self, max_steps: int = 3, **kwargs: Any) -> None:
        super().__init__(
            tasks=TaskPanel({"train": ["t1", "t2"]}), max_steps=max_steps, action_format="plain"
        )

    def _load_task(self, task_id: str) -> None:
        self.value, self.target = 0, int(task_id[1:])

    def _observation(self, feedback: str) -> str:
        return f"{feedback} value {self.value}".strip()

    def _apply(self, command: Any) -> tuple[float, bool]:
        self.value += command == "inc"
        return float(self.value == self.target), self.value == self.target

    def _state_key(self) -> int:
        return self.value

    def _extra_info(self) -> dict[str, Any]:
        return {"task": f"reach {self.target}."}


class DropStateKey(gym.Wrapper):
    """The env as one that reports no ``info["state_key"]``."""

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return obs, {k: v for k, v in info.items() if k != "state_key"}

    def step(self, action):
        *out, info = self.env.step(action)
        return *out, {k: v for k, v in info.items() if k != "state_key"}


def _play_group(env: gym.Env, actions: list[str]) -> list[Trajectory]:
    """Play ``env`` (a credit wrapper) with ``actions`` round-robin until a group is credited."""
    env.reset(seed=0)
    for t in range(100):
        *_, terminated, truncated, info = env.step(actions[t % len(actions)])
        if "credit" in info:
            return info["credit"]
        if terminated or truncated:
            env.reset()
    raise AssertionError("no group credited")


# -- state keys ------------------------------------------------------------------------------------
@pytest.mark.parametrize("wrapper", [GiGPOCreditWrapper, GraphCreditWrapper])
def test_a_state_matching_method_without_state_keys_raises(wrapper):
    env = wrapper(DropStateKey(Counter()), group_size=2)
    with pytest.raises(ValueError, match=r"no step has a state key.*info\['state_key'\]"):
        _play_group(env, ["inc", "wait"])
    _play_group(wrapper(Counter(), group_size=2), ["inc", "wait"])  # with keys: fine


def test_state_keys_none_opts_in_with_a_warning_and_gives_grpo():
    env = CreditWrapper(DropStateKey(Counter()), "rtmc", group_size=2, state_keys="none")
    with pytest.warns(MissingStateKeyWarning, match="'rtmc' runs without state keys"):
        group = _play_group(env, ["inc", "wait", "wait"])
    grpo = _play_group(
        OutcomeCreditWrapper(DropStateKey(Counter()), group_size=2), ["inc", "wait", "wait"]
    )
    assert [s.advantage for t in group for s in t.steps] == pytest.approx(
        [s.advantage for t in grpo for s in t.steps]
    )
    with pytest.raises(ValueError, match="state_keys must be one of"):
        CreditWrapper(Counter(), "gigpo", group_size=2, state_keys="off")


def test_assign_advantages_and_the_vector_wrapper_check_state_keys_too():
    group = [
        Trajectory("t", "g", [Step("o", "a", 1.0)], success=True),
        Trajectory("t", "g", [Step("o", "b", 0.0)], success=False),
    ]
    with pytest.raises(ValueError, match="'graphgpo' matches states"):
        assign_advantages([group], "graph")
    assign_advantages([group], "grpo")  # reads no states: no check
    envs = VectorCreditWrapper(
        agentenvs.make_group_vec_env(
            "agentenvs/Sokoban-v0", 1, 2, max_steps=1, wrappers=[DropStateKey]
        ),
        "gigpo",
    )
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="'gigpo' matches states"):
        envs.step(["<think></think><action>up</action>"] * 2)
    envs.close()


# -- double wrapping, estimator output ---------------------------------------------------------------
def test_a_credit_wrapper_wrapped_twice_is_refused():
    inner = GraphCreditWrapper(Counter(), group_size=2)
    with pytest.raises(
        ValueError, match="already wrapped by GraphCreditWrapper.*wrap the env once"
    ):
        GiGPOCreditWrapper(gym.wrappers.TimeLimit(inner, 10), group_size=2)
    grouped = VectorCreditWrapper(agentenvs.make_group_vec_env("agentenvs/Sokoban-v0", 1, 2))
    with pytest.raises(ValueError, match="already wrapped by VectorCreditWrapper"):
        VectorCreditWrapper(grouped, "grpo")
    grouped.close()


@pytest.fixture
def broken_method():
    def estimate(batch, config):
        return config.output(batch.n_steps)

    class Config:
        def __init__(self, output=lambda n: np.zeros(n)):
            self.output = output

    register_method("broken", estimate, Config, columns=())
    yield Config
    unregister_method("broken")


@pytest.mark.parametrize(
    ("output", "message"),
    [
        (lambda n: np.zeros(n - 1), r"'broken' returned advantages of shape \(\d+,\) for a batch"),
        (lambda n: np.full(n, np.nan), r"'broken' returned \d+ non-finite advantages"),
    ],
)
def test_an_estimator_with_bad_output_is_named(broken_method, output, message):
    env = CreditWrapper(Counter(), "broken", broken_method(output), group_size=2)
    with pytest.raises(ValueError, match=message):
        _play_group(env, ["inc"])


# -- bad input up front ------------------------------------------------------------------------------
def test_group_sizes_are_checked_up_front():
    with pytest.raises(TypeError, match=r"group_size must be an int >= 1, got 2.5 \(float\)"):
        CreditWrapper(Counter(), group_size=2.5)
    with pytest.raises(ValueError, match="group_size must be an int >= 1, got 0"):
        agentenvs.make_group_vec_env("agentenvs/Sokoban-v0", num_groups=2, group_size=0)
    with pytest.raises(TypeError, match="num_groups must be an int"):
        agentenvs.make_group_vec_env("agentenvs/Sokoban-v0", num_groups="2", group_size=2)
    with pytest.warns(UserWarning, match="group_size=1: .*every group-relative advantage is 0"):
        GroupAssembler(1, "grpo")


def test_text_sent_to_the_discrete_sokoban_is_a_clear_type_error():
    env = gym.make("agentenvs/SokobanDiscrete-v0")
    env.reset(seed=0)
    env.step(np.int64(1))
    with pytest.raises(TypeError, match=r"integer action in Discrete\(4\) .*got 'up'"):
        env.step("up")


# -- the env contract ----------------------------------------------------------------------------------
def test_tasks_must_be_a_task_panel():
    class DictTasks(Counter):
        def __init__(self):
            TextAgentEnv.__init__(self, tasks={"train": ["t1"]}, max_steps=2)

    with pytest.raises(TypeError, match="tasks must be an agentenvs.core.TaskPanel.*got dict"):
        DictTasks()


class NoStream(gym.Env):
    """A minimal env that is no TextAgentEnv and has no task_stream_seed."""

    action_space = observation_space = gym.spaces.Text(8)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return "x", {"task_id": str(self.np_random.integers(100)), "state_key": 0}

    def step(self, action):
        return "x", 0.0, True, False, {"state_key": 0}


def test_the_vector_path_names_task_stream_seed():
    envs = agentenvs.GroupedVectorEnv(gym.vector.SyncVectorEnv([NoStream] * 2), 2)
    with pytest.raises(TypeError, match="need a task_stream_seed attribute.*TextAgentEnv"):
        envs.reset(seed=0)


def test_the_generic_prompt_shows_the_task():
    env = Counter()
    _, info = env.reset(seed=0)
    for style in ("reference", "compact"):
        text = env.agent_prompt(style).render(EpisodeMemory(), "value 0", info)
        assert "Count up to a target number." in text and f"Your task: {info['task']}" in text
    plain = agent_prompt_for(NoStream(), "compact")  # no hook, no description: no task line
    assert "task" not in plain.render(EpisodeMemory(), "x", {}).lower()


# -- user extensions on the flagship script -----------------------------------------------------------
USER_MODULE = """
import dataclasses, gymnasium, numpy as np
from agentenvs.wrappers import register_method

@dataclasses.dataclass
class MineConfig:
    value: float = 0.5

register_method("mine", lambda batch, c: np.full(batch.n_steps, c.value), MineConfig, columns=())
gymnasium.register("user_envs/Counter-v0", entry_point="{entry}")
"""


def test_train_llm_imports_user_modules_before_checking_credit(tmp_path, monkeypatch, capsys):
    (tmp_path / "my_credit.py").write_text(
        textwrap.dedent(USER_MODULE.format(entry="tests.agentenvs.test_env_contract:Counter"))
    )
    monkeypatch.chdir(tmp_path)  # --import searches the current directory
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(tmp_path)])
    parse_args = train_flags.parse_args
    argv = ["--import", "my_credit", "--credit", "mine", "--max-steps", "2"]
    try:
        args = parse_args([*argv, "--credit-config", '{"value": 2.0}'])
        assert args.imports == ["my_credit"] and args.credit_config.value == 2.0
        # Gymnasium's module:Id syntax imports the module, which registers the id
        env = gym.make("my_credit:user_envs/Counter-v0", max_steps=2)
        assert env.unwrapped.max_steps == 2 and env.reset(seed=0)[1]["task"].startswith("reach")
    finally:
        unregister_method("mine")
        gym.registry.pop("user_envs/Counter-v0", None)
        sys.modules.pop("my_credit", None)
    with pytest.raises(SystemExit):
        parse_args(["--import", "no_such_module_xyz"])
    assert "--import no_such_module_xyz: No module named" in capsys.readouterr().err
    # an installed package's entry point (a real .dist-info on sys.path) is imported the same way
    plugin = tmp_path / "plugin"
    (plugin / "my_plugin-1.0.dist-info").mkdir(parents=True)
    (plugin / "my_plugin-1.0.dist-info" / "METADATA").write_text("Name: my-plugin\nVersion: 1.0\n")
    (plugin / "my_plugin-1.0.dist-info" / "entry_points.txt").write_text(
        "[agentenvs.credit_methods]\nmine = my_plugin_credit\n"
    )
    (plugin / "my_plugin_credit.py").write_text(
        textwrap.dedent(USER_MODULE.format(entry="tests.agentenvs.test_env_contract:Counter"))
    )
    monkeypatch.syspath_prepend(str(plugin))
    try:
        assert parse_args(["--credit", "mine"]).credit == "mine"
    finally:
        unregister_method("mine")
        gym.registry.pop("user_envs/Counter-v0", None)
        sys.modules.pop("my_plugin_credit", None)


def test_env_module_id_finds_a_module_in_the_current_directory(tmp_path, monkeypatch):
    """An ENV_ID ``module:Id`` alone (no ``--import``) finds ``module`` in the current directory, as
    ``--import`` does: the module registers the id, and the flags check against it."""
    entry = "tests.agentenvs.test_env_contract:Counter"
    (tmp_path / "my_envs.py").write_text(
        f"import gymnasium\ngymnasium.register('user_envs/Counter-v0', entry_point='{entry}')\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in (str(tmp_path), "")])
    try:
        args = train_flags.parse_args(["my_envs:user_envs/Counter-v0", "--max-steps", "2"])
        assert str(tmp_path) in sys.path
        env = gym.make(args.env, max_steps=2)
        assert env.reset(seed=0)[1]["task"].startswith("reach")
    finally:
        gym.registry.pop("user_envs/Counter-v0", None)
        sys.modules.pop("my_envs", None)


def _doc_example() -> str:
    """The python block of docs/custom-env.md's complete example."""
    doc = (ROOT / "docs" / "custom-env.md").read_text()
    section = doc.split("## 3. A complete example", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


@pytest.mark.slow  # a real (tiny) training run: ~20 s idle, 2 minutes on a loaded machine
def test_the_docs_complete_example_env_trains(tmp_path, monkeypatch, capsys):
    """docs/custom-env.md's example, written to ``walk_env.py`` in the current directory, passes
    Gymnasium's checker, its expert wins, and the page's command trains it for one iteration."""
    (tmp_path / "walk_env.py").write_text(_doc_example())
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    pytest.importorskip("transformers")
    try:
        train_flags.import_user_modules(["walk_env:walk/Walk-v0"])  # puts the directory on the path
        env = gym.make("walk_env:walk/Walk-v0")
        check_env(env.unwrapped, skip_render_check=True)
        obs, info = env.reset(options={"task_id": "0-3"})
        for _ in range(3):
            move = env.unwrapped.expert_action()
            obs, reward, terminated, *_ = env.step(f"<think></think><action>{move}</action>")
        assert terminated and reward == 1.0 and "cell 3" in obs
        flags = ["walk_env:walk/Walk-v0", "--warm-start", "demo"]
        flags += ["--warm-start-steps", "20", "--iterations", "1", "--groups", "2"]
        flags += ["--group-size", "2", "--eval-tasks", "4", "--no-progress", "--export", "none"]
        assert train.main([*flags, "--threads", "1", "--out", str(tmp_path / "run")]) == 0
        lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("test success")]
        assert len(lines) == 2 and all("valid actions" in x for x in lines)
        assert (tmp_path / "run" / "metrics.csv").exists()
    finally:
        gym.registry.pop("walk/Walk-v0", None)
        sys.modules.pop("walk_env", None)


def test_runs_never_overwrite_each_other(tmp_path, monkeypatch, capsys):
    """Without ``--out`` every run gets a new directory; an ``--out`` holding a run needs
    ``--resume`` or ``--overwrite``; ``--resume`` needs ``--out``."""
    cli = train
    args = cli.parse_args(["agentenvs/Sokoban-v0"])
    first, second = (cli.run_dir(args, root=tmp_path) for _ in range(2))
    assert first != second and all(Path(p).is_dir() for p in (first, second))
    assert Path(first).name.startswith("Sokoban-v0-tiny-")
    (Path(first) / "metrics.csv").write_text("iteration\n")
    with pytest.raises(SystemExit):
        cli.run_dir(cli.parse_args(["--out", first]), root=tmp_path)
    assert f"--out {first} holds a run: --resume continues it" in capsys.readouterr().err
    for flag in ("--resume", "--overwrite"):
        assert cli.run_dir(cli.parse_args(["--out", first, flag]), root=tmp_path) == first
    with pytest.raises(SystemExit):
        cli.run_dir(cli.parse_args(["--resume"]), root=tmp_path)
    assert "--resume needs --out" in capsys.readouterr().err


@pytest.mark.slow  # about 25 s: a real (tiny) training run
def test_train_llm_runs_a_user_method_on_a_user_env_id(tmp_path):
    """``--import`` loads the method, an ENV_ID ``module:Id`` the env, end to end."""
    pytest.importorskip("transformers")
    entry = "agentenvs.sokoban.env:SokobanEnv"
    (tmp_path / "my_credit.py").write_text(textwrap.dedent(USER_MODULE.format(entry=entry)))
    args = [sys.executable, str(ROOT / "examples" / "train_llm.py"), "--import", "my_credit"]
    args += ["--credit", "mine", "--credit-config", '{"value": 2.0}', "--max-steps", "1"]
    args += ["my_credit:user_envs/Counter-v0", "--env-kwargs", '{"max_solution_steps": 1}']
    args += [
        "--iterations",
        "1",
        "--warm-start",
        "format",
        "--warm-start-steps",
        "2",
        "--groups",
        "2",
        "--group-size",
        "2",
    ]
    args += ["--eval-tasks", "2", "--export", "none", "--threads", "1", "--out", str(tmp_path)]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "credit mine" in done.stdout
    rows = (tmp_path / "metrics.csv").read_text().splitlines()
    header, last = rows[0].split(","), rows[-1].split(",")
    assert float(last[header.index("adv_mean")]) == 2.0
