"""The ``mini`` toolset of SWE-v0: mini-swe-agent's bash-only protocol (SkyRL's ``swebench.yaml``).

This module holds:

* :func:`parse_bash` and :data:`BASH_BLOCK` - the one fenced ``bash`` block (three backticks, then ``bash``) a response must hold.
* :func:`output_observation` - the ``<returncode>``/``<output>`` observation, with the long-output
  layout (:data:`LONG_OUTPUT_WARNING`, :data:`MAX_OUTPUT_CHARS`) and the timeout message.
* :func:`is_submission` and :data:`SUBMIT_MARKERS` - the end-of-episode marker.
* :data:`FORMAT_ERROR` - the observation for zero or several bash blocks.
* :class:`MiniTools` - one model response in, one :class:`~agentenvs.swe.r2e.ToolStep` out.

The texts are the rendered Jinja templates of mini-swe-agent 1.x byte for byte (docs/swe.md):
SkyRL's ``action_observation_template`` and ``format_error_template``, and mini-swe-agent's
default ``timeout_template`` (SkyRL does not override it). Commands run with stderr merged into
stdout, in a fresh shell per command.

>>> parse_bash("THOUGHT: list.\\n\\n```bash\\nls -la\\n```")
('ls -la', 1)
>>> print(output_observation(CommandResult(0, "a.py\\n")))
<returncode>0</returncode>
<output>
a.py
</output>
"""

from __future__ import annotations

import re

from agentenvs.swe.calls import CommandResult, ToolCall
from agentenvs.swe.r2e import Runner, ToolStep

__all__ = [
    "BASH_BLOCK",
    "FORMAT_ERROR",
    "LONG_OUTPUT_WARNING",
    "MAX_OUTPUT_CHARS",
    "SUBMIT_MARKERS",
    "MiniTools",
    "is_submission",
    "output_observation",
    "parse_bash",
]

#: mini-swe-agent's ``action_regex``.
BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
#: A command whose output's first line is one of these ends the episode.
SUBMIT_MARKERS = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")
#: Outputs of this many characters or more are shown as head + tail.
MAX_OUTPUT_CHARS = 10_000
#: The observation when a response holds ``{n}`` bash blocks, ``n != 1`` (``str.format``).
FORMAT_ERROR = (
    "Please always provide EXACTLY ONE action in triple backticks, found {n} actions.\n"
    "\n"
    "Please format your action in triple backticks as shown in <response_example>.\n"
    "\n"
    "<response_example>\n"
    "Here are some thoughts about why you want to perform the action.\n"
    "\n"
    "```bash\n"
    "<action>\n"
    "```\n"
    "</response_example>\n"
    "\n"
    "If you have completed your assignment, please consult the first message about how to\n"
    "submit your solution (you will not be able to continue working on this task after that)."
)
#: The body of the ``<warning>`` shown with a long output.
LONG_OUTPUT_WARNING = (
    "The output of your last command was too long.\n"
    "Please try a different command that produces less output.\n"
    "If you're looking at a file you can try use head, tail or sed to view a smaller number of "
    "lines selectively.\n"
    "If you're using grep or find and it produced too much output, you can use a more selective "
    "search pattern.\n"
    "If you really need to see something from the full command's output, you can redirect output "
    "to a file and then search in that file."
)

_HALF = MAX_OUTPUT_CHARS // 2


def parse_bash(response: str) -> tuple[str | None, int]:
    """``(command, 1)`` for a response with exactly one bash block (stripped), else
    ``(None, number of blocks)``.

    >>> parse_bash("no block")
    (None, 0)
    """
    blocks = BASH_BLOCK.findall(response)
    return (blocks[0].strip(), 1) if len(blocks) == 1 else (None, len(blocks))


def is_submission(output: str) -> bool:
    """Whether the output's first line (after leading whitespace) is a submit marker.

    >>> is_submission("\\n COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT \\ndiff --git a/x b/x")
    True
    >>> is_submission("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
    False
    """
    lines = output.lstrip().splitlines()
    return bool(lines) and lines[0].strip() in SUBMIT_MARKERS


def output_observation(result: CommandResult, *, command: str = "") -> str:
    """The observation of a command's ``result`` (stdout and stderr merged).

    Outputs of :data:`MAX_OUTPUT_CHARS` characters or more keep their first and last 5,000
    characters. A timed-out command gets mini-swe-agent's timeout message, which quotes
    ``command`` and whatever it printed before it was killed.
    """
    output = result.output
    if result.timed_out:
        if len(output) < MAX_OUTPUT_CHARS:
            shown = f"<output>\n{output}\n</output>"
        else:
            shown = (
                "<warning>Output was too long and has been truncated.</warning>\n"
                f"<output_head>\n{output[:_HALF]}\n</output_head>\n"
                f"<elided_chars>{len(output) - MAX_OUTPUT_CHARS} characters elided</elided_chars>\n"
                f"<output_tail>\n{output[-_HALF:]}\n</output_tail>"
            )
        return (
            f"The last command <command>{command}</command> timed out and has been killed.\n"
            f"The output of the command was:\n{shown}\n"
            "Please try another command and make sure to avoid those requiring interactive input."
        )
    head = f"<returncode>{result.exit_code}</returncode>\n"
    if len(output) < MAX_OUTPUT_CHARS:
        return f"{head}<output>\n{output}</output>"
    return (
        f"{head}<warning>\n{LONG_OUTPUT_WARNING}\n</warning>"
        f"<output_head>\n{output[:_HALF]}\n</output_head>\n"
        f"<elided_chars>\n{len(output) - MAX_OUTPUT_CHARS} characters elided\n</elided_chars>\n"
        f"<output_tail>\n{output[-_HALF:]}\n</output_tail>"
    )


class MiniTools:
    """The ``mini`` toolset: run the response's bash block through ``run`` (``timeout`` seconds).

    The protocol has no file tools and no compatibility switches, so it needs no workspace path.
    """

    def __init__(self, run: Runner, *, timeout: float = 60.0) -> None:
        self.run = run
        self.timeout = timeout

    def step(self, response: str) -> ToolStep:
        """Parse ``response``, run its command and wrap the output.

        The call is ``execute_bash`` with ``{"cmd": command}``, or ``finish`` when the output
        starts with a submit marker (the episode ends).
        """
        command, blocks = parse_bash(response)
        if command is None:
            return ToolStep(ToolCall("", {}, "", valid=False), FORMAT_ERROR.format(n=blocks))
        result = self.run(command, self.timeout)
        finished = not result.timed_out and is_submission(result.output)
        if finished:
            call = ToolCall("finish", {"cmd": command}, result.output)
        else:
            call = ToolCall(
                "execute_bash", {"cmd": command}, result.output, exit_code=result.exit_code
            )
        text = output_observation(result, command=command)
        return ToolStep(call, text, finished=finished, timed_out=result.timed_out)
