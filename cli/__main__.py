"""``python -m cli ...``: the same as the ``agentenvs`` command."""

import sys

from cli.main import main

if __name__ == "__main__":
    sys.exit(main())
