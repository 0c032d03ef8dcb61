"""The embedded WebShop catalogue generator: invented products in the official raw file formats.

This module holds :data:`CATEGORIES` and :data:`CATEGORY_SHARES` (WebShop's five categories and
their shares in the real data), :data:`PRODUCT_KEYS` (the keys of one raw product),
:data:`DATA_FILES` (the three shipped file names), :func:`generate_catalog` (raw products,
attributes and instructions, title nouns), :func:`title_tokens` (the title tokenizer behind the
title nouns), :func:`write_data` (the three gzipped JSON files, byte-identical across runs and
machines) and :func:`main` (``python -m agentenvs.webshop.generate [--out DIR] [--num-products N]
[--seed S] [--check]``).

The outputs follow the official files, so one loader reads both: ``items_shuffle.json`` (a list
of raw products: ``name``, ``full_description``, ``pricing`` as an Amazon price string,
``images``, ``product_category`` breadcrumb, ``small_description`` bullets,
``customization_options``, ``asin``, ``category``, ``query``, ``page``), ``items_ins_v2.json``
(``{asin: {"attributes": [...], "instruction": ..., "instruction_attributes": [...]}}``, the
instruction for about 40% of the products) and ``title_nouns.json`` (``{asin: [noun, ...]}``, what
spaCy's tagger would mark NOUN/PROPN in the title; recorded from the parts the title is built
from instead of running a tagger).

Every product has a *type* (its ``query``, e.g. ``"console tables"``): 27 to 30 types per
category, each with its own title nouns, descriptors, materials, attribute vocabulary (split in
the three slots of WebShop's instructions: before the type, after ``with``, after ``for``),
options and price range. Brands are invented. That vocabulary (the product types, brand
syllables, bullet and description phrases) lives in :mod:`agentenvs.webshop.vocabulary`; this
module holds the generation logic that draws from it. All randomness comes from one private
``random.Random(seed)``, and nothing iterates over a set, so the output does not depend on the
machine, the Python hash seed or the global random state.

:func:`title_tokens` and the title, quantity and price helpers live in
:mod:`agentenvs.webshop.generate_words`; this module re-exports :func:`title_tokens`.

>>> raw, ins, nouns = generate_catalog(4, seed=1)
>>> [sorted(p) == sorted(PRODUCT_KEYS) for p in raw]
[True, True, True, True]
>>> all(len(p["asin"]) == 10 and p["category"] in CATEGORIES for p in raw)
True
>>> all(2 <= len(ins[p["asin"]]["attributes"]) <= 5 for p in raw)
True
>>> generate_catalog(4, seed=1) == (raw, ins, nouns)
True
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import random
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentenvs.webshop.generate_words import (
    capitalized,
    noun_words,
    price_text,
    quantity_text,
    title_case,
    title_tokens,
)
from agentenvs.webshop.vocabulary import (
    ADJ_BULLETS,
    BEAUTY_TOOLS,
    BRAND_WORD,
    CATS,
    CLOSURES,
    COMMON,
    DESCRIPTIONS,
    DESCRIPTIONS_MAT,
    EXTRA_BULLETS,
    FASHION_ACCESSORIES,
    FOR_BULLETS,
    KINDS,
    NOT_BRANDS,
    SYL1,
    SYL2,
    WITH_BULLETS,
    Category,
    Kind,
)

__all__ = [
    "CATEGORIES",
    "CATEGORY_SHARES",
    "PRODUCT_KEYS",
    "DATA_FILES",
    "DATA_DIR",
    "title_tokens",
    "generate_catalog",
    "write_data",
    "main",
]

#: WebShop's five product categories.
CATEGORIES = ("beauty", "fashion", "garden", "electronics", "grocery")
#: Each category's share of the products (as in the real WebShop data).
CATEGORY_SHARES = {
    "beauty": 0.29,
    "fashion": 0.22,
    "garden": 0.19,
    "electronics": 0.19,
    "grocery": 0.11,
}
#: The keys of one raw product, in the order they are written.
PRODUCT_KEYS = (
    "name",
    "full_description",
    "pricing",
    "images",
    "product_category",
    "small_description",
    "customization_options",
    "asin",
    "category",
    "query",
    "page",
)
#: The shipped files: raw products, attributes and instructions, title nouns.
DATA_FILES = ("items_shuffle.json.gz", "items_ins_v2.json.gz", "title_nouns.json.gz")
#: Where the embedded catalogue is shipped.
DATA_DIR = Path(__file__).parent / "data"

_ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"

# ---------------------------------------------------------------------------------------------
# Brands.
# ---------------------------------------------------------------------------------------------

_BRANDS_PER_CATEGORY = 70


def _brands(rng: random.Random) -> dict[str, list[str]]:
    """About 70 invented brand names per category (all distinct)."""
    seen: set[str] = set()
    out: dict[str, list[str]] = {}
    for cat in CATEGORIES:
        names: list[str] = []
        while len(names) < _BRANDS_PER_CATEGORY:
            stem = rng.choice(SYL1) + rng.choice(SYL2)
            if stem.lower() in seen or stem.lower() in NOT_BRANDS:
                continue
            seen.add(stem.lower())
            u = rng.random()
            if u < 0.2:
                stem = stem.upper()
            elif u < 0.4:
                stem = f"{stem} {rng.choice(BRAND_WORD[cat])}"
            names.append(stem)
        out[cat] = names
    return out


# ---------------------------------------------------------------------------------------------
# The generator.
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Prepared:
    """A kind with what every product of it reuses: attribute pools, extra bullets, texts."""

    kind: Kind
    cat: Category
    own: tuple[tuple[str, int], ...]
    common: tuple[tuple[str, int], ...]
    extras: tuple[str, ...]
    descriptions: tuple[str, ...]


def _family(kind: Kind) -> str:
    """The product family of a kind: its common attributes and extra bullets."""
    if kind.category == "fashion":
        if kind.query in FASHION_ACCESSORIES:
            return "accessories"
        return "shoes" if " Shoes " in kind.crumbs[0] else "apparel"
    if kind.category == "beauty":
        return "beauty tools" if kind.query in BEAUTY_TOOLS else "beauty"
    if kind.category == "garden":
        return "furniture" if "Furniture" in kind.crumbs[0] else "home"
    return kind.category


def _sentence_case(head: str) -> str:
    """A title noun phrase as it reads in a sentence ("USB C Cable" -> "USB C cable")."""
    return " ".join(w if w.isupper() and len(w) > 1 else w.lower() for w in head.split())


def _prepare() -> dict[str, list[_Prepared]]:
    out: dict[str, list[_Prepared]] = {c: [] for c in CATEGORIES}
    for kind in KINDS:
        cat = CATS[kind.category]
        own_names = [a for a, _ in kind.attrs]
        family = _family(kind)
        common = tuple(
            (a, slot)
            for slot, pool in enumerate(COMMON[family])
            for a in pool.split("|")
            if a not in own_names
        )
        extras = EXTRA_BULLETS[family]
        if not kind.mats:
            extras = tuple(e for e in extras if "{mat" not in e)
        descriptions = DESCRIPTIONS_MAT if kind.mats else DESCRIPTIONS
        out[kind.category].append(_Prepared(kind, cat, kind.attrs, common, extras, descriptions))
    return out


_PREPARED = _prepare()


def _options(kind: Kind, asin: str, rng: random.Random) -> dict[str, list[dict[str, Any]]] | str:
    """The raw ``customization_options``: "" or {name: [{"value", "image"}, ...]}."""
    if not kind.options or rng.random() >= CATS[kind.category].p_options:
        return ""
    out: dict[str, list[dict[str, Any]]] = {}
    combos = 1
    for i, (name, values, lo, hi, contiguous) in enumerate(kind.options):
        if i and rng.random() < 0.3:
            continue
        k = rng.randint(lo, hi)
        while k > 1 and combos * k > 24:
            k -= 1
        if contiguous:
            start = rng.randrange(len(values) - k + 1)
            chosen = list(values[start : start + k])
        else:
            chosen = rng.sample(values, k)
        combos *= k
        image = f"/images/{asin}.svg" if name in ("Color", "Pattern Name") else None
        out[name] = [{"value": v, "image": image} for v in chosen]
    return out


def _instruction(
    kind: Kind, attrs: list[tuple[str, int]], rng: random.Random
) -> tuple[str, list[str]]:
    """WebShop's synthetic instruction text and its attributes (in text order)."""
    m = rng.randint(1, min(4, len(attrs)))
    chosen = rng.sample(attrs, m)
    by_slot = [[a for a, s in chosen if s == slot] for slot in (0, 1, 2)]
    text = "Find me "
    if by_slot[0]:
        text += ", ".join(by_slot[0]) + " "
    text += kind.query
    if by_slot[1]:
        text += " with " + ", ".join(by_slot[1])
    if by_slot[2]:
        text += " for " + ", ".join(by_slot[2])
    return text, by_slot[0] + by_slot[1] + by_slot[2]


