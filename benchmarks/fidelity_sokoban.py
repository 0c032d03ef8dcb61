"""Fidelity on Sokoban: SB3 PPO trained with each credit method at the same env-step budget.

Usage: ``python -m benchmarks.fidelity_sokoban [--quick] [--steps 80000] [--seeds 5] [--workers 2]
[--methods ...] [--visual] [--merge earlier.json ...] [--report-only]``

Online rows: for each method (GRPO, GiGPO, GraphGPO, RTMC, the model-based TRIAGE with the oracle
judge, SPA with its MLP progress estimator and HISR with its feature scorers, all trained online
from the groups they credit, and plain PPO with GAE as the extra baseline) and each seed, trains
:class:`agentenvs.learners.sb3.CreditPPO` (``MlpPolicy``, 64x64) on ``agentenvs/SokobanDiscrete-v0`` (6x6,
1 box, 15 steps, one-hot planes, ``Discrete(4)``; the env's shaped rewards) from scratch and
evaluates the greedy policy on a fixed set of held-out test rooms (``seed-65536 ...``) every
``--eval-every`` steps. The seed fixes the initial weights and the training task stream, so seed
``s`` of every method starts from the same policy and draws tasks from the same stream; "vs" is
the paired difference to GRPO.

Image rows (:data:`VISUAL_METHODS`, ``<method>_visual``; ``--visual`` adds the image twin of
every chosen method that has one): the same training on ``agentenvs/SokobanDiscreteVisual-v0``,
the same rooms observed as the 96x96 RGB image of ``SokobanVisual-v0``, with SB3's ``CnnPolicy``
(NatureCNN) instead of the MLP; credit matches states by the text grid (``info["state_key"]``), as
on the planes. Their "vs" is GRPO on images. They are not in the default ``--methods``: on CPU a
CNN run costs about 35x an MLP run (500 to 650 s against 12 to 26 s for 32k steps on 2 shared
cores; docs/fidelity_sokoban.md, *Image rows*).

Paper-protocol rows (:data:`PAPER_METHODS`): :func:`benchmarks.fidelity_paper.prepare` first
clones the solver into a warm start, collects ``M`` rollouts of it per training room and fits SPA
and HISR offline; every row then starts from that warm start: PPO + GAE on the env reward (the
baseline they pair with, trained on for the collection's steps too, so the budget compares both
ways), PPO + GAE on the success flag alone, GRPO, and PPO + GAE on the frozen SPA / HISR rewards.

Writes to ``--out`` (default ``benchmarks/out/``): ``fidelity_sokoban.md`` (settings and the table of
final success with 95% t-intervals over seeds), ``fidelity_sokoban.png`` (success vs env steps, mean
and 95% band per method) and ``fidelity_sokoban.json`` (every run's curve), and prints the table.
Runs go to ``--workers`` processes (one torch thread each). ``--merge`` reads the runs of earlier
``fidelity_sokoban.json`` files made with the same settings and runs only the (method, seed) pairs
they lack (a run is a pure function of method, seed and settings), so methods can be added later;
``--report-only`` runs nothing and rebuilds the outputs from them. The default online settings (25
runs of 80k steps) took 23.9 minutes on a shared 2-core machine, the paper rows (30 runs and
their preparation) 62.5 minutes on a busier one; ``--quick`` is a smoke run of a few minutes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import multiprocessing as mp
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

ENV_ID = "agentenvs/SokobanDiscrete-v0"
#: The image rows' env: the same rooms, moves and rewards, observed as uint8 (96, 96, 3) RGB.
VISUAL_ENV_ID = "agentenvs/SokobanDiscreteVisual-v0"
METHOD_NAMES = {
    "gae": "PPO + GAE",
    "grpo": "GRPO",
    "gigpo": "GiGPO",
    "graph": "GraphGPO",
    "rtmc": "RTMC",
    "triage": "TRIAGE (oracle judge)",
    "spa": "SPA (online, MLP estimator)",
    "hisr": "HISR (online, feature scorers)",
    "gae_warm": "PPO + GAE (warm start)",
    "sparse_warm": "PPO + GAE, success reward only (warm start)",
    "grpo_warm": "GRPO (warm start)",
    "spa_paper": "SPA (paper protocol)",
    "hisr_paper": "HISR (paper protocol)",
    "hisr_flat_paper": "HISR w/o hindsight modulation (paper protocol)",
    "gae_visual": "PPO + GAE (image, CnnPolicy)",
    "grpo_visual": "GRPO (image, CnnPolicy)",
    "gigpo_visual": "GiGPO (image, CnnPolicy)",
    "graph_visual": "GraphGPO (image, CnnPolicy)",
    "rtmc_visual": "RTMC (image, CnnPolicy)",
}
#: The image rows: ``<method>_visual`` is ``<method>`` on :data:`VISUAL_ENV_ID` with ``CnnPolicy``.
VISUAL_METHODS = ("gae_visual", "grpo_visual", "gigpo_visual", "graph_visual", "rtmc_visual")
#: The paper-protocol rows: they start from the behaviour-cloned warm start (benchmarks/fidelity_paper.py).
PAPER_METHODS = (
    "gae_warm", "sparse_warm", "grpo_warm", "spa_paper", "hisr_paper", "hisr_flat_paper"
)  # fmt: skip
#: The run each method is paired with in the table ("vs" column); GRPO for the online rows.
BASELINE = {"grpo": None, "gae_warm": None, "sparse_warm": "gae_warm", "grpo_warm": "gae_warm",
            "spa_paper": "gae_warm", "hisr_paper": "gae_warm", "hisr_flat_paper": "gae_warm",
            **{m: "grpo_visual" for m in VISUAL_METHODS}, "grpo_visual": None}  # fmt: skip
#: Two-sided 95% Student-t quantiles by degrees of freedom (1..30); beyond that the normal 1.96.
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042]  # fmt: skip


@dataclasses.dataclass
class Settings:
    """Everything a run depends on (written next to the results)."""

    steps: int = 80_000
    eval_every: int = 16_000
    test_rooms: int = 300
    n_envs: int = 8
    group_size: int = 8
    n_steps: int = 256
    batch_size: int = 256
    n_epochs: int = 10
    learning_rate: float = 3e-4
    ent_coef: float = 0.01
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    graph_distance_discount: float = 0.8
    bc_rooms: int = 300
    bc_epochs: int = 10
    paper_rooms: int = 200
    paper_m: int = 10
    quality_rooms: int = 100


def t_interval(values: np.ndarray) -> tuple[float, float]:
    """Mean and half-width of the two-sided 95% Student-t interval (half-width NaN for n < 2)."""
    values = np.asarray(values, dtype=np.float64)
    n = len(values)
    if n < 2:
        return float(values.mean()), math.nan
    q = _T975[n - 2] if n - 1 <= len(_T975) else 1.96
    return float(values.mean()), float(q * values.std(ddof=1) / math.sqrt(n))


def _method_config(method: str, settings: Settings) -> Any:
    """Method defaults, except GraphGPO's distance discount (the paper's Sokoban value, 0.8)."""
    from agentenvs.wrappers.registry import METHODS

    method = method.removesuffix("_visual")
    if method == "gae":
        return None
    if method == "graph":
        return METHODS[method].config(distance_discount=settings.graph_distance_discount)
    return METHODS[method].config()


def _test_ids(settings: Settings) -> list[str]:
    import gymnasium as gym

    import agentenvs  # noqa: F401

    ids = gym.make(ENV_ID).unwrapped.tasks.ids("test")
    return [ids[i] for i in range(settings.test_rooms)]


def _paper_env(method: str, seed: int, settings: Settings, paper: Path) -> Any:
    """The vec env of a paper-protocol row: plain (PPO + GAE), GRPO groups, or in one-episode
    groups the frozen SPA / HISR models (saved by :func:`benchmarks.fidelity_paper.prepare`) or
    the success flag alone on the last step (SPA's ``"sparse"`` source: the papers' PPO
    baseline)."""
    from agentenvs.learners.sb3 import make_credit_vec_env
    from agentenvs.wrappers import SPAConfig
    from agentenvs.wrappers.offline import frozen_config, load_models

    n = settings.n_envs
    if method == "gae_warm":
        return make_credit_vec_env(ENV_ID, "gae", n_envs=n, seed=seed)
    if method == "grpo_warm":
        return make_credit_vec_env(ENV_ID, "grpo", n_envs=n, group_size=settings.group_size,
                                   seed=seed)  # fmt: skip
    if method == "sparse_warm":
        name = "spa"
        config = SPAConfig(contribution_source="sparse", online=False, advantage="rewards")
    else:  # "hisr_flat_paper": the paper's "w/o HIM" ablation, uniform segment importance
        name = method.removesuffix("_paper").removesuffix("_flat")
        flat = {"use_hindsight": False} if method == "hisr_flat_paper" else {}
        config = frozen_config(load_models(paper / f"{name}.pt"), **flat)
    return make_credit_vec_env(ENV_ID, name, n_envs=n, group_size=1, config=config, seed=seed)


def run_one(
    method: str, seed: int, settings: Settings, paper: Path | None = None
) -> dict[str, Any]:
    """Train one (method, seed); return its learning curve ``{"steps", "success", ...}``.

    A paper-protocol method (:data:`PAPER_METHODS`) needs ``paper``, the directory
    :func:`benchmarks.fidelity_paper.prepare` filled: it starts from its warm start, and
    PPO + GAE (warm start) also trains on for the collection's steps (one more checkpoint), the
    budget the other side spent collecting rollouts."""
    import gymnasium as gym
    import torch
    from agentenvs.learners.sb3 import CreditPPO, evaluate_success, make_credit_vec_env

    import agentenvs  # noqa: F401

    torch.set_num_threads(1)
    start = time.perf_counter()
    checkpoints = list(range(0, settings.steps + 1, settings.eval_every))
    visual = method in VISUAL_METHODS
    env_id = VISUAL_ENV_ID if visual else ENV_ID
    if method in PAPER_METHODS:
        if paper is None:
            raise ValueError(f"{method} needs the prepared paper-protocol directory")
        env = _paper_env(method, seed, settings, paper)
        if method == "gae_warm":
            meta = json.loads((paper / "paper.json").read_text())
            checkpoints.append(settings.steps + meta["collect_steps"])
    else:
        env = make_credit_vec_env(
            env_id, method.removesuffix("_visual"), n_envs=settings.n_envs,
            group_size=settings.group_size, config=_method_config(method, settings), seed=seed,
        )  # fmt: skip
    model = CreditPPO(
        "CnnPolicy" if visual else "MlpPolicy", env, n_steps=settings.n_steps,
        batch_size=settings.batch_size, n_epochs=settings.n_epochs,
        learning_rate=settings.learning_rate, ent_coef=settings.ent_coef, gamma=settings.gamma,
        gae_lambda=settings.gae_lambda, clip_range=settings.clip_range, seed=seed, device="cpu",
    )  # fmt: skip
    if method in PAPER_METHODS:
        from benchmarks.fidelity_paper import load_warm_start

        load_warm_start(model, paper / "warm_start.pt")
    test_ids = _test_ids(settings)

    def make_test_env() -> gym.Env:
        return gym.make(env_id, split="test")

    steps, success, eval_s = [], [], 0.0
    for checkpoint in checkpoints:
        if checkpoint > model.num_timesteps:
            model.learn(checkpoint - model.num_timesteps, reset_num_timesteps=False)
        t0 = time.perf_counter()
        success.append(float(evaluate_success(model, make_test_env, test_ids).mean()))
        eval_s += time.perf_counter() - t0
        steps.append(int(model.num_timesteps))
    env.close()
    return {
        "method": method,
        "seed": seed,
        "checkpoints": checkpoints,
        "steps": steps,
        "success": success,
        "wall_s": time.perf_counter() - start,
        "eval_s": eval_s,
    }


def random_policy_success(settings: Settings, seed: int = 0) -> float:
    """Success of uniformly random actions on the test rooms (a floor for the table)."""
    import gymnasium as gym
    from agentenvs.learners.sb3 import evaluate_success

    rng = np.random.default_rng(seed)

    class _Random:
        def predict(self, obs: np.ndarray, deterministic: bool = True) -> tuple[np.ndarray, None]:
            return rng.integers(4, size=len(obs)), None

    return float(
        evaluate_success(
            _Random(), lambda: gym.make(ENV_ID, split="test"), _test_ids(settings)
        ).mean()
    )


def _run_job(job: tuple[str, int, Settings, Path | None]) -> dict[str, Any]:
    return run_one(*job)


def _final(run: dict[str, Any], steps: int) -> float:
    """Success at the nominal budget (the checkpoint ``steps``)."""
    return run["success"][run["checkpoints"].index(steps)]


def _paired(by: dict[str, list], m: str, base: str | None, value: Any) -> tuple[float, float]:
    """Mean and 95% half-width of ``value(run) - final(baseline run)`` over shared seeds."""
    if base is None or base not in by:
        return math.nan, math.nan
    ref = {r["seed"]: r["_final"] for r in by[base]}
    diffs = [value(r) - ref[r["seed"]] for r in by[m] if r["seed"] in ref]
    return t_interval(np.array(diffs)) if diffs else (math.nan, math.nan)


def summarise(runs: list[dict[str, Any]], methods: list[str], steps: int) -> list[dict[str, Any]]:
    """Per method: success at ``steps`` (mean, 95% interval), the paired difference to its
    :data:`BASELINE` (GRPO for the online rows), and for the paper rows also the difference to
    the baseline's success after ``steps`` + the collection steps (``d_budget``)."""
    by = {
        m: sorted(({**r, "_final": _final(r, steps)} for r in runs if r["method"] == m),
                  key=lambda r: r["seed"])
        for m in {*methods, *filter(None, BASELINE.values())}
    }  # fmt: skip
    rows = []
    for m in methods:
        base = BASELINE.get(m, "grpo")
        final = np.array([r["_final"] for r in by[m]])
        mean, half = t_interval(final)
        d_mean, d_half = _paired(by, m, base, lambda r: r["_final"])
        b_mean, b_half = (math.nan, math.nan)
        if base == "gae_warm" and by.get(base):
            longer = {r["seed"]: r["success"][-1] for r in by[base]}
            diffs = [r["_final"] - longer[r["seed"]] for r in by[m] if r["seed"] in longer]
            b_mean, b_half = t_interval(np.array(diffs))
        rows.append({
            "method": m, "seeds": len(final), "final": final.tolist(), "mean": mean, "ci": half,
            "baseline": base, "d": d_mean, "d_ci": d_half, "d_budget": b_mean,
            "d_budget_ci": b_half, "wall_s": float(np.mean([r["wall_s"] for r in by[m]])),
        })  # fmt: skip
    return rows


