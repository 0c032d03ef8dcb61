"""Environment speed: steps/s and resets/s, as ratios against references measured in the same run.

    python benchmarks/envs.py            # Sokoban, ALFWorld, WebShop, SearchQA and SWE (when installed)
    python benchmarks/envs.py --no-reference   # skip building the gym-sokoban reference venv

Sokoban figures:
* steps/s of ``agentenvs/Sokoban-v0`` (text) and ``SokobanVisual-v0`` (text + RGB) through
  ``gym.make`` with tagged LLM actions, and resets/s (cached and fresh rooms);
* the layers' overheads: ``gym.make``'s wrappers over the bare env, and the env (parsing, info
  contract) over the bare game core (``SokobanGame.step`` + text render);
* the reference: gym-sokoban's ``SokobanEnv.step`` in its cheapest mode (``tiny_rgb_array``, one
  pixel per cell: the like-for-like figure) and in its default mode (a 96x96 RGB image rendered
  every step: reported, not compared with our text step). gym-sokoban needs
  numpy < 2 and setuptools < 81, so it runs in its own venv under ``benchmarks/out/`` (built on
  first use from PyPI) and is timed in a subprocess of this run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym

if not __package__:  # run as a script: make the repository's packages (benchmarks/) importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import agentenvs  # noqa: F401
from agentenvs.sokoban.env import SokobanEnv
from agentenvs.sokoban.game import SokobanGame
from agentenvs.sokoban.generator import generate_room

OUT = Path(__file__).parent / "out"
ACTIONS = [f"<think>move</think><action>{a}</action>" for a in ("up", "down", "left", "right")]

REFERENCE_CODE = """
import random, time, warnings
warnings.filterwarnings("ignore")
from gym_sokoban.envs.sokoban_env import SokobanEnv
env = SokobanEnv(dim_room=(6, 6), num_boxes=1, max_steps=10**9)
for mode in ("tiny_rgb_array", "rgb_array"):
    random.seed(0); env.reset()
    best = float("inf")
    for _ in range(3):
        t = time.process_time()
        for _ in range({n}):
            env.step(random.randint(1, 4), observation_mode=mode)
        best = min(best, (time.process_time() - t) / {n})
    print(best)
"""


def per_call(fn: Callable[[int], None], n: int, repeats: int = 5) -> float:
    """Best-of-``repeats`` CPU seconds (this process) per call of ``fn(i)`` over ``n`` calls."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for i in range(n):
            fn(i)
        best = min(best, (time.process_time() - start) / n)
    return best


def stepper(env: gym.Env) -> Callable[[int], None]:
    """Step ``env`` with cycling actions, resetting to the same room when an episode ends."""
    env.reset(options={"task_id": "seed-0"})

    def step(i: int) -> None:
        _, _, terminated, truncated, _ = env.step(ACTIONS[i % 4])
        if terminated or truncated:
            env.reset(options={"task_id": "seed-0"})

    return step


def reference_seconds_per_step(n: int, venv: Path) -> tuple[float, float] | None:
    """CPU seconds per gym-sokoban ``SokobanEnv.step`` in its own venv, ``(tiny_rgb_array,
    rgb_array)``; ``None`` if it cannot be installed."""
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"building the gym-sokoban reference venv in {venv} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        install = [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "gym-sokoban==0.0.6",
            "numpy<2",
            "setuptools<81",
        ]
        if subprocess.run(install, capture_output=True).returncode != 0:
            print("could not install gym-sokoban; reference skipped")
            return None
    result = subprocess.run(
        [str(python), "-c", REFERENCE_CODE.format(n=n)], capture_output=True, text=True
    )
    if result.returncode != 0:
        print("gym-sokoban reference failed:", result.stderr.strip().splitlines()[-1:])
        return None
    tiny, rgb = (float(line) for line in result.stdout.split())
    return tiny, rgb


