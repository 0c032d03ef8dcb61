"""agentenvs.cli: the ``agentenvs`` command line.

This package holds:

* :mod:`agentenvs.cli.main` - :func:`~agentenvs.cli.main.main`, the argparse entry point with its
  subcommands (``agentenvs = "agentenvs.cli.main:main"`` in pyproject.toml;
  ``python -m agentenvs.cli`` runs it too).
* :mod:`agentenvs.cli.listing` - ``agentenvs list``: the registered env ids and credit methods.
* :mod:`agentenvs.cli.play` - ``agentenvs play ENV_ID``: a person plays an env in the terminal.
* :mod:`agentenvs.cli.bench` - ``agentenvs bench``: random-walk throughput of grouped vector envs.
* :mod:`agentenvs.cli.train` - ``agentenvs train [ENV_ID]``: the LLM learner's main job (the run's
  steps); :mod:`agentenvs.cli.train_flags` - its flags (recipes, ``TrainArgs``, the parser).
* :mod:`agentenvs.cli.errors` - :class:`~agentenvs.cli.errors.CLIError` (exit status 2) and the
  checked env construction the subcommands share.

``agentenvs view RUN_DIR`` is :mod:`agentenvs.viewer` (the HTML credit viewer). Layering: the
command imports agentenvs, wrappers and the viewer; learners only inside ``agentenvs train``'s
run (never at import); nothing imports it.
"""

__all__: list[str] = []
