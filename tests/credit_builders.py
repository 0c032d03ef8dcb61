"""Shared builders for the credit tests (no tests here): trajectories from state paths, the worked
examples of docs/credit.md (section 9)."""

from __future__ import annotations

from collections.abc import Sequence

from agentenvs.core import Step, Trajectory


def path_traj(
    path: Sequence[str],
    success: bool,
    group: str = "g",
    actions: Sequence[str] | None = None,
    invalid: Sequence[int] = (),
    rewards: Sequence[float] | None = None,
    win_reward: float = 10.0,
    penalty: float = 0.1,
    costs: Sequence[float] | None = None,
) -> Trajectory:
    """A trajectory visiting ``path`` (``len(path) - 1`` steps, step t goes path[t] -> path[t+1]).

    Rewards default to ``win_reward`` on the last step of a success, ``-penalty`` on ``invalid``
    steps (as the env charges them) and 0 elsewhere; ``costs`` gives ``Step.cost`` (default 1).
    """
    n = len(path) - 1
    if rewards is None:
        rewards = [0.0] * n
        if success:
            rewards[-1] = win_reward
        for t in invalid:
            rewards[t] = -penalty
    acts = actions or [f"{path[t]}->{path[t + 1]}" for t in range(n)]
    steps = [
        Step(
            observation=path[t],
            action=acts[t],
            reward=float(rewards[t]),
            state_key=path[t],
            next_state_key=path[t + 1],
            action_valid=t not in invalid,
            terminated=success and t == n - 1,
            truncated=not success and t == n - 1,
            cost=1.0 if costs is None else float(costs[t]),
        )
        for t in range(n)
    ]
    return Trajectory(task_id="task", group_id=group, steps=steps, success=success)


def toy_group(invalid_tau3_t3: bool = False, group: str = "g") -> list[Trajectory]:
    """The toy group of docs/credit.md, section 9.1: M=4 over states A, B, C, D, X (G = success)."""
    return [
        path_traj("ABCG", True, group),
        path_traj("ADABCG", True, group),
        path_traj("ABXXXX", False, group, invalid=(2,) if invalid_tau3_t3 else ()),
        path_traj("ACXXXX", False, group),
    ]
