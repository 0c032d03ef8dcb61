"""cli: the ``agentenvs`` command line.

This package holds:

* :mod:`cli.main` - :func:`~cli.main.main`, the argparse entry point with its subcommands
  (``agentenvs = "cli.main:main"`` in pyproject.toml; ``python -m cli`` runs it too).
* :mod:`cli.listing` - ``agentenvs list``: the registered env ids and credit methods.
* :mod:`cli.play` - ``agentenvs play ENV_ID``: a person plays an env in the terminal.
* :mod:`cli.bench` - ``agentenvs bench``: random-walk throughput of grouped vector envs.
* :mod:`cli.errors` - :class:`~cli.errors.CLIError` (exit status 2) and the checked env
  construction the subcommands share.

``agentenvs view RUN_DIR`` is :mod:`viewer` (the HTML credit viewer). Layering: cli imports
agentenvs, wrappers and viewer, never learners; nothing imports cli.
"""

__all__: list[str] = []
