"""SWE: repair small Python repositories in a sandbox until their hidden tests pass (R2E-Gym's and
mini-swe-agent's tool protocols), offline on generated tasks or on SWE-bench-format data.

Modules: :mod:`~agentenvs.swe.env` (``SWEEnv``, ``agentenvs/SWE-v0``), :mod:`~agentenvs.swe.r2e`
(with :mod:`~agentenvs.swe.r2e_files`) and :mod:`~agentenvs.swe.mini` (the two toolsets and their
exact output strings), :mod:`~agentenvs.swe.sandbox` (bubblewrap, the unisolated local sandbox by name only,
Docker; its parts in the ``sandbox_*`` modules) and :mod:`~agentenvs.swe.workspace` (per-episode repository copies),
:mod:`~agentenvs.swe.grading` (test outcomes and the resolved rule; what runs inside the sandbox
at grading in :mod:`~agentenvs.swe.grade_launcher`, :mod:`~agentenvs.swe.report_plugin` and
:mod:`~agentenvs.swe.plain_runner`; the diff screen in :mod:`~agentenvs.swe.screen`), :mod:`~agentenvs.swe.signature`
(RTMC's action categories, action and state signatures; the bash reader in
:mod:`~agentenvs.swe.signature_bash`), :mod:`~agentenvs.swe.task` (the task format and the
SWE-bench / SWE-smith loaders), :mod:`~agentenvs.swe.snapshot` (buggy snapshots as git
repositories), :mod:`~agentenvs.swe.mutate`, :mod:`~agentenvs.swe.statements` and
:mod:`~agentenvs.swe.generate` (the embedded task generator; ``python -m agentenvs.swe.generate``),
:mod:`~agentenvs.swe.prompts` (agent prompts) and :mod:`~agentenvs.swe.calls` (the records they
exchange). The seed repositories are in ``agentenvs/swe/seeds/``. Documentation: docs/swe.md.
"""
