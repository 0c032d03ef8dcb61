"""Memory planner for the LLM learner: the bytes one training GPU needs, and whether they fit.

The package exports the planner; its modules hold the parts:

* :mod:`~agentenvs.learners.llm.plan.arch` - :class:`ModelArch` (the architecture numbers that set memory
  and the parameter counts derived from them), :class:`VisionArch` (a vision-language model's
  vision tower, Qwen2-VL's layout: its parameters, an image's patches and image tokens),
  :data:`ARCHITECTURES` (published architectures: Qwen2.5 0.5B-7B Instruct, SmolLM2 135M-1.7B,
  Llama-3.1-8B, Qwen2-VL 2B/7B and Qwen2.5-VL 3B/7B Instruct, and the repo's tiny test models),
  :func:`load_arch` (a model name, a local HF directory, a ``config.json`` path or its dict),
  :data:`DTYPE_BYTES` and :data:`GIB`.
* :mod:`~agentenvs.learners.llm.plan.config` - :class:`PlanConfig` (the training knobs that change memory:
  micro-batch, dtypes, LoRA, KL, gradient checkpointing, attention kernel, rollout backend, a
  VLM's images per prompt, their size and whether its vision tower trains) and
  :class:`MemoryPlan` (the estimate: persistent tensors, each phase's transients, the peak, the
  total; :meth:`MemoryPlan.table` renders it).
* :mod:`~agentenvs.learners.llm.plan.estimate` - :func:`plan_memory` and :func:`check_fits`, the entry
  points (with the formulas); :func:`max_micro_batch_size` - the largest micro-batch that fits;
  :func:`train_config_kwargs` maps a :class:`~agentenvs.learners.llm.config.TrainConfig` onto planner
  keywords.
* :mod:`~agentenvs.learners.llm.plan.cli` - :func:`parse_bytes`, :func:`parse_image_size` and
  :func:`main` (``python -m agentenvs.learners.llm.plan --help``).

They import one another in that order (architectures -> config -> estimate -> CLI). Pure Python:
nothing here imports torch; see ``docs/learner-memory.md`` for the derivation and the CPU
calibration.

>>> plan = plan_memory("tiny", micro_batch_size=4, seq_len=256, response_len=128,
...                    device="cpu", rollout="none")
>>> plan.params, plan.trainable_params, plan.peak_phase
(115392, 115392, 'forward')
>>> round(plan.total / 2**20, 1)  # MiB: fp32 weights, AdamW, reference, activations, logits
18.2
>>> plan_memory("Qwen2.5-7B-Instruct", lora_rank=64).trainable_params
161480704
>>> ok, plan = check_fits("Qwen2.5-7B-Instruct", 80 * 2**30, weight_dtype="bf16")
>>> ok, plan.peak_phase
(False, 'lm_head_backward')
>>> check_fits("Qwen2.5-7B-Instruct", 80 * 2**30, weight_dtype="bf16", lora_rank=64,
...            gradient_checkpointing=True)[0]
True
>>> vl = plan_memory("Qwen2-VL-2B-Instruct", images_per_prompt=1, image_size=448, seq_len=1024)
>>> vl.details["seq_len"], vl.params - vl.trainable_params  # 256 image tokens; a frozen tower
(1280, 665271296)
"""

from agentenvs.learners.llm.plan.arch import (
    ARCHITECTURES,
    DTYPE_BYTES,
    GIB,
    ModelArch,
    VisionArch,
    load_arch,
)
from agentenvs.learners.llm.plan.cli import main, parse_bytes, parse_image_size
from agentenvs.learners.llm.plan.config import MemoryPlan, PlanConfig
from agentenvs.learners.llm.plan.estimate import (
    check_fits,
    max_micro_batch_size,
    plan_memory,
    train_config_kwargs,
)

__all__ = [
    "ARCHITECTURES",
    "DTYPE_BYTES",
    "GIB",
    "ModelArch",
    "VisionArch",
    "PlanConfig",
    "MemoryPlan",
    "load_arch",
    "plan_memory",
    "check_fits",
    "max_micro_batch_size",
    "train_config_kwargs",
    "parse_bytes",
    "parse_image_size",
    "main",
]