def _title(
    kind: Kind,
    brand: str,
    head: str,
    descs: list[str],
    mat: str,
    qty: str,
    shown: list[tuple[str, int]],
    rng: random.Random,
) -> tuple[str, list[str]]:
    """An Amazon-style title in one of three layouts, with its nouns (see :func:`noun_words`)."""
    r = rng.random
    sp = (" ", 1)
    parts: list[tuple[str, int]] = []  # (text, noun mode)
    if r() < 0.93:
        parts += [(brand, 0), sp]
    who = [sp, ("for " + kind.who.removesuffix("'s").removesuffix("'"), 2)] if kind.who else []
    if who and r() < 0.7:
        parts += [(kind.who, 2), sp]
        who = []
    feats = [(title_case(a), s) for a, s in shown]
    material = [(mat, 2), sp] if mat else []
    style = r()
    if style < 0.45:  # Brand Who Desc Desc Material Head for Who, Feature with Feature for Feature
        for d in descs:
            parts += [(d, 1), sp]
        parts += [*material, (head, 2), *who]
        for text, slot in feats:
            if slot == 0:
                parts += [(", ", 1), (text, 2)]
            else:
                parts += [sp, (("with ", "for ")[slot - 1] + text, 2)]
        if qty:
            parts += [(", ", 1), (qty, 2)]
    elif style < 0.8:  # Brand Who Desc Material Head for Who, Desc, Feature, Feature, Qty
        parts += [(descs[0], 1), sp, *material, (head, 2), *who]
        if len(descs) > 1:
            parts += [(", ", 1), (descs[1], 1)]
        for text, _ in feats:
            parts += [(", ", 1), (text, 2)]
        if qty:
            parts += [(", ", 1), (qty, 2)]
    else:  # Brand Who Head for Who - Desc Material Noun Feature (Qty)
        parts += [(head, 2), *who, (" - ", 1)]
        for d in descs:
            parts += [(d, 1), sp]
        parts += [*material, (head.split()[-1], 2)]
        for text, slot in feats:
            parts += [sp, (("", "with ", "for ")[slot] + text, 2)]
        if qty:
            parts += [(" (", 1), (qty, 2), (")", 1)]
    name = "".join(t for t, _ in parts)
    return name, [n for t, mode in parts for n in noun_words(t, mode)]


