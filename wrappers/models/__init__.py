"""agentenvs.wrappers.models: the model-backed parts of credit assignment (what TRIAGE, HISR and SPA consult).

* :mod:`agentenvs.wrappers.models.progress` - SPA's (and HISR's) progress estimators: tabular, feature MLP,
  a Hugging Face model with a value head; :func:`~agentenvs.wrappers.models.progress.make_estimator`
  (its protocol and shared loss in :mod:`~agentenvs.wrappers.models.progress_core`, its Hugging Face
  estimator in :mod:`~agentenvs.wrappers.models.progress_hf`).
* :mod:`agentenvs.wrappers.models.hindsight` - HISR's hindsight scorers (feature classifier, causal LM).
* :mod:`agentenvs.wrappers.models.judges` - TRIAGE's judges (oracle, local HF model, OpenAI-compatible
  HTTP server), their prompt, request and cache.
* :mod:`agentenvs.wrappers.models.fit` - the one training loop they share (:func:`~agentenvs.wrappers.models.fit.fit_epochs`)
  and its :class:`~agentenvs.wrappers.models.fit.FitReport`.
* :mod:`agentenvs.wrappers.models.hf` - loading a local Hugging Face causal LM.

What it may import: numpy, the standard library, :mod:`agentenvs.core` and the structural
modules of :mod:`wrappers` (``batch``, ``rewards``, ``stats``); torch and transformers only inside
the functions that build or train a model, so importing this package never loads them. Nothing
here imports the registry, the wrappers or the method modules (they import this package).
"""

__all__: list[str] = []
