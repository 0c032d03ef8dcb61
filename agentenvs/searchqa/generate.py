"""The embedded SearchQA question panel: built from the embedded corpus, checked, split by document.

This module holds :func:`build_questions` (the panel, as rows), :func:`panel_bytes` (the shipped
file's exact bytes), :func:`split_of` (the split of a document title), :func:`life_years` and
:func:`strip_parenthetical` (small pure helpers), and the command
``python -m agentenvs.searchqa.generate [--check] [--out PATH]`` that rebuilds
``agentenvs/searchqa/data/questions.jsonl.gz`` byte for byte (``--check``: exit 1 if the shipped
file differs).

Families (every question is kept only if all its checks pass; ``norm`` is SQuAD normalisation and
"contains" means the normalised answer occurs as whole words in the normalised passage):

* single-hop (``data_source = "wiki_offline_1hop"``):
  ``birth_year`` / ``death_year`` (a person whose description ends in a life span ``(1928–1999)``:
  ``In what year was {P} born?`` / ``In what year did {P} die?``; check: P's passage is in the BM25
  top 3 for the question); ``title_from_description`` (a work whose description is unique and names
  a kind of work: ``What is the title of the 1968 film by Stanley Kubrick?``; answers: the title
  and the title without a trailing parenthetical; check: its passage is in the BM25 top 3);
  ``capital`` (``Capital of X`` descriptions, X a corpus title, one claimant only:
  ``What is the capital of {X}?``).
* two-hop (``data_source = "wiki_offline_2hop"``): ``creator_birth`` / ``creator_death``
  (a work ``… by P`` with P a person with life years: ``In what year was the director of the film
  2001: A Space Odyssey born?``); ``capital_region`` (``In which region is the country whose
  capital is Accra located?``: Accra -> Ghana -> ``West Africa``); ``comparison``
  (``Who was born first, A or B?``, two persons of one split with different birth years).
  Checks: the answer is not in the hop-1 passage and is in the hop-2 passage, the bridge title is
  in the hop-1 passage, and (shortcut test) none of the BM25 top 3 passages for the question text
  itself contains the answer; comparison questions check each birth year in its own passage.

Split, by document: titles that a two-hop question joins (a work and its creator, a city and its
country) form groups (connected components); a group is in ``test`` when
``int(sha1(first title), 16) % 5 == 0`` (its first title in sorted order), else ``train``; a
question takes its documents' split, and comparison pairs are drawn within one split, so train and
test share no supporting document.
Rows: ``id`` (``sha1(question)[:12]``), ``question``, ``golden_answers``, ``data_source``,
``hops``, ``supporting_titles`` (hop order), ``family``, ``split`` and, for two-hop bridges,
``bridge``; sorted by id, one JSON object a line, gzip with a zero timestamp.

>>> life_years("American filmmaker and photographer (1928–1999)")
('1928', '1999')
>>> strip_parenthetical("Breathless (1960 film)"), split_of("Stanley Kubrick")
('Breathless', 'train')
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import re
import string
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentenvs.searchqa.bm25 import BM25Retriever
from agentenvs.searchqa.corpus import Corpus, wiki_offline_corpus, wiki_offline_path
from agentenvs.searchqa.score import normalize_answer

__all__ = [
    "PANEL_PATH",
    "build_questions",
    "life_years",
    "main",
    "panel_bytes",
    "split_of",
    "strip_parenthetical",
]

#: The shipped panel.
PANEL_PATH = Path(__file__).with_name("data") / "questions.jsonl.gz"
_COMPARISONS = 300  # comparison questions at most
_LIFE = re.compile(r"\((?:c\. )?(\d{3,4})\s*[–-]\s*(?:c\. )?(\d{3,4})\)\s*$")
_CAPITAL = re.compile(r"^[Cc]apital(?: and (?:the )?largest city)?(?: city)? of (.+)$")
_BY = re.compile(r"\bby ([A-Z][^,;()]+?)\s*$")
_REGION = re.compile(r"^Country in (.+)$")
_PUNCTUATION_AS_SPACE = str.maketrans(string.punctuation, " " * len(string.punctuation))
#: kind of work -> the role of its creator (two-hop creator questions).
ROLES = {
    "film": "director",
    "novel": "author",
    "book": "author",
    "essay": "author",
    "play": "playwright",
    "poem": "poet",
    "painting": "painter",
    "opera": "composer",
    "symphony": "composer",
    "ballet": "composer",
    "sculpture": "sculptor",
    "album": "performer",
    "song": "performer",
}
_KIND = re.compile(r"\b(" + "|".join(ROLES) + r")\b")


def life_years(description: str) -> tuple[str, str] | None:
    """(birth, death) years at the end of a person's description, or ``None``."""
    match = _LIFE.search(description)
    return (match.group(1), match.group(2)) if match else None


