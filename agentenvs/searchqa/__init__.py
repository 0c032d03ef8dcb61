"""SearchQA: answer questions by searching Wikipedia text (Search-R1's task), offline on the
embedded corpus and question panel, or on the official Search-R1 data.

Modules: :mod:`~agentenvs.searchqa.env` (``SearchQAEnv``, ``agentenvs/SearchQA-v0``),
:mod:`~agentenvs.searchqa.actions` (reading a response), :mod:`~agentenvs.searchqa.passages` (the
``<information>`` formats), :mod:`~agentenvs.searchqa.score` (EM, F1, answer normalisation),
:mod:`~agentenvs.searchqa.prompts` (agent prompts), :mod:`~agentenvs.searchqa.corpus` and
:mod:`~agentenvs.searchqa.qa` (passages and questions, embedded or the user's),
:mod:`~agentenvs.searchqa.generate` (rebuilds the embedded question panel),
:mod:`~agentenvs.searchqa.retrieval` (the retriever interface and ``/retrieve`` wire format),
:mod:`~agentenvs.searchqa.bm25`, :mod:`~agentenvs.searchqa.dense` and
:mod:`~agentenvs.searchqa.remote` (retrievers) and :mod:`~agentenvs.searchqa.serve` (the retrieval
server; ``python -m agentenvs.searchqa.serve``; its HTTP side in
:mod:`~agentenvs.searchqa.serve_http`). Documentation: docs/searchqa.md.
"""
