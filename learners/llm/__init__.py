"""The bundled LLM learner: multi-turn PPO on per-step advantages from ``wrappers``.

Modules (import what you need; all need the ``llm`` extra: torch, transformers, tokenizers):

* :mod:`~learners.llm.config` - :class:`TrainConfig`, every default with its source.
* :mod:`~learners.llm.prompts` - per-env prompt builders (verl-agent formats) and episode memory.
* :mod:`~learners.llm.policy` - model + tokenizer + chat template; response-token forward pass.
* :mod:`~learners.llm.generation` - HF ``generate`` and vLLM sampling backends.
* :mod:`~learners.llm.rollout` - batched one-sample-per-step rollouts into grouped trajectories.
* :mod:`~learners.llm.loss` - PPO-clip, k3 KL, entropy, advantage broadcast (pure functions).
* :mod:`~learners.llm.trainer` - the loop: rollouts, credit, update, eval, metrics, checkpoints.
* :mod:`~learners.llm.panels` - the resumable task cursor and an easy Sokoban panel.
* :mod:`~learners.llm.metrics` - CSV/TensorBoard logging and the learning-curve PNG.
* :mod:`~learners.llm.models` - ``--model`` resolution: local dirs, ``tiny``, ``smollm2`` (offline).
* :mod:`~learners.llm.tiny` - a tiny random Qwen2 model and an in-code BPE tokenizer.
"""

from learners.llm.config import TrainConfig

__all__ = ["TrainConfig"]
