"""The top-level packages this distribution installs, and a check that an import finds ours.

This module holds :data:`PACKAGES` and :func:`require_package`. Besides ``agentenvs`` the
distribution installs ``wrappers`` and ``learners``, names that a user's own folder may carry too:
a ``wrappers/`` package (or a ``wrappers.py``) in the working directory comes first on ``sys.path``
under ``python script.py`` or ``python -m ...``, and ``from wrappers import CreditWrapper`` would
fail with a bare ``cannot import name`` error. :func:`require_package` (called by the packages that
import ``wrappers``: ``learners``, ``agentenvs.viewer``, ``agentenvs.cli``) turns that into one
line that says what to do. It only locates the package (``importlib.util.find_spec``), it does not
import it.

>>> require_package("wrappers")  # ours: nothing happens (tests/test_layout.py plants a decoy)
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["PACKAGES", "require_package"]

#: The top-level packages of the agentenvs distribution (they are installed side by side).
PACKAGES = ("agentenvs", "wrappers", "learners")

_ROOT = Path(__file__).resolve().parents[1]  # the directory that holds agentenvs/ and its siblings


def require_package(name: str) -> None:
    """``ImportError`` (one line) unless ``import name`` finds the package installed beside
    ``agentenvs``, e.g. when a user's own ``wrappers/`` folder shadows ours."""
    spec = importlib.util.find_spec(name)
    origin = None if spec is None else spec.origin
    if origin is not None and Path(origin).resolve().parent == _ROOT / name:
        return
    if spec is None:
        found = "nothing"
    else:
        found = origin or ", ".join(spec.submodule_search_locations or ()) or "a namespace"
    raise ImportError(
        f"{name!r} resolves to {found}, which shadows agentenvs' own {name!r} "
        f"({_ROOT / name}): rename your {name!r} folder or module, or run from another directory"
    )
