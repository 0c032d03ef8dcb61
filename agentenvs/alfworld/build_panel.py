"""Build (or rebuild, bit-identically) the embedded ALFWorld panel.

Usage::

    python -m agentenvs.alfworld.build_panel --out agentenvs/alfworld/data/panel.jsonl.gz

This module holds :data:`SCENE_SPLIT_OF` (the floor plans each panel split draws from),
:func:`split_sizes` (balanced per-type counts), :func:`build_record` (generate and verify the game at
one position, redrawing the room after a rejection) and :func:`main`. Splits (default sizes):
``train`` (600) and ``test_seen`` (140) on ALFRED's seen floor plans, ``test_unseen`` (60) on the
unseen ones; a type's ``test_seen`` positions follow its ``train`` positions.
Finished games are cached as JSON under ``--cache`` (default: a folder in the temp dir) so an
interrupted build resumes; ``--reverse`` starts a second worker on the same cache from the other end.
The output is a pure function of ``--seed`` and the sizes: rooms are rejected only for what they are
(goal true at reset, no plan, plan shorter than 3, plan not winning on replay); a planner timeout
(``--timeout``, default 30 s; the planner needs 0.3-2 s on these rooms) is retried with more time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from typing import Any

from agentenvs.alfworld.constants import TASK_TYPE_NAMES
from agentenvs.alfworld.engine import PlannerTimeout
from agentenvs.alfworld.generate import draw_game
from agentenvs.alfworld.panel import encode_record, game_record, write_panel
from agentenvs.alfworld.verify import Rejected, verify

__all__ = ["SCENE_SPLIT_OF", "split_sizes", "build_record", "main"]

SEED = 0
#: Panel split -> scene split of :data:`~agentenvs.alfworld.scenes.SCENE_SPLITS` its rooms come from.
SCENE_SPLIT_OF = {"train": "seen", "test_seen": "seen", "test_unseen": "unseen"}


def split_sizes(total: int) -> dict[str, int]:
    """``total`` games spread over the six task types, the first types taking the remainder.

    >>> split_sizes(140)["pick_and_place_simple"], split_sizes(140)["pick_two_obj_and_place"]
    (24, 23)
    """
    base, extra = divmod(total, len(TASK_TYPE_NAMES))
    return {t: base + (i < extra) for i, t in enumerate(TASK_TYPE_NAMES)}


def build_record(
    seed: int,
    task_type: str,
    k: int,
    split: str,
    engine: Any,
    *,
    timeout: float = 30.0,
    max_attempts: int = 8,
) -> dict:
    """Generate position ``k`` of ``task_type`` in ``split``, redrawing its room until the game
    verifies (the floor plans: :data:`SCENE_SPLIT_OF`).

    A planner timeout is retried on the same room with 4x and 16x the time before the room counts as
    rejected, so a loaded machine does not change which rooms are kept.
    """
    reasons = []
    for attempt in range(max_attempts):
        spec = draw_game(seed, task_type, k, attempt, scene_split=SCENE_SPLIT_OF[split])
        for limit in (timeout, 4 * timeout, 16 * timeout):
            try:
                spec.walkthrough = verify(spec, engine, timeout=limit)
            except PlannerTimeout as exc:
                reason = str(exc)
                continue
            except Rejected as exc:
                reason = str(exc)
                break
            return game_record(spec, split=split, seed=seed, k=k, attempt=attempt)
        reasons.append(reason)
    raise RuntimeError(f"{task_type} #{k}: no verified game in {max_attempts} attempts: {reasons}")


def _positions(sizes: dict[str, int]) -> list[tuple[str, int, str]]:
    """Build order of ``(task_type, k, split)``: the test splits, then ``train``, task types
    round-robin in each (a build stopped early still has balanced types). ``sizes``: split -> games.

    >>> _positions({"train": 12, "test_seen": 6, "test_unseen": 0})[:2]
    [('pick_and_place_simple', 2, 'test_seen'), ('look_at_obj_in_light', 2, 'test_seen')]
    """
    per_type = {split: split_sizes(n) for split, n in sizes.items()}
    out = []
    for split in ("test_seen", "test_unseen", "train"):
        counts = per_type[split]
        for j in range(max(counts.values(), default=0)):
            for t in TASK_TYPE_NAMES:
                if j < counts[t]:
                    k = per_type["train"][t] + j if split == "test_seen" else j
                    out.append((t, k, split))
    return out


def main(argv: list[str] | None = None) -> int:
    from agentenvs.alfworld.engine import make_engine

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--out", required=True, help="panel file to write (.jsonl.gz)")
    ap.add_argument("--train", type=int, default=600)
    ap.add_argument("--test-seen", type=int, default=140)
    ap.add_argument("--test-unseen", type=int, default=60)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--timeout", type=float, default=30.0, help="planner time limit per game (s)")
    ap.add_argument(
        "--cache", default=None, help="per-game cache dir (default: a folder in the temp dir)"
    )
    ap.add_argument(
        "--reverse",
        action="store_true",
        help="build from the last game (a second worker on the cache)",
    )
    args = ap.parse_args(argv)
    sizes = {"train": args.train, "test_seen": args.test_seen, "test_unseen": args.test_unseen}
    cache = args.cache or os.path.join(
        tempfile.gettempdir(),
        f"agentenvs-alfworld-panel-v2-{args.seed}-" + "-".join(map(str, sizes.values())),
    )
    os.makedirs(cache, exist_ok=True)
    engine = make_engine()
    records = []
    positions = _positions(sizes)
    order = range(len(positions) - 1, -1, -1) if args.reverse else range(len(positions))
    t0 = time.perf_counter()
    for n, i in enumerate(order):
        task_type, k, split = positions[i]
        part = os.path.join(cache, f"{args.seed}-{task_type}-{k:06d}-{split}.json")
        if os.path.exists(part):
            with open(part) as f:
                record = json.load(f)
        else:
            record = build_record(args.seed, task_type, k, split, engine, timeout=args.timeout)
            with open(part + ".tmp", "wb") as f:
                f.write(encode_record(record))
            os.replace(part + ".tmp", part)
        records.append(record)
        if (n + 1) % 20 == 0 or n + 1 == len(positions):
            rate = (time.perf_counter() - t0) / (n + 1)
            print(f"{n + 1}/{len(positions)} games, {rate:.2f} s/game", file=sys.stderr, flush=True)
    records.sort(key=lambda r: (list(SCENE_SPLIT_OF).index(r["split"]), r["id"]))
    write_panel(records, args.out)
    print(f"wrote {len(records)} games to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
