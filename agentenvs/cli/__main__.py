"""``python -m agentenvs.cli ...``: the same as the ``agentenvs`` command."""

import sys

from agentenvs.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
