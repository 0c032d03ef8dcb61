"""The WebShop catalogue: products processed from the official files, their prices and search texts.

This module holds :class:`Product` (one processed product), :class:`Catalog` (the products in
catalogue order with their sampled prices and title nouns), :func:`process_raw_product` (WebShop's
processing of one raw ``items_shuffle`` record), :func:`parse_pricing`, :func:`search_text` and
:func:`load_catalog` (the embedded generated catalogue, or the official files from a directory).

The processing rules (docs/webshop.md, "Catalogue"): the title is the raw ``name``; bullet points
are ``small_description`` (a list, or one string); the price text is ``$<p>`` or
``$<p0> to $<p1>`` from the numbers in ``pricing`` (``$100.0`` when it is empty); option names and
values are lower-cased and a ``/`` in a value becomes `` | ``; attributes come from the
``items_ins_v2`` file (``["DUMMY_ATTR"]`` when the product is absent there); reviews are empty and
every rating is ``N.A.``. Products with an asin of ``nan`` or longer than 10 characters, and
repeated asins, are skipped.

>>> raw = {"asin": "B0TEST0001", "name": "Acme Mug", "full_description": "A mug.",
...        "small_description": ["Ceramic "], "pricing": "$12.50 - $15",
...        "customization_options": {"Color": [{"value": "Black/White"}]},
...        "product_category": "Home › Kitchen", "category": "garden", "query": "Mugs ",
...        "images": ["/images/B0TEST0001.svg"]}
>>> p = process_raw_product(raw, {"B0TEST0001": {"attributes": ["dishwasher safe"]}})
>>> p.price_text, p.pricing, p.options, p.query, p.attributes
('$12.5 to $15.0', (12.5, 15.0), {'color': ['black | white']}, 'mugs', ('dishwasher safe',))
"""

from __future__ import annotations

import gzip
import json
import os
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "EMBEDDED_DIR",
    "Product",
    "Catalog",
    "parse_pricing",
    "process_raw_product",
    "process_document_product",
    "search_text",
    "load_catalog",
    "resolve_data_dir",
]

#: Where the embedded generated catalogue lives (``python -m agentenvs.webshop.generate`` rebuilds it).
EMBEDDED_DIR = Path(__file__).parent / "data"

_PRICE_CHARS = re.compile(r"[^\d.]")


@dataclass(frozen=True)
class Product:
    """One processed product (the fields WebShop's pages and reward read).

    ``options`` maps an option name to its values, both lower-cased, in the raw order;
    ``pricing`` holds the one or two numbers of the price (dollars); ``instruction`` and
    ``instruction_attributes`` are the synthetic-goal fields (``None`` for products without one);
    ``human_instructions`` the human-goal entries (``None`` unless loaded).
    """

    asin: str
    title: str
    description: str
    bullet_points: tuple[str, ...]
    price_text: str
    pricing: tuple[float, ...]
    options: dict[str, list[str]]
    attributes: tuple[str, ...]
    category: str
    query: str
    product_category: str
    main_image: str | None = None
    option_to_image: dict[str, str | None] = field(default_factory=dict)
    rating: str = "N.A."
    instruction: str | None = None
    instruction_attributes: tuple[str, ...] | None = None
    human_instructions: tuple[dict[str, Any], ...] | None = None


def parse_pricing(pricing: Any) -> tuple[tuple[float, ...], str]:
    """WebShop's price rule: ``(numbers, price text)`` from a raw ``pricing`` string or list.

    >>> parse_pricing("$1,299.00")
    ((1299.0,), '$1299.0')
    >>> parse_pricing("$19.99 - $27.99 - $30")
    ((19.99, 27.99), '$19.99 to $27.99')
    >>> parse_pricing("")
    ((100.0,), '$100.0')
    """
    if isinstance(pricing, (list, tuple)):
        values = tuple(float(v) for v in pricing)
    elif pricing:
        values = tuple(float(_PRICE_CHARS.sub("", piece)) for piece in str(pricing).split("$")[1:])
    else:
        values = ()
    if not values:
        return (100.0,), "$100.0"
    if len(values) == 1:
        return values, f"${values[0]}"
    return values[:2], f"${values[0]} to ${values[1]}"


