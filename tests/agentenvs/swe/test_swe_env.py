"""Tests of agentenvs/SWE-v0: docs/swe.md's golden episode, grading, both toolsets, the shipped
panel (gold patch wins, empty submission loses), workspaces left behind, RTMC on SWE groups."""

from __future__ import annotations

import dataclasses
import random
import tempfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from agentenvs.wrappers import RolloutTreeCreditWrapper
from agentenvs.wrappers.batch import StepBatch
from agentenvs.wrappers.rtmc import RTMCConfig, diagnostics
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from swe_golden import BUG_PATCH, write_golden_task

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.swe.env import SWEEnv
from agentenvs.swe.sandbox import bwrap_available
from agentenvs.swe.task import SWETask, embedded_tasks, load_task_dir, write_task_dir

pytestmark = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not installed")


def call(name: str, **params: str) -> str:
    body = "".join(f"<parameter={k}>{v}</parameter>\n" for k, v in params.items())
    return f"Let me act.\n<function={name}>\n{body}</function>"


@pytest.fixture(scope="module")
def textkit_task(tmp_path_factory) -> SWETask:
    """docs/swe.md's golden task as a task directory: the buggy textkit, its tests visible."""
    return load_task_dir(write_golden_task(tmp_path_factory.mktemp("textkit") / "task"))


@pytest.fixture
def env(textkit_task):
    e = SWEEnv([textkit_task], split="test", restore_all_tests=True)
    yield e
    e.close()


def test_the_golden_episode(env):
    obs, info = env.reset()
    assert "chunk() drops the first element." in obs
    assert info["state_key"] == "FLAGS(think=0,test_pass=0,test_fail=0)"
    core = "/testbed/textkit/core.py"
    script = [
        (call("file_editor", command="view", path=core), "view"),
        (call("search", search_term="range", path="/testbed/textkit"), "search"),
        (call("execute_bash", cmd="python -m pytest -q tests"), "test"),
        (
            call(
                "file_editor",
                command="str_replace",
                path=core,
                old_str="range(1, len(seq), n)",
                new_str="range(0, len(seq), n)",
            ),
            "modify",
        ),
        (call("execute_bash", cmd="python -m pytest -q tests"), "test"),
        (call("finish", command="submit"), "finish"),
    ]
    observations, categories = [], []
    for action, _ in script:
        obs, reward, terminated, truncated, info = env.step(action)
        observations.append(obs)
        categories.append(info["rtmc_category"])
    assert categories == [c for _, c in script]
    assert observations[0].startswith(
        "Execution output of [file_editor]:\nHere's the result of running `cat -n` on the file: "
        f"{core}:\n     1 def clamp(x, lo, hi):"
    )
    assert 'Found 1 matches for "range" in /testbed/textkit:' in observations[1]
    assert "./textkit/core.py (1 matches)" in observations[1]
    assert observations[2].startswith("Exit code: 1\n") and "2 failed" in observations[2]
    assert observations[4].startswith("Exit code: 0\n") and "6 passed" in observations[4]
    assert observations[5] == "<<< Finished >>>"
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["won"] is True and info["resolved"] is True
    assert info["n_f2p_passed"] == 2 and info["n_p2p_passed"] == 4
    assert set(info["tests"].values()) == {"PASSED"}
    assert "range(0, len(seq), n)" in info["patch"]
    assert info["action_key"] == "finish"
    assert info["state_key"].endswith("FLAGS(think=0,test_pass=1,test_fail=1)")


def test_empty_submission_and_test_only_edits_lose(env):
    env.reset()
    *_, info = env.step(call("finish", command="submit"))
    assert info["won"] is False and info["n_f2p_passed"] == 0 and info["n_p2p_passed"] == 4
    env.reset()
    # "fix" the tests instead of the code: the test file is restored at grading
    env.step(
        call(
            "execute_bash",
            cmd="sed -i 's/\\[\\[1, 2\\], \\[3, 4\\]\\]/[[2, 3], [4]]/' tests/test_core.py",
        )
    )
    obs, reward, terminated, _, info = env.step(call("finish", command="submit"))
    assert terminated and reward == 0.0 and not info["resolved"]


