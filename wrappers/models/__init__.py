"""wrappers.models: the model-backed parts of credit assignment (what TRIAGE, HISR and SPA consult).

* :mod:`wrappers.models.progress` - SPA's (and HISR's) progress estimators: tabular, feature MLP,
  a Hugging Face model with a value head; :func:`~wrappers.models.progress.make_estimator`
  (its protocol and shared loss in :mod:`~wrappers.models.progress_core`, its Hugging Face
  estimator in :mod:`~wrappers.models.progress_hf`).
* :mod:`wrappers.models.hindsight` - HISR's hindsight scorers (feature classifier, causal LM).
* :mod:`wrappers.models.judges` - TRIAGE's judges (oracle, local HF model, OpenAI-compatible
  HTTP server), their prompt, request and cache.
* :mod:`wrappers.models.fit` - the one training loop they share (:func:`~wrappers.models.fit.fit_epochs`)
  and its :class:`~wrappers.models.fit.FitReport`.
* :mod:`wrappers.models.hf` - loading a local Hugging Face causal LM.

What it may import: numpy, the standard library, :mod:`agentenvs.core` and the structural
modules of :mod:`wrappers` (``batch``, ``rewards``, ``stats``); torch and transformers only inside
the functions that build or train a model, so importing this package never loads them. Nothing
here imports the registry, the wrappers or the method modules (they import this package).
"""

__all__: list[str] = []