def _bullets(
    prep: _Prepared,
    head: str,
    mat: str,
    qty: str,
    attrs: list[tuple[str, int]],
    shown: list[tuple[str, int]],
    rng: random.Random,
) -> list[str]:
    """3-7 bullet points: one per attribute (most of those in the title too), then extras."""
    kind, cat = prep.kind, prep.cat
    c = rng.choice
    dw = c(cat.design)
    bullets = []
    for a, s in attrs:
        if (a, s) in shown and rng.random() < 0.6:
            continue
        tpl = c((ADJ_BULLETS, WITH_BULLETS, FOR_BULLETS)[s])
        bullets.append(
            tpl.format(
                A=a.upper(), Ac=capitalized(a), a=a, DW=dw.upper(), dw=dw, h=head, b=c(cat.benefits)
            )
            + " "
        )
    n_extra = min(max(rng.randint(3, 7) - len(bullets), 0), len(prep.extras))
    if not n_extra:
        return bullets
    mats = [m.lower() for m in rng.sample(kind.mats, min(3, len(kind.mats)))] or [head]
    if mat:
        mats = [mat.lower(), *(m for m in mats if m != mat.lower())]
    mats += [mats[-1]] * (3 - len(mats))
    fill = {
        "mat": mats[0],
        "mat2": mats[1],
        "mat3": mats[2],
        "comp": _composition(mat or kind.mats[0], rng) if kind.category == "fashion" else "",
        "closure": c(CLOSURES),
        "pkg": qty or f"1 x {head}",
        "h": head,
        "w": rng.randint(10, 80),
        "d": rng.randint(8, 40),
        "ht": rng.randint(12, 60),
        "cap": c((50, 100, 150, 250, 300, 500)),
        "months": c((12, 18, 24, 36)),
        "spec": c(("5V/3A input", "20W output", "Bluetooth 5.3", "2.4GHz wireless", "1080P")),
    }
    bullets += [tpl.format(**fill) for tpl in rng.sample(prep.extras, n_extra)]
    tail = bullets[1:]
    rng.shuffle(tail)
    return bullets[:1] + tail


