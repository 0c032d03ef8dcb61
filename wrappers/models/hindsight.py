"""Turn scorers for HISR: how likely an action is under a hindsight model and under the policy.

A *turn scorer* gives, for turn ``k`` of a trajectory, the log-likelihood total of the action and
its number of scoring units: ``score(requests) -> [(sum_logprob, n_units), ...]``. Its ``view``
fixes the context (docs/hisr.md, section 3):

* ``"hindsight"`` - the cloze view: the whole trajectory with turn ``k`` blanked out, plus the
  outcome ``R``.
* ``"policy"`` - the past only: what the agent saw before acting.

Its ``unit`` says what it counts: ``"token"`` (a language model, teacher-forced on the action's
tokens) or ``"class"`` (one action class per turn). This module holds:

* :class:`TurnRequest` - one turn to score (trajectory, turn index, outcome).
* :class:`TurnScorer` - the protocol. A fit returns a :class:`agentenvs.wrappers.models.fit.FitReport` whose
  losses are mean negative log-likelihoods per scoring unit (nats).
* :class:`FeatureScorer` - a small torch classifier ``p(action class | features of the context)``
  for discrete or command-like actions (SokobanDiscrete with SB3, text envs without an LM).
* :class:`HFScorer` - a local Hugging Face causal LM (teacher-forced token log-likelihoods, batched,
  chat template where the tokenizer has one; cloze supervised fine-tuning, LoRA optional).
* :func:`make_scorer` - a scorer from a spec (``"features"``, ``"hf:<dir>"``, a model directory).
* :func:`trajectory_outcome` - a trajectory's outcome ``R`` (success 0/1 or its env return).
* :func:`turn_requests` - every turn of some trajectories as requests.
* :func:`train_hindsight` - fit a scorer on collected groups (what HISR's online mode calls).
* :func:`cloze_messages`, :func:`policy_messages` - the chat renderings the HF scorer uses.

torch and transformers are imported inside the functions that need them.

>>> from agentenvs.core import Step, Trajectory
>>> t = Trajectory("t", "g", [Step("o0", "go", 0.0), Step("o1", "take", 1.0)], success=True,
...                final_observation="done")
>>> [m["content"] for m in cloze_messages(TurnRequest(t, 0, 1.0))][2:5]
['o0', '___', 'Observation: o1']
>>> [m["content"] for m in policy_messages(TurnRequest(t, 1, 1.0))]
['o0', 'go', 'o1']
"""

from __future__ import annotations

import math
import time
import warnings
import zlib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from agentenvs.wrappers.batch import action_signature
from agentenvs.wrappers.models.fit import FitReport, fit_epochs
from agentenvs.wrappers.models.hf import (
    check_model_dir,
    default_device,
    is_model_dir,
    load_causal_lm,
)

from agentenvs.core import Trajectory

__all__ = [
    "VIEWS",
    "OUTCOMES",
    "CLOZE_INSTRUCTION",
    "TurnRequest",
    "TurnScorer",
    "FeatureScorer",
    "HFScorer",
    "make_scorer",
    "check_scorer_spec",
    "trajectory_outcome",
    "turn_requests",
    "train_hindsight",
    "cloze_messages",
    "policy_messages",
    "text_features",
]

#: A scorer's context: the cloze ``"hindsight"`` view or the past-only ``"policy"`` view.
VIEWS = ("hindsight", "policy")
#: What ``R`` is: ``"success"`` (1.0 if the env's won flag is set, else 0.0) or ``"return"`` (the
#: trajectory's total env reward).
OUTCOMES = ("success", "return")

#: The cloze task the hindsight view states first (our wording of the paper's task).
CLOZE_INSTRUCTION = (
    "You are a trajectory expert. Below is an agent's interaction with an environment in which "
    "one of the agent's turns was lost and replaced by ___. The last message gives the scalar "
    "reward of the whole trajectory (0.0 = failure, 1.0 = success). Reconstruct the lost turn "
    "exactly as the agent wrote it."
)


@dataclass(frozen=True)
class TurnRequest:
    """Turn ``turn`` (0-based) of ``trajectory``, with the outcome ``outcome`` the hindsight view
    shows."""

    trajectory: Trajectory
    turn: int
    outcome: float


