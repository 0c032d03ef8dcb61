"""SWE's agent prompts: R2E-Gym-style and mini-swe-agent-style instructions, and compact ones.

This module holds :data:`R2E_TOOLS_TEXT` (the four tools and the ``<function=...>`` call syntax,
our wording of R2E-Gym's tool documentation), :data:`R2E_INSTANCE_PROMPT` (R2E-Gym's task prompt
word for word, docs/swe.md), :data:`MINI_SYSTEM_TEXT` and :data:`MINI_INSTANCE_PROMPT` (our
paraphrase of mini-swe-agent's bash-only contract), :func:`issue_text` (the ``[ISSUE]`` extraction),
:func:`transcript` and the prompt classes :class:`R2EPrompt` / :class:`MiniPrompt`
(``"reference"``) and :class:`CompactR2EPrompt` / :class:`CompactMiniPrompt` (``"compact"``).

The env puts the issue text in ``info["problem_statement"]``; the memory stores each turn's
function call (r2e) or bash block (mini), and the observation that followed it is shown after it.

>>> from agentenvs.core.prompting import EpisodeMemory
>>> text = R2EPrompt().render(EpisodeMemory(), "", {"problem_statement": "chunk() is wrong"})
>>> "<github_issue>\\nchunk() is wrong\\n</github_issue>" in text
True
>>> MiniPrompt().project("I will look.\\n```bash\\nls -la\\n```")
'```bash\\nls -la\\n```'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agentenvs.core.prompting import AgentPrompt, EpisodeMemory

__all__ = [
    "R2E_TOOLS_TEXT",
    "R2E_INSTANCE_PROMPT",
    "MINI_SYSTEM_TEXT",
    "MINI_INSTANCE_PROMPT",
    "issue_text",
    "transcript",
    "R2EPrompt",
    "MiniPrompt",
    "CompactR2EPrompt",
    "CompactMiniPrompt",
]

#: The tools of ``toolset="r2e"`` and their call syntax (our wording; R2E-Gym's semantics).
R2E_TOOLS_TEXT = """You are a programming agent. You fix issues in the repository at /testbed by calling tools.
Call exactly one tool per response, in this format (text before the call is your reasoning):
<function=TOOL_NAME>
<parameter=PARAM_NAME>value</parameter>
</function>

Tools:
1. file_editor: view, create and edit files.
   command (required): one of view, create, str_replace, insert, undo_edit
   path (required): absolute path under /testbed, e.g. /testbed/pkg/module.py
   view_range (view, optional): [start, end] line numbers, 1-based; end = -1 means to the end
   file_text (create): the content of the new file
   old_str (str_replace): text that occurs exactly once in the file; new_str: its replacement
   insert_line (insert): insert new_str after this line number (0 = at the top)
2. search: find a term in a file or directory.
   search_term (required); path (optional, default .)
3. execute_bash: run a bash command in /testbed (a fresh shell each time).
   cmd (required): the command, e.g. python -m pytest -q tests
4. finish: submit your changes and end the task.
   command (required): submit
"""

#: R2E-Gym's instance prompt (``edit_non_fn_calling.yaml``), ``{problem_statement}`` to fill.
R2E_INSTANCE_PROMPT = """Consider the following github issue:
<github_issue>
{problem_statement}
</github_issue>

Can you help me implement the necessary changes to the repository to fix the <github_issue>?
I've already taken care of all changes to any of the test files described in the <github_issue>. This means you DON'T have to modify the testing logic or any of the tests in any way!
Your task is to make the minimal changes to non-tests files in the /testbed directory to ensure the <github_issue> is satisfied."""

_R2E_TIPS = """
IMPORTANT TIPS:
1. Explore the repository to find the code related to the issue.
2. Reproduce the issue with a small script (e.g. /testbed/reproduce_issue.py) and run it.
3. Edit the source code to fix the issue.
4. Re-run your script and the existing tests to confirm the fix.
5. Think about edge cases and make sure the fix handles them.
6. View files in ranges of 50-100 lines rather than whole large files.
7. The repository is at /testbed, which is also the working directory of every command.
"""

#: mini-swe-agent's contract in our words: one thought, exactly one bash block, the submit line.
MINI_SYSTEM_TEXT = """You are a software engineer working in a Linux shell. Every response has a THOUGHT section explaining your reasoning, then EXACTLY ONE bash code block with EXACTLY ONE command (use && or || to chain steps):

THOUGHT: why you run this command

```bash
your_command_here
```

Each command runs in a fresh shell in /testbed: directory changes and environment variables do not persist."""

#: The task prompt of ``toolset="mini"`` (our paraphrase), ``{problem_statement}`` to fill.
MINI_INSTANCE_PROMPT = """<pr_description>
{problem_statement}
</pr_description>

Make changes to the non-test files in /testbed so that the behaviour described in the PR description is fixed. Do not modify the tests.
Suggested workflow: find the relevant code, reproduce the problem, edit the source, verify the fix, check edge cases.
When you are done, submit with exactly this command (nothing else can be done afterwards):

