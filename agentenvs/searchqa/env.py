"""``agentenvs/SearchQA-v0``: answer a question by searching a Wikipedia corpus, Search-R1 style.

This module holds :class:`SearchQAEnv` and :func:`make_retriever`.

An episode is one question. The first observation is the question; each turn the agent writes free
text with ``<think>…</think>`` and either ``<search> query </search>`` (the env retrieves the
``topk`` best passages and answers with an ``<information>`` block in ``action_format``) or
``<answer> text </answer>`` (the episode ends). The answer's exact match with a golden answer,
after SQuAD normalisation, is the reward (``reward="f1"`` or ``"subem"`` for the others); every
other turn earns 0. A turn with neither block is invalid: ``-invalid_action_penalty`` (0.01, the
reference stack's), nothing retrieved, and the observation is empty (``action_format="verl"``) or
Search-R1's "My previous action is invalid" message (``action_format="searchr1"``). A response with both
blocks, or more than one of either, runs its first block (the search wins) and is charged the
penalty. ``max_steps`` (4) turns end the episode (``truncated``; reward 0 unless that turn
answers); a search on the last turn retrieves nothing, as no one would read it.

``state_key`` is the question plus the sorted set of passage ids retrieved so far: what the agent
knows, independent of how it phrased its queries or in which order it found the passages, so
rollouts of one question that gathered the same evidence share a GiGPO anchor state.
``info["progress"]`` is the share of the question's supporting documents retrieved so far (without
recorded ones: whether a retrieved passage contains a golden answer), scaled by
:data:`~agentenvs.core.progress.PENDING_SHARE`; after an answer it is the answer's exact match
(docs/searchqa.md, *Progress*).

Tasks: the embedded panel of single- and two-hop questions over the embedded corpus (splits
``train`` / ``test`` share no supporting document), or the user's Search-R1 / verl-agent QA files
(``qa_path`` or ``$AGENTENVS_SEARCH_QA``) and JSONL corpus (``corpus_path`` or
``$AGENTENVS_SEARCH_CORPUS``); retrieval in-process (BM25 or dense) or from a ``/retrieve`` server.
The env in full: docs/searchqa.md.

>>> import gymnasium as gym, agentenvs
>>> env = gym.make("agentenvs/SearchQA-v0", split="test")
>>> obs, info = env.reset(seed=0)
>>> obs == info["question"], info["step"]
(True, 0)
>>> obs, reward, terminated, truncated, info = env.step("<think>?</think><search>Stanley Kubrick</search>")
>>> obs.startswith('<information>{"result": "Doc 1: '), reward, info["num_searches"]
(True, 0.0, 1)
>>> obs, reward, terminated, truncated, info = env.step("<think>.</think><answer>no idea</answer>")
>>> reward, terminated, info["em"]
(0.0, True, 0.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from agentenvs.core import TextAgentEnv, text_space
from agentenvs.core.parsing import ParsedAction
from agentenvs.core.progress import pending_progress
from agentenvs.core.prompting import AgentPrompt, check_prompt_style
from agentenvs.core.spaces import TextSpace
from agentenvs.core.tasks import TaskPanel
from agentenvs.searchqa.actions import SearchAction, project_action
from agentenvs.searchqa.corpus import load_corpus, title_of
from agentenvs.searchqa.passages import FORMATS, SEARCHR1_INVALID, format_information
from agentenvs.searchqa.prompts import CompactSearchPrompt, SearchPrompt, SearchR1Prompt
from agentenvs.searchqa.qa import QATask, load_tasks
from agentenvs.searchqa.retrieval import Hit, Retriever
from agentenvs.searchqa.score import (
    exact_match,
    f1_score,
    matched_answer,
    normalize_answer,
    sub_exact_match,
)

__all__ = ["REWARDS", "RETRIEVERS", "SearchQAEnv", "make_retriever"]

#: ``reward=`` choices: the metric of the final answer that is the episode's reward.
REWARDS = ("em", "f1", "subem")
#: In-process retrievers ``retriever=`` names.
RETRIEVERS = ("bm25", "dense")


#: A passage's normalised text, for the answer test of ``info["progress"]`` (~60 us per passage
#: uncached; rollouts of one question retrieve the same passages again).
_normalized_passage = lru_cache(maxsize=4096)(normalize_answer)


@lru_cache(maxsize=8)
def _shared_retriever(kind: str, corpus_path: str | None) -> Retriever:
    corpus = load_corpus(corpus_path)
    if kind == "dense":
        from agentenvs.searchqa.dense import DenseRetriever

        return DenseRetriever(corpus)
    from agentenvs.searchqa.bm25 import BM25Retriever

    return BM25Retriever(corpus)


def make_retriever(
    retriever: str | Retriever = "bm25",
    *,
    corpus_path: str | Path | None = None,
    search_url: str | Sequence[str] | None = None,
    timeout: float = 60.0,
) -> Retriever:
    """A :class:`~agentenvs.searchqa.retrieval.Retriever`: a given instance as is; with
    ``search_url``, a client of that ``/retrieve`` server (a list is used round-robin); else
    ``"bm25"`` or ``"dense"`` over the corpus (``corpus_path``, ``$AGENTENVS_SEARCH_CORPUS`` or the
    embedded one), built once per process and shared by every env that asks for it."""
    if not isinstance(retriever, str):
        return retriever
    if search_url:
        from agentenvs.searchqa.remote import RemoteRetriever

        return RemoteRetriever(search_url, timeout=timeout)
    if retriever not in RETRIEVERS:
        raise ValueError(f"retriever must be one of {RETRIEVERS} or a Retriever, got {retriever!r}")
    return _shared_retriever(retriever, str(Path(corpus_path).resolve()) if corpus_path else None)


def _observation_space(retriever: Retriever, tasks: Sequence[QATask], topk: int) -> TextSpace:
    """Text of the questions and of ``topk`` passages of the retriever's corpus (as JSON escapes
    or as they are); a remote retriever's corpus is unknown: up to 1M characters, any of the
    questions' characters (``action_format="searchr1"`` may then show others; vectorise it without
    shared memory)."""
    chars = {c for task in tasks for c in task.question}
    corpus = getattr(retriever, "corpus", None)
    if corpus is None:
        return text_space(1_000_000, "".join(chars))
    longest = max((len(t.question) for t in tasks), default=0)
    passages = topk * (6 * corpus.max_chars + 32)  # a JSON escape is at most 6 characters (\\uXXXX)
    return text_space(
        max(longest, passages + len(SEARCHR1_INVALID)), "".join(chars | corpus.charset)
    )


class SearchQAEnv(TextAgentEnv[str]):
    """Search-augmented question answering as a Gymnasium text env (module doc).

    Args:
        split: ``train`` or ``test`` (or a split the user's QA files name).
        qa_path: ``None`` (``$AGENTENVS_SEARCH_QA`` if set, else the embedded panel), a QA file
            (``.parquet``, ``.jsonl``, ``.json``: Search-R1, verl-agent or FlashRAG rows), or a
            mapping split -> file.
        corpus_path: a JSONL corpus (``{"id", "contents"}`` lines); ``None``: the embedded one.
        retriever: ``"bm25"`` (default), ``"dense"`` or a ``Retriever`` instance.
        search_url: a ``/retrieve`` endpoint (or a list, used round-robin) instead of an
            in-process retriever; ``timeout`` (s) bounds each request.
        topk: passages per search (3).
        max_steps: turns per episode (4).
        action_format: the turn protocol: ``"verl"`` (verl-agent's prompt and JSON-wrapped
            ``Doc i: …`` block) or ``"searchr1"`` (Search-R1's prompt, block and invalid-turn
            message). Both take ``<search>`` / ``<answer>`` actions. The old spelling ``format=``
            raises ``TypeError`` naming this one.
        reward: ``"em"``, ``"f1"`` or ``"subem"`` of the final answer.
        invalid_action_penalty: an invalid turn earns ``-invalid_action_penalty`` (0.01).
        render_mode: ``None`` or ``"ansi"``.
    """

    #: ``credit_presets``: config values the credit methods read for this env (docs/custom-env.md):
    #: TRIAGE's ``lam`` of the paper.
    metadata = {**TextAgentEnv.metadata, "credit_presets": {"triage": {"lam": 0.4}}}

    def __init__(
        self,
        *,
        split: str = "train",
        qa_path: str | Path | Mapping[str, str | Path] | None = None,
        corpus_path: str | Path | None = None,
        retriever: str | Retriever = "bm25",
        search_url: str | Sequence[str] | None = None,
        timeout: float = 60.0,
        topk: int = 3,
        max_steps: int = 4,
        action_format: str = "verl",
        reward: str = "em",
        invalid_action_penalty: float = 0.01,
        render_mode: str | None = None,
        **renamed: Any,
    ) -> None:
        if "format" in renamed:
            raise TypeError("SearchQAEnv: format= is now action_format= ('verl' or 'searchr1')")
        if renamed:
            raise TypeError(f"SearchQAEnv got unexpected keyword arguments {sorted(renamed)}")
        if action_format not in FORMATS:
            raise ValueError(f"action_format must be one of {FORMATS}, got {action_format!r}")
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {reward!r}")
        if isinstance(topk, bool) or not isinstance(topk, int) or topk < 1:
            raise ValueError(f"topk must be a positive integer, got {topk!r}")
        tasks = load_tasks(qa_path)
        self._tasks: dict[str, QATask] = {t.id: t for t in tasks}
        if len(self._tasks) != len(tasks):
            raise ValueError("the QA files hold duplicate question ids")
        splits: dict[str, list[str]] = {"train": [], "test": []}
        for task in tasks:
            splits.setdefault(task.split, []).append(task.id)
        super().__init__(
            tasks=TaskPanel(splits),
            max_steps=max_steps,
            split=split,
            invalid_action_penalty=invalid_action_penalty,
            action_format="plain",  # the base class's parse is not used: see _parse
            render_mode=render_mode,
        )
        self.retriever = make_retriever(
            retriever, corpus_path=corpus_path, search_url=search_url, timeout=timeout
        )
        self.topk = topk
        self.action_format = action_format
        self.reward_mode = reward
        self.observation_space = _observation_space(self.retriever, tasks, topk)
        self.action_space = text_space()
        self.task: QATask | None = None
        self._observation_text = ""
        self._action = SearchAction(None, "", False)

    # -- agent-facing hook ---------------------------------------------------------------------------
    def agent_prompt(
        self, style: str = "reference", history_length: int | None = None
    ) -> AgentPrompt:
        """``"reference"``: verl-agent's prompt (:class:`~agentenvs.searchqa.prompts.SearchPrompt`,
        history 4), or Search-R1's under ``action_format="searchr1"``; ``"compact"``:
        :class:`~agentenvs.searchqa.prompts.CompactSearchPrompt`."""
        if check_prompt_style(style) == "compact":
            cls: type[SearchPrompt] = CompactSearchPrompt
        else:
            cls = SearchR1Prompt if self.action_format == "searchr1" else SearchPrompt
        return cls() if history_length is None else cls(history_length=history_length)

    def expert_action(self) -> str | None:
        """The expert's next command (the ``expert_action`` hook of docs/custom-env.md): a search
        for the question while none was made and a later turn is left to read it, then the first
        golden answer; ``None`` before a reset and once answered.

        >>> env = SearchQAEnv(split="test")
        >>> _ = env.reset(seed=0)
        >>> env.expert_action() == f"<search>{env.task.question}</search>"
        True
        >>> _ = env.step(env.agent_prompt().answer(env.expert_action()))
        >>> env.expert_action() == f"<answer>{env.task.answers[0]}</answer>"
        True
        """
        if self.task is None or self._answer is not None:
            return None
        if not self._queries and self._steps + 1 < self.max_steps:
            return f"<search>{self.task.question}</search>"
        return f"<answer>{self.task.answers[0]}</answer>"

    # -- base-class hooks ----------------------------------------------------------------------------
    def _load_task(self, task_id: str) -> None:
        self.task = self._tasks[task_id]
        self._observation_text = self.task.question
        self._queries: list[str] = []
        self._retrieved: list[list[str]] = []
        self._answer: str | None = None
        self._search_error: str | None = None
        self._scores = {"em": 0.0, "f1": 0.0, "subem": 0.0}
        self._evidence: set[str] = set()

    def _parse(self, action: object) -> ParsedAction:
        self._action = parsed = project_action(action)
        # A block that runs although the format is wrong: the base class charges the penalty.
        self._format_ok, self._format_reason = parsed.valid or parsed.kind is None, parsed.reason
        if parsed.kind is None:
            self._observation_text = SEARCHR1_INVALID if self.action_format == "searchr1" else ""
            return ParsedAction(None, False, parsed.reason)
        return ParsedAction(parsed.text, True)

    def _apply(self, command: str) -> tuple[float, bool]:
        assert self.task is not None
        action = self._action
        if action.kind == "answer":
            self._answer = action.content
            answers = self.task.answers
            self._scores = {
                "em": exact_match(action.content, answers),
                "f1": f1_score(action.content, answers),
                "subem": sub_exact_match(action.content, answers),
            }
            self._observation_text = ""
            return self._scores[self.reward_mode], self._scores["em"] == 1.0
        self._queries.append(action.content)
        self._search_error = None
        if self._steps + 1 >= self.max_steps:  # the last turn: nobody would read the passages
            self._retrieved.append([])
            self._observation_text = ""
            return 0.0, False
        hits: list[Hit] = []
        try:
            hits = self.retriever.retrieve([action.content], self.topk)[0][: self.topk]
        except Exception as err:  # a remote retriever's failure is an observation, not a crash
            self._search_error = f"{type(err).__name__}: {err}"
        self._retrieved.append([hit.id for hit in hits])
        self._evidence.update(self._evidence_in(hits))
        self._observation_text = format_information(self.action_format, hits, self._search_error)
        return 0.0, False

    def _evidence_in(self, hits: Sequence[Hit]) -> set[str]:
        """The supporting titles among ``hits`` (``{""}`` for a task without any when a hit
        contains a golden answer)."""
        assert self.task is not None
        if self.task.supporting_titles:
            return {title_of(hit.contents) for hit in hits} & set(self.task.supporting_titles)
        answers = [normalize_answer(a) for a in self.task.answers]
        found = any(a in _normalized_passage(hit.contents) for hit in hits for a in answers)
        return {""} if found else set()

    def _progress(self) -> float:
        """Exact match once answered; before, ``PENDING_SHARE`` times the share of the evidence
        (supporting titles, or one answer-bearing passage) retrieved so far."""
        assert self.task is not None
        if self._answer is not None:
            return self._scores["em"]
        needed = len(set(self.task.supporting_titles)) or 1
        return pending_progress(len(self._evidence) / needed)

    def _terminated(self) -> bool:
        return self._answer is not None

    def _observation(self, feedback: str) -> str:
        return self._observation_text

    def _state_key(self) -> str:
        assert self.task is not None
        seen = sorted({doc for ids in self._retrieved for doc in ids})
        return f"{self.task.question}\n{','.join(seen)}"

    def _extra_info(self) -> dict[str, Any]:
        task = self.task
        assert task is not None
        answer = self._answer
        return {
            "question": task.question,
            "task": task.question,
            "golden_answers": list(task.answers),
            "data_source": task.data_source,
            "hops": task.hops,
            "family": task.family,
            "supporting_titles": list(task.supporting_titles),
            "answer": answer,
            "matched_answer": matched_answer(answer, task.answers) if answer is not None else None,
            **self._scores,
            "num_searches": len(self._queries),
            "queries": list(self._queries),
            "retrieved_ids": [list(ids) for ids in self._retrieved],
            "search_error": self._search_error,
            "is_action_valid": self._format_ok and self._action.kind is not None,
            "anchor": self._observation_text,
        }

    def _render_text(self) -> str:
        assert self.task is not None
        return f"Q: {self.task.question}\n{self._observation_text}"