def _product(
    prep: _Prepared, asin: str, brand: str, rng: random.Random
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """One raw product, its ``items_ins_v2`` entry and its title nouns."""
    kind, cat = prep.kind, prep.cat
    r = rng.random
    c = rng.choice

    # attributes: 2-5, at least one of the type's own (listed first)
    k = rng.randint(2, 5)
    n_common = min(c((0, 0, 1, 1, 2)), k - 1, len(prep.common))
    attrs = rng.sample(prep.own, min(k - n_common, len(prep.own)))
    attrs += rng.sample(prep.common, n_common)

    head = c(kind.heads)
    descs = rng.sample(kind.descs, 2 if r() < 0.45 else 1)
    mat = c(kind.mats) if kind.mats and r() < 0.55 else ""
    qty = quantity_text(kind.qty, rng) if kind.qty and r() < 0.6 else ""
    shown = attrs[: (1 if r() < 0.5 else 2)] if r() < 0.85 else []
    name, nouns = _title(kind, brand, head, descs, mat, qty, shown, rng)
    h = _sentence_case(head)
    bullets = _bullets(prep, h, mat, qty, attrs, shown, rng)

    if r() < 0.3:
        description = ""
    else:
        fill = {
            "Brand": brand,
            "h": h,
            "mat": (mat or (kind.mats[0] if kind.mats else "")).lower(),
            "d": descs[0].lower(),
            "use": c([a for a, s in attrs if s == 2] or ["everyday use"]),
            "a1": next((a for a, s in attrs if s < 2), attrs[0][0]),
            "b": c(cat.benefits),
        }
        sentences = rng.sample(prep.descriptions, rng.randint(1, 3))
        description = " ".join(capitalized(t.format(**fill)) for t in sentences)

    raw = {
        "name": name,
        "full_description": description,
        "pricing": price_text(kind, rng),
        "images": [f"/images/{asin}.svg"],
        "product_category": c(kind.crumbs),
        "small_description": bullets,
        "customization_options": _options(kind, asin, rng),
        "asin": asin,
        "category": kind.category,
        "query": kind.query,
        "page": rng.randint(1, 10),
    }
    entry: dict[str, Any] = {"attributes": [a for a, _ in attrs]}
    if r() < 0.4:
        text, ins_attrs = _instruction(kind, attrs, rng)
        entry["instruction"] = text
        entry["instruction_attributes"] = ins_attrs
    return raw, entry, nouns


def _composition(mat: str, rng: random.Random) -> str:
    if rng.random() < 0.5:
        return f"100% {mat}"
    p = rng.choice((60, 65, 70, 80, 90, 92, 95, 96))
    return f"{p}% {mat}, {100 - p}% {rng.choice(('Spandex', 'Elastane', 'Polyester', 'Nylon'))}"


def generate_catalog(
    num_products: int = 5000, seed: int = 0
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]], dict[str, list[str]]]:
    """Generate ``num_products`` raw products with their ``items_ins_v2`` entries and title nouns.

    Returns ``(products, items_ins, title_nouns)``: the ``items_shuffle`` list, ``{asin: {...}}``
    and ``{asin: [noun, ...]}``, all in product order. Deterministic in ``(num_products, seed)``;
    the first ``n`` products of a larger catalogue are the ``n``-product catalogue.

    >>> raw, ins, nouns = generate_catalog(50, seed=3)
    >>> len(raw), len(ins), len(nouns), len({p["asin"] for p in raw})
    (50, 50, 50, 50)
    >>> all(n in p["name"].lower() for p in raw for n in nouns[p["asin"]])
    True
    """
    if num_products < 0:
        raise ValueError("num_products must be >= 0")
    rng = random.Random(seed)
    brands = _brands(rng)
    shares = [CATEGORY_SHARES[cat] for cat in CATEGORIES]
    cum = [sum(shares[: i + 1]) for i in range(len(shares))]
    products: list[dict[str, Any]] = []
    items_ins: dict[str, dict[str, Any]] = {}
    title_nouns: dict[str, list[str]] = {}
    used: set[str] = set()
    for _ in range(num_products):
        u = rng.random() * cum[-1]
        cat = next(CATEGORIES[i] for i, t in enumerate(cum) if u < t)
        prep = rng.choice(_PREPARED[cat])
        asin = "B0" + "".join(rng.choices(_ALNUM, k=8))
        while asin in used:
            asin = "B0" + "".join(rng.choices(_ALNUM, k=8))
        used.add(asin)
        raw, entry, nouns = _product(prep, asin, rng.choice(brands[cat]), rng)
        products.append(raw)
        items_ins[asin] = entry
        title_nouns[asin] = nouns
    return products, items_ins, title_nouns


