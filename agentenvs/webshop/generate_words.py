"""Title words and random product text of :mod:`agentenvs.webshop.generate`: the title tokenizer,
the title nouns of a title part, title casing, and the quantity and price strings of a product.

This module holds :func:`title_tokens` (the title tokenizer behind the title nouns) and the
private helpers the generator draws titles, quantities and prices with.
"""

from __future__ import annotations

import random
import re

from agentenvs.webshop.vocabulary import ENDINGS, NOT_NOUN, UPPER, Kind

__all__ = ["title_tokens"]

# ---------------------------------------------------------------------------------------------
# Title words.
# ---------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"(['\u2019])?([A-Za-z0-9]+)")


def title_tokens(title: str) -> list[str]:
    """The tokens of a title, lower-cased: runs of ASCII letters and digits; a possessive ``s``
    after an apostrophe is dropped.

    >>> title_tokens("Velora Women's Casual Maxi Dress, 8 Ounce (Pack of 2)")
    ['velora', 'women', 'casual', 'maxi', 'dress', '8', 'ounce', 'pack', 'of', '2']
    """
    return [w.lower() for a, w in _TOKEN.findall(title) if not (a and w.lower() == "s")]


_NOUN_CACHE: dict[tuple[str, int], list[str]] = {}


def noun_words(text: str, mode: int) -> list[str]:
    """The title nouns of one title part: mode 0 a brand (every word), 1 a descriptor (none),
    2 a noun phrase (every word but those in :data:`NOT_NOUN` and numbers)."""
    key = (text, mode)
    found = _NOUN_CACHE.get(key)
    if found is None:
        if mode == 1:
            found = []
        else:
            toks = title_tokens(text)
            found = [
                t
                for t in toks
                if not any(c.isdigit() for c in t) and (mode == 0 or t not in NOT_NOUN)
            ]
        _NOUN_CACHE[key] = found
    return found


def title_case(phrase: str) -> str:
    """An attribute phrase as Amazon title words ("usb c" -> "USB C")."""
    return " ".join(w.upper() if w in UPPER else w[:1].upper() + w[1:] for w in phrase.split())


def capitalized(text: str) -> str:
    return text[:1].upper() + text[1:]


# ---------------------------------------------------------------------------------------------
# Random pieces: quantities, prices.
# ---------------------------------------------------------------------------------------------


def quantity_text(kind: str, rng: random.Random) -> str:
    """A title's size or count phrase of one style."""
    c = rng.choice
    if kind == "floz":
        return f"{c(('1', '1.7', '3.4', '6.7', '8', '12', '16', '33.8'))} Fl Oz"
    if kind == "oz":
        return f"{c(('2', '4', '6', '8', '10', '12', '16', '24', '32'))} Ounce"
    if kind == "ozpack":
        size = c(("1", "1.5", "2.65", "5", "8", "12", "16"))
        return f"{size} Ounce (Pack of {c((2, 3, 4, 6, 12, 24))})"
    if kind == "canpack":
        return f"12 Fl Oz (Pack of {c((8, 12, 18, 24))})"
    if kind == "count":
        return f"{c((10, 12, 16, 20, 24, 40, 48, 72, 100))} Count"
    if kind == "pack":
        n = c((2, 3, 4, 5, 6, 8, 10, 12))
        return f"{n} Pack" if rng.random() < 0.5 else f"Pack of {n}"
    if kind == "set":
        return f"Set of {c((2, 3, 4, 6))}"
    if kind == "pcs":
        return f"{c((3, 5, 7, 10, 12, 15, 20))} Pcs"
    if kind == "ft":
        return f"{c((3, 6, 10, 15, 25, 50, 100))} ft"
    if kind == "mah":
        return f"{c((5000, 10000, 20000, 26800, 30000))}mAh"
    if kind == "lb":
        return f"{c(('1', '2', '2.5', '5', '10'))} lb"
    return ""


def _price_value(lo: float, hi: float, rng: random.Random) -> float:
    """A price between lo and hi (log-uniform) with an Amazon-style ending."""
    v = lo * (hi / lo) ** rng.random()
    end = rng.choice(ENDINGS)
    cents = rng.randrange(100) / 100 if end < 0 else end
    return max(int(v), 1) + cents


def price_text(kind: Kind, rng: random.Random) -> str:
    """The raw ``pricing`` string: "$12.99", "$19.99 - $27.99", "$1,299.00" or "" (unknown)."""
    u = rng.random()
    if u < 0.05:
        return ""
    p = _price_value(*kind.price, rng)
    if u < 0.30:
        q = _price_value(p * 1.12, p * 1.9, rng)
        if q <= p:
            q = p + 1.0
        return f"${p:,.2f} - ${q:,.2f}"
    return f"${p:,.2f}"