def _options(raw_options: Any) -> tuple[dict[str, list[str]], dict[str, str | None]]:
    options: dict[str, list[str]] = {}
    option_to_image: dict[str, str | None] = {}
    for name, values in (raw_options or {}).items():
        if values is None:
            continue
        key = name.lower()
        options[key] = []
        for entry in values:
            value = entry["value"].strip().replace("/", " | ").lower()
            options[key].append(value)
            option_to_image[value] = entry.get("image") or None
    return options, option_to_image


def _goal_fields(asin: str, ins: Mapping[str, Any], human: Mapping[str, Any] | None) -> dict:
    entry = ins.get(asin, {})
    attrs = entry.get("instruction_attributes")
    human_entries = (human or {}).get(asin)
    return {
        "attributes": tuple(entry.get("attributes", ["DUMMY_ATTR"])),
        "instruction": entry.get("instruction"),
        "instruction_attributes": None if attrs is None else tuple(attrs),
        "human_instructions": None if human_entries is None else tuple(human_entries),
    }


def process_raw_product(
    raw: Mapping[str, Any],
    ins: Mapping[str, Any],
    human: Mapping[str, Any] | None = None,
) -> Product:
    """One raw ``items_shuffle`` record processed as WebShop does (see the module doc)."""
    bullets = raw.get("small_description")
    bullets = bullets if isinstance(bullets, list) else [bullets or ""]
    pricing, price_text = parse_pricing(raw.get("pricing"))
    options, option_to_image = _options(raw.get("customization_options"))
    images = raw.get("images") or []
    return Product(
        asin=raw["asin"],
        title=raw.get("name") or "",
        description=raw.get("full_description") or "",
        bullet_points=tuple(bullets),
        price_text=price_text,
        pricing=pricing,
        options=options,
        option_to_image=option_to_image,
        category=raw.get("category") or "",
        query=(raw.get("query") or "").lower().strip(),
        product_category=raw.get("product_category") or "",
        main_image=images[0] if images else None,
        **_goal_fields(raw["asin"], ins, human),
    )


def process_document_product(
    product: Mapping[str, Any],
    ins: Mapping[str, Any],
    human: Mapping[str, Any] | None = None,
) -> Product:
    """A product already processed by WebShop (the ``product`` of a ``documents.jsonl`` line)."""
    return Product(
        asin=product["asin"],
        title=product["Title"],
        description=product.get("Description") or "",
        bullet_points=tuple(product.get("BulletPoints") or []),
        price_text=product["Price"],
        pricing=tuple(float(v) for v in product["pricing"]) or (100.0,),
        options={k: list(v) for k, v in (product.get("options") or {}).items()},
        option_to_image=dict(product.get("option_to_image") or {}),
        category=product.get("category") or "",
        query=(product.get("query") or "").lower().strip(),
        product_category=product.get("product_category") or "",
        main_image=product.get("MainImage"),
        **_goal_fields(product["asin"], ins, human),
    )


def search_text(product: Product) -> str:
    """The product's search document: title, description, first bullet point and options.

    >>> p = Product("B0X", "Red Mug", "", ("Big ",), "$1.0", (1.0,), {"size": ["s", "m"]},
    ...             ("DUMMY_ATTR",), "garden", "mugs", "Home")
    >>> search_text(p)
    'red mug  big  size: s, m'
    """
    first = product.bullet_points[0] if product.bullet_points else ""
    option_text = ", and ".join(f"{k}: {', '.join(v)}" for k, v in product.options.items())
    return " ".join([product.title, product.description, first, option_text]).lower()