def strip_parenthetical(title: str) -> str:
    """``title`` without a trailing ``(...)``."""
    return re.sub(r"\s*\([^()]*\)\s*$", "", title)


def split_of(title: str) -> str:
    """The split of a document title: ``test`` for one title in five (by SHA-1), else ``train``."""
    return "test" if int(hashlib.sha1(title.encode("utf-8")).hexdigest(), 16) % 5 == 0 else "train"


def _contains(passage: str, answer: str) -> bool:
    """Whether the normalised ``answer`` occurs in ``passage`` normalised (or with its ASCII
    punctuation read as spaces, so ``846`` is in ``772-846``), not inside a longer word or number
    (``1928`` is in ``1928–1999``, not in ``19280``)."""
    pattern = re.compile(r"(?<!\w)" + re.escape(normalize_answer(answer)) + r"(?!\w)")
    spaced = passage.translate(_PUNCTUATION_AS_SPACE)
    return any(pattern.search(normalize_answer(text)) for text in (passage, spaced))


class _Builder:
    """The corpus, its BM25 index and the rows built so far."""

    def __init__(self, corpus: Corpus, articles: Mapping[str, Mapping[str, Any]]) -> None:
        self.corpus = corpus
        self.bm25 = BM25Retriever(corpus)
        self.position = {corpus.title(i): i for i in range(len(corpus))}
        self.description = {
            t: str(articles.get(t, {}).get("description") or "").strip().rstrip(".")
            for t in self.position
        }
        self.candidates: dict[str, dict[str, Any]] = {}

    def passage(self, title: str) -> str:
        return self.corpus.contents[self.position[title]]

    def top3(self, question: str) -> list[int]:
        return self.bm25.search(question, 3)

    def add(
        self, question: str, answers: list[str], family: str, titles: list[str], **extra: Any
    ) -> None:
        if question in self.candidates:
            return
        hops = 1 if len(titles) == 1 else 2
        self.candidates[question] = {
            "id": hashlib.sha1(question.encode("utf-8")).hexdigest()[:12],
            "question": question,
            "golden_answers": answers,
            "data_source": f"wiki_offline_{hops}hop",
            "hops": hops,
            "supporting_titles": titles,
            "family": family,
            **extra,
        }

    def splits(self) -> dict[str, str]:
        """Title -> split: titles that questions join (work and creator, city and country) form
        groups; a group takes the :func:`split_of` its first title (sorted)."""
        parent: dict[str, str] = {}

        def root(t: str) -> str:
            while parent.get(t, t) != t:
                t = parent[t]
            return t

        for row in self.candidates.values():
            first, *rest = row["supporting_titles"]
            for other in rest:
                a, b = sorted((root(first), root(other)))
                if a != b:
                    parent[b] = a
        return {t: split_of(root(t)) for t in self.position}

    def two_hop_ok(self, question: str, answer: str, first: str, second: str) -> bool:
        return (
            not _contains(self.passage(first), answer)
            and _contains(self.passage(second), answer)
            and _contains(self.passage(first), second)
            and not any(_contains(self.corpus.contents[i], answer) for i in self.top3(question))
        )