def sokoban(args: argparse.Namespace) -> None:
    n = args.steps
    room = generate_room(0)
    game = SokobanGame(room.fixed, room.state)

    def core(i: int) -> None:
        nonlocal game
        _, solved, _ = game.step(1 + i % 4)
        game.text()
        if solved:
            game = SokobanGame(room.fixed, room.state)

    big = 10**9
    t_core = per_call(core, n)
    t_bare = per_call(stepper(SokobanEnv(max_steps=big)), n)
    t_text = per_call(stepper(gym.make("agentenvs/Sokoban-v0", max_steps=big)), n)
    t_rgb = per_call(stepper(gym.make("agentenvs/SokobanVisual-v0", max_steps=big)), n)
    env = gym.make("agentenvs/Sokoban-v0")
    t_reset_cached = per_call(lambda i: env.reset(options={"task_id": f"seed-{i % 64}"}), n // 10)
    fresh = iter(range(1_000, 65_000))
    t_reset_fresh = per_call(
        lambda i: env.reset(options={"task_id": f"seed-{next(fresh)}"}), n // 20
    )
    t_ref = (
        None if args.no_reference else reference_seconds_per_step(n // 5, OUT / "gym-sokoban-venv")
    )

    print("\n## Sokoban (6x6, 1 box), CPU time of one process\n")
    print("| measure | per call | per second | ratio |")
    print("|---|---:|---:|---:|")
    rows = [
        ("game core step + text render", t_core, ""),
        ("SokobanEnv.step (bare env, tagged action)", t_bare, f"{t_bare / t_core:.2f}x core"),
        (
            "gym.make Sokoban-v0 step (text)",
            t_text,
            f"+{(t_text / t_bare - 1) * 100:.1f}% over bare env",
        ),
        ("gym.make SokobanVisual-v0 step (text+RGB)", t_rgb, ""),
        ("reset, cached room", t_reset_cached, ""),
        ("reset, fresh room (generator)", t_reset_fresh, ""),
    ]
    if t_ref is not None:
        t_tiny, t_big = t_ref
        rows.append(("gym-sokoban SokobanEnv.step, tiny_rgb_array (reference)", t_tiny, "1.00x"))
        rows.append(("gym-sokoban SokobanEnv.step, rgb_array 96x96 (default mode)", t_big, ""))
        rows[2] = (
            rows[2][0],
            t_text,
            rows[2][2] + f"; {t_tiny / t_text:.1f}x faster than tiny_rgb_array reference",
        )
        rows[3] = (rows[3][0], t_rgb, f"{t_big / t_rgb:.1f}x faster than rgb_array reference")
    for name, t, ratio in rows:
        print(f"| {name} | {t * 1e6:,.1f} us | {1 / t:,.0f} | {ratio} |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=20_000, help="steps per Sokoban measurement")
    parser.add_argument(
        "--no-reference", action="store_true", help="skip the gym-sokoban reference"
    )
    parser.add_argument("--skip-alfworld", action="store_true")
    parser.add_argument("--skip-webshop", action="store_true")
    parser.add_argument("--skip-searchqa", action="store_true")
    parser.add_argument("--skip-swe", action="store_true")
    args = parser.parse_args()
    os.makedirs(OUT, exist_ok=True)
    sokoban(args)
    if not args.skip_alfworld:
        try:
            from benchmarks import alfworld_speed
        except ImportError:
            print(
                "\n(ALFWorld: benchmarks/alfworld_speed.py or the alfworld package is missing; skipped)"
            )
        else:
            alfworld_speed.main()
    if not args.skip_webshop:
        try:
            from benchmarks import webshop
        except ImportError as exc:
            print(f"\n(WebShop: {exc}; pip install -e '.[webshop]'; skipped)")
        else:
            webshop.main([])
    if not args.skip_searchqa:
        try:
            from benchmarks import searchqa
        except ImportError as exc:
            print(f"\n(SearchQA: {exc}; pip install -e '.[searchqa]'; skipped)")
        else:
            searchqa.main([])
    if not args.skip_swe:
        from benchmarks import swe

        swe.main([])


if __name__ == "__main__":
    main()
