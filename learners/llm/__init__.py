"""The bundled LLM learner: multi-turn PPO on the per-step advantages credit wrappers hand out.

It is given credit-wrapped envs and holds no env-specific code: prompts come from each env's
``agent_prompt`` hook, advantages from the wrappers' credited groups.

Modules (import what you need; all need the ``llm`` extra: torch, transformers, tokenizers):

* :mod:`~learners.llm.config` - :class:`TrainConfig`, every default with its source.
* :mod:`~learners.llm.cli` - ``agentenvs train`` / ``examples/train_llm.py``: flags generated
  from :class:`TrainConfig` (tyro), the main job's recipes and the run's steps.
* :mod:`~learners.llm.policy` - model + tokenizer + chat template; response-token forward pass.
* :mod:`~learners.llm.generation` - the HF ``generate`` sampling backend.
* :mod:`~learners.llm.vllm_generator` - the vLLM backend (CUDA): log-probs, weight and LoRA sync,
  sleep mode.
* :mod:`~learners.llm.logprob_gap` - the backend-vs-trainer log-prob gap checked after each sync.
* :mod:`~learners.llm.export` - a trained policy as an HF model directory or a LoRA adapter.
* :mod:`~learners.llm.rollout` - batched one-sample-per-step rollouts through credit wrappers.
* :mod:`~learners.llm.loss` - PPO-clip, k3 KL, chunked log-probs and entropy (pure functions).
* :mod:`~learners.llm.precision` - weight dtype, autocast, fp32 master weights, loss scaling.
* :mod:`~learners.llm.batching` - length-sorted micro-batches (sample count or token budget).
* :mod:`~learners.llm.plan` / :mod:`~learners.llm.memcheck` - the memory planner and the trainer's
  warning when a run will not fit.
* :mod:`~learners.llm.trainer` - the loop: credited rollouts, update, eval, metrics, checkpoints.
* :mod:`~learners.llm.distributed` - data parallelism under ``torchrun`` (DDP or FSDP2; gloo on
  CPU, nccl on CUDA).
* :mod:`~learners.llm.cursor` - the resumable task cursor.
* :mod:`~learners.llm.metrics` - CSV/TensorBoard logging and the learning-curve PNG.
* :mod:`~learners.llm.models` - ``--model`` resolution: local dirs, ``tiny``, ``smollm2`` (offline).
* :mod:`~learners.llm.tiny` - a tiny random Qwen2 model and an in-code BPE tokenizer.
"""

from learners.llm.config import TrainConfig

__all__ = ["TrainConfig"]
