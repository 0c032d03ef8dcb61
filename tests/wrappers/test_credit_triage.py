"""TRIAGE (wrappers/triage.py, wrappers/models/judges/): the maths, the judges and the plumbing.

The golden values are worked by hand in docs/triage.md, section 10; the properties are those of
docs/triage.md, section 2; the oracle's rules are docs/triage.md, section 7.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import gymnasium as gym
import numpy as np
import pytest
from agentenvs.wrappers import (
    GRPOConfig,
    RoleCreditWrapper,
    TriageConfig,
    VectorCreditWrapper,
    assign_advantages,
    credited_groups,
    make_config,
)
from agentenvs.wrappers.models.judges import (
    HTTPJudge,
    JudgeFallbackWarning,
    JudgeRequest,
    JudgeResult,
    OracleJudge,
    Role,
    StepView,
    build_judge_prompt,
    build_requests,
    make_judge,
    parse_judge_output,
)
from agentenvs.wrappers.registry import METHODS
from agentenvs.wrappers.state import CreditState
from agentenvs.wrappers.triage import TriageState, outcome_advantages, whiten

import agentenvs  # noqa: F401 - registers the envs
from agentenvs.core import Step, Trajectory

estimate = METHODS["triage"].estimate  # the registry's one path, bound to triage


class LabelJudge:
    """A test judge: the role is the first letter of the current action (``"D-..."`` -> D); it
    records every request it sees and counts its calls."""

    def __init__(self, fail: bool = False) -> None:
        self.requests: list[JudgeRequest] = []
        self.calls = 0
        self.fail = fail

    def judge(self, requests):
        self.calls += 1
        self.requests += requests
        if self.fail:
            return [JudgeResult(None, raw="garbage") for _ in requests]
        return [
            JudgeResult(Role(r.current.action[0]), "label", score=0.5, tokens=3) for r in requests
        ]


def make_traj(roles: str, won: bool, tag: str = "", group: str = "g") -> Trajectory:
    steps = [Step(f"obs{k}", f"{r}-{tag}{k}", float(won) if k == len(roles) - 1 else 0.0)
             for k, r in enumerate(roles)]  # fmt: skip
    return Trajectory("t", group, steps, success=won, final_observation="end")


def golden_group() -> list[Trajectory]:
    """docs/triage.md, section 10: tau1 E D D (won), tau2 E R R D (won), tau3 E E R, tau4 N R."""
    return [make_traj("EDD", True, "a"), make_traj("ERRD", True, "b"),
            make_traj("EER", False, "c"), make_traj("NR", False, "d")]  # fmt: skip


def flat(arrays) -> list[float]:
    return np.concatenate(arrays).tolist()


# -- golden vector --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("ddof", "expected"),
    [
        (
            0,
            {"E+": 0.8540, "D+": 0.9505, "R+": 0.6610, "E-": -1.0760, "R-": -1.2690, "N-": -1.1918},
        ),
        (
            1,
            {"E+": 0.8545, "D+": 0.9650, "R+": 0.6335, "E-": -1.0593, "R-": -1.2803, "N-": -1.1919},
        ),
    ],
)
def test_golden_vector(ddof, expected):
    group = golden_group()
    adv = estimate(group, TriageConfig(judge=LabelJudge(), std_ddof=ddof))
    for traj, values in zip(group, adv, strict=True):
        for step, value in zip(traj.steps, values, strict=True):
            key = step.action[0] + ("+" if traj.success else "-")
            assert value == pytest.approx(expected[key], abs=1e-4)
    assert np.sum(np.concatenate(adv)) == pytest.approx(0.0, abs=1e-9)
    raw = [s.extras["triage"]["raw_advantage"] for s in group[1].steps]
    a = 1.0 if ddof == 0 else 0.866025
    assert raw == pytest.approx([a + 0.1, a - 0.1, a - 0.1, a + 0.2], abs=1e-5)


# -- properties -----------------------------------------------------------------------------------------
def test_reduces_to_grpo_with_lam_zero_or_neutral_roles():
    group = golden_group()
    grpo_cfg = GRPOConfig(ddof=0, eps=1e-6)
    assign_advantages([group], "grpo", grpo_cfg)
    grpo = [s.advantage for t in group for s in t.steps]
    zero = {"D": 0.0, "E": 0.0, "N": 0.0, "R": 0.0}
    for cfg in (TriageConfig(judge=LabelJudge(), lam=0.0, whiten_scope="none"),
                TriageConfig(judge=LabelJudge(), role_rewards=zero, whiten_scope="none")):  # fmt: skip
        assert flat(estimate(group, cfg)) == pytest.approx(grpo, abs=1e-12)
    batch = np.array(flat(estimate(group, TriageConfig(judge=LabelJudge(), lam=0.0))))
    slope, intercept = np.polyfit(grpo, batch, 1)  # an increasing affine map of GRPO
    assert slope > 0 and np.allclose(slope * np.array(grpo) + intercept, batch, atol=1e-9)


@pytest.mark.parametrize("role", "DENR")
def test_constant_role_invariance(role):
    group = [make_traj(role * 3, True), make_traj(role * 2, False), make_traj(role * 4, False)]
    with_roles = flat(estimate(group, TriageConfig(judge=LabelJudge())))
    without = flat(estimate(group, TriageConfig(judge=LabelJudge(), lam=0.0)))
    assert with_roles == pytest.approx(without, abs=1e-9)


def test_within_trajectory_ordering_and_whitening():
    group = [make_traj("DENR", True), make_traj("RNED", False), make_traj("E", True)]
    adv = estimate(group, TriageConfig(judge=LabelJudge()))
    d, e, n, r = adv[0]
    assert d > e > n > r
    values = np.concatenate(adv)
    assert values.mean() == pytest.approx(0.0, abs=1e-12)
    assert values.std() == pytest.approx(1.0, abs=1e-5)


def test_blind_spot_correction():
    group = golden_group()
    adv = estimate(group, TriageConfig(judge=LabelJudge()))
    won = [
        (s.action[0], a)
        for t, v in zip(group, adv, strict=True)
        if t.success
        for s, a in zip(t.steps, v, strict=True)
    ]
    lost = [
        (s.action[0], a)
        for t, v in zip(group, adv, strict=True)
        if not t.success
        for s, a in zip(t.steps, v, strict=True)
    ]
    assert max(a for r, a in won if r == "R") < min(a for r, a in won if r != "R")
    assert min(a for r, a in lost if r == "E") > max(a for r, a in lost if r in "NR")
    raw = {
        (t.success, s.action[0]): s.extras["triage"]["raw_advantage"]
        for t in group
        for s in t.steps
    }
    assert raw[(True, "R")] < 1.0 < raw[(True, "E")]  # below / above the GRPO value A = +1
    assert raw[(False, "E")] > -1.0


def test_outcome_blindness():
    fields = {f.name for f in dataclasses.fields(JudgeRequest)}
    assert not fields & {"reward", "success", "outcome", "won", "advantage", "return"}
    spy = LabelJudge()
    group = golden_group()
    first = flat(estimate(group, TriageConfig(judge=spy, cache=False)))
    for request in spy.requests:
        window = build_judge_prompt(request).split("TASK:")[1].lower()  # after the fixed rubric
        assert "reward" not in window and "success" not in window and "won" not in window
    seen = list(spy.requests)
    shuffled = golden_group()
    for traj, won in zip(shuffled, [False, True, True, False], strict=True):
        traj.success = won  # outcomes shuffled, windows identical
    spy.requests = []
    estimate(shuffled, TriageConfig(judge=spy, cache=False))
    assert spy.requests == seen
    roles = [s.extras["triage"]["role"] for t in shuffled for s in t.steps]
    assert roles == [s.extras["triage"]["role"] for t in group for s in t.steps]
    assert first != flat(estimate(shuffled, TriageConfig(judge=LabelJudge())))


def test_window_bounds():
    traj = make_traj("E" * 12, True)
    requests = build_requests(traj, window_prev=5, window_future=5)
    assert all(len(r.prev) <= 5 and len(r.future) <= 5 for r in requests)
    assert requests[0].prev == () and requests[-1].future == ()
    assert requests[6].prev[0].action == "E-1" and requests[6].future[-1].action == "E-11"
    assert (
        requests[3].current == StepView("E-3", "obs4") and requests[-1].current.observation == "end"
    )
    assert len(build_requests(traj, 2, 0)[5].prev) == 2
    with pytest.raises(ValueError, match="window"):
        build_requests(traj, -1, 5)


def test_uniform_groups_and_filter():
    group = [make_traj("DR", True), make_traj("EN", True)]
    raw = flat(estimate(group, TriageConfig(judge=LabelJudge(), whiten_scope="none")))
    assert raw == pytest.approx([0.2, -0.1, 0.1, -0.02])  # A = 0, the role term remains
    spy = LabelJudge()
    assert flat(estimate(group, TriageConfig(judge=spy, filter_uniform_groups=True))) == [0.0] * 4
    assert spy.calls == 0


def test_single_step_trajectories():
    group = [make_traj("D", True), make_traj("R", False)]
    raw = flat(estimate(group, TriageConfig(judge=LabelJudge(), whiten_scope="none", eps=0.0)))
    assert raw == pytest.approx([1.2, -1.1])
    assert outcome_advantages(np.array([1.0]), np.array([0])).tolist() == [0.0]  # size-1 group


def test_judge_failure_falls_back_and_is_counted():
    group = golden_group()
    failing = flat(estimate(group, TriageConfig(judge=LabelJudge(fail=True), whiten_scope="none")))
    assert sum(t.info["credit"]["judge_fallbacks"] for t in group) == 12
    assert all(s.extras["triage"]["role"] is None for t in group for s in t.steps)
    grpo = flat(
        estimate(golden_group(), TriageConfig(judge=LabelJudge(), lam=0.0, whiten_scope="none"))
    )
    assert failing == pytest.approx(grpo)

    class Short:
        def judge(self, requests):
            return []

    with pytest.raises(ValueError, match="one JudgeResult per request"):
        estimate(golden_group(), TriageConfig(judge=Short()))


def test_costs_cache_and_scopes():
    spy = LabelJudge()
    cfg = TriageConfig(judge=spy)
    groups = [golden_group(), [make_traj("ED", True, group="h"), make_traj("R", False, group="h")]]
    for g in groups:
        for t in g:
            t.group_id = "g" if g is groups[0] else "h"
    state = CreditState()  # holds the judge's cache across calls
    first = flat(estimate([t for g in groups for t in g], cfg, state=state))
    credit = [t.info["credit"] for g in groups for t in g]
    assert spy.calls == 2  # one call per group
    assert sum(c["judge_calls"] for c in credit) == pytest.approx(2.0)
    assert sum(c["judge_segments"] for c in credit) == 15
    assert sum(c["judge_tokens"] for c in credit) == 45
    assert sum(c["role_R"] for c in credit) == 5
    again = flat(estimate([t for g in groups for t in g], cfg, state=state))  # all cached
    assert again == first and spy.calls == 2
    assert sum(t.info["credit"]["judge_cache_hits"] for g in groups for t in g) == 15
    fresh = flat(estimate([t for g in groups for t in g], cfg))  # a fresh state: judged again
    assert fresh == first and spy.calls == 4
    per_group = flat(estimate(groups[1], TriageConfig(judge=LabelJudge(), whiten_scope="group")))
    values = np.array(per_group)
    assert values.mean() == pytest.approx(0.0, abs=1e-12) and values.std() == pytest.approx(
        1.0, abs=1e-5
    )


def test_scalar_mode():
    group = golden_group()
    raw = flat(
        estimate(group, TriageConfig(judge=LabelJudge(), mode="scalar", whiten_scope="none"))
    )
    assert raw == pytest.approx([1.1] * 7 + [-0.9] * 5, abs=1e-5)  # every score is 0.5
    assert group[0].steps[0].extras["triage"]["score"] == 0.5


def test_config_checks_and_presets():
    assert TriageConfig().judge == "oracle" and isinstance(
        TriageState(TriageConfig()).judge, OracleJudge
    )
    assert make_config("triage", judge="oracle", lam=0.4).lam == 0.4
    assert TriageConfig.reference("agentenvs/ALFWorld-v0").lam == 0.2
    assert TriageConfig.reference("agentenvs/SearchQA-v0", lam=0.3).lam == 0.3
    with pytest.raises(ValueError, match="preset"):
        TriageConfig.reference("agentenvs/Sokoban-v0")
    with pytest.raises(ValueError, match="not 'oracle'"):
        TriageConfig(judge="/no/such/dir")
    with pytest.raises(ValueError, match="whiten_scope"):
        TriageConfig(whiten_scope="token")
    with pytest.raises(ValueError, match="unknown role"):
        TriageConfig(role_rewards={"X": 1.0})
    with pytest.raises(ValueError, match="lacks"):
        TriageConfig(role_rewards={"D": 1.0})
    assert (
        TriageConfig(role_rewards={"d": 1, "E": 0, "N": 0, "regression": 0}).role_rewards["R"]
        == 0.0
    )
    assert whiten(np.array([1.0, 1.0, 3.0]), "none").tolist() == [1.0, 1.0, 3.0]


# -- parser ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "index", "role", "evidence"),
    [
        ('{"labels": ["D"], "evidence": ["took the apple"]}', 0, Role.D, "took the apple"),
        (
            '<think>first {maybe} it is E</think>\nSo:\n{"labels": ["E", "R", "N"], '
            '"evidence": ["a", "b", "c"]}',
            1,
            Role.R,
            "b",
        ),
        ('{"labels": ["D"]} then later {"labels": ["N"], "evidence": "walk"}', 3, Role.N, "walk"),
        ('{"label": "exploration", "evidence": "first look"}', 2, Role.E, "first look"),
        ('{"labels": ["Q"], "evidence": ["?"]}', 0, None, "?"),
        ('{"labels": ["E", "R"]}', 5, None, None),
        ("complete garbage }{ without json", 0, None, None),
        ('{"labels": ["D", ', 0, None, None),
        ('{"labels": 3}', 0, None, None),
    ],
)
def test_parse_judge_output(text, index, role, evidence):
    result = parse_judge_output(text, index)
    assert result.role == role and result.evidence == evidence and result.raw == text


def test_parse_scores_and_aux():
    r = parse_judge_output('x {"score": 3, "aux": {"conf": 0.9, "why": "x", "flag": true}}', 0)
    assert r.score == 1.0 and r.aux == {"conf": 0.9} and r.role is None
    assert parse_judge_output('{"score": "nan"}', 0).score is None


def test_prompt_holds_window_and_rules():
    traj = make_traj("EDRN", True)
    request = build_requests(traj, 5, 5)[1]
    prompt = build_judge_prompt(request)
    assert (
        "[0] E-0 -> obs1" in prompt and "[1] D-1 -> obs2" in prompt and "[3] N-3 -> end" in prompt
    )
    assert "position 1" in prompt and "evidence" in prompt
    assert "evidence" not in build_judge_prompt(request, require_evidence=False).split("FUTURE")[1]


# -- oracle ---------------------------------------------------------------------------------------------
def oracle_traj(won: bool = True) -> Trajectory:
    """States A..: a push (D), a new state (E), back (N), a repeat (R), invalid twice (N, R), a
    loss of progress (R), and a step without progress signal (E, said in the evidence)."""
    spec = [("A", "right", "B", 0.5), ("B", "up", "C", 0.0), ("C", "down", "B", 0.0),
            ("B", "up", "C", 0.0), ("C", "jump", "C", 0.0), ("C", "jump", "C", 0.0),
            ("C", "left", "D", -0.5), ("D", "left", "E", None)]  # fmt: skip
    steps = [Step("o", a, 0.0, state_key=s, next_state_key=t, progress=p,
                  action_valid=a != "jump") for s, a, t, p in spec]  # fmt: skip
    return Trajectory("t", "g", steps, success=won, final_observation="end")


def test_oracle_rules():
    traj = oracle_traj()
    results = OracleJudge().judge(build_requests(traj))
    assert [r.role.value for r in results] == list("DENRNRRE")
    assert "repeats step 1" in results[3].evidence and "no progress signal" in results[7].evidence
    no_states = oracle_traj()
    for step in no_states.steps:
        step.state_key = step.next_state_key = None
        step.progress = 0.0
    roles = [r.role.value for r in OracleJudge().judge(build_requests(no_states))]
    assert roles == list("EEEN") + ["N", "R", "E", "N"]


def test_oracle_regressions_in_success_fall_below_grpo():
    def group():
        won = oracle_traj(True)
        won.steps[-1].reward = 1.0
        return [won, oracle_traj(False), oracle_traj(False)]

    g = group()
    adv = estimate(g, TriageConfig())
    grpo_group = group()
    assign_advantages([grpo_group], "grpo", GRPOConfig(ddof=0))
    grpo = np.array([s.advantage for t in grpo_group for s in t.steps])
    grpo_whitened = whiten(grpo)
    regressive = [k for k, s in enumerate(g[0].steps) if s.extras["triage"]["role"] == "R"]
    assert regressive and all(adv[0][k] < grpo_whitened[k] for k in regressive)


def progress_reported() -> bool:
    env = gym.make("agentenvs/Sokoban-v0", action_format="plain")
    return "progress" in env.reset(seed=0)[1]


def play(env, n_groups: int = 1):
    obs, info = env.reset(seed=0)
    groups, rng = [], np.random.default_rng(0)
    while len(groups) < n_groups:
        obs, reward, terminated, truncated, info = env.step(
            str(rng.choice(["up", "down", "left", "right"]))
        )
        if terminated or truncated:
            groups += [info["credit"]] if info.get("credit") else []
            obs, info = env.reset()
    return groups


def test_role_credit_wrapper_on_sokoban():
    env = RoleCreditWrapper(
        gym.make("agentenvs/Sokoban-v0", action_format="plain", max_steps=12), group_size=4
    )
    assert METHODS["triage"].wrapper is RoleCreditWrapper and env.config.judge == "oracle"
    (group,) = play(env)
    assert len(group) == 4 and all(s.advantage is not None for t in group for s in t.steps)
    roles = [s.extras["triage"]["role"] for t in group for s in t.steps]
    assert set(roles) <= set("DENR") and "R" in roles
    json.dumps([s.extras["triage"] for t in group for s in t.steps])  # JSON-encodable diagnostics
    again = gym.make(env.spec)
    assert type(again).__name__ == "RoleCreditWrapper" and again.config == env.config
    if progress_reported():  # the env's privileged progress: pushes onto targets are D
        gains = [(s.progress, s.extras["triage"]["role"]) for t in group for s in t.steps]
        assert all(role == "D" for p, role in gains if p and p > 0)


def test_vector_credit_wrapper_batches_groups_of_one_step():
    envs = VectorCreditWrapper(agentenvs.make_group_vec_env(
        "agentenvs/Sokoban-v0", num_groups=2, group_size=2, action_format="plain", max_steps=3),
        "triage", TriageConfig())  # fmt: skip
    envs.reset(seed=0)
    groups = []
    while not groups:
        *_, infos = envs.step(["up", "left", "down", "right"])
        groups = credited_groups(infos)
    assert len(groups) == 2  # the same budget: both blocks finish on one step, one batch
    values = np.array([s.advantage for g in groups for t in g for s in t.steps])
    assert values.mean() == pytest.approx(0.0, abs=1e-9)
    envs.close()


# -- model judges ---------------------------------------------------------------------------------------
def test_hf_judge_with_the_tiny_model(tmp_path):
    pytest.importorskip("torch").set_num_threads(1)
    pytest.importorskip("transformers")
    from agentenvs.learners.llm.models import resolve_model

    judge = make_judge(str(resolve_model("tiny")), max_new_tokens=8, batch_size=4)
    group = golden_group()
    cfg = TriageConfig(judge=judge, whiten_scope="none")
    raw = flat(estimate(group, cfg))
    credit = [t.info["credit"] for t in group]
    fallbacks = sum(c["judge_fallbacks"] for c in credit)
    labelled = sum(c[f"role_{r}"] for c in credit for r in "DENR")
    assert fallbacks + labelled == 12 and fallbacks >= 10  # a random model mostly writes garbage
    assert sum(c["judge_tokens"] for c in credit) > 12 * 100 and judge.usage.calls == 1
    assert sum(c["judge_calls"] for c in credit) == pytest.approx(1.0)
    request = build_requests(group[1], 5, 5)[2]
    assert "[1] R-b1 -> obs2" in judge.prompt_text(request) and "<|im_start|>" in judge.prompt_text(
        request
    )
    assert len(raw) == 12


class _Handler(BaseHTTPRequestHandler):
    mode = "good"

    def log_message(self, *args):  # quiet
        pass

    def _send(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._send({"data": [{"id": "judge-model"}]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][0]["content"]
        if self.server.mode == "slow":
            time.sleep(1.0)
        current = prompt.split("CURRENT STEP:\n")[1].split(" ", 1)[1][0]  # "[k] X-..." -> X
        content = {"good": f'thinking... {{"labels": ["{current}"], "evidence": ["seen"]}}',
                   "malformed": "I refuse to answer in JSON", "slow": "{}"}[self.server.mode]  # fmt: skip
        assert body["model"] == "judge-model"
        self._send({"choices": [{"message": {"role": "assistant", "content": content}}],
                    "usage": {"total_tokens": 7}})  # fmt: skip


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):  # a client that timed out: no traceback
        pass


@pytest.fixture
def server():
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.mode = "good"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_http_judge(server):
    url = f"http://127.0.0.1:{server.server_address[1]}"
    group = golden_group()
    judged = flat(estimate(group, TriageConfig(judge=url)))
    assert judged == pytest.approx(flat(estimate(golden_group(), TriageConfig(judge=LabelJudge()))))
    assert sum(t.info["credit"]["judge_tokens"] for t in group) == 12 * 7

    server.mode = "malformed"
    judge = HTTPJudge(url, model="judge-model")
    results = judge.judge(build_requests(group[0]))
    assert (
        [r.role for r in results] == [None] * 3 and judge.errors == 0 and judge.usage.failures == 3
    )

    server.mode = "slow"
    judge = HTTPJudge(url, model="judge-model", timeout=0.2, retries=1)
    with pytest.warns(JudgeFallbackWarning, match="2 of 2 requests failed"):
        results = judge.judge(build_requests(group[0])[:2])
    assert [r.role for r in results] == [None, None] and judge.errors == 2
    assert "request failed" in results[0].raw


def _closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_judge_url_with_no_server_warns_then_raises():
    """Connection refused: the first failure warns; past max_error_fraction (over at least
    MIN_REQUESTS requests) judging raises instead of silently giving GRPO credit."""
    requests = build_requests(golden_group()[0])[:1]
    down = HTTPJudge(f"http://127.0.0.1:{_closed_port()}", model="m", timeout=2, retries=0)
    with pytest.warns(JudgeFallbackWarning, match="1 of 1 requests failed.*GRPO credit"):
        assert down.judge(requests)[0].role is None and down.errors == 1
    with pytest.raises(RuntimeError, match=r"10 of 10 requests failed .*max_error_fraction=0.5"):
        for _ in range(HTTPJudge.MIN_REQUESTS - 1):
            down.judge(requests)
    config = TriageConfig(judge=f"http://127.0.0.1:{_closed_port()}")
    with pytest.warns(JudgeFallbackWarning), pytest.raises(RuntimeError, match="is the server up"):
        estimate(golden_group(), config)  # 12 segments, all refused
    tolerant = TriageConfig(judge=config.judge, judge_max_error_fraction=1.0)
    state = CreditState()
    with pytest.warns(JudgeFallbackWarning):  # 12 segments fall back, nothing raised
        estimate(golden_group(), tolerant, state=state)
    assert state.value.judge.errors == 12 and state.value.judge.max_error_fraction == 1.0
    with pytest.raises(ValueError, match="max_error_fraction must be in"):
        HTTPJudge(down.url, max_error_fraction=1.5)
    with pytest.raises(ValueError, match="judge_max_error_fraction must be in"):
        TriageConfig(judge_max_error_fraction=-0.1)


# -- learners -------------------------------------------------------------------------------------------
def test_credit_ppo_learns_with_triage():
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("torch").set_num_threads(1)
    from agentenvs.learners.sb3 import CreditPPO, make_credit_vec_env

    env = make_credit_vec_env(
        "agentenvs/SokobanDiscrete-v0", "triage", n_envs=2, group_size=2, seed=0
    )
    model = CreditPPO("MlpPolicy", env, n_steps=32, batch_size=32, n_epochs=1, seed=0)
    assert model.learn(64).num_timesteps >= 64
    assert np.isfinite(model.rollout_buffer.advantages).all()
