"""WebShop goals: what the shopper is asked to buy, built the way WebShop builds them.

This module holds :class:`Goal`, :func:`synthetic_goals` (one goal per option combination of every
product with a synthetic instruction, plus a price ceiling), :func:`human_goals` (the human-written
instructions), :func:`canonical_goals` (the fixed, shuffled list whose index is the task id) and
:data:`PRICE_RANGE`.

The canonical list (docs/webshop.md, "Goals") follows one private random stream seeded with 233:
the catalogue's prices are drawn first (:class:`~agentenvs.webshop.catalog.Catalog`), then each
goal product's price ceiling (two of the next four multiples of ten above its price, keeping the
larger; none above 970 dollars), then the stream is re-seeded with 233 and the goals shuffled. So
the same index is the same goal on every machine and in every worker (verl-agent draws one list
per worker instead).
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from agentenvs.webshop.catalog import Catalog, Product

__all__ = ["PRICE_RANGE", "Goal", "synthetic_goals", "human_goals", "canonical_goals"]

#: Candidate price ceilings in dollars: 10, 20, ..., 990.
PRICE_RANGE = tuple(10.0 * i for i in range(1, 100))
_NO_CEILING = 1_000_000.0


@dataclass(frozen=True)
class Goal:
    """One shopping goal.

    ``goal_options`` is a ``{name: value}`` dict for synthetic goals and a list of values for human
    goals; ``price_upper`` is in dollars (1,000,000 when the instruction names no price);
    ``weight`` is the sampling weight WebShop gives the goal (rarer attributes weigh more).
    """

    asin: str
    instruction_text: str
    attributes: tuple[str, ...]
    goal_options: dict[str, str] | tuple[str, ...]
    price_upper: float
    name: str
    query: str
    category: str
    product_category: str
    weight: float = 1.0

    def as_dict(self) -> dict[str, Any]:
        """The goal as JSON-ready data (what ``info["goal"]`` shows)."""
        options = (
            dict(self.goal_options)
            if isinstance(self.goal_options, dict)
            else list(self.goal_options)
        )
        return {
            "asin": self.asin,
            "instruction_text": self.instruction_text,
            "attributes": list(self.attributes),
            "goal_options": options,
            "price_upper": self.price_upper,
            "query": self.query,
        }


def _price_ceiling(price: float, rng: random.Random) -> tuple[float, str]:
    candidates = [p for p in PRICE_RANGE if p > price][:4]
    if len(candidates) < 2:
        return _NO_CEILING, ""
    upper = max(rng.sample(candidates, 2))
    return upper, f", and price lower than {upper:.2f} dollars"


def _goal(
    product: Product,
    text: str,
    attributes: Sequence[str],
    options: dict[str, str] | tuple[str, ...],
    upper: float,
) -> Goal:
    return Goal(
        asin=product.asin,
        instruction_text=text,
        attributes=tuple(attributes),
        goal_options=options,
        price_upper=upper,
        name=product.title,
        query=product.query,
        category=product.category,
        product_category=product.product_category,
    )


def synthetic_goals(catalog: Catalog, rng: random.Random) -> list[Goal]:
    """Goals from the synthetic instructions, in catalogue order, weighted by attribute rarity.

    A product with options gets one goal per combination of option values (option names in
    alphabetical order), its instruction followed by ``with name: value, and ...`` and the price
    clause.
    """
    goals: list[Goal] = []
    for product in catalog.products:
        if product.instruction is None:
            continue
        if not product.instruction_attributes:
            raise ValueError(f"product {product.asin} has an instruction but no attributes")
        upper, price_text = _price_ceiling(catalog.prices[product.asin], rng)
        names = sorted(product.options)
        for values in itertools.product(*(product.options[n] for n in names)):
            options = dict(zip(names, values, strict=True))
            option_text = (
                " with " + ", and ".join(f"{k}: {v}" for k, v in options.items()) if options else ""
            )
            text = product.instruction + option_text + price_text
            goals.append(_goal(product, text, product.instruction_attributes, options, upper))
    counts = Counter(a for g in goals for a in g.attributes)
    return [
        replace(g, weight=sum(1.0 / counts[a] for a in g.attributes) / len(g.attributes))
        for g in goals
    ]


def human_goals(catalog: Catalog, rng: random.Random) -> list[Goal]:
    """Goals from the human instructions (``items_human_ins.json``), in catalogue order."""
    goals: list[Goal] = []
    for product in catalog.products:
        for entry in product.human_instructions or ():
            attributes = entry.get("instruction_attributes") or []
            if not attributes:
                continue
            upper, price_text = _price_ceiling(catalog.prices[product.asin], rng)
            text = entry["instruction"].strip(".") + price_text
            options = tuple(entry.get("instruction_options") or ())
            goals.append(_goal(product, text, attributes, options, upper))
    return goals


def canonical_goals(catalog: Catalog, *, human: bool = False, seed: int = 233) -> list[Goal]:
    """The canonical goal list: built from the catalogue's random stream, then shuffled with ``seed``.

    ``catalog.rng`` must be the stream that drew the catalogue's prices (as
    :func:`~agentenvs.webshop.catalog.load_catalog` leaves it).
    """
    goals = (human_goals if human else synthetic_goals)(catalog, catalog.rng)
    rng = random.Random(seed)
    rng.shuffle(goals)
    return goals