@runtime_checkable
class TurnScorer(Protocol):
    """What HISR needs of a scorer (docs/hisr.md, section 3)."""

    view: str
    unit: str
    trained: bool

    def score(self, requests: Sequence[TurnRequest]) -> list[tuple[float, int]]: ...

    def fit(self, requests: Sequence[TurnRequest], **train: Any) -> FitReport: ...


def trajectory_outcome(trajectory: Trajectory, outcome: str = "success") -> float:
    """``R`` of a trajectory: ``"success"`` -> 1.0 / 0.0 from ``Trajectory.success``,
    ``"return"`` -> its total env reward."""
    if outcome == "success":
        return 1.0 if trajectory.success else 0.0
    if outcome == "return":
        return trajectory.total_return
    raise ValueError(f"outcome must be one of {OUTCOMES}, got {outcome!r}")


def turn_requests(
    trajectories: Sequence[Trajectory], outcome: str = "success"
) -> list[TurnRequest]:
    """One request per turn of every trajectory, in order, each with its trajectory's ``R``."""
    out = []
    for traj in trajectories:
        r = trajectory_outcome(traj, outcome)
        out += [TurnRequest(traj, k, r) for k in range(len(traj.steps))]
    return out


def _check_view(view: str) -> str:
    if view not in VIEWS:
        raise ValueError(f"view must be one of {VIEWS}, got {view!r}")
    return view


# -- features ---------------------------------------------------------------------------------------
def text_features(text: str, dim: int = 512) -> np.ndarray:
    """float32 ``(dim,)``: hashed counts of the words of ``text`` and of (word index, word) pairs
    (the pairs keep layout, e.g. a text grid), ``log1p``-scaled. Stable across processes (crc32).

    >>> v = text_features("a b a", dim=16)
    >>> v.shape, bool(v.sum() > 0), bool(np.array_equal(v, text_features("a b a", dim=16)))
    ((16,), True, True)
    """
    out = np.zeros(dim, np.float32)
    for i, word in enumerate(text.split()):
        out[zlib.crc32(word.encode()) % dim] += 1.0
        out[zlib.crc32(f"{i}:{word}".encode()) % dim] += 1.0
    return np.log1p(out)


def _observation_features(obs: Any, dim: int) -> np.ndarray:
    if isinstance(obs, str):
        return text_features(obs, dim)
    try:
        return np.asarray(obs, np.float32).ravel()
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"FeatureScorer reads text or numeric array observations, got {type(obs).__name__}"
        ) from err