class Catalog:
    """Products in catalogue order, with one sampled price each and optional title nouns.

    Args:
        products: processed products (catalogue order, unique asins).
        title_nouns: asin -> the NOUN/PROPN tokens of its title (lower-cased, duplicates kept),
            e.g. the embedded catalogue's shipped lists; ``None`` when there are none.
        rng: the random stream that draws the prices (a product priced as a range gets a
            uniform draw inside it, in catalogue order); the goal builder continues the stream.
    """

    def __init__(
        self,
        products: Sequence[Product],
        title_nouns: Mapping[str, Sequence[str]] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.products = list(products)
        self.by_asin = {p.asin: p for p in self.products}
        self.title_nouns = {k: tuple(v) for k, v in (title_nouns or {}).items()}
        rng = rng if rng is not None else random.Random(233)
        self.prices = {p.asin: _draw_price(p.pricing, rng) for p in self.products}
        self.rng = rng

    def __len__(self) -> int:
        return len(self.products)

    def __getitem__(self, asin: str) -> Product:
        return self.by_asin[asin]

    def __contains__(self, asin: object) -> bool:
        return asin in self.by_asin


def _draw_price(pricing: Sequence[float], rng: random.Random) -> float:
    if len(pricing) >= 2:
        return rng.uniform(pricing[0], pricing[1])
    return float(pricing[0]) if pricing else 100.0


def _keep(asins: Iterable[str]) -> list[bool]:
    seen: set[str] = set()
    keep = []
    for asin in asins:
        ok = asin != "nan" and len(asin) <= 10 and asin not in seen
        seen.add(asin)
        keep.append(ok)
    return keep


def _read_json(path: Path) -> Any:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        if ".jsonl" in path.name:
            return [json.loads(line) for line in f if line.strip()]
        return json.load(f)


def _first(directory: Path, names: Sequence[str]) -> Path | None:
    for name in names:
        for candidate in (directory / name, directory / f"{name}.gz"):
            if candidate.is_file():
                return candidate
    return None


_PRODUCT_FILES = (
    "items_shuffle.json",
    "items_shuffle_1000.json",
    "documents.jsonl",
    "products_100.jsonl",
)
_ATTRIBUTE_FILES = ("items_ins_v2.json", "items_ins_v2_1000.json")


def resolve_data_dir(data_path: str | os.PathLike | None) -> Path:
    """``data_path``, else ``$WEBSHOP_DATA``, else the embedded catalogue; ``"embedded"`` forces it."""
    if data_path is None:
        data_path = os.environ.get("WEBSHOP_DATA") or "embedded"
    if str(data_path) == "embedded":
        return EMBEDDED_DIR
    directory = Path(data_path).expanduser()
    if not directory.is_dir():
        raise FileNotFoundError(f"WebShop data directory {str(directory)!r} does not exist")
    return directory


def load_catalog(
    data_path: str | os.PathLike | None = None,
    *,
    num_products: int | None = None,
    human_goals: bool = False,
    seed: int = 233,
) -> Catalog:
    """Load and process a WebShop catalogue (see :func:`resolve_data_dir` for ``data_path``).

    The directory holds, by the official names (each also read gzipped): the products
    (``items_shuffle.json``, ``items_shuffle_1000.json``, or processed ``documents.jsonl`` /
    ``products_100.jsonl``), the attributes and synthetic instructions (``items_ins_v2.json`` or
    ``items_ins_v2_1000.json``), optionally ``items_human_ins.json`` (read only when
    ``human_goals``) and ``title_nouns.json``. ``num_products`` truncates the raw list before
    filtering. Prices are drawn from ``random.Random(seed)`` (WebShop's canonical 233).
    """
    directory = resolve_data_dir(data_path)
    product_file = _first(directory, _PRODUCT_FILES)
    if product_file is None:
        raise FileNotFoundError(
            f"no WebShop product file ({', '.join(_PRODUCT_FILES)}) in {str(directory)!r}"
        )
    attribute_file = _first(directory, _ATTRIBUTE_FILES)
    ins = _read_json(attribute_file) if attribute_file else {}
    human = None
    if human_goals:
        human_file = _first(directory, ("items_human_ins.json",))
        if human_file is None:
            raise FileNotFoundError(f"human_goals=True needs items_human_ins.json in {directory}")
        human = _read_json(human_file)
    records = _read_json(product_file)
    if num_products is not None:
        records = records[:num_products]
    documents = ".jsonl" in product_file.name
    if documents:
        records = [r["product"] for r in records]
    process = process_document_product if documents else process_raw_product
    asins = [str(r.get("asin")) for r in records]
    products = [process(r, ins, human) for r, ok in zip(records, _keep(asins), strict=True) if ok]
    nouns_file = _first(directory, ("title_nouns.json",))
    nouns = _read_json(nouns_file) if nouns_file else None
    return Catalog(products, nouns, random.Random(seed))
