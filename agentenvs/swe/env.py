"""``agentenvs/SWE-v0``: repair a Python repository in a sandbox until its hidden tests pass.

This module holds :class:`SWEEnv`. One episode (docs/swe.md):

* ``reset(options={"task_id": ...})`` copies the task's buggy snapshot (a git repository; the test
  files holding the failing tests withheld) into a fresh workspace, the sandbox's ``/testbed``; the
  observation is the task prompt with the issue text (the prompt classes render it).
* ``step(text)`` parses one tool call (``toolset="r2e"``: ``<function=...>`` calls of
  file_editor / search / execute_bash / think / finish; ``toolset="mini"``: exactly one bash block,
  submit by printing ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``), runs it in the sandbox and returns
  the toolset's observation, with R2E-Gym's and mini-swe-agent's exact strings. A call that does
  not parse is an invalid action (``action_valid=False``, the toolset's format message, a step of
  the budget; penalty ``invalid_action_penalty``, default 0).
* ``finish`` / the submit line ends the episode (``terminated``) and grades the submission in a
  fresh sandbox run: a clean copy of the task snapshot with the agent's diff applied (test
  infrastructure left out), the withheld tests restored (or the ``test_patch`` applied), the
  FAIL_TO_PASS and PASS_TO_PASS tests run, their outcomes read from a pytest plugin's report;
  reward 1.0 iff all pass (``won``), else 0.0. Reaching
  ``max_steps`` or ``max_episode_seconds``, or a workspace grown past the sandbox's disk cap (its
  commands are refused from then on), truncates with reward 0 (or grades the workspace when
  ``evaluate_on_truncation``).
* ``info`` adds ``tool_call`` (name, arguments, result, valid), ``exit_code``, ``timed_out``,
  ``fs_changes``, ``rtmc_category``, ``action_key`` (RTMC's action signature), ``sandbox``, and at
  the end ``tests``, ``n_f2p_passed``, ``n_p2p_passed``, ``resolved``, ``grading_error`` (why
  the submission could not be graded, ``""`` when it was) and ``patch`` (the workspace's diff
  against the snapshot, built without running git over the workspace); ``state_key`` is RTMC's
  state signature, so ``RolloutTreeCreditWrapper`` (``--credit rtmc``) works on SWE as is.
* ``progress="on_change"`` adds ``info["progress"]``: the share of the FAIL_TO_PASS tests that pass
  when the workspace is graded, re-run only after a step that changed files, scaled by
  :data:`~agentenvs.core.progress.PENDING_SHARE`; 0 at reset and 1.0 or 0.0 once graded
  (docs/swe.md, *Progress*). The default ``"off"`` leaves it out: each re-run costs a test run.

Workspaces and grading copies are deleted when the episode ends, on ``reset`` and on ``close``.

>>> env = SWEEnv(sandbox="local")  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import functools
import re
import shlex
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentenvs.core import TaskPanel, TextAgentEnv
from agentenvs.core.parsing import ParsedAction
from agentenvs.core.progress import pending_progress
from agentenvs.core.prompting import AgentPrompt, check_prompt_style
from agentenvs.core.spaces import TextSpace
from agentenvs.swe import mini, r2e
from agentenvs.swe.calls import CommandResult, FileChange, ToolCall
from agentenvs.swe.gold import Hunk, hunks
from agentenvs.swe.grading import INFRASTRUCTURE_GLOBS, Grade, grade
from agentenvs.swe.prompts import (
    MINI_INSTANCE_PROMPT,
    R2E_INSTANCE_PROMPT,
    CompactMiniPrompt,
    CompactR2EPrompt,
    MiniPrompt,
    R2EPrompt,
    issue_text,
)
from agentenvs.swe.sandbox import Sandbox, make_sandbox
from agentenvs.swe.signature import SignatureState, SWESignature
from agentenvs.swe.snapshot import apply_diff, tree_diff
from agentenvs.swe.task import Prepared, SWETask, embedded_tasks, prepare
from agentenvs.swe.workspace import Workspace

__all__ = ["SWEEnv", "TOOLSETS", "PROGRESS_MODES", "MAX_OBSERVATION_CHARS"]

#: ``toolset`` values.
TOOLSETS = ("r2e", "mini")
#: ``progress`` values: no ``info["progress"]``, or FAIL_TO_PASS re-run after file changes.
PROGRESS_MODES = ("off", "on_change")

#: Largest file the expert reads to place a gold edit, bytes.
_EXPERT_MAX_BYTES = 8 * 2**20
#: Text that would end the toolset's call early: an edit holding it is not played.
_FENCES = {"r2e": "</parameter>", "mini": "```"}

#: Longest observation: both output streams at the sandbox's default 1 MiB cap, plus framing.
MAX_OBSERVATION_CHARS = 2 * 2**20 + 65_536

_OUTSIDE_BMP = re.compile("[\ud800-\udfff\U00010000-\U0010ffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


@functools.cache
def _bmp_space(max_length: int) -> TextSpace:
    """A text space over every Basic Multilingual Plane character but surrogates: command output
    and model responses may hold any of them (one shared instance: the charset is ~63k chars)."""
    chars = "".join(chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF)
    return TextSpace(max_length, min_length=0, charset=chars)


class SWEEnv(TextAgentEnv[str]):
    """A software-engineering task in a sandbox (see the module doc).

    Args:
        tasks: the tasks to play (:class:`~agentenvs.swe.task.SWETask`, each with its ``split``);
            ``None`` = the embedded generated panel (:func:`~agentenvs.swe.task.embedded_tasks`).
        split: the split ``reset`` draws from when no task id is given.
        toolset: ``"r2e"`` (default) or ``"mini"``.
        sandbox: ``"auto"`` (bubblewrap when available, else the weaker local fallback with a
            warning), ``"bwrap"``, ``"local"``, ``"docker"``, or a
            :class:`~agentenvs.swe.sandbox.Sandbox`.
        max_steps: step budget (R2E-Gym's absolute limit 50).
        command_timeout: seconds per command (wall); a timed-out command is reported, not fatal.
        grading_timeout: seconds for the grading test run; a timeout grades 0.
        max_episode_seconds: wall-time budget of an episode; past it the episode is truncated.
        evaluate_on_truncation: grade the workspace when the episode is truncated (default: 0).
        restore_all_tests: at grading, also restore every test file that holds a graded test from
            the snapshot (the agent's edits to visible tests are undone); withheld files are
            always restored.
        compat: R2E-Gym's exact quirks (full parameter stripping, its blocked-command list,
            string exit codes, python-only views with auto-concise).
        step_budget_message: append R2E-Gym's ``Steps Remaining: k`` line to observations.
        invalid_action_penalty: reward of a call that does not parse is ``-invalid_action_penalty``.
        progress: ``"off"`` (default: no ``info["progress"]``) or ``"on_change"`` (the FAIL_TO_PASS
            tests re-run the way grading runs them after each step that changed files; one
            test run each, about a second on the shipped tasks, see docs/swe.md, *Progress*).
        render_mode: ``None`` or ``"ansi"``.
    """

    def __init__(
        self,
        tasks: Sequence[SWETask] | None = None,
        *,
        split: str = "train",
        toolset: str = "r2e",
        sandbox: str | Sandbox = "auto",
        max_steps: int = 50,
        command_timeout: float = 60.0,
        grading_timeout: float = 120.0,
        max_episode_seconds: float = 1200.0,
        evaluate_on_truncation: bool = False,
        restore_all_tests: bool = False,
        compat: bool = False,
        step_budget_message: bool = False,
        invalid_action_penalty: float = 0.0,
        progress: str = "off",
        render_mode: str | None = None,
    ) -> None:
        if shutil.which("git") is None:
            raise RuntimeError("SWE-v0 needs git (task snapshots and patches): apt-get install git")
        if toolset not in TOOLSETS:
            raise ValueError(f"toolset must be one of {TOOLSETS}, got {toolset!r}")
        if progress not in PROGRESS_MODES:
            raise ValueError(f"progress must be one of {PROGRESS_MODES}, got {progress!r}")
        task_list = list(embedded_tasks() if tasks is None else tasks)
        self._tasks = {t.instance_id: t for t in task_list}
        if len(self._tasks) != len(task_list):
            raise ValueError("task instance_ids must be unique")
        splits: dict[str, list[str]] = {}
        for t in task_list:
            splits.setdefault(t.split, []).append(t.instance_id)
        splits.setdefault(split, [])
        super().__init__(
            tasks=TaskPanel(splits),
            max_steps=max_steps,
            split=split,
            invalid_action_penalty=invalid_action_penalty,
            action_format="plain",
            render_mode=render_mode,
        )
        self.observation_space = _bmp_space(MAX_OBSERVATION_CHARS)
        self.action_space = _bmp_space(2**20)
        self.toolset = toolset
        self._own_sandbox = isinstance(sandbox, str)
        self.sandbox = make_sandbox(sandbox) if isinstance(sandbox, str) else sandbox
        self.command_timeout = float(command_timeout)
        self.grading_timeout = float(grading_timeout)
        self.max_episode_seconds = float(max_episode_seconds)
        self.evaluate_on_truncation = evaluate_on_truncation
        self.restore_all_tests = restore_all_tests
        self.compat = compat
        self.step_budget_message = step_budget_message
        self.progress = progress
        self._f2p_share = 0.0
        self.signature = SWESignature()
        self.task: SWETask | None = None
        self._prepared: Prepared | None = None
        self._workspace: Workspace | None = None
        self._tools: r2e.R2ETools | mini.MiniTools | None = None
        self._sig = SignatureState(self.signature)
        self._obs = ""
        self._last: dict[str, Any] = {}
        self._hashes: dict[str, str] = {}
        self._grade: Grade | None = None
        self._finished = False
        self._refused = False
        self._started = 0.0

    # -- TextAgentEnv hooks ------------------------------------------------------------------------
    def _load_task(self, task_id: str) -> None:
        self._discard_workspace()
        self.task = self._tasks[task_id]
        self._prepared = prepare(self.task)
        self._workspace = Workspace(self._prepared.snapshot)
        self._hashes = self._workspace.file_hashes()  # the workspace after the last step
        if self.toolset == "r2e":
            self._tools = r2e.R2ETools(
                self._workspace.path, self._run, timeout=self.command_timeout, compat=self.compat
            )
        else:
            self._tools = mini.MiniTools(self._run, timeout=self.command_timeout)
        self._sig = SignatureState(self.signature)
        template = R2E_INSTANCE_PROMPT if self.toolset == "r2e" else MINI_INSTANCE_PROMPT
        self._obs = template.format(problem_statement=issue_text(self.task.problem_statement))
        self._last, self._grade = {}, None
        self._f2p_share = 0.0
        self._finished = False
        self._refused = False
        self._started = time.monotonic()

    def _run(self, command: str, timeout: float) -> CommandResult:
        assert self._workspace is not None
        result = self.sandbox.run(
            command, self._workspace.path, timeout=timeout, merge_stderr=self.toolset == "mini"
        )
        self._refused = self._refused or result.refused
        return result

    def _parse(self, action: object) -> ParsedAction:
        """Any text goes to the toolset (an empty or call-less response gets its format message
        there); an action that is not text is invalid."""
        if isinstance(action, str):
            self._format_ok, self._format_reason = True, ""
            return ParsedAction(action, True)
        return super()._parse(action)

    def _observation(self, feedback: str) -> str:
        """The toolset's observation (``feedback`` for an action that is not text); characters
        outside the Basic Multilingual Plane (rare in command output: emoji) read as U+FFFD, and
        it is cut to ``MAX_OBSERVATION_CHARS``."""
        text = feedback or self._obs
        return _OUTSIDE_BMP.sub("\ufffd", text)[:MAX_OBSERVATION_CHARS]

    def _apply(self, command: str) -> tuple[float, bool]:
        assert self._workspace is not None and self._tools is not None
        outcome = self._tools.step(command)
        changes: tuple[FileChange, ...] = ()
        if _may_write(outcome.call):
            before, self._hashes = self._hashes, self._workspace.file_hashes()
            changes = Workspace.changes(before, self._hashes)
        call = dataclasses.replace(outcome.call, fs_changes=changes)
        self._obs = self._with_budget(outcome.observation)
        self._last = {
            "tool_call": {
                "name": call.name,
                "arguments": dict(call.arguments),
                "result": call.result,
                "valid": call.valid,
            },
            "exit_code": call.exit_code,
            "timed_out": outcome.timed_out,
            "fs_changes": [dataclasses.asdict(c) for c in changes],
            "rtmc_category": self.signature.classify(call) if call.valid else "invalid",
            "action_key": self.signature.action_signature(call),
        }
        self._sig.update(call)
        if changes and self.progress == "on_change":
            self._f2p_share = self._measure_f2p_share()
        if not call.valid:
            self._format_ok, self._format_reason = False, _first_line(outcome.observation)
            return 0.0, False
        if outcome.finished:
            self._finished = True
            return self._finish()
        return 0.0, False

    def _terminated(self) -> bool:
        return self._finished

    def _state_key(self) -> str:
        return self._sig.key()

    def _progress(self) -> float | None:
        """``None`` with ``progress="off"``; once graded, 1.0 if resolved else 0.0; before,
        ``PENDING_SHARE`` times the FAIL_TO_PASS share of the last re-run (0 at reset)."""
        if self.progress == "off":
            return None
        if self._grade is not None:
            return float(self._grade.resolved)
        return pending_progress(self._f2p_share)

    def _extra_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "sandbox": self.sandbox.kind,
            "problem_statement": self.task.problem_statement if self.task else "",
            **self._last,
        }
        if self._grade is not None:
            g = self._grade
            info.update(
                tests=g.tests,
                n_f2p_passed=g.n_f2p_passed,
                n_p2p_passed=g.n_p2p_passed,
                resolved=g.resolved,
                grading_timed_out=g.timed_out,
                grading_error=g.invalid,
            )
        return info

    # -- Gymnasium API -----------------------------------------------------------------------------
    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self._last = {}
        obs, reward, terminated, truncated, info = super().step(action)
        over_time = time.monotonic() - self._started > self.max_episode_seconds
        if not terminated and (over_time or self._refused):
            truncated = True  # out of time, or the workspace outgrew its cap (nothing runs now)
            self._done = True
        if truncated and self.evaluate_on_truncation and self._grade is None:
            reward, self._won = self._finish()
            info.update(self._extra_info(), won=self._won)
            if self.progress != "off":
                info["progress"] = self._progress()
        if terminated or truncated:
            info["patch"] = self._patch()
            info["won"] = bool(self._won)
            self._discard_workspace()
        return obs, reward, terminated, truncated, _printable(info)

    def close(self) -> None:
        self._discard_workspace()
        if self._own_sandbox:  # a sandbox passed in belongs to the caller
            self.sandbox.close()
        super().close()

    def agent_prompt(
        self, style: str = "reference", history_length: int | None = None
    ) -> AgentPrompt:
        """R2E-Gym's / mini-swe-agent's prompt (``"reference"``) or a short one (``"compact"``)
        for the env's toolset."""
        style = check_prompt_style(style)
        prompts = {
            ("r2e", "reference"): R2EPrompt,
            ("r2e", "compact"): CompactR2EPrompt,
            ("mini", "reference"): MiniPrompt,
            ("mini", "compact"): CompactMiniPrompt,
        }
        prompt = prompts[self.toolset, style]()
        if history_length is not None:
            prompt.history_length = history_length
        return prompt

    def expert_action(self) -> str | None:
        """The gold patch, played through the toolset's own calls (the ``expert_action`` hook of
        docs/custom-env.md): for the first hunk of the task's ``patch``
        (:func:`~agentenvs.swe.gold.hunks`) whose new text is not in the workspace yet, the edit
        that makes it (``r2e``: a ``file_editor`` ``str_replace`` of the hunk's old text; ``mini``:
        a ``python`` one-liner doing the same replacement), then the submission (``finish`` /
        the submit line). ``None`` before a reset, after the episode, for a task without a gold
        patch or one that is not a text edit of existing files, and where a hunk's old text is
        not in its file exactly once (the agent changed that code: the gold edit no longer
        applies) or would end the call early (``</parameter>``, a triple-backtick fence)."""
        if self.task is None or self._workspace is None or self._finished or self._done:
            return None
        try:
            edits = hunks(self.task.patch)
        except ValueError:
            return None
        for hunk in edits:
            text = self._workspace_text(hunk.path)
            if text is None:
                return None
            if hunk.new in text:
                continue  # made already
            if text.count(hunk.old) != 1 or _FENCES[self.toolset] in hunk.old + hunk.new:
                return None
            return self._edit_call(hunk)
        if not edits:
            return None
        if self.toolset == "mini":
            return "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"
        return "<function=finish>\n<parameter=command>submit</parameter>\n</function>"

    def _edit_call(self, hunk: Hunk) -> str:
        """The toolset's call that replaces ``hunk.old`` by ``hunk.new`` in its file."""
        if self.toolset == "mini":
            return (
                "python -c 'import pathlib, sys; p = pathlib.Path(sys.argv[1]); "
                'p.write_text(p.read_text(encoding="utf-8").replace(sys.argv[2], sys.argv[3], 1), '
                f'encoding="utf-8")\' {shlex.quote(hunk.path)} {shlex.quote(hunk.old)} '
                f"{shlex.quote(hunk.new)}"
            )
        return (
            "<function=file_editor>\n<parameter=command>str_replace</parameter>\n"
            f"<parameter=path>/testbed/{hunk.path}</parameter>\n"
            f"<parameter=old_str>\n{hunk.old}\n</parameter>\n"
            f"<parameter=new_str>\n{hunk.new}\n</parameter>\n</function>"
        )

    def _workspace_text(self, path: str) -> str | None:
        """The text of the workspace's regular file ``path`` (repo-relative; not a link, under
        ``_EXPERT_MAX_BYTES``, UTF-8), else ``None``."""
        assert self._workspace is not None
        root = Path(self._workspace.path)
        file = root / path
        try:
            if (
                file.is_symlink()
                or not file.is_file()
                or not file.resolve().is_relative_to(root.resolve())
                or file.stat().st_size > _EXPERT_MAX_BYTES
            ):
                return None
            return file.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    # -- helpers -----------------------------------------------------------------------------------
    def _finish(self) -> tuple[float, bool]:
        """Grade the submission (:meth:`_grade_copy`): ``(reward, won)``."""
        assert self.task is not None
        self._grade = self._grade_copy(self.task.FAIL_TO_PASS, self.task.PASS_TO_PASS)
        return float(self._grade.resolved), self._grade.resolved

    def _measure_f2p_share(self) -> float:
        """The share of the FAIL_TO_PASS tests that pass when the workspace is graded."""
        assert self.task is not None
        run = self._grade_copy(self.task.FAIL_TO_PASS, ())
        return run.n_f2p_passed / max(run.n_f2p, 1)

    def _grade_copy(self, fail_to_pass: Sequence[str], pass_to_pass: Sequence[str]) -> Grade:
        """Run the given tests the way grading does: in a fresh copy of the clean snapshot (deleted
        after) with :meth:`_submission` and the ``test_patch`` applied, the withheld files
        restored; a submission that cannot be applied grades 0 with the reason."""
        assert self._workspace is not None and self.task is not None and self._prepared
        copy = Workspace(self._prepared.snapshot, parent=self._workspace.parent)
        try:
            reason = self._build_grading_tree(copy.path)
            if reason:
                return Grade.ungraded(fail_to_pass, pass_to_pass, reason)
            return grade(
                self.sandbox,
                copy.path,
                fail_to_pass,
                pass_to_pass,
                hidden=self._prepared.hidden,
                command=self.task.test_command,
                timeout=self.grading_timeout,
            )
        finally:
            copy.cleanup()

    def _build_grading_tree(self, tree: Path) -> str:
        """Apply :meth:`_submission`, then the ``test_patch``, to the clean copy ``tree``; ``""``,
        or why one of them could not be applied."""
        assert self.task is not None
        try:
            reason = apply_diff(tree, self._submission())
            if reason:
                return f"the submission's diff did not apply: {reason}"
            if self.task.test_patch:
                reason = apply_diff(tree, self.task.test_patch.encode())
                return reason and f"the test patch did not apply: {reason}"
        except (RuntimeError, OSError) as error:  # git refused, or could not start (host out of
            return f"the submission could not be built: {error}"  # processes): grades 0
        return ""

    def _restored_paths(self) -> list[str]:
        """The files grading takes from the task, not the agent: the withheld tests, and with
        ``restore_all_tests`` every file that holds a graded test."""
        assert self.task is not None
        paths = dict.fromkeys(self.task.test_files_hidden)
        if self.restore_all_tests:
            paths.update(dict.fromkeys(n.split("::")[0] for n in self.task.FAIL_TO_PASS))
            paths.update(dict.fromkeys(n.split("::")[0] for n in self.task.PASS_TO_PASS))
        return list(paths)

    def _submission(self) -> bytes:
        """The diff grading applies: the workspace against the snapshot, without the restored
        paths and the test infrastructure (:data:`~agentenvs.swe.grading.INFRASTRUCTURE_GLOBS`)."""
        assert self._workspace is not None and self._prepared is not None
        return tree_diff(
            self._prepared.snapshot,
            self._workspace.path,
            exclude=self._restored_paths(),
            exclude_globs=INFRASTRUCTURE_GLOBS,
        )

    def _patch(self) -> str:
        """``info["patch"]``: the workspace's diff against the snapshot, withheld paths left out,
        decoded with replacement (binary parts are ASCII already)."""
        if self._workspace is None or self._prepared is None or self.task is None:
            return ""
        try:
            diff = tree_diff(
                self._prepared.snapshot, self._workspace.path, exclude=self.task.test_files_hidden
            )
        except (RuntimeError, OSError) as error:  # git refused, or could not start
            return f"[no patch: {error}]"
        return diff.decode("utf-8", "replace")

    def _with_budget(self, observation: str) -> str:
        if not self.step_budget_message:
            return observation
        left = self.max_steps - self._steps - 1
        if left > 0:
            return f"{observation}\nSteps Remaining: {left}"
        return (
            f"{observation}\nYou have reached the maximum number of steps. "
            "Please submit your answer NOW."
        )

    def _discard_workspace(self) -> None:
        if self._workspace is not None:
            self._workspace.cleanup()
            self._workspace = None
            self._tools = None

    def _render_text(self) -> str:
        return f"[{self.task_id} step {self._steps}]\n{self._obs}"


def _printable(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (in dicts, lists and tuples) replaced by
    U+FFFD, so ``info`` encodes as UTF-8 and JSON: file names that are not UTF-8 reach Python as
    ``os.fsdecode``'s surrogates (in ``fs_changes``, listings, signatures)."""
    if isinstance(value, str):
        return (
            value
            if value.isascii() or not _SURROGATE.search(value)
            else _SURROGATE.sub("\ufffd", value)
        )
    if isinstance(value, dict):
        return {_printable(k): _printable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_printable(v) for v in value)
    return value


def _may_write(call: ToolCall) -> bool:
    """Whether ``call`` can have changed workspace files (a shell command or an editor edit)."""
    if not call.valid:
        return False
    return call.name == "execute_bash" or (
        call.name == "file_editor" and call.arguments.get("command") != "view"
    )


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "the response holds no tool call"
