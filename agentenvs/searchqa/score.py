"""Scoring a SearchQA answer: SQuAD normalisation, exact match, substring match, F1, answer extraction.

This module holds :func:`normalize_answer`, :func:`exact_match`, :func:`sub_exact_match`,
:func:`f1_score`, :func:`matched_answer` and :func:`extract_answer`.

Normalisation (SQuAD's, as Search-R1 and verl-agent use it), in this order: lower-case; delete
every ASCII punctuation character (``string.punctuation``; Unicode punctuation such as ``–`` or
``’`` stays); replace the whole words ``a``, ``an``, ``the`` by a space; collapse white space.
So ``"1,928"`` equals ``"1928"``, ``"The Beatles!"`` equals ``"beatles"``.

* EM: 1 when the normalised prediction equals some normalised golden answer.
* subEM: 1 when some normalised golden answer is a substring of the normalised prediction.
* F1: token overlap of the normalised strings (``P = n/len(pred)``, ``R = n/len(gold)``,
  ``F1 = 2PR/(P+R)``, 0 when nothing overlaps); when either side is ``yes``, ``no`` or
  ``noanswer`` and they differ, 0 (HotpotQA's rule); the best over the golden answers.

>>> normalize_answer("The  Beatles!"), exact_match("an apple a day", ["apple day"])
('beatles', 1.0)
>>> sub_exact_match("Beijing, China", ["Beijing"]), round(f1_score("Stanley Kubrick", ["Kubrick"]), 3)
(1.0, 0.667)
>>> extract_answer("<think>..</think><answer> 1928 </answer>")
'1928'
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

__all__ = [
    "exact_match",
    "extract_answer",
    "f1_score",
    "matched_answer",
    "normalize_answer",
    "sub_exact_match",
]

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_YES_NO = frozenset({"yes", "no", "noanswer"})


def normalize_answer(text: str) -> str:
    """SQuAD normalisation (module doc): lower, no ASCII punctuation, no articles, single spaces."""
    text = _ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION))
    return " ".join(text.split())


def _golden(answers: str | Sequence[str]) -> list[str]:
    return [answers] if isinstance(answers, str) else [str(a) for a in answers]


def matched_answer(prediction: str, answers: str | Sequence[str]) -> str | None:
    """The first golden answer that ``prediction`` matches exactly (normalised), or ``None``."""
    predicted = normalize_answer(prediction)
    return next((a for a in _golden(answers) if normalize_answer(a) == predicted), None)


def exact_match(prediction: str, answers: str | Sequence[str]) -> float:
    """1.0 when ``prediction`` equals a golden answer after normalisation, else 0.0."""
    return float(matched_answer(prediction, answers) is not None)


def sub_exact_match(prediction: str, answers: str | Sequence[str]) -> float:
    """1.0 when a normalised golden answer occurs in the normalised ``prediction``, else 0.0."""
    predicted = normalize_answer(prediction)
    return float(any(normalize_answer(a) in predicted for a in _golden(answers)))


def _f1(predicted: str, golden: str) -> float:
    if (predicted in _YES_NO or golden in _YES_NO) and predicted != golden:
        return 0.0
    pred_tokens, gold_tokens = predicted.split(), golden.split()
    common = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred_tokens), common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, answers: str | Sequence[str]) -> float:
    """The best token F1 of ``prediction`` against the golden answers (module doc)."""
    predicted = normalize_answer(prediction)
    return max((_f1(predicted, normalize_answer(a)) for a in _golden(answers)), default=0.0)


def extract_answer(text: str, *, min_matches: int = 1) -> str | None:
    """The last ``<answer>...</answer>`` in ``text``, stripped; ``None`` with fewer than
    ``min_matches`` blocks.

    ``min_matches=2`` is Search-R1's rule for prompt + response text: its prompt already holds
    one example answer (``<answer> Beijing </answer>``), so a single match is no answer.

    >>> extract_answer("<answer>a</answer> then <answer> b </answer>"), extract_answer("none")
    ('b', None)
    >>> extract_answer("For example, <answer> Beijing </answer>.", min_matches=2) is None
    True
    """
    matches = _ANSWER.findall(text)
    if len(matches) < max(min_matches, 1):
        return None
    return matches[-1].strip()