def test_invalid_calls_count_and_explain(env):
    env.reset()
    obs, reward, terminated, truncated, info = env.step("I think the bug is in chunk.")
    assert "YOU MUST USE A FUNCTION CALL IN EACH RESPONSE." in obs
    assert (reward, terminated, truncated, info["action_valid"]) == (0.0, False, False, False)
    assert info["step"] == 1 and info["action_key"] == "invalid"
    assert info["state_key"] == "FLAGS(think=0,test_pass=0,test_fail=0)"
    obs, *_, info = env.step("")
    assert "YOU MUST USE A FUNCTION CALL" in obs and not info["action_valid"]
    obs, *_, info = env.step(12)  # not text
    assert obs.startswith("Invalid action: the action must be text") and not info["action_valid"]
    assert info["step"] == 3


def test_step_limit_truncates_with_zero_and_can_grade(textkit_task):
    for evaluate, expected in ((False, 0.0), (True, 1.0)):
        env = SWEEnv([textkit_task], split="test", max_steps=1, evaluate_on_truncation=evaluate)
        env.reset()
        fix = "sed -i 's/range(1, len/range(0, len/' textkit/core.py"
        _, reward, terminated, truncated, info = env.step(call("execute_bash", cmd=fix))
        assert (terminated, truncated, reward) == (False, True, expected)
        assert (
            info["rtmc_category"] == "modify" and info["fs_changes"][0]["path"] == "textkit/core.py"
        )
        env.close()


def test_mini_toolset_episode(textkit_task):
    env = SWEEnv([textkit_task], split="test", toolset="mini")
    obs, _ = env.reset()
    assert "<pr_description>" in obs
    obs, *_ = env.step("two\n```bash\nls\n```\n```bash\nls\n```")
    assert obs.startswith("Please always provide EXACTLY ONE action in triple backticks, found 2")
    fix = "sed -i 's/range(1, len/range(0, len/' textkit/core.py"
    obs, *_ = env.step(f"THOUGHT: fix it\n\n```bash\n{fix}\n```")
    assert obs.startswith("<returncode>0</returncode>")
    submit = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"
    obs, reward, terminated, _, info = env.step(f"THOUGHT: done\n\n```bash\n{submit}\n```")
    assert terminated and reward == 1.0 and info["won"]
    env.close()


