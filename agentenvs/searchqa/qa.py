"""SearchQA's questions: the embedded panel and loaders for the reference stack's QA files.

This module holds :class:`QATask` (one question, its answer set and provenance),
:func:`task_from_row` (one row of any supported format), :func:`read_qa` (a ``.parquet``,
``.jsonl``, ``.jsonl.gz`` or ``.json`` file), :func:`embedded_tasks` (the shipped panel built by
:mod:`agentenvs.searchqa.generate`), :func:`load_tasks` (a path, ``$AGENTENVS_SEARCH_QA``, or the
panel) and :func:`verl_row` / :func:`write_parquet` (the verl-agent training-file shape).

Formats read, per row (first present wins):

* question: ``env_kwargs.question`` (verl-agent) -> ``question`` (Search-R1, FlashRAG) ->
  ``extra_info.question``;
* answers: ``env_kwargs.ground_truth.target`` -> ``reward_model.ground_truth.target`` ->
  ``golden_answers`` -> ``answer`` (a string becomes a one-element list);
* ``data_source`` (default ``"unknown"``); split: ``split`` -> ``extra_info.split`` -> the
  caller's default; id: ``id`` -> ``<split>-<extra_info.index>`` -> ``<split>-<row number>``.

So a Search-R1 parquet row, a verl-agent parquet row and a FlashRAG JSONL row of one question
give the same task. Rows without a question or an answer raise ``ValueError`` naming the row.

>>> task = task_from_row({"question": "Capital of France?", "golden_answers": ["Paris"],
...                       "data_source": "nq"}, 0)
>>> task.id, task.answers, task.data_source
('train-0', ('Paris',), 'nq')
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = [
    "QA_ENV_VAR",
    "QATask",
    "embedded_tasks",
    "load_tasks",
    "read_qa",
    "task_from_row",
    "verl_row",
    "write_parquet",
]

#: Environment variable naming a QA file to use instead of the embedded panel.
QA_ENV_VAR = "AGENTENVS_SEARCH_QA"
_EMBEDDED = Path(__file__).with_name("data") / "questions.jsonl.gz"


@dataclass(frozen=True)
class QATask:
    """One question: ``answers`` (the golden set), ``data_source``, ``split``; the embedded panel
    adds ``hops``, ``family`` and ``supporting_titles`` (the documents that answer it, in hop
    order; ``bridge`` is the hop-2 entity of a two-hop question)."""

    id: str
    question: str
    answers: tuple[str, ...]
    data_source: str = "unknown"
    split: str = "train"
    hops: int | None = None
    family: str = ""
    supporting_titles: tuple[str, ...] = ()
    bridge: str | None = None

    def as_dict(self) -> dict[str, Any]:
        row = asdict(self)
        row["answers"], row["supporting_titles"] = list(self.answers), list(self.supporting_titles)
        return row


def _get(row: Mapping[str, Any], *path: str) -> Any:
    value: Any = row
    for key in path:
        if not isinstance(value, Mapping) or value.get(key) is None:
            return None
        value = value[key]
    return value


def _answers(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    try:
        return tuple(str(a) for a in value)
    except TypeError:
        return (str(value),)


def task_from_row(row: Mapping[str, Any], number: int, split: str = "train") -> QATask:
    """The task of one QA row (the module doc's rules); ``number`` is its position in the file."""
    question = next(
        (
            q
            for q in (
                _get(row, "env_kwargs", "question"),
                row.get("question"),
                _get(row, "extra_info", "question"),
            )
            if q is not None
        ),
        None,
    )
    answers = next(
        (
            a
            for a in (
                _answers(_get(row, "env_kwargs", "ground_truth", "target")),
                _answers(_get(row, "reward_model", "ground_truth", "target")),
                _answers(row.get("golden_answers")),
                _answers(row.get("answer")),
            )
            if a is not None
        ),
        None,
    )
    if not isinstance(question, str) or not question.strip() or not answers:
        raise ValueError(f"QA row {number}: needs a question and at least one answer")
    split = str(row.get("split") or _get(row, "extra_info", "split") or split)
    index = _get(row, "extra_info", "index")
    task_id = row.get("id")
    task_id = (
        str(task_id) if task_id is not None else f"{split}-{number if index is None else index}"
    )
    hops = row.get("hops")
    return QATask(
        id=task_id,
        question=question.strip(),
        answers=answers,
        data_source=str(
            row.get("data_source") or _get(row, "env_kwargs", "data_source") or "unknown"
        ),
        split=split,
        hops=int(hops) if hops is not None else None,
        family=str(row.get("family") or ""),
        supporting_titles=tuple(row.get("supporting_titles") or ()),
        bridge=row.get("bridge"),
    )


def _rows(path: Path) -> Iterable[Mapping[str, Any]]:
    name = path.name.lower()
    if name.endswith(".parquet"):
        try:
            import pyarrow.parquet as pq
        except ImportError as err:
            raise ImportError(
                "reading parquet needs pyarrow: pip install 'agentenvs[searchqa]'"
            ) from err
        return pq.read_table(path).to_pylist()
    opener = gzip.open if name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        if name.endswith((".jsonl", ".jsonl.gz")):
            return [json.loads(line) for line in f if line.strip()]
        data = json.load(f)
    return data["data"] if isinstance(data, Mapping) and "data" in data else data


def read_qa(path: str | Path, split: str = "train") -> list[QATask]:
    """The tasks of a QA file (``split``: for rows that do not name one); duplicate ids raise."""
    path = Path(path)
    try:
        rows = list(_rows(path))
    except (OSError, ValueError, TypeError) as err:
        raise ValueError(f"{path}: not a QA file ({err})") from err
    tasks = [task_from_row(row, i, split) for i, row in enumerate(rows)]
    if len({t.id for t in tasks}) != len(tasks):
        raise ValueError(f"{path}: duplicate question ids")
    return tasks


@lru_cache(maxsize=1)
def embedded_tasks() -> tuple[QATask, ...]:
    """The shipped question panel (see :mod:`agentenvs.searchqa.generate`), in id order."""
    return tuple(read_qa(_EMBEDDED))


def load_tasks(path: str | Path | Mapping[str, str | Path] | None = None) -> list[QATask]:
    """``path`` (one QA file, or split name -> file), else ``$AGENTENVS_SEARCH_QA``, else the panel."""
    path = path or os.environ.get(QA_ENV_VAR)
    if path in (None, "", "embedded"):
        return list(embedded_tasks())
    if isinstance(path, Mapping):  # the file decides the split, whatever its rows say
        return [replace(t, split=split) for split, p in path.items() for t in read_qa(p, split)]
    return read_qa(path)


def verl_row(task: QATask, index: int) -> dict[str, Any]:
    """``task`` as a row of verl-agent's ``searchR1_processed_direct`` parquet files."""
    truth = {"target": list(task.answers)}
    return {
        "data_source": task.data_source,
        "prompt": [
            {"role": "system", "content": "You are a helpful and harmless assistant."},
            {"role": "user", "content": task.question},
        ],
        "ability": "fact-reasoning",
        "reward_model": {"style": "rule", "ground_truth": truth},
        "extra_info": {"index": index, "question": task.question, "split": task.split},
        "env_kwargs": {
            "ground_truth": truth,
            "question": task.question,
            "data_source": task.data_source,
        },
        "id": task.id,
        "golden_answers": list(task.answers),
    }


def write_parquet(tasks: Iterable[QATask], path: str | Path) -> None:
    """Write ``tasks`` as verl-agent's parquet rows (:func:`verl_row`); needs pyarrow."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([verl_row(t, i) for i, t in enumerate(tasks)]), path)
