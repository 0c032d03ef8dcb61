"""The bundled LLM learner: multi-turn PPO on the per-step advantages credit wrappers hand out.

It is given credit-wrapped envs and holds no env-specific code: prompts come from each env's
``agent_prompt`` hook, advantages from the wrappers' credited groups.

Modules (import what you need; all but the planner need the ``llm`` extra: torch, transformers,
tokenizers):

The loop and its parts

* :mod:`~agentenvs.learners.llm.trainer` - :class:`~agentenvs.learners.llm.trainer.Trainer`, the orchestrator: rollout
  (credit from the wrappers) -> update -> eval -> metrics -> checkpoint -> callbacks.
* :mod:`~agentenvs.learners.llm.env_source` - what the trainer needs from its envs, typed: credited groups,
  prompts, the task panel, the credit method's name; the training and evaluated task ids.
* :mod:`~agentenvs.learners.llm.update` - the PPO update over micro-batches: precision, optimizer, frozen
  reference, DDP/FSDP hooks.
* :mod:`~agentenvs.learners.llm.evaluation` - uncredited evaluation episodes and the before/after gain.
* :mod:`~agentenvs.learners.llm.checkpoint` - the checkpoint file and every RNG state.
* :mod:`~agentenvs.learners.llm.parallel` - DDP or FSDP2 around the model, its full weights.
* :mod:`~agentenvs.learners.llm.callbacks` - :class:`~agentenvs.learners.llm.callbacks.TrainerCallback`
  (``on_iteration_end``, ``on_eval``).
* :mod:`~agentenvs.learners.llm.distributed` - the ``torchrun`` process group (gloo on CPU, nccl on CUDA).
* :mod:`~agentenvs.learners.llm.cursor` - the resumable task cursor.
* :mod:`~agentenvs.learners.llm.metrics` - CSV/TensorBoard logging and the learning-curve PNG.

Model, sampling and rollouts

* :mod:`~agentenvs.learners.llm.config` - :class:`TrainConfig`, every default with its source.
* :mod:`~agentenvs.learners.llm.policy` - model + tokenizer + chat template; response-token forward pass.
* :mod:`~agentenvs.learners.llm.generation` - the HF ``generate`` sampling backend.
* :mod:`~agentenvs.learners.llm.vllm_generator` - the vLLM backend (CUDA): log-probs, weight and LoRA sync,
  sleep mode.
* :mod:`~agentenvs.learners.llm.logprob_gap` - the backend-vs-trainer log-prob gap checked after each sync.
* :mod:`~agentenvs.learners.llm.rollout` - batched one-sample-per-step rollouts through credit wrappers.
* :mod:`~agentenvs.learners.llm.warm_start` - the optional supervised warm start on the env's action syntax.
* :mod:`~agentenvs.learners.llm.loss` - PPO-clip, k3 KL, chunked log-probs and entropy (pure functions).
* :mod:`~agentenvs.learners.llm.precision` - weight dtype, autocast, fp32 master weights, loss scaling.
* :mod:`~agentenvs.learners.llm.batching` - length-sorted micro-batches (sample count or token budget).
* :mod:`~agentenvs.learners.llm.export` - a trained policy as an HF model directory or a LoRA adapter.
* :mod:`~agentenvs.learners.llm.models` - ``--model`` resolution: local dirs, ``tiny``, ``smollm2`` (offline).
* :mod:`~agentenvs.learners.llm.tiny` - a tiny random Qwen2 model and an in-code BPE tokenizer.

Memory

* :mod:`~agentenvs.learners.llm.plan` - the memory planner (pure Python; it re-exports
  :mod:`~agentenvs.learners.llm.plan.arch`, :mod:`~agentenvs.learners.llm.plan.config`,
  :mod:`~agentenvs.learners.llm.plan.estimate` and :mod:`~agentenvs.learners.llm.plan.cli`).
* :mod:`~agentenvs.learners.llm.memcheck` - the trainer's warning when a run will not fit.

What it may import: ``agentenvs`` (its core contract: steps, trajectories, prompts, store,
vector infos), gymnasium, numpy and the ``llm`` extra's libraries; never
:mod:`agentenvs.wrappers` (credit arrives through the envs' ``info``) and nothing that imports
it. Inside, the trainer imports its parts; the parts never import the trainer (the callbacks name
it for type checkers only), and the planner imports nothing of the learner's.

The package exports what a training script touches: :class:`TrainConfig` (imported eagerly, it
needs no torch), and, imported on first use (they need the ``llm`` extra), :class:`Trainer`,
:class:`TrainerCallback`, :class:`Policy`, :func:`load_policy`, :func:`resolve_model` and
:func:`export_policy`:

>>> from agentenvs.learners.llm import TrainConfig, Trainer
>>> Trainer.__module__
'agentenvs.learners.llm.trainer'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agentenvs.learners.llm.config import TrainConfig

if TYPE_CHECKING:
    from agentenvs.learners.llm.callbacks import TrainerCallback
    from agentenvs.learners.llm.export import export_policy
    from agentenvs.learners.llm.models import resolve_model
    from agentenvs.learners.llm.policy import Policy, load_policy
    from agentenvs.learners.llm.trainer import Trainer

#: Exported name -> the module that defines it (imported by :func:`__getattr__` on first use).
_LAZY = {
    "Trainer": "trainer",
    "TrainerCallback": "callbacks",
    "Policy": "policy",
    "load_policy": "policy",
    "resolve_model": "models",
    "export_policy": "export",
}
__all__ = [
    "TrainConfig",
    "Trainer",
    "TrainerCallback",
    "Policy",
    "load_policy",
    "resolve_model",
    "export_policy",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
