"""Learners: consumers of credited trajectories.

* :mod:`learners.llm` - the bundled LLM learner (transformers on CPU, vLLM on GPU; needs the
  ``llm`` extra; import it explicitly, this package does not import torch).
* :mod:`learners.sb3` - stable-baselines3 integration (``sb3`` extra).
"""
