"""The embedded WebShop catalogue's vocabulary: the data tables that
:mod:`agentenvs.webshop.generate` draws products from, loaded from ``data/vocabulary.json``.

This module holds the loader and the tables it builds: the product types per category
(:data:`KINDS`, built by :func:`_kind` from each type's compact spec in the file: query,
breadcrumbs, title words (head nouns, descriptors, materials), attributes in the three slots of
WebShop's instructions, options and price range), the categories' breadcrumb roots, option shares
and bullet words (:data:`CATS`), the attributes shared by a product family (:data:`COMMON`), the
words a tagger would not mark as nouns in a title (:data:`NOT_NOUN`) and the ones written in
capitals (:data:`UPPER`), the brand syllables (:data:`SYL1`, :data:`SYL2`, :data:`BRAND_WORD`,
:data:`NOT_BRANDS`), the price endings (:data:`ENDINGS`) and the bullet and description phrases
(:data:`ADJ_BULLETS`, :data:`WITH_BULLETS`, :data:`FOR_BULLETS`, :data:`EXTRA_BULLETS`,
:data:`DESCRIPTIONS`, :data:`DESCRIPTIONS_MAT`, :data:`CLOSURES`). The vocabulary is invented: the
brands are built from syllables, and no table names a real trademark.

The file's ``kinds`` records are :func:`_kind`'s compact specs ("|" separates alternatives, ";"
breadcrumb paths or option groups; an option group is ``Name=pool:lo-hi`` with ``pool`` a key of
the file's ``pools`` or comma-separated values, and a trailing ``c`` for a contiguous run), so a
product type is edited in one place. Nothing here uses randomness; the generator makes every
random choice.

>>> from collections import Counter
>>> sorted(Counter(k.category for k in KINDS).items())
[('beauty', 29), ('electronics', 30), ('fashion', 30), ('garden', 30), ('grocery', 27)]
>>> sorted(CATS) == sorted({k.category for k in KINDS})
True
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "Category",
    "Kind",
    "VOCABULARY_FILE",
    "CATS",
    "COMMON",
    "FASHION_ACCESSORIES",
    "KINDS",
    "NOT_NOUN",
    "UPPER",
    "SYL1",
    "SYL2",
    "BRAND_WORD",
    "NOT_BRANDS",
    "ENDINGS",
    "ADJ_BULLETS",
    "WITH_BULLETS",
    "FOR_BULLETS",
    "EXTRA_BULLETS",
    "BEAUTY_TOOLS",
    "DESCRIPTIONS",
    "DESCRIPTIONS_MAT",
    "CLOSURES",
]

#: The data file the tables are read from (package data).
VOCABULARY_FILE = Path(__file__).parent / "data" / "vocabulary.json"

_SEP = " \u203a "  # Amazon's breadcrumb separator


@dataclass(frozen=True)
class Category:
    """A category's breadcrumb root, option share and bullet words."""

    name: str
    root: str  # the first breadcrumb
    p_options: float  # the share of products with customization options
    design: tuple[str, ...]  # what bullets call the product's make
    benefits: tuple[str, ...]


@dataclass(frozen=True)
class Kind:
    """A product type: its query, breadcrumbs, title words, attributes, options and price."""

    category: str
    query: str
    crumbs: tuple[str, ...]
    heads: tuple[str, ...]
    descs: tuple[str, ...]
    mats: tuple[str, ...]
    attrs: tuple[tuple[str, int], ...]  # (phrase, slot) with slot 0 = adjective, 1 = with, 2 = for
    options: tuple[tuple[str, tuple[str, ...], int, int, bool], ...]
    price: tuple[float, float]
    qty: str
    who: str


