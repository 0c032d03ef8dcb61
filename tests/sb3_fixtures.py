"""A callback shared by the SB3 test modules (no tests here): the credited groups of a rollout.

Import it after ``pytest.importorskip("stable_baselines3")``.
"""

from __future__ import annotations

from stable_baselines3.common.callbacks import BaseCallback

__all__ = ["GroupCatcher"]


class GroupCatcher(BaseCallback):
    """Collects every credited group seen in the rollout's infos, in arrival order."""

    def __init__(self) -> None:
        super().__init__()
        self.groups: list = []

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            if "credit" in info:
                self.groups.append(list(info["credit"]))
        return True