def build_questions(
    corpus: Corpus | None = None, articles: Mapping[str, Mapping[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The panel's rows, sorted by id (module doc); defaults: the embedded corpus and its source
    articles (for the descriptions)."""
    if corpus is None:
        corpus = wiki_offline_corpus()
    if articles is None:
        with open(wiki_offline_path(), encoding="utf-8") as f:
            articles = json.load(f)
    b = _Builder(corpus, articles)
    titles = sorted(b.position)
    persons = {t: y for t in titles if (y := life_years(b.description[t]))}

    for person, (born, died) in persons.items():
        for family, verb, year in (
            ("birth_year", "was {} born", born),
            ("death_year", "did {} die", died),
        ):
            question = f"In what year {verb.format(person)}?"
            if b.position[person] in b.top3(question):
                b.add(question, [year], family, [person])

    counts: dict[str, int] = {}
    for t in titles:
        counts[b.description[t].lower()] = counts.get(b.description[t].lower(), 0) + 1
    for work in titles:
        description = b.description[work]
        if not _KIND.search(description) or counts[description.lower()] != 1 or work in persons:
            continue
        phrase = (
            description[0].lower() + description[1:] if description[1:2].islower() else description
        )
        question = f"What is the title of the {phrase}?"
        if b.position[work] in b.top3(question):
            answers = sorted({work, strip_parenthetical(work)})
            b.add(question, answers, "title_from_description", [work])

    capitals: dict[str, list[str]] = {}
    for city in titles:
        match = _CAPITAL.match(b.description[city])
        if match:
            country = re.sub(r"^the ", "", match.group(1).strip())
            if country in b.position:
                capitals.setdefault(country, []).append(city)
    for country, cities in sorted(capitals.items()):
        if len(cities) != 1:
            continue
        (city,) = cities
        b.add(f"What is the capital of {country}?", [city], "capital", [city])
        region = _REGION.match(b.description[country])
        if region and " and " not in region.group(1):
            answer = region.group(1).strip()
            question = f"In which region is the country whose capital is {city} located?"
            if b.two_hop_ok(question, answer, city, country):
                answers = sorted({answer, re.sub(r"^the ", "", answer)})
                b.add(question, answers, "capital_region", [city, country], bridge=country)

    for work in titles:
        description = b.description[work]
        by, kind = _BY.search(description), _KIND.search(description[: description.rfind(" by ")])
        if not by or not kind or by.group(1) not in persons or work in persons:
            continue
        person, role = by.group(1), ROLES[kind.group(1)]
        born, died = persons[person]
        for family, verb, year in (("creator_birth", "was", born), ("creator_death", "did", died)):
            tail = "born" if verb == "was" else "die"
            question = f"In what year {verb} the {role} of the {kind.group(1)} {work} {tail}?"
            if b.two_hop_ok(question, year, work, person):
                b.add(question, [year], family, [work, person], bridge=person)

    split = b.splits()
    for part in ("train", "test"):
        group = sorted(
            (p for p in persons if split[p] == part),
            key=lambda p: hashlib.sha1(p.encode("utf-8")).hexdigest(),
        )
        made, limit = 0, _COMPARISONS * (4 if part == "train" else 1) // 5
        for first, second in zip(group[::2], group[1::2], strict=False):
            (born_a, _), (born_b, _) = persons[first], persons[second]
            if made >= limit or born_a == born_b:
                continue
            if _contains(b.passage(first), born_a) and _contains(b.passage(second), born_b):
                earlier = first if int(born_a) < int(born_b) else second
                b.add(
                    f"Who was born first, {first} or {second}?",
                    [earlier],
                    "comparison",
                    [first, second],
                )
                made += 1
    rows = [{**row, "split": split[row["supporting_titles"][0]]} for row in b.candidates.values()]
    return sorted(rows, key=lambda row: row["id"])


def panel_bytes(rows: Sequence[Mapping[str, Any]]) -> bytes:
    """The gzip file of ``rows`` (one sorted-keys JSON object a line; no name, zero timestamp)."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", fileobj=buffer, mode="wb", mtime=0) as gz:
        for row in rows:
            gz.write((json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
    return buffer.getvalue()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agentenvs.searchqa.generate [--check] [--out PATH]``."""
    parser = argparse.ArgumentParser(description="Rebuild the embedded SearchQA question panel.")
    parser.add_argument("--check", action="store_true", help="compare with the shipped file")
    parser.add_argument("--out", type=Path, default=PANEL_PATH)
    args = parser.parse_args(argv)
    rows = build_questions()
    data = panel_bytes(rows)
    if args.check:
        same = args.out.is_file() and args.out.read_bytes() == data
        print(
            f"{args.out}: {'identical' if same else 'DIFFERS from the rebuild'} ({len(rows)} questions)"
        )
        return 0 if same else 1
    args.out.write_bytes(data)
    families: dict[str, int] = {}
    for row in rows:
        key = f"{row['family']} ({row['split']})"
        families[key] = families.get(key, 0) + 1
    print(f"wrote {len(rows)} questions to {args.out}: {dict(sorted(families.items()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