def _pct(x: float, half: float | None = None) -> str:
    if math.isnan(x):
        return "-"
    return (
        f"{100 * x:.1f}"
        if half is None or math.isnan(half)
        else f"{100 * x:.1f} ± {100 * half:.1f}"
    )


def markdown(rows: list[dict[str, Any]], settings: Settings, extra: dict[str, Any]) -> str:
    """The results table and the settings, as markdown."""
    lines = [
        "# Sokoban fidelity: SB3 PPO with credit-assignment advantages",
        "",
        f"Greedy success (%) on {settings.test_rooms} held-out test rooms after {settings.steps:,} "
        'env steps; mean ± 95% t-interval over seeds. "vs": paired difference to the named run '
        '(same seed = same initial policy and task stream), percentage points; "counting '
        "collection\": against PPO + GAE (warm start) trained on for the collection's steps.",
        "",
        "| method | seeds | final success | vs | diff (pp) | diff counting collection (pp) "
        "| per-seed | wall s/run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        per_seed = " ".join(f"{100 * v:.0f}" for v in r["final"])
        base = METHOD_NAMES[r["baseline"]] if r["baseline"] else "-"
        lines.append(
            f"| {METHOD_NAMES[r['method']]} | {r['seeds']} | {_pct(r['mean'], r['ci'])} | {base} | "
            f"{_pct(r['d'], r['d_ci'])} | {_pct(r['d_budget'], r['d_budget_ci'])} | {per_seed} | "
            f"{r['wall_s']:.0f} |"
        )
    lines += [
        "",
        " ".join(
            text
            for value, text in (
                (
                    extra["initial"],
                    f"Untrained greedy policy (step 0, mean over seeds): "
                    f"{_pct(extra['initial'])}%.",
                ),
                (
                    extra.get("visual_initial", math.nan),
                    f"Untrained greedy CnnPolicy (step 0 of the image rows): "
                    f"{_pct(extra.get('visual_initial', math.nan))}%.",
                ),
                (
                    extra["warm_initial"],
                    f"Warm start (step 0 of the paper rows): {_pct(extra['warm_initial'])}%.",
                ),
            )
            if not math.isnan(value)
        )
        + f" Uniformly random actions: {_pct(extra['random'])}%.",
        "",
        *_paper_lines(settings, extra.get("paper")),
        "## Settings",
        "",
        f"- env: `{ENV_ID}` (6x6, 1 box, 15 steps, shaped rewards -0.1/step, +1 box on target, "
        "+10 solved; one-hot planes, `Discrete(4)`); train tasks drawn from the train split, test "
        f"rooms `seed-65536` .. `seed-{65536 + settings.test_rooms - 1}`.",
        f"- PPO (stable-baselines3, `MlpPolicy` 64x64): {settings.n_envs} envs x n_steps "
        f"{settings.n_steps} (>= {settings.n_envs * settings.n_steps} credited steps per update), "
        f"batch {settings.batch_size}, {settings.n_epochs} epochs, lr {settings.learning_rate}, "
        f"ent {settings.ent_coef}, clip {settings.clip_range}, gamma {settings.gamma}; GAE lambda "
        f"{settings.gae_lambda} and per-minibatch advantage normalisation for PPO + GAE only.",
        *(
            [
                f"- image rows: `{VISUAL_ENV_ID}` (the same rooms, moves and rewards; observation "
                "the uint8 96x96x3 RGB image of `SokobanVisual-v0`, scaled to [0, 1]) with "
                "`CnnPolicy` (SB3's NatureCNN, 512 features shared by linear policy and value "
                "heads), the same PPO settings; credit matches states by the text grid "
                '(`info["state_key"]`).'
            ]
            if any(m in VISUAL_METHODS for m in extra.get("methods", ()))
            else []
        ),
        f"- credit methods: each env plays groups of {settings.group_size} episodes of one task "
        "(`agentenvs.wrappers.CreditWrapper`); advantages straight from the wrapper; the value head is fit "
        "to Monte-Carlo returns and unused. Configs: defaults of `agentenvs.wrappers.registry.METHODS`, except "
        f"GraphGPO distance_discount = {settings.graph_distance_discount} (the paper's Sokoban ω).",
        f"- evaluation every {settings.eval_every:,} steps (curve x = nominal step; a learn call "
        "overshoots by less than one rollout).",
        f"- machine: {extra['machine']}; {extra['workers']} worker processes, 1 torch thread each; "
        f"total wall time {extra['total_s'] / 60:.1f} min.",
    ]
    return "\n".join(lines) + "\n"


def _paper_lines(settings: Settings, meta: dict[str, Any] | None) -> list[str]:
    """The paper protocol's preparation (warm start, collection, fits, estimator quality)."""
    if not meta:
        return []
    q = meta["quality"]
    return [
        "## Paper protocol: preparation",
        "",
        f"- warm start: behaviour cloning on the solver's shortest solutions of {settings.bc_rooms} "
        f"train rooms ({meta['demo_steps']} steps), {settings.bc_epochs} epochs; greedy success "
        f"{_pct(meta['warm_start_quality_success'])}% on the {settings.quality_rooms} quality rooms.",
        f"- collection: M = {settings.paper_m} sampled rollouts of the warm start on each of "
        f"{settings.paper_rooms} train rooms: {meta['collect_steps']:,} env steps, success "
        f"{_pct(meta['collect_success'])}%.",
        f"- offline fits (sum MSE before -> after): SPA {meta['spa_fit'][0]:.4f} -> "
        f"{meta['spa_fit'][1]:.4f} ({meta['spa_fit_s']:.0f} s); HISR SPRM "
        f"{meta['hisr_fit']['sprm'][0]:.4f} -> {meta['hisr_fit']['sprm'][1]:.4f}, hindsight "
        f"cross-entropy {meta['hisr_fit']['hindsight'][0]:.3f} -> "
        f"{meta['hisr_fit']['hindsight'][1]:.3f}, policy {meta['hisr_fit']['policy'][0]:.3f} -> "
        f"{meta['hisr_fit']['policy'][1]:.3f} ({meta['hisr_fit_s']:.0f} s).",
        f"- estimator quality on {q['trajectories']} held-out rollouts ({q['steps']} steps, "
        f"success {_pct(q['success'])}%) of the quality rooms (test split, after the evaluation "
        f"rooms): sum MSE SPA {q['spa_sum_mse']:.4f}, HISR SPRM {q['hisr_sum_mse']:.4f}; Spearman "
        f"with the solver's distance reduction: SPA c_t {q['spa_spearman']:.3f}, HISR r_him "
        f"{q['hisr_spearman']:.3f} (the env's shaped reward: {q['env_spearman']:.3f}). Summed "
        f"fused reward of a success / a failure: SPA {q['spa_won']:.3f} / {q['spa_lost']:.3f}, "
        f"HISR {q['hisr_won']:.3f} / {q['hisr_lost']:.3f}, HISR without the hindsight "
        f"modulation {q['hisr_flat_won']:.3f} / {q['hisr_flat_lost']:.3f}.",
        "",
    ]


def plot(runs: list[dict[str, Any]], methods: list[str], path: Path) -> None:
    """Success vs env steps: mean and 95% t-band per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for m in methods:
        curves = np.array([r["success"] for r in runs if r["method"] == m])
        x = np.array(runs[[r["method"] for r in runs].index(m)]["checkpoints"])
        stats = [t_interval(curves[:, j]) for j in range(curves.shape[1])]
        mean = np.array([s[0] for s in stats])
        half = np.nan_to_num(np.array([s[1] for s in stats]))
        ax.plot(x, 100 * mean, label=METHOD_NAMES[m], marker="o", ms=3)
        ax.fill_between(x, 100 * (mean - half), 100 * (mean + half), alpha=0.2)
    ax.set_xlabel("env steps")
    ax.set_ylabel("greedy success on test rooms (%)")
    ax.set_title(f"Sokoban 6x6, SB3 PPO, {len(curves)} seeds (mean, 95% CI)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 2 seeds, 4k steps, 50 rooms"
    )
    parser.add_argument("--steps", type=int, help="env steps per run (default 80000)")
    parser.add_argument("--eval-every", type=int, help="evaluation interval in env steps")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--test-rooms", type=int, help="held-out rooms (default 300)")
    parser.add_argument(
        "--methods", nargs="+", choices=list(METHOD_NAMES),
        default=[m for m in METHOD_NAMES if m not in VISUAL_METHODS],
        help="rows to run (default: all but the image rows)",
    )  # fmt: skip
    parser.add_argument(
        "--visual", action="store_true",
        help="also run the image twin (<method>_visual, CnnPolicy) of every chosen method with one",
    )  # fmt: skip
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--merge", type=Path, nargs="+", default=[],
        help="earlier fidelity_sokoban.json files (same settings): keep their runs",
    )  # fmt: skip
    parser.add_argument(
        "--report-only", action="store_true",
        help="run nothing: rebuild the table and curves from the --merge files",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out")
    args = parser.parse_args(argv)
    if args.visual:
        twins = [f"{m}_visual" for m in args.methods if f"{m}_visual" in VISUAL_METHODS]
        args.methods += [m for m in twins if m not in args.methods]

    settings = (
        Settings(steps=4096, eval_every=2048, test_rooms=50, paper_rooms=20, quality_rooms=10)
        if args.quick
        else Settings()
    )
    seeds = 2 if args.quick else args.seeds
    for name in ("steps", "eval_every", "test_rooms"):
        if getattr(args, name) is not None:
            setattr(settings, name, getattr(args, name))
    earlier: list[dict[str, Any]] = []
    earlier_s = 0.0  # the wall time of the merged runs, as their own session measured it
    for path in args.merge:
        saved = json.loads(path.read_text())
        if saved["settings"] != dataclasses.asdict(settings):
            parser.error(f"{path} was made with other settings: {saved['settings']}")
        done = {(r["method"], r["seed"]) for r in earlier}
        earlier += [r for r in saved["runs"] if r["method"] in args.methods and r["seed"] < seeds
                    and (r["method"], r["seed"]) not in done]  # fmt: skip
        earlier_s += saved["total_s"]
    done = {(r["method"], r["seed"]) for r in earlier}
    start = time.perf_counter()
    paper, meta = None, None
    if set(args.methods) & set(PAPER_METHODS) and not args.report_only:
        from benchmarks.fidelity_paper import prepare

        paper = args.out / "paper"
        meta = prepare(paper, settings)
        print(f"[{time.perf_counter() - start:6.0f}s] paper protocol prepared: "
              f"{json.dumps(meta)}", flush=True)  # fmt: skip
    jobs = [
        (m, s, settings, paper) for s in range(seeds) for m in args.methods if (m, s) not in done
    ]
    if args.report_only:
        jobs = []
        meta = next((json.loads(p.read_text()).get("paper") for p in args.merge), None)
    if args.workers > 1:
        with mp.get_context("fork").Pool(args.workers) as pool:
            runs = []
            for run in pool.imap_unordered(_run_job, jobs):
                runs.append(run)
                print(f"[{time.perf_counter() - start:6.0f}s] {run['method']:5s} seed {run['seed']}: "
                      f"success {run['success']}", flush=True)  # fmt: skip
    else:
        runs = [_run_job(job) for job in jobs]
    total = time.perf_counter() - start + earlier_s
    runs = earlier + runs

    rows = summarise(runs, args.methods, settings.steps)
    cold = [r["success"][0] for r in runs if r["method"] not in (*PAPER_METHODS, *VISUAL_METHODS)]
    image = [r["success"][0] for r in runs if r["method"] in VISUAL_METHODS]
    warm = [r["success"][0] for r in runs if r["method"] in PAPER_METHODS]
    extra = {
        "initial": float(np.mean(cold)) if cold else math.nan,
        "warm_initial": float(np.mean(warm)) if warm else math.nan,
        "visual_initial": float(np.mean(image)) if image else math.nan,
        "methods": args.methods,
        "paper": meta,
        "random": random_policy_success(settings),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        "workers": args.workers,
        "total_s": total,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    table = markdown(rows, settings, extra)
    (args.out / "fidelity_sokoban.md").write_text(table)
    (args.out / "fidelity_sokoban.json").write_text(json.dumps(
        {"settings": dataclasses.asdict(settings), "runs": runs, "summary": rows, **extra}, indent=1
    ))  # fmt: skip
    plot(runs, args.methods, args.out / "fidelity_sokoban.png")
    print(table)
    print(f"wrote {args.out}/fidelity_sokoban.{{md,png,json}}")


if __name__ == "__main__":
    main()
