"""The Hugging Face progress estimator of :mod:`agentenvs.wrappers.models.progress` (docs/spa.md, section 5).

This module holds:

* :class:`HFProgressEstimator` - a Hugging Face causal LM with a scalar MLP head read at the last
  token of each unit's action, in one causal forward pass over the rendered trajectory.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
from agentenvs.wrappers.models.fit import FitReport
from agentenvs.wrappers.models.hf import check_model_dir, default_device, load_causal_lm
from agentenvs.wrappers.models.progress_core import (
    check_targets,
    episode_ends,
    fit_sums,
    saved_state,
    torch_save,
)

from agentenvs.core import Trajectory

__all__ = ["HFProgressEstimator"]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


class _HFOptions(TypedDict):
    model_dir: str
    head_hidden: int | None
    train_backbone: bool
    lr: float
    weight_decay: float
    epochs: int
    batch_size: int
    grad_clip: float
    max_tokens: int
    device: str
    dtype: str
    seed: int


class HFProgressEstimator:
    """A causal LM backbone from a local HF model directory with a scalar head.

    Rendering: the trajectory becomes a conversation, a user turn per step's observation and an
    assistant turn per action (text as given; non-text values as ``str``), put through the
    tokenizer's chat template when it has one, else ``"Observation: ...\\nAction: ...\\n"`` lines.
    The read-out position of a unit is the last token of its last step's action. One forward pass
    over the whole sequence (causal attention) gives every read-out, so a unit's contribution
    depends only on the trajectory up to the end of that unit's action.

    Head: ``Linear(d, head_hidden) -> SiLU -> Linear(head_hidden, 1)`` on the last hidden layer
    (fp32; ``head_hidden`` defaults to ``d``). Training: AdamW (``lr``, ``weight_decay``), gradient
    norm clipped to ``grad_clip``, ``epochs`` passes in minibatches of ``batch_size`` trajectories
    (order shuffled by ``seed``), on the mean squared sum error. The backbone is frozen unless
    ``train_backbone``: then its read-outs are computed once per fit and only the head trains. The
    backbone stays in eval mode (no dropout) either way. Sequences longer than ``max_tokens`` lose
    their left part; units whose read-out was cut contribute 0 (a warning says so).

    Args:
        model_dir: a local HF model directory (``config.json`` and tokenizer files).
        head_hidden: head width (default: the backbone's hidden size).
        train_backbone: fine-tune the backbone too (default ``False``).
        lr: default 1e-3 (head only; use ~3e-6 for a full fine-tune). weight_decay: default 0.01.
        epochs: passes per fit (default 10). batch_size: default 8. grad_clip: default 1.0.
        max_tokens: default 4096. device: default ``"cuda"`` when available, else ``"cpu"``.
        dtype: backbone dtype, ``"bfloat16"`` on CUDA and ``"float32"`` on CPU by default.
        seed: head init and minibatch order (default 0).
    """

    def __init__(
        self,
        model_dir: str | Path,
        head_hidden: int | None = None,
        train_backbone: bool = False,
        lr: float = 1e-3,
        weight_decay: float = 0.01,
        epochs: int = 10,
        batch_size: int = 8,
        grad_clip: float = 1.0,
        max_tokens: int = 4096,
        device: str | None = None,
        dtype: str | None = None,
        seed: int = 0,
    ) -> None:
        import torch

        model_dir = check_model_dir(model_dir)
        if lr <= 0 or epochs < 0 or batch_size < 1 or max_tokens < 1 or grad_clip <= 0:
            raise ValueError(
                "need lr > 0, epochs >= 0, batch_size >= 1, max_tokens >= 1, grad_clip > 0"
            )
        device = default_device(device)
        dtype = dtype or ("bfloat16" if device.startswith("cuda") else "float32")
        self.options: _HFOptions = {
            "model_dir": str(model_dir),
            "head_hidden": head_hidden,
            "train_backbone": bool(train_backbone),
            "lr": float(lr),
            "weight_decay": float(weight_decay),
            "epochs": int(epochs),
            "batch_size": int(batch_size),
            "grad_clip": float(grad_clip),
            "max_tokens": int(max_tokens),
            "device": device,
            "dtype": dtype,
            "seed": int(seed),
        }
        self.backbone, self.tokenizer = load_causal_lm(model_dir, device, dtype)
        if not self.tokenizer.is_fast:
            raise ValueError(f"{model_dir}: the estimator needs a fast tokenizer (offsets mapping)")
        self.backbone.requires_grad_(bool(train_backbone))
        d = self.backbone.config.hidden_size
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            h = head_hidden or d
            self.head = torch.nn.Sequential(
                torch.nn.Linear(d, h), torch.nn.SiLU(), torch.nn.Linear(h, 1)
            ).to(device)
        pad = self.tokenizer.pad_token_id
        self._pad = int(pad if pad is not None else (self.tokenizer.eos_token_id or 0))
        self.trained = False
        self._fits = 0

    # rendering
    def render(self, trajectory: Trajectory) -> tuple[list[int], np.ndarray]:
        """Token ids of the rendered trajectory and, per step, the index of its action's last token."""
        texts = [(_text(s.observation), _text(s.action)) for s in trajectory.steps]
        if not texts:
            return [], np.zeros(0, np.int64)
        if self.tokenizer.chat_template:
            messages = []
            for obs, act in texts:
                messages += [
                    {"role": "user", "content": obs},
                    {"role": "assistant", "content": act},
                ]
            text = self.tokenizer.apply_chat_template(messages, tokenize=False)
            ends, cursor = [], 0
            for i, m in enumerate(messages):
                content = m["content"]
                pos = text.find(content, cursor)
                if pos < 0:
                    content = content.strip()
                    pos = text.find(content, cursor)
                if pos < 0:
                    raise ValueError("the chat template does not keep message texts verbatim")
                cursor = pos + len(content)
                if i % 2:
                    ends.append(cursor)
        else:
            parts, ends, length = [], [], 0
            for obs, act in texts:
                piece = f"Observation: {obs}\nAction: {act}"
                parts.append(piece + "\n")
                ends.append(length + len(piece))
                length += len(piece) + 1
            text = "".join(parts)
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        starts = np.array([a for a, _ in enc["offset_mapping"]], np.int64)
        index = np.searchsorted(starts, np.array(ends), side="left") - 1
        return list(enc["input_ids"]), np.maximum(index, 0).astype(np.int64)

    def _encode(
        self, trajectories: Sequence[Trajectory], ends: Sequence[Sequence[int]] | None
    ) -> list[tuple[list[int], np.ndarray]]:
        """Per trajectory: token ids (left-truncated) and each unit's read-out index (-1 = cut)."""
        out, cut_units = [], 0
        limit = self.options["max_tokens"]
        for traj, e in zip(trajectories, episode_ends(trajectories, ends), strict=True):
            ids, step_index = self.render(traj)
            index = step_index[e]
            if len(ids) > limit:
                cut = len(ids) - limit
                ids, index = ids[cut:], index - cut
                index[index < 0] = -1
                cut_units += int(np.sum(index < 0))
            out.append((ids, index))
        if cut_units:
            warnings.warn(
                f"progress estimator: {cut_units} unit(s) lost their read-out to left truncation "
                f"at max_tokens={limit}; they contribute 0",
                stacklevel=3,
            )
        return out

    def _hidden(self, encoded: Sequence[tuple[list[int], np.ndarray]], grad: bool) -> list[Any]:
        """Per trajectory, the fp32 last-layer states at its kept read-outs, ``(k, d)``."""
        import torch

        device, bs = self.options["device"], self.options["batch_size"]
        d = self.backbone.config.hidden_size
        out: list[Any] = []
        for lo in range(0, len(encoded), bs):
            chunk = encoded[lo : lo + bs]
            width = max(1, *(len(ids) for ids, _ in chunk))
            ids = torch.full((len(chunk), width), self._pad, dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.long)
            for j, (row, _) in enumerate(chunk):
                ids[j, : len(row)] = torch.as_tensor(row, dtype=torch.long)
                mask[j, : len(row)] = 1
            if not any(len(row) for row, _ in chunk):
                out += [torch.zeros((0, d), device=device) for _ in chunk]
                continue
            with torch.set_grad_enabled(grad):
                states = self.backbone(
                    input_ids=ids.to(device),
                    attention_mask=mask.to(device),
                    output_hidden_states=True,
                ).hidden_states[-1]
            for j, (_, index) in enumerate(chunk):
                keep = torch.as_tensor(index[index >= 0], device=device)
                out.append(states[j, keep].float())
        return out

    def _values(self, states: Any) -> Any:
        return self.head(states).squeeze(-1)

    def contributions(
        self, trajectories: Sequence[Trajectory], ends: Sequence[Sequence[int]] | None = None
    ) -> list[np.ndarray]:
        """float64 contributions per unit, one array per trajectory (0 for truncated units)."""
        import torch

        encoded = self._encode(trajectories, ends)
        with torch.no_grad():
            states = self._hidden(encoded, grad=False)
            result = []
            for (_, index), h in zip(encoded, states, strict=True):
                values = np.zeros(len(index))
                values[index >= 0] = self._values(h).double().cpu().numpy()
                result.append(values)
        return result

    def fit(
        self,
        trajectories: Sequence[Trajectory],
        targets: Sequence[float],
        ends: Sequence[Sequence[int]] | None = None,
        epochs: int | None = None,
    ) -> FitReport:
        """AdamW on the mean squared sum error over ``trajectories`` (see the class docstring)."""
        import torch

        start = time.perf_counter()
        y = torch.as_tensor(check_targets(trajectories, targets), dtype=torch.float32)
        y = y.to(self.options["device"])
        encoded = self._encode(trajectories, ends)
        train_backbone = self.options["train_backbone"]
        cached = None if train_backbone else self._hidden(encoded, grad=False)
        m = len(encoded)

        def errors(rows: np.ndarray) -> Any:
            states = (
                [cached[i] for i in rows]
                if cached is not None
                else self._hidden([encoded[i] for i in rows], grad=True)
            )
            owner = torch.as_tensor(np.repeat(np.arange(len(rows)), [len(h) for h in states]))
            values = self._values(torch.cat(states))
            sums = torch.zeros(len(rows), device=values.device).index_add(
                0, owner.to(values.device), values
            )
            return (sums - y[torch.as_tensor(rows, device=y.device)]) ** 2

        if m == 0:
            self.trained = True
            return FitReport(0.0, 0.0, 0, time.perf_counter() - start)
        params = list(self.head.parameters())
        if train_backbone:
            params += list(self.backbone.parameters())
        opt = torch.optim.AdamW(
            params, lr=self.options["lr"], weight_decay=self.options["weight_decay"]
        )
        rng = np.random.default_rng([self.options["seed"], self._fits])
        clip = self.options["grad_clip"]
        return fit_sums(self, errors, m, opt, start, epochs, rng=rng, clip=clip, params=params)

    def state_dict(self) -> dict:
        """The head's tensors (``head.*``), the backbone's (``backbone.*``) when it trains, and
        the fit count."""
        state: dict[str, Any] = {"fits": self._fits}
        state.update({f"head.{k}": v.detach().cpu() for k, v in self.head.state_dict().items()})
        if self.options["train_backbone"]:
            state.update(
                {f"backbone.{k}": v.detach().cpu() for k, v in self.backbone.state_dict().items()}
            )
        return state

    def load_state_dict(self, state: dict) -> None:
        self.head.load_state_dict({k[5:]: v for k, v in state.items() if k.startswith("head.")})
        backbone = {k[9:]: v for k, v in state.items() if k.startswith("backbone.")}
        if backbone:
            self.backbone.load_state_dict(backbone)
        self._fits = int(state.get("fits", 0))
        self.trained = True

    def save(self, path: str | Path) -> None:
        """``torch.save`` of the kind, options (JSON, with ``model_dir``) and state."""
        torch_save(saved_state("hf", self.options, self.state_dict()), path)
