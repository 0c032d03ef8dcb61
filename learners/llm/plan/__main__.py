"""``python -m agentenvs.learners.llm.plan``: the memory planner's command (:mod:`agentenvs.learners.llm.plan.cli`)."""

import sys

from agentenvs.learners.llm.plan.cli import main

if __name__ == "__main__":
    sys.exit(main())