def test_episodes_leave_nothing_behind(textkit_task, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # others may share the system one
    temp = Path(tempfile.gettempdir())
    before = set(temp.glob("agentenvs-swe-*"))
    env = SWEEnv([textkit_task], split="test")
    for _ in range(3):
        env.reset()
        env.step(call("execute_bash", cmd="touch junk && mkdir -p d/e && chmod 000 d"))
    env.step(call("finish", command="submit"))
    env.reset()
    env.close()
    assert set(temp.glob("agentenvs-swe-*")) == before


def test_task_dir_round_trip(textkit_task, tmp_path):
    written = write_task_dir(textkit_task, tmp_path / "copy")
    again = load_task_dir(written)
    assert again.to_dict() == textkit_task.to_dict()


def test_gym_make_and_check_env():
    from gymnasium.utils.env_checker import check_env

    env = gym.make("agentenvs/SWE-v0", split="test", max_steps=3)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


def _gold_response(patch: str) -> str:
    return call("execute_bash", cmd=f"git apply <<'AGENTENVS_EOF'\n{patch}AGENTENVS_EOF")


def _check_gold_and_empty(tasks: list[SWETask]) -> None:
    env = SWEEnv(tasks, split=tasks[0].split)
    try:
        for task in tasks:
            env.reset(options={"task_id": task.instance_id})
            *_, info = env.step(call("finish", command="submit"))
            assert info["won"] is False, task.instance_id
            env.reset(options={"task_id": task.instance_id})
            obs, *_ = env.step(_gold_response(task.patch))
            assert obs.startswith("Exit code: 0"), (task.instance_id, obs)
            *_, info = env.step(call("finish", command="submit"))
            assert info["won"] is True, (task.instance_id, info["tests"])
    finally:
        env.close()


def test_gold_patch_wins_and_empty_submission_loses_on_a_sample():
    tasks = embedded_tasks()
    sample = random.Random(0).sample(tasks, 8)
    for split in ("train", "test"):
        chosen = [t for t in sample if t.split == split]
        if chosen:
            _check_gold_and_empty(chosen)


@pytest.mark.slow
@pytest.mark.long  # about 8 minutes on 2 cores; CI runs the sample above
def test_gold_patch_wins_and_empty_submission_loses_on_every_shipped_task():
    for split in ("train", "test"):
        _check_gold_and_empty(embedded_tasks(split))


def test_the_panel_splits_by_repository():
    train = {t.repo for t in embedded_tasks("train")}
    test = {t.repo for t in embedded_tasks("test")}
    assert train and test and not train & test


def test_rtmc_merges_equivalent_states_across_a_group(textkit_task):
    """Four scripted rollouts of the golden task: three reach the same state by viewing and
    searching the file in either order, with file_editor or with ``cat``; RTMC pools them
    (docs/swe.md, RTMC signatures)."""
    core = "/testbed/textkit/core.py"
    view = call("file_editor", command="view", path=core)
    search = call("search", search_term="range", path="/testbed/textkit")
    fix = call(
        "file_editor",
        command="str_replace",
        path=core,
        old_str="range(1, len(seq), n)",
        new_str="range(0, len(seq), n)",
    )
    wrong = call(
        "file_editor",
        command="str_replace",
        path=core,
        old_str="range(1, len(seq), n)",
        new_str="range(2, len(seq), n)",
    )
    cat = call("execute_bash", cmd="cat textkit/core.py")
    finish = call("finish", command="submit")
    scripts = [[view, search, fix, finish], [search, view, fix, finish], [view, wrong, finish],
               [search, cat, wrong, finish]]  # fmt: skip
    env = RolloutTreeCreditWrapper(
        SWEEnv([textkit_task], split="test"), group_size=4, config=RTMCConfig(gamma=1.0)
    )
    credited = None
    for script in scripts:
        env.reset()
        for action in script:
            _, _, terminated, truncated, info = env.step(action)
        assert terminated
        credited = info.get("credit") or credited
    env.close()
    assert [t.success for t in credited] == [True, True, False, False]
    keys = [[s.state_key for s in t.steps] for t in credited]
    assert keys[0][2] == keys[1][2] == keys[3][2]  # view+search in either order, either tool
    assert (
        credited[3].steps[1].action_key
        == credited[0].steps[0].action_key
        == "view:full@textkit/core.py"
    )
    batch = StepBatch.from_trajectories(credited)
    diag = diagnostics(batch, RTMCConfig(gamma=1.0))
    fix_step = int(batch.offsets[0]) + 2
    assert diag["n_s"][fix_step] == 3  # rollouts 1, 2 and 4 share the state before the edit
    adv = [t.advantages for t in credited]
    assert adv[0][2] > 0 > adv[3][2]  # the right edit beats the wrong one at the shared state
    assert np.isfinite(np.concatenate(adv)).all()


def test_abuse_is_reported_in_the_observation_and_the_next_episode_works(textkit_task):
    # The timeout must leave a loaded CI machine time for the final pytest run (2 s did not).
    env = SWEEnv([textkit_task], split="test", command_timeout=10)
    try:
        env.reset()
        obs, *_, info = env.step(call("execute_bash", cmd=":(){ :|:& };: ; sleep 60"))
        assert info["timed_out"] or "processes: command killed" in obs, obs
        obs, *_ = env.step(call("execute_bash", cmd="head -c 3000000 /dev/zero | tr '\\0' a"))
        assert "[output truncated at 1 MiB]" in obs
        obs, *_ = env.step(call("execute_bash", cmd="cat /etc/shadow"))
        assert obs.startswith("Exit code: 1") and "No such file or directory" in obs
        obs, *_ = env.step(call("execute_bash", cmd="ls -A ~ /root; ls /tmp"))
        assert ".cache" not in obs and "agentenvs-swe-" not in obs  # host home and /tmp unseen
        env.reset()
        obs, *_ = env.step(call("execute_bash", cmd="python -m pytest -q tests"))
        assert "2 failed, 4 passed" in obs
    finally:
        env.close()


FRAGMENTS = st.sampled_from(
    ["<function=", "<function=file_editor>", "<function=search>", "<function=execute_bash>",
     "<function=finish>", "</function>", "<parameter=command>", "<parameter=path>",
     "<parameter=cmd>", "<parameter=view_range>", "<parameter=old_str>", "<parameter=new_str>",
     "<parameter=insert_line>", "<parameter=search_term>", "</parameter>", "view", "create",
     "str_replace", "insert", "undo_edit", "/testbed/textkit/core.py", "/testbed", "../../etc",
     "/etc/passwd", "[1, 3]", "[-5, 99]", "0", "-1", "ls", "range", "```bash\n", "\n```", "\n"]
)  # fmt: skip
CALLISH = st.lists(st.one_of(FRAGMENTS, st.text(max_size=6)), max_size=14).map("".join)


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(action=CALLISH)
def test_fuzzed_calls_never_raise(fuzz_env, action):
    """Call-like fragments and random text, both toolsets: never an exception, always an
    observation in the space and an action key."""
    env = fuzz_env
    obs, reward, terminated, truncated, info = env.step(action)
    assert env.observation_space.contains(obs) and isinstance(info["action_key"], str)
    assert reward in (0.0, 1.0) and info["step"] >= 1
    if terminated or truncated:
        env.reset()


@pytest.fixture(scope="module", params=["r2e", "mini"])
def fuzz_env(request, textkit_task):
    env = SWEEnv([textkit_task], split="test", toolset=request.param, command_timeout=5)
    env.reset()
    yield env
    env.close()


def test_without_git_the_env_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no git on PATH
    with pytest.raises(RuntimeError, match="SWE-v0 needs git .*apt-get install git"):
        SWEEnv(sandbox="local")


# -- the expert (docs/custom-env.md, expert_action) -----------------------------------------------
def _play_expert(env: SWEEnv, limit: int = 8) -> tuple[list[str], dict]:
    prompt, commands, info = env.agent_prompt("compact"), [], {}
    while (command := env.expert_action()) is not None and len(commands) < limit:
        commands.append(command)
        _, _, _, _, info = env.step(prompt.response_prefix + prompt.answer(command))
        assert info["action_valid"] and info["tool_call"]["valid"], info["tool_call"]
    return commands, info


@pytest.mark.parametrize("toolset", ["r2e", pytest.param("mini", marks=pytest.mark.slow)])
def test_the_expert_plays_the_gold_patch_and_wins(toolset):
    task = random.Random(toolset).choice(embedded_tasks())  # the slow twin plays 8 more
    env = SWEEnv([task], split=task.split, toolset=toolset)
    try:
        env.reset()
        commands, info = _play_expert(env)
        assert len(commands) == 2 and info["won"], task.instance_id  # one hunk, then submit
        assert env.expert_action() is None  # the episode is over
    finally:
        env.close()


@pytest.mark.slow  # ~1.5 s a task, 8 tasks
def test_the_expert_wins_on_a_sample_of_the_shipped_tasks():
    tasks = random.Random(2).sample(embedded_tasks(), 8)
    env = SWEEnv(tasks, split=tasks[0].split)
    try:
        for task in tasks:
            env.reset(options={"task_id": task.instance_id})
            assert _play_expert(env)[1]["won"], task.instance_id
    finally:
        env.close()


def test_the_expert_keeps_to_the_agents_tree_and_gives_up_where_the_gold_edit_cannot_apply(
    textkit_task,
):
    lines = BUG_PATCH.splitlines(keepends=True)  # the gold fix: the bug patch reversed
    gold = "".join(lines[:-2]) + "-" + lines[-1][1:] + "+" + lines[-2][1:]
    env = SWEEnv([dataclasses.replace(textkit_task, patch=gold)], split="test")
    try:
        env.reset()
        core = "/testbed/textkit/core.py"
        edit = call("file_editor", command="str_replace", path=core, old_str="range(1, len(seq), n)",
                    new_str="range(0, len(seq), n)")  # fmt: skip
        env.step(edit)  # the agent made the fix itself: the expert submits
        assert env.expert_action().startswith("<function=finish>")
        env.reset()
        env.step(call("file_editor", command="str_replace", path=core, old_str="range(1, len(seq), n)",
                      new_str="range(2, len(seq), n)"))  # fmt: skip
        assert env.expert_action() is None  # the gold hunk's old text is gone
        assert SWEEnv([textkit_task], split="test").expert_action() is None  # before a reset
    finally:
        env.close()
