"""Learners: consumers of credited trajectories.

* :mod:`agentenvs.learners.llm` - the bundled LLM learner (transformers on CPU, vLLM on GPU; needs the
  ``llm`` extra; import it explicitly, this package does not import torch).
* :mod:`agentenvs.learners.sb3` - stable-baselines3 integration (``sb3`` extra).
* :mod:`agentenvs.learners.trl` - TRL's ``GRPOTrainer`` with our per-step advantages (``trl`` extra).

Learners import the envs and :mod:`agentenvs.wrappers`; nothing of ours imports them.
"""

if __name__ != "agentenvs.learners":  # the folder learners/ found on sys.path: one module, one name
    raise ImportError(f"import agentenvs.learners, not {__name__}")
