"""Learners: consumers of credited trajectories.

* :mod:`learners.llm` - the bundled LLM learner (transformers on CPU, vLLM on GPU; needs the
  ``llm`` extra; import it explicitly, this package does not import torch).
* :mod:`learners.sb3` - stable-baselines3 integration (``sb3`` extra).
* :mod:`learners.trl` - TRL's ``GRPOTrainer`` with our per-step advantages (``trl`` extra).

Learners import ``agentenvs`` and ``wrappers``; nothing of ours imports them. Importing this
package checks that ``wrappers`` is ours (:func:`agentenvs.layout.require_package`).
"""

from agentenvs.layout import require_package

require_package("wrappers")  # a user's own wrappers/ folder would shadow ours: say so in one line