def _gzip_json(obj: Any) -> bytes:
    """``obj`` as compact UTF-8 JSON, gzipped with no name and no timestamp (reproducible)."""
    data = json.dumps(obj, ensure_ascii=False, sort_keys=False, separators=(",", ":"))
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as f:
        f.write(data.encode("utf-8"))
    return buf.getvalue()


def write_data(out_dir: Path, num_products: int = 5000, seed: int = 0) -> list[Path]:
    """Write the catalogue's three gzipped files (:data:`DATA_FILES`) into ``out_dir``.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     paths = write_data(Path(d), num_products=20, seed=1)
    ...     [p.name for p in paths] == list(DATA_FILES)
    True
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, obj in zip(DATA_FILES, generate_catalog(num_products, seed), strict=True):
        path = out_dir / name
        path.write_bytes(_gzip_json(obj))
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> None:
    """Command line: write the catalogue (default: the shipped one) or ``--check`` it."""
    parser = argparse.ArgumentParser(
        prog="python -m agentenvs.webshop.generate",
        description="Generate the embedded WebShop catalogue in the official file formats.",
    )
    parser.add_argument("--out", type=Path, default=DATA_DIR, help="output directory")
    parser.add_argument("--num-products", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--check",
        action="store_true",
        help="regenerate into a temporary directory and compare bytes with the files in --out",
    )
    args = parser.parse_args(argv)
    if not args.check:
        for path in write_data(args.out, args.num_products, args.seed):
            print(f"{path} ({path.stat().st_size:,} bytes)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        fresh = write_data(Path(tmp), args.num_products, args.seed)
        bad = []
        for path in fresh:
            shipped = args.out / path.name
            if not shipped.is_file() or shipped.read_bytes() != path.read_bytes():
                bad.append(shipped)
    if bad:
        names = ", ".join(str(p) for p in bad)
        sys.exit(f"mismatch: {names} differ from a fresh generation; rerun without --check")
    print(f"ok: {len(fresh)} files in {args.out} match a fresh generation")


if __name__ == "__main__":
    main()