```bash
echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached
```"""

_ISSUE = re.compile(r"\[ISSUE\](.*?)\[/ISSUE\]", re.DOTALL)
_CALL = re.compile(r"<function\s*=.*?(?:</function>|$)", re.DOTALL)
_BASH = re.compile(r"```bash\s*\n.*?\n```", re.DOTALL)


def issue_text(problem_statement: str) -> str:
    """The text between ``[ISSUE]`` and ``[/ISSUE]`` when present (R2E-Gym's rule), else all of it.

    >>> issue_text("noise [ISSUE]\\nbug here\\n[/ISSUE] noise")
    'bug here'
    """
    found = _ISSUE.search(problem_statement)
    return found.group(1).strip() if found else problem_statement.strip()


def transcript(memory: EpisodeMemory, observation: Any, history_length: int, max_chars: int) -> str:
    """The last ``history_length`` turns as ``[Step k] <action>`` then the observation that
    followed it, each observation cut to ``max_chars`` characters (``...`` marks a cut)."""
    records = memory.records
    if not records or history_length <= 0:
        return ""
    after = [obs for obs, _ in records[1:]] + [str(observation)]
    start = max(0, len(records) - history_length)
    parts = []
    for k in range(start, len(records)):
        seen = str(after[k])
        if len(seen) > max_chars:
            seen = seen[:max_chars] + "\n..."
        parts.append(f"[Step {k + 1}]\n{records[k][1]}\n[Observation {k + 1}]\n{seen}")
    return "\n\n".join(parts)


def _problem(info: dict[str, Any]) -> str:
    return issue_text(str(info.get("problem_statement", "")))


@dataclass
class R2EPrompt(AgentPrompt):
    """``toolset="r2e"``, reference style: the tool documentation, R2E-Gym's task prompt and tips,
    then the episode so far (function calls and their observations)."""

    history_length: int = 50
    max_new_tokens: int = 2048
    stop: tuple[str, ...] = ("</function>",)
    max_observation_chars: int = 10_000

    def render(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
        head = R2E_TOOLS_TEXT + "\n" + R2E_INSTANCE_PROMPT.format(problem_statement=_problem(info))
        head += "\n" + _R2E_TIPS
        steps = transcript(memory, observation, self.history_length, self.max_observation_chars)
        if not steps:
            return head
        return f"{head}\nYour steps so far:\n\n{steps}\n\nNext step: call one tool."

    def project(self, response: str) -> str:
        """The first ``<function=...>`` call of ``response`` (the whole stripped text if none)."""
        found = _CALL.search(response)
        return found.group(0).strip() if found else response.strip()

    def answer(self, command: str) -> str:
        """A response whose call is ``command`` (a ``<function=...>`` block), no reasoning.

        >>> R2EPrompt().answer("<function=finish>\\n<parameter=command>submit</parameter>\\n</function>")[:17]
        '<function=finish>'
        """
        return command.removeprefix(self.response_prefix)


@dataclass
class MiniPrompt(AgentPrompt):
    """``toolset="mini"``, reference style: the bash-only contract, the task in
    ``<pr_description>``, then the episode so far."""

    history_length: int = 50
    max_new_tokens: int = 2048
    max_observation_chars: int = 10_000

    def render(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
        head = (
            MINI_SYSTEM_TEXT
            + "\n\n"
            + MINI_INSTANCE_PROMPT.format(problem_statement=_problem(info))
        )
        steps = transcript(memory, observation, self.history_length, self.max_observation_chars)
        if not steps:
            return head
        return (
            f"{head}\n\nYour steps so far:\n\n{steps}\n\nNext step: THOUGHT, then one bash block."
        )

    def project(self, response: str) -> str:
        """The bash block(s) of ``response`` (the whole stripped text if none)."""
        blocks = _BASH.findall(response)
        return "\n".join(blocks) if blocks else response.strip()

    def answer(self, command: str) -> str:
        """A response running ``command``.

        >>> MiniPrompt().answer("ls")
        'THOUGHT: next step.\\n\\n```bash\\nls\\n```'
        """
        return f"THOUGHT: next step.\n\n```bash\n{command}\n```".removeprefix(self.response_prefix)


def _compact(
    memory: EpisodeMemory,
    observation: Any,
    info: dict[str, Any],
    prompt: R2EPrompt | MiniPrompt,
    instruction: str,
) -> str:
    """The compact prompts' layout: the issue, the last turns, then the one-line ``instruction``."""
    steps = transcript(memory, observation, prompt.history_length, prompt.max_observation_chars)
    parts = (f"Fix this issue in /testbed:\n{_problem(info)}", steps, instruction)
    return "\n\n".join(part for part in parts if part)


@dataclass
class CompactR2EPrompt(R2EPrompt):
    """A short r2e prompt for small models: the issue, the last observation, the call syntax."""

    history_length: int = 2
    max_new_tokens: int = 128
    max_observation_chars: int = 1500

    def render(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
        return _compact(
            memory,
            observation,
            info,
            self,
            "Tools: file_editor(command, path, ...), search(search_term, path), "
            "execute_bash(cmd), finish(command=submit). Answer with one call:\n"
            "<function=execute_bash>\n<parameter=cmd>ls</parameter>\n</function>",
        )


@dataclass
class CompactMiniPrompt(MiniPrompt):
    """A short bash-only prompt for small models: the issue, the last observation, one block."""

    history_length: int = 2
    max_new_tokens: int = 128
    max_observation_chars: int = 1500

    def render(self, memory: EpisodeMemory, observation: Any, info: dict[str, Any]) -> str:
        return _compact(
            memory,
            observation,
            info,
            self,
            "Answer with one command in a ```bash block. Submit with: "
            "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
        )