def _kind(
    spec: dict[str, Any], cats: dict[str, Category], pools: dict[str, tuple[str, ...]]
) -> Kind:
    """One product type from its compact spec (a ``kinds`` record of the data file)."""
    root = cats[spec["category"]].root
    crumbs: list[str] = []
    for full in spec["crumb"].split(";"):
        if not full.startswith(("Cell Phones", "Patio", "Tools & Home")):
            full = root + _SEP + full
        *path, last = full.split(_SEP)
        crumbs += [_SEP.join([*path, leaf]) for leaf in last.split("|")]
    attrs = [(a, slot) for slot, s in enumerate(spec["attrs"]) for a in s.split("|") if a]
    groups = []
    for option in filter(None, spec.get("options", "").split(";")):
        name, rest = option.split("=")
        pool, counts = rest.rsplit(":", 1)
        contiguous = counts.endswith("c")
        lo, hi = counts.rstrip("c").split("-")
        values = tuple(pool.split(",")) if "," in pool else pools[pool]
        groups.append((name, values, int(lo), min(int(hi), len(values)), contiguous))
    lo, hi = spec.get("price", "10-50").split("-")
    return Kind(
        spec["category"],
        spec["query"],
        tuple(crumbs),
        tuple(spec["heads"].split("|")),
        tuple(spec["descs"].split("|")),
        tuple(m for m in spec["mats"].split("|") if m),
        tuple(attrs),
        tuple(groups),
        (float(lo), float(hi)),
        spec.get("qty", ""),
        spec.get("who", ""),
    )


def _tuples(table: dict[str, list]) -> dict[str, tuple]:
    return {key: tuple(values) for key, values in table.items()}


_data = json.loads(VOCABULARY_FILE.read_text(encoding="utf-8"))
_pools = _tuples(_data["pools"])

#: The five categories by name.
CATS = {
    c["name"]: Category(
        c["name"], c["root"], c["p_options"], tuple(c["design"]), tuple(c["benefits"])
    )
    for c in _data["categories"]
}
#: Attributes shared by every type of a product family (see ``_family`` in
#: :mod:`agentenvs.webshop.generate`), per instruction slot: before the type, after "with",
#: after "for".
COMMON: dict[str, tuple[str, str, str]] = _tuples(_data["common"])
#: The fashion types of the "accessories" family.
FASHION_ACCESSORIES: tuple[str, ...] = tuple(_data["fashion_accessories"])
#: Every product type, 27 to 30 per category.
KINDS: tuple[Kind, ...] = tuple(_kind(spec, CATS, _pools) for spec in _data["kinds"])
#: Words that spaCy's small English model would not tag NOUN/PROPN inside the noun phrases
#: (product nouns, materials, attribute phrases, quantities) the titles are built from.
NOT_NOUN = frozenset(_data["not_noun"])
#: Attribute words written in capitals in titles ("usb c" -> "USB C").
UPPER = frozenset(_data["upper"])
#: Brand names are a first and a second syllable, sometimes with a category word.
SYL1: list[str] = _data["syl1"]
SYL2: list[str] = _data["syl2"]
BRAND_WORD: dict[str, tuple[str, ...]] = _tuples(_data["brand_word"])
#: Syllable pairs that spell an existing brand or a well-known name.
NOT_BRANDS: tuple[str, ...] = tuple(_data["not_brands"])
#: Price endings in cents (-1.0: any).
ENDINGS: tuple[float, ...] = tuple(_data["endings"])
#: Bullets for an attribute per instruction slot: before the type, after "with", after "for".
ADJ_BULLETS: tuple[str, ...] = tuple(_data["adj_bullets"])
WITH_BULLETS: tuple[str, ...] = tuple(_data["with_bullets"])
FOR_BULLETS: tuple[str, ...] = tuple(_data["for_bullets"])
#: Extra bullets per product family (see ``_family`` in :mod:`agentenvs.webshop.generate`).
EXTRA_BULLETS: dict[str, tuple[str, ...]] = _tuples(_data["extra_bullets"])
#: The beauty types of the "beauty tools" family.
BEAUTY_TOOLS: tuple[str, ...] = tuple(_data["beauty_tools"])
#: Description sentences (with a material sentence for types that have materials).
DESCRIPTIONS: tuple[str, ...] = tuple(_data["descriptions"])
DESCRIPTIONS_MAT = (*DESCRIPTIONS, _data["description_material"])
#: Closures named in fashion bullets.
CLOSURES: tuple[str, ...] = tuple(_data["closures"])
del _data