class FeatureScorer:
    """``p(action class | features)``: a small MLP classifier over the turn's context features.

    Args:
        view: ``"hindsight"`` (features of the observation before the turn, of the trajectory's
            final observation, the outcome ``R`` and the turn's relative position ``(k+1)/n``) or
            ``"policy"`` (features of the observation before the turn only).
        text_dim: hashed feature size of a text observation (:func:`text_features`).
        hidden: hidden width. epochs, lr: full-batch Adam steps and rate of :meth:`fit`.
        seed: torch seed of the weights (deterministic).

    Action classes are :func:`agentenvs.wrappers.batch.action_signature` of the step (the discrete action,
    or the command of a text answer); the vocabulary grows at each :meth:`fit`. Class 0 stands for
    actions never seen in a fit. A turn's log-likelihood is the log-probability of its class, with
    1 scoring unit. The observation the action led to is *not* a feature: in a deterministic env it
    names the action outright, which would make every turn certain under hindsight
    (docs/hisr.md, section 3.2). ``trained`` is ``False`` until the first fit.

    >>> from agentenvs.core import Step, Trajectory
    >>> win = Trajectory("t", "g", [Step("s", "good", 1.0)], success=True)
    >>> lose = Trajectory("t", "g", [Step("s", "bad", 0.0)], success=False)
    >>> hs = FeatureScorer("hindsight", epochs=30, lr=0.1)
    >>> report = hs.fit(turn_requests([win, lose] * 4))
    >>> (ll_good, n), (ll_bad, _) = hs.score([TurnRequest(win, 0, 1.0), TurnRequest(lose, 0, 1.0)])
    >>> n, report.loss_after < report.loss_before, ll_good > ll_bad
    (1, True, True)
    """

    unit = "class"

    def __init__(
        self,
        view: str = "hindsight",
        *,
        text_dim: int = 512,
        hidden: int = 64,
        epochs: int = 100,
        lr: float = 1e-2,
        seed: int = 0,
    ) -> None:
        self.view = _check_view(view)
        self.text_dim, self.hidden, self.epochs, self.lr, self.seed = (
            text_dim,
            hidden,
            epochs,
            lr,
            seed,
        )
        self.classes: dict[Hashable, int] = {}  # action signature -> class (0 = unseen)
        self.model: Any = None
        self.trained = False

    def __repr__(self) -> str:
        return f"FeatureScorer({self.view!r}, classes={len(self.classes)}, trained={self.trained})"

    def features(self, request: TurnRequest) -> np.ndarray:
        """float32 feature vector of one turn's context (see the class docstring)."""
        traj, k = request.trajectory, request.turn
        here = _observation_features(traj.steps[k].observation, self.text_dim)
        if self.view == "policy":
            return here
        final = traj.final_observation
        end = np.zeros_like(here) if final is None else _observation_features(final, self.text_dim)
        if end.shape != here.shape:
            raise ValueError("the final observation's features differ in size from a step's")
        extra = np.array([request.outcome, (k + 1) / len(traj.steps)], np.float32)
        return np.concatenate([here, end, extra])

    def _matrix(self, requests: Sequence[TurnRequest]) -> np.ndarray:
        return np.stack([self.features(r) for r in requests]).astype(np.float32)

    def _labels(self, requests: Sequence[TurnRequest], grow: bool) -> np.ndarray:
        out = []
        for r in requests:
            key = action_signature(r.trajectory.steps[r.turn])
            if grow and key not in self.classes:
                self.classes[key] = len(self.classes) + 1
            out.append(self.classes.get(key, 0))
        return np.array(out, np.int64)

    def _build(self, n_in: int, n_out: int) -> None:
        """Create the MLP, or widen its output layer to ``n_out`` classes keeping learnt rows."""
        import torch
        from torch import nn

        if self.model is None:
            generator = torch.random.get_rng_state()
            torch.manual_seed(self.seed)
            try:
                self.model = nn.Sequential(
                    nn.Linear(n_in, self.hidden), nn.SiLU(), nn.Linear(self.hidden, n_out)
                )
            finally:
                torch.random.set_rng_state(generator)
            return
        if self.model[0].in_features != n_in:
            raise ValueError(
                f"features have size {n_in}, the scorer was built for {self.model[0].in_features}"
            )
        old = self.model[2]
        if old.out_features < n_out:
            new = nn.Linear(self.hidden, n_out)
            with torch.no_grad():
                new.weight.zero_()
                new.bias.fill_(float(old.bias.min()) - 1.0)  # a new class starts unlikely
                new.weight[: old.out_features] = old.weight
                new.bias[: old.out_features] = old.bias
            self.model[2] = new

    def fit(
        self, requests: Sequence[TurnRequest], epochs: int | None = None, lr: float | None = None
    ) -> FitReport:
        """Cross-entropy on the requests' action classes (full batch, Adam); the vocabulary grows."""
        import torch

        start = time.perf_counter()
        epochs = self.epochs if epochs is None else epochs
        if not requests:
            raise ValueError("fit needs at least one turn")
        x = torch.from_numpy(self._matrix(requests))
        y = torch.from_numpy(self._labels(requests, grow=True))
        self._build(x.shape[1], len(self.classes) + 1)
        optim = torch.optim.Adam(self.model.parameters(), lr=self.lr if lr is None else lr)
        loss_fn = torch.nn.CrossEntropyLoss()
        report = fit_epochs(
            lambda _: loss_fn(self.model(x), y),  # full batch: one row stands for all
            lambda: loss_fn(self.model(x), y),
            optim,
            n=1,
            epochs=epochs,
            start=start,
            module=self.model,
        )
        self.trained = True
        return report

    def score(self, requests: Sequence[TurnRequest]) -> list[tuple[float, int]]:
        """``(log p(class of the turn's action), 1)`` per request; ``RuntimeError`` before a fit."""
        import torch

        if not self.trained:
            raise RuntimeError("FeatureScorer.score before any fit")
        if not requests:
            return []
        x = torch.from_numpy(self._matrix(requests))
        y = torch.from_numpy(self._labels(requests, grow=False))
        with torch.no_grad():
            logp = torch.log_softmax(self.model(x), dim=-1).gather(1, y[:, None])[:, 0]
        return [(float(v), 1) for v in logp.tolist()]

    def state_dict(self) -> dict[str, Any]:
        return {
            "view": self.view,
            "classes": list(self.classes.items()),
            "model": None if self.model is None else self.model.state_dict(),
            "n_in": None if self.model is None else self.model[0].in_features,
            "trained": self.trained,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.view = _check_view(state["view"])
        self.classes = dict(state["classes"])
        self.model, self.trained = None, bool(state["trained"])
        if state["model"] is not None:
            self._build(state["n_in"], len(self.classes) + 1)
            self.model.load_state_dict(state["model"])
            self.model.eval()


# -- language-model scorer ---------------------------------------------------------------------------
def _text(obs: Any) -> str:
    if not isinstance(obs, str):
        raise TypeError(f"HFScorer renders text observations, got {type(obs).__name__}")
    return obs


def policy_messages(request: TurnRequest) -> list[dict[str, str]]:
    """The past-only chat: observation 0, action 0, observation 1, ..., observation ``k``."""
    steps = request.trajectory.steps
    out = []
    for t in range(request.turn + 1):
        out.append({"role": "user", "content": _text(steps[t].observation)})
        if t < request.turn:
            out.append({"role": "assistant", "content": str(steps[t].action)})
    return out


def cloze_messages(request: TurnRequest) -> list[dict[str, str]]:
    """The cloze chat (docs/hisr.md, section 3.1): the instruction, ``OK``, observation 0, then
    every action (turn ``k`` as ``___``) and ``Observation: ...``, the final observation, and the
    outcome line."""
    traj = request.trajectory
    steps = traj.steps
    out = [
        {"role": "user", "content": CLOZE_INSTRUCTION},
        {"role": "assistant", "content": "OK"},
        {"role": "user", "content": _text(steps[0].observation)},
    ]
    for t, step in enumerate(steps):
        out.append(
            {"role": "assistant", "content": "___" if t == request.turn else str(step.action)}
        )
        if t + 1 < len(steps):
            out.append(
                {"role": "user", "content": f"Observation: {_text(steps[t + 1].observation)}"}
            )
    final = traj.final_observation
    tail = f"Observation: {_text(final)}\n" if final is not None else ""
    out.append(
        {
            "role": "user",
            "content": f"{tail}The scalar reward for the above trajectory is: "
            f"{float(request.outcome)}\nPredict the lost interactive turn, like the task of cloze",
        }
    )
    return out


class HFScorer:
    """Teacher-forced log-likelihood of each turn's action tokens under a local HF causal LM.

    Args:
        model: a local model directory (``config.json`` inside), or a ``(model, tokenizer)`` pair.
        view: ``"hindsight"`` (:func:`cloze_messages`) or ``"policy"`` (:func:`policy_messages`).
        max_tokens: longest sequence scored; longer contexts lose their oldest tokens.
        batch_size: sequences per forward pass.
        lr, epochs: the defaults of :meth:`fit` (supervised cloze fine-tuning, AdamW).
        lora_rank: > 0 trains a LoRA adapter of that rank (peft) instead of every weight.
        device: torch device (default: CUDA when available).

    The action's tokens are the learner's sampled ids when the action carries them
    (``action.response_ids``: the very tokens the behaviour log-probs are on), else the tokenizer's
    encoding of the action text. The context is the chat template's rendering with the generation
    prompt where the tokenizer has a template, else ``role: content`` lines. A pretrained LM is a
    usable scorer as it is: ``trained`` starts ``True``.
    """

    unit = "token"

    def __init__(
        self,
        model: str | Path | tuple[Any, Any],
        view: str = "hindsight",
        *,
        max_tokens: int = 2048,
        batch_size: int = 8,
        lr: float = 1e-5,
        epochs: int = 1,
        lora_rank: int = 0,
        device: str | None = None,
    ) -> None:
        self.view = _check_view(view)
        self.max_tokens, self.batch_size, self.lr, self.epochs = max_tokens, batch_size, lr, epochs
        self.lora_rank = lora_rank
        self._source = model
        self._device = device
        self._model: Any = None
        self._tokenizer: Any = None
        self.trained = True
        self._fitted = False  # fine-tuned by fit(): its weights differ from the source's
        if not isinstance(model, tuple):
            check_model_dir(model)

    def state_dict(self) -> dict[str, Any]:
        """The weights :meth:`fit` trains (the LoRA adapter's with ``lora_rank > 0``, else every
        weight), on CPU; empty before the first fit (the weights are then the source's)."""
        if not self._fitted:
            return {}
        return {
            name: p.detach().cpu().clone()
            for name, p in self._model.named_parameters()
            if p.requires_grad
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Load what :meth:`state_dict` returned into the (loaded) model."""
        if not state:
            return
        model, _ = self._load()
        unexpected = model.load_state_dict(state, strict=False).unexpected_keys
        if unexpected:
            raise ValueError(f"HFScorer state has weights the model lacks: {unexpected[:3]}")
        self._fitted = True

    def __repr__(self) -> str:
        source = "<model>" if isinstance(self._source, tuple) else str(self._source)
        return f"HFScorer({source!r}, view={self.view!r})"

    def _load(self) -> tuple[Any, Any]:
        if self._model is None:
            if isinstance(self._source, tuple):
                model, tok = self._source
            else:
                model, tok = load_causal_lm(self._source, self._device)
            device = default_device(self._device)
            if self.lora_rank > 0:
                from peft import LoraConfig, get_peft_model

                model = get_peft_model(
                    model, LoraConfig(r=self.lora_rank, lora_alpha=2 * self.lora_rank)
                )
            self._model, self._tokenizer = model.to(device).eval(), tok
        return self._model, self._tokenizer

    def _context_ids(self, request: TurnRequest) -> list[int]:
        _, tok = self._load()
        messages = (cloze_messages if self.view == "hindsight" else policy_messages)(request)
        if getattr(tok, "chat_template", None):
            ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
            return list(ids if isinstance(ids, list) else ids["input_ids"])
        text = "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant: "
        return tok.encode(text, add_special_tokens=False)

    def target_ids(self, request: TurnRequest) -> list[int]:
        """The action tokens scored: ``action.response_ids`` when present, else its encoding."""
        _, tok = self._load()
        action = request.trajectory.steps[request.turn].action
        ids = getattr(action, "response_ids", None)
        if ids is None:
            return tok.encode(str(action), add_special_tokens=False)
        ids = [int(i) for i in np.asarray(ids).ravel()]
        if ids and (min(ids) < 0 or max(ids) >= len(tok)):
            raise ValueError("the action's response_ids do not fit this scorer's tokenizer")
        return ids

    def _sequences(self, requests: Sequence[TurnRequest]) -> list[tuple[list[int], int]]:
        """Per request: context + target ids (left-truncated to ``max_tokens``), target length."""
        out = []
        for r in requests:
            target = self.target_ids(r)
            context = self._context_ids(r)
            keep = max(self.max_tokens - len(target), 1)
            out.append((context[-keep:] + target, len(target)))
        return out

    def _token_logprobs(self, seqs: Sequence[tuple[list[int], int]], grad: bool) -> list[Any]:
        """Per sequence, a 1-D tensor of its target tokens' log-probs (with grad if ``grad``)."""
        import torch

        model, tok = self._load()
        device = next(model.parameters()).device
        width = max(len(s) for s, _ in seqs)
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        ids = torch.full((len(seqs), width), pad, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for i, (s, _) in enumerate(seqs):
            ids[i, : len(s)] = torch.tensor(s)
            mask[i, : len(s)] = 1
        with torch.set_grad_enabled(grad):
            logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
            logp = torch.log_softmax(logits.float(), dim=-1)
            out = []
            for i, (s, n) in enumerate(seqs):
                if n == 0:
                    out.append(logp.new_zeros(0))
                    continue
                pos = torch.arange(len(s) - n - 1, len(s) - 1, device=device)
                out.append(logp[i, pos, ids[i, pos + 1].to(device)])
        return out

    def score(self, requests: Sequence[TurnRequest]) -> list[tuple[float, int]]:
        """``(sum of the action tokens' log-probs, number of tokens)`` per request."""
        out = []
        for i in range(0, len(requests), self.batch_size):
            seqs = self._sequences(requests[i : i + self.batch_size])
            out += [(float(lp.sum()), len(lp)) for lp in self._token_logprobs(seqs, grad=False)]
        return out

    def _mean_nll(self, seqs: Sequence[tuple[list[int], int]]) -> float:
        total, count = 0.0, 0
        for i in range(0, len(seqs), self.batch_size):
            for lp in self._token_logprobs(seqs[i : i + self.batch_size], grad=False):
                total, count = total - float(lp.sum()), count + len(lp)
        return total / max(count, 1)

    def fit(
        self,
        requests: Sequence[TurnRequest],
        epochs: int | None = None,
        lr: float | None = None,
        seed: int = 0,
    ) -> FitReport:
        """Supervised fine-tuning on the requests (the loss on the action tokens only, token-mean
        per mini-batch; AdamW; gradient norm clipped to 1); the report's losses are mean NLL per
        token over all requests."""
        import torch

        start = time.perf_counter()
        epochs = self.epochs if epochs is None else epochs
        seqs = [s for s in self._sequences(requests) if s[1] > 0]
        if not seqs:
            raise ValueError("fit needs at least one turn with action tokens")
        model, _ = self._load()
        params = [p for p in model.parameters() if p.requires_grad]
        report = fit_epochs(
            lambda rows: -torch.cat(self._token_logprobs([seqs[j] for j in rows], True)).mean(),
            lambda: self._mean_nll(seqs),
            torch.optim.AdamW(params, lr=self.lr if lr is None else lr),
            n=len(seqs),
            epochs=epochs,
            start=start,
            batch_size=self.batch_size,
            rng=np.random.default_rng(seed),
            clip=1.0,
            params=params,
            module=model,
        )
        self.trained = self._fitted = True
        return report


def check_scorer_spec(spec: Any, view: str) -> None:
    """Raise what :func:`make_scorer` would raise for ``spec`` in ``view``, building nothing.

    >>> check_scorer_spec("features", "policy")
    """
    _check_view(view)
    if isinstance(spec, TurnScorer):
        if spec.view != view:
            raise ValueError(f"a scorer with view {spec.view!r} was given where {view!r} is needed")
        return
    if spec == "features" or _model_dir(spec) is not None:
        return
    raise ValueError(
        f"unknown scorer {spec!r}; use 'features', 'hf:<dir>', a local HF model directory or "
        "a scorer object"
    )


def _model_dir(spec: Any) -> Any:
    """The model directory a ``"hf:<dir>"`` or directory spec names, else ``None``."""
    if not isinstance(spec, (str, Path)):
        return None
    path = str(spec)[3:] if str(spec).startswith("hf:") else spec
    return path if is_model_dir(path) else None


def make_scorer(spec: Any, view: str) -> Any:
    """A scorer from ``spec`` (checked by :func:`check_scorer_spec`): a scorer object (returned as
    is; its ``view`` must match), ``"features"`` (:class:`FeatureScorer`), ``"hf:<dir>"`` or a
    local model directory (:class:`HFScorer`).

    >>> make_scorer("features", "policy")
    FeatureScorer('policy', classes=0, trained=False)
    """
    check_scorer_spec(spec, view)
    if isinstance(spec, TurnScorer):
        return spec
    if spec == "features":
        return FeatureScorer(view)
    return HFScorer(_model_dir(spec), view)


def train_hindsight(
    scorer: Any,
    groups: Sequence[Sequence[Trajectory]],
    outcome: str = "success",
    **train: Any,
) -> FitReport:
    """Fit ``scorer`` on every turn of every trajectory in ``groups`` (successes and failures, each
    with its outcome ``R``): the cloze objective for a hindsight scorer, behaviour cloning for a
    policy one. ``train`` goes to ``scorer.fit`` (``epochs``, ``lr``)."""
    requests = turn_requests([t for g in groups for t in g if t.steps], outcome)
    if not requests:
        raise ValueError("train_hindsight needs at least one step")
    report = scorer.fit(requests, **train)
    if not math.isfinite(report.loss_after):
        warnings.warn(f"{scorer!r}: the fit ended with a non-finite loss", stacklevel=2)
    return report
