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
options and price range. Brands are invented. All randomness comes from one private
``random.Random(seed)``, and nothing iterates over a set, so the output does not depend on the
machine, the Python hash seed or the global random state.

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
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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

_SEP = " \u203a "  # Amazon's breadcrumb separator
_ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"

# ---------------------------------------------------------------------------------------------
# Option value pools (Amazon casing; every pool is distinct after lower-casing).
# ---------------------------------------------------------------------------------------------

_POOLS: dict[str, tuple[str, ...]] = {
    k: tuple(v.split("|"))
    for k, v in {
        "apparel": "Black|White|Navy Blue|Light Blue|Heather Grey|Charcoal|Wine Red|Burgundy|"
        "Olive Green|Army Green|Khaki|Beige|Pink|Light Pink|Dusty Rose|Mustard Yellow|"
        "Royal Blue|Sky Blue|Lavender|Purple|Coffee|Brown|Apricot|Floral Print|Leopard|"
        "Black/White|White/Navy|Grey/Pink|Multicolor|Rust|Sage Green|Teal",
        "shoes": "Black|White|Black/White|All Black|Grey|Navy|Beige|Tan|Brown|Pink|Red|"
        "Blue/Grey|White/Silver|Khaki|Olive|Light Grey",
        "wash": "Dark Wash|Medium Wash|Light Wash|Black|Vintage Blue|Stone Wash|Grey Wash|Indigo",
        "sock": "Black|White|Grey|Navy|Black/Grey|Assorted Colors|Brown|Multicolor",
        "leather": "Black|Brown|Dark Brown|Tan|Cognac|Navy|Grey|Black/Red",
        "jewel": "Gold|Silver|Rose Gold|Two Tone|Black|Gold/Black|Silver/Blue",
        "lens": "Black/Grey|Gold/Green|Silver/Blue|Tortoise/Brown|Matte Black|Clear/Pink|"
        "Gunmetal/Smoke|Brown/Amber",
        "gear": "Black|White|Silver|Space Gray|Blue|Red|Pink|Green|Rose Gold|Purple|"
        "Navy Blue|Clear|Black/Red|Grey/Black|Midnight Green|Lavender",
        "home": "White|Grey|Dark Grey|Beige|Navy|Black|Walnut|Natural|Rustic Brown|Espresso|"
        "Oak|Cream|Sage Green|Emerald Green|Blush Pink|Taupe|Charcoal|Light Grey|Gold|"
        "Black/Gold|White/Oak|Teal",
        "lip": "Nude|Ruby Red|Berry|Coral|Mauve|Pink Nude|Brick Red|Plum|Rosewood|Cherry|"
        "Peach|Wine",
        "skin": "Fair|Ivory|Porcelain|Light Beige|Natural Beige|Warm Sand|Honey|Caramel|Tan|"
        "Mocha|Chestnut|Deep",
        "nail": "Classic Red|Ballet Pink|Nude Beige|Coral Crush|Midnight Blue|Lilac|Mint|"
        "Black|White|Glitter Gold|Berry|Cherry Red|Taupe",
        "hair": "Jet Black|Natural Black|Dark Brown|Medium Brown|Light Brown|Auburn|"
        "Copper Red|Dark Blonde|Light Ash Blonde|Platinum Blonde|Burgundy",
        "eye": "Black|Brown|Brown/Black|Navy|Taupe|Soft Brown|Dark Brown|Plum",
        "alpha": "X-Small|Small|Medium|Large|X-Large|XX-Large|3X-Large",
        "wshoe": "5|5.5|6|6.5|7|7.5|8|8.5|9|9.5|10|10.5|11",
        "mshoe": "7|7.5|8|8.5|9|9.5|10|10.5|11|11.5|12|13",
        "mjeans": "28W x 30L|30W x 30L|30W x 32L|32W x 30L|32W x 32L|34W x 32L|34W x 34L|"
        "36W x 32L|38W x 32L|40W x 30L",
        "wnum": "0|2|4|6|8|10|12|14|16|18",
        "kids": "2T|3T|4T|5|6|7|8|10|12",
        "baby": "0-3 Months|3-6 Months|6-9 Months|9-12 Months|12-18 Months|18-24 Months",
        "bed": "Twin|Twin XL|Full|Queen|King|California King",
        "curtain": '42" W x 63" L|42" W x 84" L|52" W x 63" L|52" W x 84" L|52" W x 95" L|'
        '52" W x 108" L',
        "rug": "2' x 3'|3' x 5'|4' x 6'|5' x 7'|6' x 9'|8' x 10'|2' x 8' Runner",
        "art": "12x16 Inch|16x24 Inch|20x30 Inch|24x36 Inch|12x16 Inch x 3 Panels",
        "cable": "1 Foot|3 Feet|6 Feet|10 Feet|15 Feet|25 Feet",
        "gb": "32GB|64GB|128GB|256GB|512GB",
        "band": "38mm/40mm/41mm|42mm/44mm/45mm|49mm",
        "phone": "5.4 Inch|6.1 Inch|6.1 Inch Pro|6.7 Inch|6.7 Inch Max|6.5 Inch",
        "packs": "1-Pack|2-Pack|3-Pack|4-Pack|6-Pack",
        "count": "1|2|3|4|6|12",
        "bsize": "1 Fl Oz (Pack of 1)|1.7 Fl Oz|3.4 Fl Oz|8 Fl Oz (Pack of 2)|12 Fl Oz|16 Fl Oz|"
        "33.8 Fl Oz|8 Ounce (Pack of 2)",
        "gsize": "12 Ounce (Pack of 1)|12 Ounce (Pack of 6)|1 Pound|2 Pound (Pack of 1)|"
        "5.3 Ounce (Pack of 12)|24 Count|48 Count|1.5 Ounce (Pack of 24)|16 Ounce (Pack of 3)",
        "scent": "Lavender|Eucalyptus Mint|Vanilla Coconut|Unscented|Fresh Linen|Citrus|Rose|"
        "Sandalwood|Cucumber Melon|Ocean Breeze|Cherry Blossom|Tea Tree Mint",
        "mscent": "Cedarwood|Sandalwood|Unscented|Bay Rum|Pine Forest|Citrus Vetiver",
        "lipflav": "Vanilla|Mint|Strawberry|Honey|Cherry|Unflavored|Coconut",
        "pattern": "Marble|Floral|Clear|Leopard|Striped|Geometric|Plaid|Solid|Tie Dye|"
        "Camouflage|Sunflower|Starry Sky",
    }.items()
}

# ---------------------------------------------------------------------------------------------
# Categories and product types.
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Category:
    name: str
    root: str  # the first breadcrumb
    p_options: float  # the share of products with customization options
    design: tuple[str, ...]  # what bullets call the product's make
    benefits: tuple[str, ...]


@dataclass(frozen=True)
class _Kind:
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


_CATS = {
    c.name: c
    for c in (
        _Category(
            "fashion",
            "Clothing, Shoes & Jewelry",
            0.8,
            ("design", "fabric", "fit"),
            ("all day comfort", "a flattering fit", "lasting softness", "easy styling"),
        ),
        _Category(
            "beauty",
            "Beauty & Personal Care",
            0.35,
            ("formula", "blend", "design"),
            ("visible results", "a gentle feel", "lasting care", "a salon finish"),
        ),
        _Category(
            "garden",
            "Home & Kitchen",
            0.45,
            ("design", "construction", "build"),
            ("lasting durability", "a clean modern look", "easy everyday use", "cozy style"),
        ),
        _Category(
            "electronics",
            "Electronics",
            0.4,
            ("design", "engineering", "build"),
            ("reliable performance", "a stable connection", "long service life", "clear sound"),
        ),
        _Category(
            "grocery",
            "Grocery & Gourmet Food",
            0.35,
            ("recipe", "blend", "formula"),
            ("great taste", "wholesome goodness", "fresh flavor", "rich aroma"),
        ),
    )
}

#: Attributes shared by every type of a product family (see :func:`_family`), per instruction
#: slot: before the type, after "with", after "for".
# fmt: off
_COMMON: dict[str, tuple[str, str, str]] = {
    "apparel": ("machine wash|hand wash|regular fit|quick drying",
                "soft material|cotton blend|polyester spandex", "daily wear|casual wear"),
    "shoes": ("comfortable fit|durable", "rubber sole|padded insole", "daily wear|casual wear"),
    "accessories": ("high quality|lightweight", "gift box", "daily wear|gift"),
    "beauty": ("cruelty free|paraben free|long lasting|dermatologist tested|non toxic|travel size",
               "natural ingredients|essential oils|vitamin e", "daily use"),
    "beauty tools": ("easy carry|high quality|easy use|easy clean", "storage case",
                     "daily use|gift"),
    "furniture": ("easy assemble|easy clean|heavy duty|space saving", "storage space|metal frame",
                  "everyday use"),
    "home": ("easy clean|high quality|eco friendly", "gift box", "everyday use|gift"),
    "electronics": ("high performance|easy use|easy carry", "carrying case",
                    "everyday use|gift"),
    "grocery": ("gluten free|non gmo|usda organic|keto friendly|kosher certified",
                "natural ingredients", "gift"),
}
# fmt: on
_FASHION_ACCESSORIES = (
    "women's handbags",
    "men's wallets",
    "women's watches",
    "women's necklaces",
    "sunglasses",
    "baseball caps",
)


def _kind(
    category: str,
    query: str,
    crumb: str,
    heads: str,
    descs: str,
    mats: str,
    adj: str,
    with_: str,
    for_: str,
    options: str = "",
    price: str = "10-50",
    qty: str = "",
    who: str = "",
) -> _Kind:
    """One product type from its compact spec ("|" separates alternatives)."""
    root = _CATS[category].root
    crumbs: list[str] = []
    for full in crumb.split(";"):
        if not full.startswith(("Cell Phones", "Patio", "Tools & Home")):
            full = root + _SEP + full
        *path, last = full.split(_SEP)
        crumbs += [_SEP.join([*path, leaf]) for leaf in last.split("|")]
    attrs = [(a, slot) for slot, s in enumerate((adj, with_, for_)) for a in s.split("|") if a]
    groups = []
    for spec in filter(None, options.split(";")):
        name, rest = spec.split("=")
        pool, counts = rest.rsplit(":", 1)
        contiguous = counts.endswith("c")
        lo, hi = counts.rstrip("c").split("-")
        values = tuple(pool.split(",")) if "," in pool else _POOLS[pool]
        groups.append((name, values, int(lo), min(int(hi), len(values)), contiguous))
    lo, hi = price.split("-")
    return _Kind(
        category,
        query,
        tuple(crumbs),
        tuple(heads.split("|")),
        tuple(descs.split("|")),
        tuple(m for m in mats.split("|") if m),
        tuple(attrs),
        tuple(groups),
        (float(lo), float(hi)),
        qty,
        who,
    )


_F, _B, _G, _E, _R = "fashion", "beauty", "garden", "electronics", "grocery"

# fmt: off
_KINDS: tuple[_Kind, ...] = (
    # --- fashion ---------------------------------------------------------------------------------
    _kind(_F, "women's dresses", "Women › Clothing › Dresses › Casual|Maxi|Wrap|Cocktail",
          "Dress|Maxi Dress|Midi Dress|Sundress|Wrap Dress|Shift Dress",
          "Casual|Floral|Sleeveless|Boho|Elegant|Ruffled|Smocked|Tiered|Flowy",
          "Chiffon|Cotton|Rayon|Linen|Knit|Satin",
          "loose fit|slim fit|knee length|flowy",
          "elastic waist|short sleeve|long sleeve|side pockets|v neck|tie waist",
          "beach party|wedding guest|cocktail party|summer vacation",
          "Color=apparel:2-7;Size=alpha:3-6c", "18-75", who="Women's"),
    _kind(_F, "women's tops, tees & blouses",
          "Women › Clothing › Tops, Tees & Blouses › T-Shirts|Blouses & Button-Down Shirts|Tunics"
          "|Tanks & Camis",
          "T-Shirt|Blouse|Tunic Top|Tank Top|Henley Top|Peplum Top",
          "Casual|Loose|Crewneck|Oversized|Basic|Pleated|Lace|Striped",
          "Cotton|Modal|Chiffon|Rayon|Jersey Knit",
          "loose fit|slim fit|button down|tunic length",
          "short sleeve|long sleeve|round neck|button closure|lace trim",
          "office work|teen girls|summer outings",
          "Color=apparel:2-7;Size=alpha:3-6c", "12-45", who="Women's"),
    _kind(_F, "men's t-shirts", "Men › Clothing › Shirts › T-Shirts",
          "T-Shirt|Tee|Graphic Tee|Pocket Tee|Crew Neck Tee|V Neck Tee",
          "Classic|Heavyweight|Athletic|Vintage|Basic|Soft",
          "Cotton|Cotton Jersey|Tri Blend|Polyester",
          "moisture wicking|pre shrunk|slim fit|heavy weight",
          "cotton jersey|chest pocket|crew neck|short sleeve|ribbed collar",
          "gym workout|outdoor work|lounging",
          "Color=apparel:2-7;Size=alpha:3-6c", "9-35", "pack", "Men's"),
    _kind(_F, "men's casual button-down shirts",
          "Men › Clothing › Shirts › Casual Button-Down Shirts",
          "Button Down Shirt|Oxford Shirt|Flannel Shirt|Linen Shirt|Dress Shirt",
          "Casual|Plaid|Classic|Striped|Solid|Brushed",
          "Cotton|Linen|Flannel|Oxford Cloth|Chambray",
          "wrinkle free|slim fit|easy care",
          "button closure|long sleeve|chest pocket|spread collar|roll up sleeves",
          "business casual|beach vacation|date night",
          "Color=apparel:2-6;Size=alpha:3-6c", "18-60", who="Men's"),
    _kind(_F, "men's jeans", "Men › Clothing › Jeans",
          "Jeans|Straight Jeans|Slim Jeans|Denim Jeans|Bootcut Jeans|Relaxed Jeans",
          "Classic|Stretch|Distressed|Vintage|Rugged|Washed",
          "Denim|Stretch Denim|Cotton Denim",
          "straight leg|slim fit|classic fit",
          "stretch denim|zipper fly|five pockets|button closure",
          "work wear|weekend outings",
          "Color=wash:2-5;Size=mjeans:3-7c", "24-80", who="Men's"),
    _kind(_F, "women's jeans", "Women › Clothing › Jeans",
          "Skinny Jeans|Mom Jeans|Flare Jeans|Boyfriend Jeans|Straight Jeans|Wide Leg Jeans",
          "High Rise|Ripped|Stretch|Vintage|Distressed|Cropped",
          "Denim|Stretch Denim|Cotton Denim",
          "high waist|butt lifting|slim fit|wide leg",
          "stretch denim|ripped knees|frayed hem|button fly",
          "casual outings|teen girls|fall season",
          "Color=wash:2-5;Size=wnum:3-7c", "22-70", who="Women's"),
    _kind(_F, "women's leggings", "Women › Clothing › Active › Leggings|Yoga Pants",
          "Leggings|Yoga Pants|Capri Leggings|Workout Leggings|Fleece Lined Leggings",
          "High Waisted|Seamless|Buttery Soft|Compression|Athletic|Ribbed",
          "Nylon Spandex|Polyester Spandex|Brushed Fabric|Cotton Spandex",
          "high waist|tummy control|squat proof|butt lifting|moisture wicking",
          "hidden pocket|four way stretch|side pockets|wide waistband",
          "yoga workout|running|gym workout|pilates",
          "Color=apparel:2-7;Size=alpha:3-6c", "14-45", "pack", "Women's"),
    _kind(_F, "men's shorts", "Men › Clothing › Shorts › Cargo|Athletic|Flat Front",
          "Shorts|Cargo Shorts|Chino Shorts|Athletic Shorts|Board Shorts|Running Shorts",
          "Casual|Classic|Lightweight|Stretch|Relaxed|Quick Dry",
          "Cotton Twill|Polyester|Ripstop|Nylon",
          "relaxed fit|flat front|lightweight",
          "elastic waist|drawstring closure|zipper pockets|cargo pockets|inner liner",
          "summer beach|gym workout|hiking|golf",
          "Color=apparel:2-6;Size=alpha:3-6c", "15-45", who="Men's"),
    _kind(_F, "men's hoodies & sweatshirts",
          "Men › Clothing › Active › Active Hoodies|Active Sweatshirts",
          "Hoodie|Pullover Hoodie|Zip Up Hoodie|Sweatshirt|Crewneck Sweatshirt",
          "Heavyweight|Casual|Athletic|Oversized|Basic|Vintage",
          "Fleece|Cotton Blend|French Terry|Sherpa",
          "fleece lined|heavy weight|oversized fit",
          "kangaroo pocket|drawstring hood|ribbed cuffs|full zip|long sleeve",
          "cold weather|outdoor sports|lounging",
          "Color=apparel:2-7;Size=alpha:3-6c", "20-60", who="Men's"),
    _kind(_F, "women's sweaters", "Women › Clothing › Sweaters › Pullovers|Cardigans|Turtlenecks",
          "Sweater|Cardigan|Pullover Sweater|Turtleneck Sweater|Knit Sweater|Sweater Vest",
          "Oversized|Chunky|Cozy|Cropped|Casual|Cable|Slouchy",
          "Acrylic|Wool Blend|Cotton Knit|Cashmere Blend|Mohair",
          "oversized fit|soft knit|open front",
          "cable knit|long sleeve|drop shoulder|button front|ribbed trim",
          "fall winter|office wear|holiday party",
          "Color=apparel:2-7;Size=alpha:3-6c", "22-65", who="Women's"),
    _kind(_F, "women's coats & jackets",
          "Women › Clothing › Coats, Jackets & Vests › Down & Parkas|Trench, Rain & Anoraks"
          "|Denim Jackets|Fleece",
          "Jacket|Puffer Jacket|Trench Coat|Denim Jacket|Rain Jacket|Fleece Jacket|Wool Coat",
          "Quilted|Hooded|Lightweight|Cropped|Oversized|Packable|Belted",
          "Polyester|Denim|Wool Blend|Nylon|Fleece|Faux Fur",
          "water resistant|windproof|packable",
          "zipper closure|detachable hood|quilted lining|zip pockets|faux fur collar",
          "cold weather|outdoor travel|rainy days|winter commute",
          "Color=apparel:2-6;Size=alpha:3-6c", "35-160", who="Women's"),
    _kind(_F, "men's coats & jackets",
          "Men › Clothing › Jackets & Coats › Down & Down Alternative|Active & Performance"
          "|Lightweight Jackets|Leather & Faux Leather",
          "Bomber Jacket|Softshell Jacket|Parka|Windbreaker|Down Jacket|Leather Jacket"
          "|Field Jacket",
          "Hooded|Insulated|Tactical|Classic|Lightweight|Military|Vintage",
          "Nylon|Polyester|Faux Leather|Cotton Canvas|Fleece",
          "water resistant|windproof|breathable|insulated",
          "fleece lining|zip pockets|removable hood|storm flap|ribbed cuffs",
          "hiking|winter sports|cold weather|motorcycle riding",
          "Color=apparel:2-6;Size=alpha:3-6c", "40-200", who="Men's"),
    _kind(_F, "women's sneakers", "Women › Shoes › Fashion Sneakers|Walking|Running",
          "Sneakers|Running Shoes|Walking Shoes|Slip On Sneakers|Platform Sneakers|Tennis Shoes",
          "Lightweight|Casual|Breathable|Comfortable|Chunky|Classic|Knit",
          "Mesh|Canvas|Knit Fabric|Leather|Suede",
          "non slip|lightweight|slip on|lace up",
          "arch support|memory foam|breathable mesh|rubber sole|cushioned insole",
          "walking|running|gym workout|travel",
          "Color=shoes:2-6;Size=wshoe:4-9c", "25-90", who="Women's"),
    _kind(_F, "men's sneakers", "Men › Shoes › Fashion Sneakers|Running|Basketball",
          "Sneakers|Running Shoes|Trail Running Shoes|Tennis Shoes|Basketball Shoes|Walking Shoes",
          "Athletic|Casual|Lightweight|Breathable|Classic|Retro",
          "Mesh|Canvas|Knit Fabric|Leather|Suede",
          "non slip|shock absorbing|lightweight|lace up",
          "arch support|rubber sole|breathable mesh|padded collar|cushioned insole",
          "running|basketball|gym workout|trail running",
          "Color=shoes:2-6;Size=mshoe:4-9c", "30-130", who="Men's"),
    _kind(_F, "women's sandals", "Women › Shoes › Sandals › Flat Sandals|Slides|Wedge Sandals",
          "Sandals|Slide Sandals|Flip Flops|Wedge Sandals|Gladiator Sandals|Platform Sandals",
          "Summer|Strappy|Casual|Braided|Bohemian|Comfort",
          "Faux Leather|Cork|Rubber|Suede|Woven Straw",
          "open toe|non slip|adjustable strap",
          "ankle strap|cushioned footbed|arch support|buckle closure|faux leather",
          "beach vacation|summer|pool party",
          "Color=shoes:2-6;Size=wshoe:4-9c", "15-55", who="Women's"),
    _kind(_F, "women's boots", "Women › Shoes › Boots › Ankle & Bootie|Knee-High|Rain|Chelsea",
          "Ankle Boots|Chelsea Boots|Knee High Boots|Rain Boots|Combat Boots|Cowboy Boots",
          "Chunky|Western|Classic|Lace Up|Slouchy|Winter",
          "Faux Suede|Faux Leather|Rubber|Leather",
          "round toe|anti slip|water resistant|pointed toe",
          "side zipper|block heel|faux suede|faux fur lining|lug sole",
          "fall winter|rainy days|country concert",
          "Color=shoes:2-6;Size=wshoe:4-9c", "30-110", who="Women's"),
    _kind(_F, "men's boots", "Men › Shoes › Boots › Work & Safety|Chukka|Hiking|Chelsea",
          "Work Boots|Hiking Boots|Chukka Boots|Chelsea Boots|Snow Boots|Combat Boots",
          "Rugged|Classic|Tactical|Insulated|Waterproof|Lace Up",
          "Full Grain Leather|Suede|Nubuck|Leather",
          "steel toe|slip resistant|lace up|waterproof",
          "rubber sole|ankle support|padded collar|composite toe",
          "construction work|hiking|outdoor work|snow",
          "Color=shoes:2-5;Size=mshoe:4-9c", "45-180", who="Men's"),
    _kind(_F, "women's pumps", "Women › Shoes › Pumps",
          "Pumps|Stiletto Pumps|Kitten Heel Pumps|Slingback Pumps|Block Heel Pumps",
          "Classic|Elegant|Pointed|Sexy|Sleek|Dressy",
          "Patent Leather|Suede|Faux Leather|Satin",
          "pointed toe|slip on|high heel|closed toe",
          "ankle strap|padded insole|patent leather|stiletto heel",
          "office work|wedding party|evening party|prom",
          "Color=shoes:2-6;Size=wshoe:4-9c", "25-95", who="Women's"),
    _kind(_F, "women's swimsuits & cover ups",
          "Women › Clothing › Swimsuits & Cover Ups › One-Pieces|Bikinis|Tankinis|Cover-Ups",
          "One Piece Swimsuit|Bikini Set|Tankini|Swim Dress|Cover Up|Monokini",
          "Retro|Ruched|High Cut|Cutout|Ruffled|Sporty",
          "Nylon Spandex|Polyester Spandex|Ribbed Fabric",
          "tummy control|high waisted|chlorine resistant",
          "adjustable straps|removable padding|tie side|built in bra",
          "beach vacation|pool party|swimming|water sports",
          "Color=apparel:2-7;Size=alpha:3-6c", "18-55", who="Women's"),
    _kind(_F, "women's sleep & lounge",
          "Women › Clothing › Lingerie, Sleep & Lounge › Sleep & Lounge › Sets"
          "|Nightgowns & Sleepshirts|Robes",
          "Pajama Set|Nightgown|Robe|Sleep Shirt|Lounge Set|Sleep Shorts",
          "Soft|Cozy|Comfy|Silky|Printed|Two Piece",
          "Modal|Satin|Flannel|Cotton|Bamboo Viscose|Fleece",
          "button down|breathable|loose fit",
          "elastic waist|long sleeve|short sleeve|side pockets|notch collar",
          "sleepwear|lounging|bridal party|travel",
          "Color=apparel:2-7;Size=alpha:3-6c", "18-50", who="Women's"),
    _kind(_F, "men's socks", "Men › Clothing › Socks › Athletic|Casual|Dress",
          "Socks|Crew Socks|Ankle Socks|No Show Socks|Dress Socks|Compression Socks",
          "Athletic|Cushioned|Performance|Casual|Thin|Colorful",
          "Cotton|Merino Wool|Bamboo|Cotton Blend",
          "moisture wicking|breathable|non slip|odor resistant",
          "cushioned sole|arch support|reinforced heel|seamless toe",
          "running|work boots|hiking",
          "Color=sock:2-5;Size=alpha:2-4c", "9-30", "pack", "Men's"),
    _kind(_F, "men's underwear", "Men › Clothing › Underwear › Boxer Briefs|Briefs|Trunks|Boxers",
          "Boxer Briefs|Briefs|Trunks|Boxers|Long Leg Boxer Briefs",
          "Stretch|Breathable|Classic|Soft|Performance|Athletic",
          "Cotton Stretch|Modal|Micro Modal|Bamboo|Polyester",
          "moisture wicking|no ride up|tagless|breathable",
          "fly pouch|soft waistband|cotton stretch|contour pouch",
          "sports|travel",
          "Color=sock:2-5;Size=alpha:3-6c", "12-45", "pack", "Men's"),
    _kind(_F, "girls' dresses", "Girls › Clothing › Dresses",
          "Dress|Party Dress|Tutu Dress|Sundress|Sweater Dress|Princess Dress",
          "Cute|Sparkly|Floral|Casual|Sleeveless|Twirly",
          "Cotton|Tulle|Chiffon|Knit",
          "knee length|easy dressing",
          "short sleeve|long sleeve|back zipper|bow belt|tulle skirt",
          "birthday party|school|flower girl|holiday photos",
          "Color=apparel:2-5;Size=kids:3-6c", "15-45", who="Girls'"),
    _kind(_F, "baby clothing sets", "Baby › Baby Boys|Baby Girls",
          "Outfit Set|Romper|Bodysuit Set|Pajama Set|Footie Pajamas",
          "Cute|Soft|Cozy|Striped|Printed|Casual",
          "Cotton|Organic Cotton|Bamboo Viscose|Knit",
          "gender neutral|tagless",
          "snap closure|soft cotton|long sleeve|short sleeve|zipper front",
          "newborn|infant toddler|baby shower gift",
          "Color=apparel:2-5;Size=baby:3-6c", "12-35", who="Baby"),
    _kind(_F, "women's handbags",
          "Women › Handbags & Wallets › Shoulder Bags|Totes|Crossbody Bags|Top-Handle Bags",
          "Tote Bag|Crossbody Bag|Shoulder Bag|Hobo Bag|Satchel|Bucket Bag",
          "Large|Classic|Quilted|Vintage|Minimalist|Woven",
          "Vegan Leather|Faux Leather|Canvas|Genuine Leather|Nylon",
          "large capacity|water resistant|lightweight",
          "vegan leather|zipper closure|adjustable strap|multiple pockets|detachable strap",
          "work travel|daily use|school|shopping",
          "Color=apparel:2-6", "20-90", who="Women's"),
    _kind(_F, "men's wallets",
          "Men › Accessories › Wallets, Card Cases & Money Organizers › Wallets|Card Cases",
          "Wallet|Bifold Wallet|Card Holder|Trifold Wallet|Money Clip Wallet|Front Pocket Wallet",
          "Slim|Minimalist|Classic|Vintage|Thin|Compact",
          "Genuine Leather|Full Grain Leather|Carbon Fiber|Aluminum|Faux Leather",
          "rfid blocking|front pocket|slim design",
          "genuine leather|card slots|id window|gift box",
          "travel|gift|business",
          "Color=leather:2-5", "12-50", who="Men's"),
    _kind(_F, "women's watches", "Women › Watches › Wrist Watches",
          "Watch|Quartz Watch|Bracelet Watch|Analog Watch|Dress Watch",
          "Elegant|Minimalist|Classic|Luxury|Slim|Casual",
          "Stainless Steel|Leather Strap|Mesh Band|Ceramic",
          "water resistant|easy read|quartz movement",
          "stainless steel|mesh band|leather strap|rose gold|crystal accents",
          "gift|party",
          "Color=jewel:2-4", "20-180", who="Women's"),
    _kind(_F, "women's necklaces", "Women › Jewelry › Necklaces › Pendants|Chains|Chokers",
          "Necklace|Pendant Necklace|Choker|Chain Necklace|Layered Necklace|Locket Necklace",
          "Dainty|Delicate|Minimalist|Layered|Vintage|Personalized",
          "Sterling Silver|Gold Plated|Stainless Steel|Cubic Zirconia|Freshwater Pearl",
          "hypoallergenic|tarnish free|gold plated|nickel free",
          "sterling silver|lobster clasp|adjustable chain|gift box|cubic zirconia",
          "gift|anniversary|birthday",
          "Color=jewel:2-4", "12-120", who="Women's"),
    _kind(_F, "sunglasses",
          "Men › Accessories › Sunglasses & Eyewear Accessories › Sunglasses;Women › Accessories"
          " › Sunglasses & Eyewear Accessories › Sunglasses",
          "Sunglasses|Aviator Sunglasses|Polarized Sunglasses|Round Sunglasses|Sports Sunglasses"
          "|Square Sunglasses",
          "Classic|Retro|Oversized|Vintage|Lightweight|Trendy",
          "Metal Frame|Acetate|Polycarbonate|Nylon Frame",
          "polarized|lightweight|unbreakable",
          "polarized lens|uv protection|metal frame|spring hinges|mirrored lens",
          "driving|fishing|outdoor sports|beach",
          "Color=lens:2-5", "12-70"),
    _kind(_F, "baseball caps",
          "Men › Accessories › Hats & Caps › Baseball Caps;Women › Accessories › Hats & Caps"
          " › Baseball Caps",
          "Baseball Cap|Dad Hat|Trucker Hat|Snapback Hat|Running Cap",
          "Classic|Adjustable|Vintage|Washed|Low Profile|Unstructured",
          "Cotton Twill|Mesh|Polyester|Denim",
          "adjustable|low profile",
          "adjustable strap|breathable mesh|curved brim|embroidered logo",
          "outdoor sports|golf|running|fishing",
          "Color=apparel:2-6", "10-30"),
    # --- beauty ----------------------------------------------------------------------------------
    _kind(_B, "shampoo & conditioner",
          "Hair Care › Shampoo & Conditioner › Shampoos|Conditioners|Shampoo & Conditioner Sets",
          "Shampoo|Conditioner|Shampoo and Conditioner Set|Volumizing Shampoo"
          "|Moisturizing Conditioner|Clarifying Shampoo",
          "Hydrating|Nourishing|Volumizing|Strengthening|Gentle|Repairing",
          "Argan Oil|Tea Tree|Biotin|Coconut Oil|Keratin|Rosemary Mint|Rice Water",
          "sulfate free|color safe|silicone free",
          "argan oil|tea tree|biotin|coconut oil|keratin|rosemary oil",
          "dry hair|damaged hair|hair growth|oily scalp|curly hair|color treated hair",
          "Size=bsize:2-4;Scent=scent:2-4", "8-40", "floz"),
    _kind(_B, "hair masks & treatments",
          "Hair Care › Hair & Scalp Care › Hair Treatment Masks|Hair Oils|Scalp Treatments",
          "Hair Mask|Hair Oil|Scalp Serum|Leave In Treatment|Deep Conditioner",
          "Intensive|Deep|Restorative|Lightweight|Nourishing|Overnight",
          "Argan Oil|Castor Oil|Rosemary Oil|Shea Butter|Keratin|Jojoba Oil",
          "deep conditioning|leave in|heat protectant",
          "castor oil|rosemary oil|shea butter|jojoba oil|hyaluronic acid",
          "hair growth|split ends|frizzy hair|damaged hair|dry scalp",
          "Size=bsize:2-4", "9-40", "floz"),
    _kind(_B, "styling products", "Hair Care › Styling Products › Creams|Gels|Hair Sprays|Pomades",
          "Styling Cream|Hair Gel|Hair Spray|Pomade|Curl Cream|Texturizing Spray|Hair Wax",
          "Strong Hold|Matte|Flexible|Lightweight|Defining|Shine",
          "Shea Butter|Aloe Vera|Beeswax|Flaxseed|Argan Oil",
          "strong hold|flexible hold|alcohol free|humidity resistant|matte finish",
          "shea butter|aloe vera|flaxseed gel",
          "curly hair|natural hair|frizz control|short hair",
          "Size=bsize:2-3", "6-28", "oz"),
    _kind(_B, "hair styling tools",
          "Hair Care › Styling Tools & Appliances › Hair Dryers|Flat Irons|Curling Irons"
          "|Hot-Air Brushes",
          "Hair Dryer|Flat Iron|Curling Iron|Hot Air Brush|Hair Straightener Brush|Curling Wand",
          "Professional|Ionic|Lightweight|Compact|Salon|Cordless",
          "Ceramic|Tourmaline|Titanium|Ceramic Tourmaline",
          "fast drying|dual voltage|auto shut off|adjustable temperature",
          "ceramic tourmaline|negative ions|titanium plates|diffuser attachment|lcd display",
          "frizzy hair|travel|salon use|thick hair",
          "Color=gear:2-4", "20-160"),
    _kind(_B, "hair coloring products",
          "Hair Care › Hair Coloring Products › Hair Color|Temporary Hair Color|Root Touch Up",
          "Hair Color|Permanent Hair Dye|Semi Permanent Hair Color|Root Touch Up|Hair Color Kit",
          "Permanent|Vibrant|Natural|Radiant|Rich|Salon",
          "Argan Oil|Keratin|Henna|Plant Extracts",
          "ammonia free|easy apply|no mixing",
          "argan oil|plant extracts|color protect conditioner",
          "gray hair|gray coverage|natural hair|roots",
          "Color=hair:3-8", "6-25", "pack"),
    _kind(_B, "lip care", "Skin Care › Lip Care › Balms & Moisturizers|Lip Scrubs|Lip Masks",
          "Lip Balm|Lip Mask|Lip Scrub|Tinted Lip Balm|Lip Oil|Lip Butter",
          "Moisturizing|Hydrating|Tinted|Overnight|Soothing|Nourishing",
          "Shea Butter|Beeswax|Coconut Oil|Vitamin E|Honey|Cocoa Butter",
          "tinted|fragrance free|petroleum free",
          "shea butter|beeswax|coconut oil|spf 15",
          "dry lips|chapped lips|lip repair|overnight care",
          "Scent=lipflav:2-5", "4-20", "pack"),
    _kind(_B, "lips makeup", "Makeup › Lips › Lipstick|Lip Gloss|Lip Liners|Lip Stains",
          "Lipstick|Liquid Lipstick|Lip Gloss|Lip Stain|Lip Liner|Lip Plumper",
          "Matte|Velvet|Creamy|Glossy|Satin|Sheer",
          "Vitamin E|Jojoba Oil|Shea Butter|Hyaluronic Acid",
          "matte finish|waterproof|smudge proof|transfer proof",
          "hyaluronic acid|jojoba oil|precision tip",
          "all day wear|date night|everyday makeup",
          "Color=lip:2-8", "6-28"),
    _kind(_B, "face makeup", "Makeup › Face › Foundation|Concealers & Neutralizers|Powder|Blush",
          "Foundation|Liquid Foundation|Concealer|Setting Powder|BB Cream|Cream Blush|Bronzer",
          "Lightweight|Full Coverage|Matte|Dewy|Natural|Radiant",
          "Hyaluronic Acid|Niacinamide|Vitamin C|Mineral Powder|Squalane",
          "oil free|full coverage|natural finish|non comedogenic",
          "hyaluronic acid|spf 30|niacinamide|mineral powder",
          "oily skin|dark circles|mature skin|acne prone skin|sensitive skin",
          "Color=skin:3-8", "8-45"),
    _kind(_B, "eyes makeup", "Makeup › Eyes › Mascara|Eyeliner|Eyeshadow|Eyebrow Color",
          "Mascara|Eyeliner|Eyeshadow Palette|Brow Pencil|Liquid Eyeliner|Lash Primer|Brow Gel",
          "Volumizing|Lengthening|Waterproof|Shimmer|Matte|Precision",
          "Castor Oil|Peptides|Vitamin E|Mica",
          "waterproof|smudge proof|highly pigmented",
          "castor oil|fine tip|built in sharpener|spoolie brush",
          "sensitive eyes|everyday makeup|lash growth|smoky eye",
          "Color=eye:2-5", "6-35"),
    _kind(_B, "makeup brushes & tools",
          "Tools & Accessories › Makeup Brushes & Tools › Brush Sets|Sponges & Applicators"
          "|Eyeshadow Brushes",
          "Makeup Brush Set|Blending Sponge|Kabuki Brush|Eyeshadow Brush Set|Powder Brush"
          "|Foundation Brush",
          "Professional|Soft|Dense|Premium|Travel|Vegan",
          "Synthetic Fiber|Bamboo|Wood|Latex Free Foam",
          "easy clean|latex free|soft bristles",
          "synthetic bristles|travel case|wooden handle|brush holder",
          "liquid foundation|eye shadow|powder blush|contouring",
          "Color=gear:2-4", "7-40", "pcs"),
    _kind(_B, "nail polish",
          "Foot, Hand & Nail Care › Nail Art & Polish › Nail Polish|Gel Nail Polish"
          "|Top & Base Coats",
          "Nail Polish|Gel Nail Polish|Nail Polish Set|Top Coat|Base Coat|Nail Lacquer",
          "Glossy|Quick Dry|Shimmer|Glitter|Neutral|Vibrant",
          "Vitamin E|Keratin|Calcium|Argan Oil",
          "quick dry|chip resistant|high gloss",
          "uv led|gel formula|wide brush",
          "nail art|home manicure|salon use|gift",
          "Color=nail:2-8", "5-30", "pcs"),
    _kind(_B, "foot, hand & nail care",
          "Foot, Hand & Nail Care › Tools & Accessories › Nail Clippers|Nail Files|Foot Files"
          "|Manicure & Pedicure Kits",
          "Nail Clipper Set|Manicure Set|Nail File|Cuticle Pusher|Foot File|Pedicure Kit"
          "|Callus Remover",
          "Professional|Portable|Precision|Heavy Duty|Compact|Ergonomic",
          "Stainless Steel|Glass|Carbon Steel|Emery",
          "easy carry|rust resistant|non slip",
          "stainless steel|travel case|leather case|sharp blades",
          "ingrown nails|thick nails|dead skin|cracked heels",
          "", "6-35", "pcs"),
    _kind(_B, "facial serums", "Skin Care › Face › Serums",
          "Serum|Vitamin C Serum|Hyaluronic Acid Serum|Retinol Serum|Face Oil|Niacinamide Serum",
          "Brightening|Firming|Hydrating|Anti Wrinkle|Lightweight|Plumping",
          "Vitamin C|Hyaluronic Acid|Retinol|Niacinamide|Squalane|Peptides",
          "anti aging|fragrance free|oil free|fast absorbing",
          "hyaluronic acid|vitamin c|retinol|niacinamide|peptides",
          "fine lines|dark spots|dry skin|uneven skin tone|wrinkles|sensitive skin|all skin types",
          "Size=bsize:2-3", "10-48", "floz"),
    _kind(_B, "face moisturizers",
          "Skin Care › Face › Creams & Moisturizers › Face Moisturizers|Night Creams|Eye Creams",
          "Face Moisturizer|Night Cream|Day Cream|Gel Cream|Eye Cream|Face Lotion",
          "Hydrating|Lightweight|Rich|Firming|Soothing|Overnight",
          "Ceramides|Hyaluronic Acid|Collagen|Aloe Vera|Shea Butter|Squalane",
          "oil free|non comedogenic|anti aging|non greasy",
          "ceramides|spf 30|collagen|aloe vera|hyaluronic acid",
          "dry skin|oily skin|combination skin|puffy eyes|dark circles|sensitive skin",
          "Size=bsize:2-3", "9-55", "oz"),
    _kind(_B, "facial cleansers", "Skin Care › Face › Cleansers › Gels|Foams|Cleansing Balms|Oils",
          "Face Wash|Foaming Cleanser|Cleansing Balm|Cleansing Oil|Exfoliating Cleanser"
          "|Gel Cleanser",
          "Gentle|Foaming|Clarifying|Hydrating|Daily|Purifying",
          "Salicylic Acid|Tea Tree|Green Tea|Charcoal|Glycolic Acid|Ceramides",
          "oil free|fragrance free|soap free|ph balanced",
          "salicylic acid|tea tree|green tea|activated charcoal|glycolic acid",
          "acne prone skin|oily skin|makeup removal|clogged pores|sensitive skin|all skin types",
          "Size=bsize:2-3", "7-32", "floz"),
    _kind(_B, "sun care", "Skin Care › Sun › Sunscreens & Tanning Products › Sunscreens",
          "Sunscreen|Sunscreen Lotion|Sunscreen Spray|Mineral Sunscreen|Sunscreen Stick"
          "|Tinted Sunscreen",
          "Broad Spectrum|Lightweight|Sheer|Sport|Daily|Mineral",
          "Zinc Oxide|Titanium Dioxide|Aloe Vera|Vitamin E",
          "water resistant|reef safe|oil free|broad spectrum|non greasy",
          "zinc oxide|spf 50|aloe vera|titanium dioxide",
          "outdoor sports|beach days|kids|sensitive skin",
          "Size=bsize:2-3", "8-32", "floz"),
    _kind(_B, "body wash", "Personal Care › Bath & Bathing Accessories › Bath › Body Washes",
          "Body Wash|Shower Gel|Exfoliating Body Wash|Foaming Body Wash|Body Wash Set",
          "Moisturizing|Refreshing|Gentle|Creamy|Invigorating|Soothing",
          "Shea Butter|Oatmeal|Eucalyptus|Charcoal|Aloe Vera",
          "sulfate free|ph balanced|hypoallergenic",
          "shea butter|colloidal oatmeal|aloe vera",
          "dry skin|body acne|post workout|sensitive skin",
          "Scent=scent:2-5;Size=bsize:2-3", "6-28", "floz"),
    _kind(_B, "body lotions", "Skin Care › Body › Moisturizers › Lotions|Body Butters|Creams",
          "Body Lotion|Body Butter|Hand Cream|Body Oil|Body Cream|Foot Cream",
          "Nourishing|Rich|Daily|Intensive|Whipped|Soothing",
          "Shea Butter|Cocoa Butter|Coconut Oil|Ceramides|Urea|Oatmeal",
          "non greasy|fast absorbing|fragrance free|hypoallergenic",
          "shea butter|cocoa butter|ceramides|coconut oil|urea",
          "dry skin|eczema|rough skin|cracked hands|sensitive skin",
          "Scent=scent:2-5", "6-30", "oz"),
    _kind(_B, "scrubs & body treatments", "Skin Care › Body › Scrubs & Body Treatments",
          "Body Scrub|Sugar Scrub|Salt Scrub|Coffee Scrub|Exfoliating Gloves|Body Polish",
          "Exfoliating|Brightening|Smoothing|Natural|Whipped|Invigorating",
          "Dead Sea Salt|Brown Sugar|Arabica Coffee|Coconut Oil|Himalayan Salt",
          "vegan|anti cellulite|exfoliating",
          "dead sea salt|coconut oil|arabica coffee|brown sugar",
          "dead skin|dry skin|cellulite|ingrown hairs|strawberry legs",
          "Scent=scent:2-4", "8-32", "oz"),
    _kind(_B, "deodorants & antiperspirants",
          "Personal Care › Deodorants & Antiperspirants › Deodorants|Antiperspirants",
          "Deodorant|Antiperspirant|Deodorant Stick|Natural Deodorant|Deodorant Spray"
          "|Roll On Deodorant",
          "Natural|Clinical|Invisible|Fresh|Gentle|Sport",
          "Baking Soda|Coconut Oil|Magnesium|Activated Charcoal|Shea Butter",
          "aluminum free|baking soda free|anti perspirant|no white marks",
          "coconut oil|magnesium|activated charcoal",
          "heavy sweating|odor protection|men|sensitive skin",
          "Scent=scent:2-5", "5-24", "ozpack"),
    _kind(_B, "toothpaste", "Oral Care › Toothpaste",
          "Toothpaste|Whitening Toothpaste|Kids Toothpaste|Fluoride Toothpaste|Toothpaste Tablets"
          "|Charcoal Toothpaste",
          "Whitening|Fresh Mint|Enamel Safe|Natural|Herbal|Gentle",
          "Activated Charcoal|Fluoride|Hydroxyapatite|Xylitol|Baking Soda",
          "fluoride free|sls free|clinically proven|vegan",
          "activated charcoal|hydroxyapatite|xylitol|baking soda",
          "sensitive teeth|teeth whitening|fresh breath|cavity protection|bad breath",
          "", "4-22", "ozpack"),
    _kind(_B, "electric toothbrushes",
          "Oral Care › Toothbrushes & Accessories › Powered Toothbrushes"
          "|Replacement Toothbrush Heads",
          "Electric Toothbrush|Sonic Toothbrush|Replacement Brush Heads|Water Flosser"
          "|Kids Electric Toothbrush",
          "Rechargeable|Sonic|Smart|Portable|Cordless|Whitening",
          "Nylon Bristles|ABS Plastic|Silicone",
          "rechargeable|waterproof|travel friendly",
          "smart timer|soft bristles|travel case|pressure sensor",
          "sensitive teeth|teeth whitening|gum care|braces",
          "Color=gear:2-4", "15-95"),
    _kind(_B, "shave & hair removal",
          "Shave & Hair Removal › Men's › Razors & Blades|Shaving Creams"
          "|Electric Shavers;Shave & Hair Removal › Women's › Razors & Blades|Epilators",
          "Safety Razor|Razor Blades|Shaving Cream|Electric Shaver|Shaving Brush|Eyebrow Razor"
          "|Epilator",
          "Classic|Double Edge|Precision|Cordless|Smooth|Painless",
          "Stainless Steel|Chrome|Synthetic Bristles|Shea Butter|Aloe Vera",
          "rechargeable|cordless|easy carry",
          "stainless steel|aloe vera|shea butter|pivoting head",
          "hair removal|close shave|razor bumps|sensitive skin",
          "", "6-80"),
    _kind(_B, "beard care",
          "Shave & Hair Removal › Men's › Beard & Mustache Care › Beard Oils|Beard Balms"
          "|Grooming Kits",
          "Beard Oil|Beard Balm|Beard Wash|Beard Kit|Beard Brush|Beard Growth Kit",
          "Natural|Conditioning|Softening|Premium|Rugged|Leave In",
          "Argan Oil|Jojoba Oil|Cedarwood|Shea Butter|Boar Bristle",
          "unscented|leave in|non greasy",
          "argan oil|jojoba oil|boar bristle|cedarwood",
          "beard growth|itchy skin|beard dandruff",
          "Scent=mscent:2-4", "9-38", "floz", "Men's"),
    _kind(_B, "women's fragrance",
          "Fragrance › Women's › Eau de Parfum|Eau de Toilette|Body Sprays",
          "Eau de Parfum|Perfume|Body Mist|Eau de Toilette|Perfume Oil|Perfume Gift Set",
          "Floral|Fruity|Sweet|Fresh|Warm|Woody",
          "Jasmine|Vanilla|Rose|Peony|Amber|Sandalwood",
          "alcohol free|roll on",
          "floral notes|vanilla musk|citrus notes|white musk",
          "gift|date night|evening wear",
          "Size=bsize:2-3", "15-110", "floz", "Women's"),
    _kind(_B, "men's fragrance", "Fragrance › Men's › Cologne|Eau de Toilette|Body Sprays",
          "Cologne|Eau de Toilette|Body Spray|Cologne Gift Set|Eau de Parfum",
          "Woody|Fresh|Spicy|Aquatic|Intense|Classic",
          "Cedarwood|Bergamot|Vetiver|Leather|Sea Salt|Black Pepper",
          "alcohol free|refillable",
          "woody notes|citrus notes|bergamot|vetiver",
          "gift|date night|office wear",
          "Size=bsize:2-3", "18-120", "floz", "Men's"),
    _kind(_B, "bathing accessories",
          "Personal Care › Bath & Bathing Accessories › Bathing Accessories › Loofahs"
          "|Bath Brushes|Shower Caps|Bath Pillows",
          "Loofah Sponge|Bath Brush|Shower Cap|Bath Pillow|Body Scrubber|Exfoliating Washcloth",
          "Natural|Soft|Exfoliating|Reusable|Luxury|Gentle",
          "Natural Loofah|Silicone|Boar Bristles|Bamboo|Nylon Mesh",
          "eco friendly|easy clean|non slip|reusable",
          "long handle|soft bristles|suction cups|natural loofah",
          "dead skin|back scrubbing|spa days",
          "Color=gear:2-4", "6-28", "pack"),
    _kind(_B, "hair extensions, wigs & accessories",
          "Hair Care › Hair Extensions, Wigs & Accessories › Wigs|Extensions|Hair Clips|Headbands",
          "Wig|Clip In Hair Extensions|Claw Clips|Scrunchies|Headbands|Hair Topper|Lace Front Wig",
          "Natural|Silky|Wavy|Straight|Curly|Layered",
          "Human Hair|Synthetic Fiber|Heat Resistant Fiber|Silk|Acetate",
          "heat resistant|natural looking|double sided",
          "human hair|synthetic fiber|adjustable straps|lace front",
          "cosplay party|thin hair|hair loss",
          "Color=hair:2-6", "8-90"),
    _kind(_B, "bags & cases",
          "Tools & Accessories › Bags & Cases › Cosmetic Bags|Train Cases|Toiletry Bags",
          "Makeup Bag|Cosmetic Bag|Train Case|Toiletry Bag|Brush Holder",
          "Large|Portable|Travel|Waterproof|Clear|Quilted",
          "Nylon|PU Leather|Canvas|PVC|Corduroy",
          "water resistant|large capacity|portable",
          "zipper closure|multiple compartments|hanging hook|adjustable dividers",
          "travel|makeup brushes|toiletries|gift",
          "Color=apparel:2-5", "8-40"),
    # --- garden (home & kitchen, patio) ----------------------------------------------------------
    _kind(_G, "console tables",
          "Furniture › Living Room Furniture › Tables › Sofa & Console Tables",
          "Console Table|Sofa Table|Entryway Table|Hallway Table|Narrow Console Table",
          "Rustic|Modern|Farmhouse|Industrial|Mid Century|Narrow",
          "Solid Wood|Metal|Engineered Wood|Glass|Rattan|Reclaimed Wood",
          "easy assemble|narrow",
          "storage drawers|open shelf|metal legs|reclaimed wood",
          "entryway|hallway|behind couch|living room",
          "Color=home:2-4", "60-1100"),
    _kind(_G, "bar stools",
          "Furniture › Game & Recreation Room Furniture › Home Bar Furniture › Barstools",
          "Bar Stools|Counter Stools|Swivel Bar Stool|Counter Height Stool|Backless Bar Stool",
          "Modern|Industrial|Farmhouse|Upholstered|Adjustable|Rustic",
          "Faux Leather|Velvet|Metal|Wood|Woven Rattan",
          "swivel seat|adjustable height|backless",
          "faux leather|metal legs|footrest|back support",
          "kitchen island|pub|breakfast bar|dining room",
          "Color=home:2-4;Style=Backless,Low Back,High Back:2-3", "60-420", "set"),
    _kind(_G, "dining room sets", "Furniture › Dining Room Furniture › Table & Chair Sets",
          "Dining Table Set|Kitchen Table Set|Dining Set|Bistro Set|Counter Height Dining Set",
          "Modern|Farmhouse|Rustic|Compact|Extendable|Round",
          "Solid Wood|Rubber Wood|Metal|Glass|Marble",
          "drop leaf|extendable",
          "upholstered chairs|storage shelf|cushioned seats|bench seating",
          "small spaces|kitchen|family dinners|dining room",
          "Color=home:2-4", "150-1500", "pcs"),
    _kind(_G, "sofas & couches", "Furniture › Living Room Furniture › Sofas & Couches",
          "Sofa|Loveseat|Sectional Sofa|Futon|Sleeper Sofa|Couch",
          "Modern|Mid Century|Convertible|Tufted|Oversized|Compact",
          "Velvet|Linen Fabric|Faux Leather|Boucle|Chenille",
          "removable cushions|convertible",
          "high density foam|solid wood frame|velvet fabric|linen fabric|reversible chaise",
          "apartment|small spaces|guest room|living room",
          "Color=home:2-5", "200-2000"),
    _kind(_G, "accent chairs", "Furniture › Living Room Furniture › Chairs",
          "Accent Chair|Armchair|Club Chair|Swivel Chair|Rocking Chair|Slipper Chair",
          "Modern|Mid Century|Upholstered|Tufted|Oversized|Cozy",
          "Velvet|Boucle|Linen|Faux Leather|Teddy Fabric",
          "upholstered|swivel|comfy",
          "wooden legs|padded seat|velvet fabric|lumbar pillow",
          "reading nook|nursery|living room|bedroom",
          "Color=home:2-5", "80-650"),
    _kind(_G, "home office chairs",
          "Furniture › Home Office Furniture › Home Office Chairs › Home Office Desk Chairs",
          "Office Chair|Desk Chair|Ergonomic Chair|Gaming Chair|Task Chair|Executive Chair",
          "Ergonomic|Mid Back|High Back|Swivel|Reclining|Armless",
          "Breathable Mesh|PU Leather|Fabric|Nylon Base",
          "adjustable height|ergonomic|reclining",
          "lumbar support|breathable mesh|padded armrests|headrest|rolling casters",
          "long hours|computer desk|gaming|home office",
          "Color=home:2-4", "50-420"),
    _kind(_G, "home office desks", "Furniture › Home Office Furniture › Home Office Desks",
          "Computer Desk|Writing Desk|Standing Desk|L Shaped Desk|Gaming Desk|Corner Desk",
          "Modern|Industrial|Minimalist|Compact|Rustic|Adjustable",
          "Engineered Wood|Solid Wood|Steel Frame|Glass",
          "adjustable height|sturdy",
          "storage shelves|cable management|drawers|monitor shelf",
          "small spaces|study|home office|bedroom",
          "Color=home:2-4", "60-650"),
    _kind(_G, "bookcases & shelves",
          "Furniture › Living Room Furniture › Bookcases;Storage & Organization › Storage Shelves",
          "Bookshelf|Bookcase|Ladder Shelf|Cube Storage|Floating Shelves|Corner Shelf",
          "Modern|Industrial|Rustic|Tall|Open|Farmhouse",
          "Engineered Wood|Solid Wood|Metal Frame|Bamboo",
          "wall mounted|sturdy",
          "open shelves|anti tip kit|adjustable shelves",
          "books|plants|kids room|living room|home office",
          "Color=home:2-4", "30-320"),
    _kind(_G, "sheet & pillowcase sets",
          "Bedding › Sheets & Pillowcases › Sheet & Pillowcase Sets",
          "Sheet Set|Bed Sheets|Fitted Sheet|Pillowcase Set|Sheets and Pillowcases",
          "Soft|Cooling|Luxury|Breathable|Silky|Hotel",
          "Microfiber|Egyptian Cotton|Bamboo|Linen|Percale Cotton|Sateen",
          "deep pocket|wrinkle free|machine washable",
          "egyptian cotton|bamboo viscose|breathable fabric|elastic corners",
          "hot sleepers|all season|guest room|bedroom",
          "Size Name=bed:3-6c;Color=home:2-6", "20-130"),
    _kind(_G, "comforters & sets", "Bedding › Comforters & Sets › Comforter Sets|Duvet Covers",
          "Comforter Set|Duvet Cover Set|Quilt Set|Down Alternative Comforter|Bedspread",
          "Lightweight|Fluffy|Reversible|Quilted|Boho|All Season",
          "Microfiber|Cotton|Down Alternative|Linen",
          "reversible|all season|machine washable",
          "corner ties|down alternative|pillow shams|zipper closure",
          "winter|guest room|kids room|bedroom",
          "Size Name=bed:3-5c;Color=home:2-6", "30-190"),
    _kind(_G, "bed pillows", "Bedding › Bed Pillows & Positioners › Bed Pillows",
          "Bed Pillows|Memory Foam Pillow|Cooling Pillow|Body Pillow|Neck Pillow",
          "Cooling|Adjustable|Firm|Soft|Hotel|Ergonomic",
          "Shredded Memory Foam|Down Alternative|Latex|Bamboo",
          "adjustable loft|hypoallergenic|machine washable",
          "memory foam|cooling gel|removable cover|bamboo cover",
          "side sleepers|back sleepers|neck pain|stomach sleepers",
          "Size Name=Standard,Queen,King:2-3", "18-95", "set"),
    _kind(_G, "curtains & drapes",
          "Home Décor Products › Window Treatments › Curtains & Drapes › Panels",
          "Curtains|Blackout Curtains|Sheer Curtains|Curtain Panels|Thermal Curtains",
          "Blackout|Sheer|Linen Look|Room Darkening|Boho|Velvet",
          "Polyester|Linen|Velvet|Voile",
          "thermal insulated|room darkening|machine washable",
          "grommet top|rod pocket|blackout lining|tie backs",
          "nursery|sliding doors|kitchen window|living room|bedroom",
          "Size=curtain:2-5;Color=home:2-6", "18-85", "pcs"),
    _kind(_G, "area rugs", "Home Décor Products › Area Rugs, Runners & Pads › Area Rugs|Runners",
          "Area Rug|Runner Rug|Shag Rug|Washable Rug|Outdoor Rug|Round Rug",
          "Vintage|Modern|Boho|Moroccan|Distressed|Geometric",
          "Polypropylene|Jute|Wool|Cotton|Faux Fur",
          "non slip|machine washable|low pile|stain resistant|non shedding",
          "rubber backing|jute fibers|soft pile",
          "kitchen|entryway|nursery|patio|living room|bedroom",
          "Size=rug:3-6c;Color=home:2-4", "25-900"),
    _kind(_G, "table lamps",
          "Tools & Home Improvement › Lighting & Ceiling Fans › Lamps & Shades › Table Lamps",
          "Table Lamp|Bedside Lamp|Desk Lamp|Nightstand Lamp|Touch Lamp|Lamp Set",
          "Modern|Farmhouse|Ceramic|Minimalist|Dimmable|Rustic",
          "Ceramic|Metal|Wood|Glass|Rattan",
          "dimmable|touch control",
          "usb port|fabric shade|led bulb|ac outlet",
          "nightstand|reading|kids room|living room|bedroom",
          "Color=home:2-4", "20-130", "set"),
    _kind(_G, "floor lamps",
          "Tools & Home Improvement › Lighting & Ceiling Fans › Lamps & Shades › Floor Lamps",
          "Floor Lamp|Arc Floor Lamp|Torchiere Lamp|Tripod Floor Lamp|Standing Lamp",
          "Modern|Industrial|Mid Century|Tall|Dimmable|Boho",
          "Metal|Wood|Linen Shade|Rattan",
          "dimmable|remote controlled",
          "foot switch|linen shade|led bulb|adjustable head",
          "reading|corner|nursery|living room|bedroom",
          "Color=home:2-4", "35-260"),
    _kind(_G, "ceiling lights",
          "Tools & Home Improvement › Lighting & Ceiling Fans › Ceiling Lights › Flush Mount"
          "|Pendant Lights|Chandeliers",
          "Flush Mount Light|Pendant Light|Chandelier|Ceiling Light Fixture"
          "|Semi Flush Mount Light",
          "Modern|Farmhouse|Industrial|Crystal|Minimalist|Vintage",
          "Metal|Glass|Crystal|Rattan|Brushed Nickel",
          "dimmable|easy install",
          "glass shade|brushed nickel|led bulbs|adjustable chain",
          "hallway|kitchen island|foyer|dining room|bedroom",
          "Color=home:2-4", "25-450"),
    _kind(_G, "wall art",
          "Home Décor Products › Wall Art › Canvas Art|Posters & Prints|Framed Art",
          "Canvas Wall Art|Framed Wall Art|Wall Decor|Canvas Print|Wall Art Set",
          "Abstract|Modern|Botanical|Coastal|Boho|Minimalist",
          "Canvas|Wood Frame|Metal|Paper",
          "ready to hang|framed|waterproof",
          "wood frame|high definition print|hanging hardware",
          "office|bathroom|nursery|living room|bedroom",
          "Size=art:2-4", "15-160", "pcs"),
    _kind(_G, "wall mirrors", "Home Décor Products › Mirrors › Wall-Mounted Mirrors",
          "Wall Mirror|Round Mirror|Full Length Mirror|Vanity Mirror|Arched Mirror",
          "Modern|Decorative|Vintage|Large|Frameless|Boho",
          "Metal Frame|Wood Frame|Rattan|Glass",
          "shatterproof|easy install",
          "metal frame|hd glass|wall hooks|beveled edge",
          "bathroom|entryway|vanity|living room",
          "Color=home:2-4", "25-260"),
    _kind(_G, "planters",
          "Patio, Lawn & Garden › Gardening & Lawn Care › Pots, Planters & Container Accessories"
          " › Planters",
          "Planter|Plant Pot|Ceramic Planter|Hanging Planter|Raised Garden Bed"
          "|Self Watering Planter",
          "Modern|Decorative|Large|Small|Glazed|Minimalist",
          "Ceramic|Terracotta|Plastic|Galvanized Steel|Cedar Wood",
          "self watering|indoor outdoor|lightweight",
          "drainage hole|saucer|plant stand",
          "succulents|indoor plants|herbs|vegetables",
          "Color=home:2-4", "12-160", "set"),
    _kind(_G, "patio furniture sets",
          "Patio, Lawn & Garden › Patio Furniture & Accessories › Patio Furniture Sets"
          " › Conversation Sets"
          "|Bistro Sets|Dining Sets",
          "Patio Furniture Set|Conversation Set|Outdoor Sectional|Bistro Set|Patio Chairs",
          "Outdoor|Wicker|Modern|Rattan|Folding|Coastal",
          "PE Rattan|Steel|Acacia Wood|Aluminum|Teak",
          "weather resistant|all weather|folding",
          "cushions included|steel frame|tempered glass table",
          "backyard|porch|poolside|balcony",
          "Color=home:2-4", "120-1800", "pcs"),
    _kind(_G, "gardening hand tools", "Patio, Lawn & Garden › Gardening & Lawn Care › Hand Tools",
          "Garden Tool Set|Pruning Shears|Hand Trowel|Garden Hose|Hose Nozzle|Weeder",
          "Heavy Duty|Ergonomic|Expandable|Professional|Compact|Durable",
          "Stainless Steel|Carbon Steel|Aluminum|Brass",
          "rust resistant|non slip|expandable",
          "ergonomic handle|stainless steel|storage bag|brass fittings",
          "gardening|pruning|transplanting|weeding",
          "", "10-65", "pcs"),
    _kind(_G, "outdoor string lights",
          "Patio, Lawn & Garden › Outdoor Décor › Outdoor Lighting › String Lights|Pathway Lights",
          "String Lights|Solar String Lights|Fairy Lights|Globe String Lights"
          "|Solar Pathway Lights",
          "Outdoor|Waterproof|Warm White|Vintage|Solar|Decorative",
          "Shatterproof Plastic|Copper Wire|Glass",
          "waterproof|solar powered|dimmable",
          "remote control|shatterproof bulbs|timer function|copper wire",
          "patio|garden|wedding party|christmas",
          "Size=25 Feet,48 Feet,100 Feet:2-3", "12-65", "ft"),
    _kind(_G, "food storage containers",
          "Kitchen & Dining › Storage & Organization › Food Storage › Food Storage Containers",
          "Food Storage Containers|Meal Prep Containers|Glass Containers|Pantry Containers"
          "|Lunch Containers",
          "Airtight|Stackable|Reusable|Clear|Compartment|Glass",
          "Borosilicate Glass|BPA Free Plastic|Stainless Steel",
          "bpa free|leak proof|dishwasher safe|microwave safe|freezer safe",
          "airtight lids|snap lids|labels",
          "meal prep|pantry organization|lunch",
          "", "15-55", "set"),
    _kind(_G, "pots & pans",
          "Kitchen & Dining › Cookware › Pots & Pans › Cookware Sets|Skillets|Saucepans"
          "|Dutch Ovens",
          "Frying Pan|Cookware Set|Nonstick Skillet|Saucepan|Dutch Oven|Wok",
          "Nonstick|Hard Anodized|Ceramic|Tri Ply|Enameled|Cast Iron",
          "Stainless Steel|Cast Iron|Aluminum|Ceramic",
          "dishwasher safe|oven safe|induction compatible|pfoa free",
          "nonstick coating|stainless steel|glass lids|stay cool handles",
          "gas stove|induction cooktop|searing",
          "Size=8 Inch,10 Inch,12 Inch:2-3", "20-320", "pcs"),
    _kind(_G, "kitchen knives",
          "Kitchen & Dining › Cutlery & Knife Accessories › Knife Block Sets|Chef's Knives"
          "|Paring Knives",
          "Chef Knife|Knife Set|Knife Block Set|Paring Knife|Santoku Knife|Bread Knife",
          "Professional|Japanese|German|Razor Sharp|Forged|Ultra Sharp",
          "High Carbon Steel|Stainless Steel|Damascus Steel|Ceramic",
          "razor sharp|full tang|dishwasher safe",
          "high carbon|stainless steel|ergonomic handle|knife block|gift box",
          "meat cutting|vegetables|home cooks",
          "", "15-260", "pcs"),
    _kind(_G, "coffee mugs",
          "Kitchen & Dining › Dining & Entertaining › Cups, Mugs & Saucers › Coffee Mugs"
          "|Travel Mugs",
          "Coffee Mug|Travel Mug|Tumbler|Tea Cup|Mug Set|Camping Mug",
          "Ceramic|Insulated|Large|Funny|Speckled|Stackable",
          "Ceramic|Stoneware|Stainless Steel|Glass|Porcelain",
          "dishwasher safe|microwave safe|double wall|vacuum insulated",
          "leak proof lid|handle|gift box",
          "hot drinks|coffee lovers|office",
          "Color=home:2-5", "10-40", "oz"),
    _kind(_G, "bath towels", "Bath › Towels › Bath Towels|Towel Sets",
          "Bath Towels|Towel Set|Hand Towels|Beach Towel|Bath Sheet|Washcloths",
          "Plush|Soft|Quick Dry|Luxury|Lightweight|Hotel",
          "Cotton|Turkish Cotton|Bamboo|Microfiber",
          "highly absorbent|quick drying|machine washable",
          "turkish cotton|hanging loop|ring spun cotton",
          "bathroom|gym|spa",
          "Color=home:2-6", "15-75", "set"),
    _kind(_G, "storage baskets",
          "Storage & Organization › Baskets, Bins & Containers › Storage Baskets|Storage Bins",
          "Storage Basket|Storage Bins|Woven Basket|Laundry Basket|Closet Organizer",
          "Woven|Collapsible|Decorative|Large|Rectangular|Foldable",
          "Seagrass|Cotton Rope|Fabric|Water Hyacinth|Wicker",
          "foldable|collapsible",
          "sturdy handles|cotton rope|lids",
          "closet shelves|nursery|toys storage|laundry room",
          "Color=home:2-4", "12-65", "set"),
    _kind(_G, "shower curtains",
          "Bath › Bathroom Accessories › Shower Curtains, Hooks & Liners › Shower Curtains",
          "Shower Curtain|Fabric Shower Curtain|Shower Curtain Liner|Shower Curtain Set",
          "Waterproof|Modern|Boho|Farmhouse|Textured|Floral",
          "Polyester|Waffle Weave|PEVA|Cotton",
          "waterproof|machine washable",
          "rust proof grommets|weighted hem|shower hooks|waffle weave",
          "bathtub|guest bathroom|kids bathroom",
          "Color=home:2-5;Pattern Name=pattern:2-4", "10-45"),
    _kind(_G, "throw pillow covers",
          "Home Décor Products › Decorative Pillows, Inserts & Covers › Throw Pillow Covers",
          "Throw Pillow Covers|Pillow Covers|Cushion Covers|Decorative Pillows"
          "|Lumbar Pillow Cover",
          "Decorative|Boho|Modern|Farmhouse|Soft|Textured",
          "Velvet|Linen|Cotton|Chenille|Faux Fur",
          "double sided|machine washable",
          "hidden zipper|velvet fabric|tassels",
          "couch|sofa|bed|living room",
          "Color=home:2-6;Size=18x18 Inch,20x20 Inch,12x20 Inch:1-3", "10-45", "set"),
    # --- electronics -----------------------------------------------------------------------------
    _kind(_E, "usb cables",
          "Computers & Accessories › Computer Accessories & Peripherals › Cables & Accessories"
          " › Cables › USB Cables",
          "USB C Cable|Charging Cable|USB Cable|Micro USB Cable|USB C to USB C Cable|Type C Cable",
          "Braided|Durable|Long|Short|Right Angle|Coiled",
          "Nylon|Aluminum|PVC|Silicone",
          "fast charging|nylon braided|tangle free|high speed",
          "data sync|aluminum housing|power delivery|strain relief",
          "android phones|tablets|laptops|car charging",
          "Size=cable:2-4;Color=gear:2-3", "6-25", "pack"),
    _kind(_E, "hdmi cables",
          "Accessories & Supplies › Audio & Video Accessories › Cables & Interconnects"
          " › Video Cables › HDMI Cables",
          "HDMI Cable|High Speed HDMI Cable|HDMI Adapter|Mini HDMI Cable|HDMI Switch"
          "|HDMI Splitter",
          "Braided|Ultra|Premium|Flat|Slim|Certified",
          "Copper|Nylon|Aluminum",
          "gold plated|ultra hd",
          "4k ultra hd|gold plated connectors|braided cord|ethernet support",
          "gaming console|home theater|monitors|projector",
          "Size=cable:2-4", "6-30", "pack"),
    _kind(_E, "phone cases",
          "Cell Phones & Accessories › Cases, Holsters & Sleeves › Basic Cases|Wallet Cases"
          "|Rugged Cases",
          "Phone Case|Wallet Case|Clear Case|Rugged Case|Silicone Case|Glitter Case",
          "Slim|Shockproof|Cute|Protective|Thin|Heavy Duty",
          "Silicone|TPU|Leather|Polycarbonate",
          "shockproof|slim fit|anti scratch|anti yellowing",
          "card holder|kickstand|wireless charging|raised edges|wrist strap",
          "drop protection|everyday use|women",
          "Color=gear:2-6;Size=phone:1-3", "7-30"),
    _kind(_E, "screen protectors", "Cell Phones & Accessories › Accessories › Screen Protectors",
          "Screen Protector|Tempered Glass Screen Protector|Privacy Screen Protector"
          "|Camera Lens Protector|Matte Screen Protector",
          "Tempered|Anti Glare|Privacy|Ultra Clear|Full Coverage|Case Friendly",
          "Tempered Glass|Hydrogel|PET Film",
          "bubble free|case friendly|anti glare|scratch resistant",
          "tempered glass|installation frame|oleophobic coating",
          "phones|tablets|privacy",
          "Size=phone:1-3", "5-18", "pack"),
    _kind(_E, "chargers & power adapters",
          "Cell Phones & Accessories › Accessories › Chargers & Power Adapters › Wall Chargers"
          "|Car Chargers",
          "Wall Charger|USB C Charger|Fast Charger|Charging Block|Car Charger|Charging Station",
          "Compact|Dual Port|Foldable|Travel|Rapid|Multi Port",
          "",
          "fast charging|dual port|foldable plug",
          "overheat protection|power delivery|multiple ports|usb c|led indicator",
          "phones|tablets|car|travel",
          "Color=gear:2-3", "9-45", "pack"),
    _kind(_E, "portable power banks",
          "Cell Phones & Accessories › Accessories › Chargers & Power Adapters"
          " › Portable Power Banks",
          "Power Bank|Portable Charger|Battery Pack|Solar Power Bank|Magnetic Power Bank",
          "Slim|Compact|High Capacity|Rugged|Mini|Wireless",
          "Aluminum|ABS|Silicone",
          "fast charging|high capacity|slim design",
          "led display|dual usb|built in cables|wireless charging|usb c",
          "camping|emergency|phones|travel",
          "Color=gear:2-4", "15-65", "mah"),
    _kind(_E, "wireless earbuds", "Headphones, Earbuds & Accessories › Earbuds",
          "Wireless Earbuds|Bluetooth Earbuds|Sports Earbuds|Earphones|Open Ear Headphones",
          "Wireless|Waterproof|Mini|Sport|Compact|Deep Bass",
          "",
          "noise cancelling|waterproof|sweat resistant",
          "charging case|touch control|built in microphone|ear hooks",
          "running|workout|phone calls|commuting|travel",
          "Color=gear:2-4", "15-120"),
    _kind(_E, "headphones",
          "Headphones, Earbuds & Accessories › Headphones › Over-Ear Headphones|On-Ear Headphones",
          "Headphones|Over Ear Headphones|Gaming Headset|Noise Cancelling Headphones"
          "|Kids Headphones|On Ear Headphones",
          "Wireless|Foldable|Hi Fi|Studio|Lightweight|Comfortable",
          "Memory Foam|Protein Leather|Aluminum",
          "noise cancelling|wireless bluetooth|foldable|hands free",
          "built in microphone|memory foam|volume limit|detachable cable",
          "gaming|online classes|kids|travel|home office",
          "Color=gear:2-4", "20-260"),
    _kind(_E, "bluetooth speakers",
          "Portable Audio & Video › Portable Speakers & Docks › Portable Bluetooth Speakers",
          "Bluetooth Speaker|Portable Speaker|Waterproof Speaker|Party Speaker|Shower Speaker"
          "|Smart Speaker",
          "Portable|Wireless|Loud|Rugged|Mini|Outdoor",
          "",
          "waterproof|dustproof|portable",
          "deep bass|rgb lights|built in microphone|stereo pairing",
          "outdoor party|camping|shower|beach|outdoor use",
          "Color=gear:2-4", "20-210"),
    _kind(_E, "home theater systems",
          "Home Audio › Speakers › Sound Bars|Subwoofers;Home Audio › Home Theater Systems",
          "Sound Bar|Soundbar|Home Theater System|Subwoofer|Surround Sound System"
          "|Bookshelf Speakers",
          "Wireless|Slim|Compact|Powerful|Cinematic|Immersive",
          "",
          "wall mountable|wireless|easy setup",
          "wireless subwoofer|optical input|remote control|surround sound",
          "tv|home theater|movie night|gaming",
          "", "40-1100"),
    _kind(_E, "tv mounts",
          "Television & Video › Accessories › TV Mounts, Stands & Turntables"
          " › TV Wall & Ceiling Mounts",
          "TV Wall Mount|Full Motion TV Mount|Tilting TV Mount|TV Stand Mount|Ceiling TV Mount"
          "|Corner TV Mount",
          "Heavy Duty|Low Profile|Articulating|Universal|Swivel|Slim",
          "Steel|Cold Rolled Steel|Aluminum",
          "full motion|heavy duty|low profile|easy install",
          "cable management|tilt swivel|steel construction|bubble level",
          "living room|bedroom|flat screen tvs|curved tvs",
          "", "20-130"),
    _kind(_E, "tv antennas", "Television & Video › Accessories › Antennas",
          "TV Antenna|Indoor HDTV Antenna|Outdoor Antenna|Amplified Antenna|Attic Antenna",
          "Amplified|Digital|Long Range|Flat|Indoor|Outdoor",
          "",
          "long range|amplified|easy install",
          "signal amplifier|coaxial cable|magnetic base",
          "local channels|smart tvs|rural areas",
          "", "15-75"),
    _kind(_E, "computer mice",
          "Computers & Accessories › Computer Accessories & Peripherals › Keyboards,"
          " Mice & Accessories › Mice",
          "Wireless Mouse|Gaming Mouse|Ergonomic Mouse|Bluetooth Mouse|Vertical Mouse"
          "|Trackball Mouse",
          "Silent|Ergonomic|Rechargeable|Compact|Slim|Wireless",
          "",
          "silent click|rechargeable|ergonomic design|plug and play",
          "adjustable dpi|rgb lighting|usb receiver|side buttons",
          "laptop|office work|gaming",
          "Color=gear:2-4", "9-75"),
    _kind(_E, "keyboards",
          "Computers & Accessories › Computer Accessories & Peripherals › Keyboards,"
          " Mice & Accessories › Keyboards",
          "Wireless Keyboard|Mechanical Keyboard|Gaming Keyboard|Bluetooth Keyboard"
          "|Keyboard and Mouse Combo|Ergonomic Keyboard",
          "Compact|Full Size|Quiet|Slim|Backlit|Retro",
          "",
          "backlit|quiet typing|multi device|spill resistant",
          "rgb backlight|mechanical switches|wrist rest|number pad",
          "gaming|office work|tablets|programming",
          "Color=gear:2-4", "18-140"),
    _kind(_E, "laptop accessories",
          "Computers & Accessories › Laptop Accessories › Stands|Bags, Cases & Sleeves"
          "|Cooling Pads",
          "Laptop Stand|Laptop Sleeve|Laptop Bag|Cooling Pad|Docking Station|Laptop Backpack",
          "Adjustable|Portable|Slim|Ergonomic|Foldable|Padded",
          "Aluminum Alloy|Neoprene|Nylon|Polyester",
          "adjustable height|foldable|water resistant|non slip",
          "aluminum alloy|cooling fans|usb ports|padded compartment",
          "desk|business trips|students|home office|travel",
          "Color=gear:2-4", "12-95"),
    _kind(_E, "usb flash drives", "Computers & Accessories › Data Storage › USB Flash Drives",
          "USB Flash Drive|Thumb Drive|Flash Drive|Memory Stick|USB C Flash Drive",
          "Mini|Swivel|Metal|Compact|Dual|Rugged",
          "Zinc Alloy|Aluminum|Plastic",
          "waterproof|shockproof|high speed|plug and play",
          "key ring|metal casing|dual connector|swivel cap",
          "data storage|photos|backup",
          "Size=gb:2-4", "6-45", "pack"),
    _kind(_E, "memory cards", "Computers & Accessories › Memory Cards › Micro SD Cards|SD Cards",
          "Micro SD Card|Memory Card|SD Card|MicroSDXC Card",
          "Pro|Extreme|Ultra|Fast|Endurance|Rugged",
          "",
          "waterproof|shockproof|temperature proof|high speed",
          "sd adapter|4k video recording|full hd video",
          "cameras|dash cams|drones|handheld consoles",
          "Size=gb:2-4", "7-55", "pack"),
    _kind(_E, "computer monitors", "Computers & Accessories › Monitors",
          "Monitor|Gaming Monitor|Curved Monitor|Portable Monitor|LED Monitor|Ultrawide Monitor",
          "Frameless|Curved|Ultra Slim|Borderless|Widescreen|Anti Glare",
          "",
          "flicker free|eye care|ultra thin",
          "ips panel|vesa mount|built in speakers|hdmi port|full hd",
          "gaming|photo editing|dual monitor setup",
          "", "90-1300"),
    _kind(_E, "webcams",
          "Computers & Accessories › Computer Accessories & Peripherals"
          " › Audio & Video Accessories › Webcams",
          "Webcam|HD Webcam|Streaming Webcam|Conference Camera|Web Camera",
          "Wide Angle|Compact|Streaming|Autofocus|Plug and Play|Full HD",
          "",
          "auto focus|wide angle|plug and play",
          "built in microphone|privacy cover|ring light|tripod mount",
          "video calls|streaming|online classes",
          "", "18-95"),
    _kind(_E, "security cameras",
          "Camera & Photo › Video Surveillance › Surveillance Cameras › Dome Cameras"
          "|Bullet Cameras",
          "Security Camera|WiFi Camera|Doorbell Camera|Outdoor Camera|Pet Camera|Indoor Camera",
          "Wireless|Smart|Outdoor|Indoor|Solar|Pan Tilt",
          "",
          "weatherproof|wireless|solar powered",
          "night vision|motion detection|two way audio|cloud storage",
          "home security|pet monitoring|baby monitoring|outdoor use",
          "", "25-190", "pack"),
    _kind(_E, "camera tripods", "Camera & Photo › Tripods & Monopods › Complete Tripods",
          "Tripod|Phone Tripod|Selfie Stick Tripod|Camera Tripod|Travel Tripod|Mini Tripod",
          "Lightweight|Extendable|Flexible|Portable|Compact|Professional",
          "Aluminum Alloy|Carbon Fiber|Aluminum",
          "adjustable height|lightweight|extendable",
          "bluetooth remote|phone holder|ball head|carrying bag",
          "vlogging|live streaming|travel photography|dslr cameras",
          "", "12-95"),
    _kind(_E, "ring lights",
          "Camera & Photo › Lighting & Studio › Continuous Output Lighting › Ring Lights",
          "Ring Light|LED Ring Light|Selfie Ring Light|Video Light|Desk Ring Light",
          "Dimmable|Portable|Bright|Compact|Adjustable|Rechargeable",
          "",
          "dimmable|usb powered",
          "phone holder|tripod stand|three color modes|remote shutter",
          "makeup|video recording|video calls",
          "Size=6 Inch,10 Inch,12 Inch,18 Inch:2-3", "12-75"),
    _kind(_E, "smartwatches", "Wearable Technology › Smartwatches",
          "Smart Watch|Fitness Tracker|Smartwatch|Activity Tracker|Kids Smart Watch",
          "Waterproof|Slim|Rugged|Touchscreen|Sporty|Lightweight",
          "",
          "waterproof|long battery",
          "heart rate monitor|sleep tracking|step counter|blood oxygen|call notifications",
          "running|swimming|fitness tracking|android phones",
          "Color=gear:2-4", "25-190"),
    _kind(_E, "smartwatch bands", "Wearable Technology › Accessories › Bands",
          "Watch Band|Silicone Band|Sport Band|Metal Band|Nylon Band|Leather Band",
          "Soft|Breathable|Slim|Classic|Stretchy|Braided",
          "Silicone|Stainless Steel|Nylon|Genuine Leather",
          "quick release|sweat resistant|adjustable",
          "stainless steel|soft silicone|magnetic clasp",
          "women|men|sports",
          "Color=gear:2-6;Size=band:1-2", "7-30", "pack"),
    _kind(_E, "dash cameras",
          "Car & Vehicle Electronics › Car Electronics › Car Video › On-Dash Cameras",
          "Dash Cam|Dash Camera|Front and Rear Dash Cam|Mirror Dash Cam|Mini Dash Cam",
          "Full HD|Wide Angle|Compact|Dual|Smart|Mini",
          "",
          "wide angle|loop recording|wifi enabled",
          "night vision|g sensor|parking monitor|sd card",
          "cars|trucks|rideshare drivers",
          "", "30-170"),
    _kind(_E, "car phone mounts",
          "Cell Phones & Accessories › Accessories › Car Accessories › Car Cradles & Mounts",
          "Car Phone Holder|Magnetic Phone Mount|Dashboard Phone Mount|Air Vent Phone Holder"
          "|Cup Holder Phone Mount",
          "Universal|Magnetic|Adjustable|Sturdy|Compact|Foldable",
          "",
          "one hand operation|hands free",
          "strong suction|wireless charging|magnetic mount|telescopic arm",
          "car|trucks|navigation",
          "", "9-45"),
    _kind(_E, "tablet cases",
          "Computers & Accessories › Tablet Accessories › Bags, Cases & Sleeves › Cases",
          "Tablet Case|Folio Case|Keyboard Case|Tablet Sleeve|Kids Tablet Case",
          "Slim|Shockproof|Lightweight|Rugged|Trifold|Protective",
          "PU Leather|Silicone|TPU|EVA Foam",
          "auto sleep wake|shockproof|slim fit",
          "pencil holder|multi angle stand|hand strap|shoulder strap",
          "kids|students|10 inch tablets",
          "Color=gear:2-5", "10-50"),
    _kind(_E, "rechargeable batteries",
          "Accessories & Supplies › Batteries, Chargers & Accessories › Household Batteries"
          "|Battery Chargers",
          "AA Batteries|AAA Batteries|Rechargeable Batteries|Battery Charger|C Batteries",
          "Rechargeable|Long Lasting|High Capacity|Alkaline|Lithium|Precharged",
          "",
          "rechargeable|long lasting|leak proof|low self discharge",
          "high capacity|battery charger|storage case",
          "remote controls|toys|flashlights|game controllers",
          "", "8-45", "pack"),
    _kind(_E, "surge protectors", "Power Accessories › Surge Protectors|Power Strips",
          "Surge Protector|Power Strip|Extension Cord|Outlet Extender|Travel Power Strip",
          "Flat|Compact|Heavy Duty|Slim|Mountable|Long",
          "",
          "flat plug|wall mountable",
          "usb ports|long cord|surge protection|safety shutters",
          "kitchen|dorm room|workshop|home office|travel",
          "Color=White,Black,Grey:1-2", "12-50", "ft"),
    _kind(_E, "projectors", "Television & Video › Projectors",
          "Projector|Mini Projector|Portable Projector|Video Projector|Outdoor Projector",
          "Portable|Native|Smart|Mini|Bright|Home",
          "",
          "full hd|portable",
          "built in speaker|wifi bluetooth|keystone correction|projector screen",
          "home theater|outdoor movies|movie night|presentations",
          "", "60-1250"),
    # --- grocery ---------------------------------------------------------------------------------
    _kind(_R, "coffee beans",
          "Beverages › Coffee, Tea & Cocoa › Coffee › Whole Coffee Beans|Ground Coffee",
          "Whole Bean Coffee|Coffee Beans|Espresso Beans|Ground Coffee|Decaf Coffee",
          "Dark Roast|Medium Roast|Light Roast|Smooth|Bold|Low Acid",
          "Arabica|Colombian|Ethiopian|Sumatra|Guatemalan",
          "medium roast|dark roast|single origin|fair trade",
          "arabica beans|chocolate notes|nitrogen flushed bag",
          "french press|espresso machine|cold brew|drip coffee|breakfast",
          "Size=gsize:2-4;Flavor Name=House Blend,Breakfast Blend,French Roast,Colombian,"
          "Espresso,Decaf:2-4",
          "9-48", "oz"),
    _kind(_R, "coffee pods",
          "Beverages › Coffee, Tea & Cocoa › Coffee › Single-Serve Capsules & Pods",
          "Coffee Pods|Single Serve Coffee Capsules|Espresso Capsules|Coffee Pod Variety Pack",
          "Dark Roast|Medium Roast|Flavored|Bold|Smooth|Decaf",
          "Arabica|Colombian|Vanilla|Hazelnut",
          "recyclable|compostable|medium roast",
          "arabica beans|hazelnut flavor|vanilla flavor",
          "single serve brewers|office|busy mornings",
          "Flavor Name=Breakfast Blend,Hazelnut,French Vanilla,Caramel,Dark Roast:2-4",
          "12-50", "count"),
    _kind(_R, "tea", "Beverages › Coffee, Tea & Cocoa › Tea › Green|Herbal|Black|Matcha",
          "Green Tea|Herbal Tea|Chamomile Tea|Black Tea|Matcha Powder|Tea Bags",
          "Organic|Loose Leaf|Premium|Calming|Refreshing|Ceremonial",
          "Green Tea|Chamomile|Peppermint|Ginger|Hibiscus|Matcha",
          "caffeine free|individually wrapped",
          "green tea|peppermint|ginger|lemon balm",
          "relaxation|better sleep|digestion|iced tea",
          "Flavor Name=Peppermint,Lemon Ginger,Jasmine,Chamomile,Earl Grey,Hibiscus Berry:2-5",
          "5-32", "count"),
    _kind(_R, "protein bars", "Snack Foods › Bars › Protein Bars|Granola Bars|Energy Bars",
          "Protein Bars|Keto Bars|Snack Bars|Granola Bars|Energy Bars",
          "Chewy|Crunchy|Chocolate|Soft Baked|Plant Based|Low Carb",
          "Whey Protein|Pea Protein|Almonds|Oats|Dark Chocolate",
          "high protein|low sugar|plant based",
          "whey protein|almond butter|dark chocolate chips|sea salt",
          "post workout|meal replacement|on the go|healthy snack",
          "Flavor Name=Chocolate Peanut Butter,Cookie Dough,Birthday Cake,Salted Caramel,"
          "Mint Chocolate,Blueberry Almond:2-5",
          "12-42", "count"),
    _kind(_R, "chips & crisps",
          "Snack Foods › Chips & Crisps › Potato Chips|Tortilla Chips|Vegetable Chips",
          "Potato Chips|Tortilla Chips|Veggie Chips|Kettle Chips|Pita Chips|Plantain Chips",
          "Crunchy|Kettle Cooked|Baked|Thin|Spicy|Lightly Salted",
          "Potatoes|Corn|Sweet Potatoes|Avocado Oil|Chickpeas",
          "kettle cooked|baked|lightly salted",
          "sea salt|avocado oil|real vegetables",
          "lunch boxes|party snacks|game day|healthy snack",
          "Flavor Name=Sea Salt,Salt and Vinegar,Barbecue,Jalapeno,Cheddar Sour Cream:2-4",
          "10-35", "ozpack"),
    _kind(_R, "nuts & seeds", "Snack Foods › Nuts & Seeds › Mixed Nuts|Almonds|Cashews|Pistachios",
          "Mixed Nuts|Roasted Almonds|Cashews|Pistachios|Trail Mix|Pumpkin Seeds",
          "Roasted|Salted|Unsalted|Raw|Honey Roasted|Deluxe",
          "Almonds|Cashews|Pecans|Walnuts|Pistachios",
          "lightly salted|dry roasted|high protein",
          "sea salt|resealable bag|whole cashews",
          "hiking|baking|road trips|healthy snack",
          "Size=gsize:2-4", "8-42", "oz"),
    _kind(_R, "jerky & dried meats", "Snack Foods › Jerky & Dried Meats › Beef Jerky|Meat Sticks",
          "Beef Jerky|Turkey Jerky|Meat Sticks|Jerky Variety Pack|Pork Jerky",
          "Original|Teriyaki|Peppered|Smoky|Sweet and Spicy|Tender",
          "Beef|Turkey|Pork|Venison",
          "high protein|low fat|grass fed",
          "grass fed beef|black pepper|resealable bag",
          "road trips|camping|post workout",
          "Flavor Name=Original,Teriyaki,Peppered,Sweet and Spicy,Hickory Smoked:2-4",
          "8-42", "oz"),
    _kind(_R, "dried fruits", "Dried Fruits & Vegetables › Dried Fruits",
          "Dried Mango|Dried Cranberries|Freeze Dried Strawberries|Dried Apricots|Dried Fruit Mix"
          "|Medjool Dates",
          "Unsweetened|Soft|Chewy|Freeze Dried|Sun Dried|Crunchy",
          "Mango|Cranberries|Strawberries|Apricots|Dates",
          "no sugar added|unsweetened|sulfur free",
          "real fruit|resealable bag|no preservatives",
          "trail mix|baking|kids snack|smoothies|healthy snack",
          "Size=gsize:2-4", "6-32", "oz"),
    _kind(_R, "chocolate & candy",
          "Candy & Chocolate › Chocolate › Chocolate Bars"
          "|Chocolate Truffles;Candy & Chocolate › Gummy Candy",
          "Dark Chocolate Bar|Milk Chocolate|Chocolate Truffles|Chocolate Covered Almonds"
          "|Gummy Candy|Caramels",
          "Rich|Creamy|Assorted|Smooth|Gourmet|Bite Sized",
          "Cocoa|Sea Salt|Almonds|Caramel|Hazelnuts",
          "individually wrapped|dairy free|fair trade|sugar free",
          "sea salt|dark chocolate|real fruit juice",
          "valentines day|party favors|easter baskets",
          "Flavor Name=Dark Chocolate,Milk Chocolate,Sea Salt Caramel,Mint,Assorted:2-4",
          "6-42", "oz"),
    _kind(_R, "cookies", "Snack Foods › Cookies › Chocolate Chip|Shortbread|Sandwich Cookies",
          "Cookies|Shortbread Cookies|Chocolate Chip Cookies|Oatmeal Cookies|Sandwich Cookies"
          "|Butter Cookies",
          "Crunchy|Soft Baked|Chewy|Bite Size|Homestyle|Crispy",
          "Butter|Oats|Chocolate Chips|Almond Flour",
          "soft baked|individually wrapped|vegan|low sugar",
          "real butter|chocolate chips|almond flour",
          "lunch boxes|holiday gift|coffee breaks",
          "", "6-32", "ozpack"),
    _kind(_R, "pasta", "Pasta & Noodles › Dry Pasta › Spaghetti|Penne|Rotini|Egg Noodles",
          "Spaghetti|Penne Pasta|Whole Wheat Pasta|Chickpea Pasta|Egg Noodles|Rotini",
          "Italian|Bronze Cut|Whole Grain|Artisan|Classic|Protein",
          "Durum Wheat|Chickpeas|Red Lentils|Brown Rice|Semolina",
          "high protein|whole grain|bronze cut",
          "durum wheat semolina|chickpea flour|red lentils",
          "family dinner|meal prep|pasta salad",
          "", "6-32", "ozpack"),
    _kind(_R, "pasta sauce", "Pantry Staples › Sauces, Gravies & Marinades › Pasta Sauces",
          "Pasta Sauce|Marinara Sauce|Alfredo Sauce|Pesto Sauce|Tomato Basil Sauce|Vodka Sauce",
          "Homestyle|Rich|Chunky|Traditional|Roasted Garlic|Spicy",
          "Tomatoes|Basil|Garlic|Parmesan|Olive Oil",
          "no sugar added|slow cooked|low sodium|low sugar",
          "san marzano tomatoes|olive oil|fresh basil",
          "pasta dinner|pizza|lasagna",
          "", "6-32", "ozpack"),
    _kind(_R, "cooking oils", "Pantry Staples › Cooking & Baking › Cooking Oils › Olive|Avocado",
          "Extra Virgin Olive Oil|Avocado Oil|Coconut Oil|Cooking Spray|Sesame Oil",
          "Cold Pressed|Pure|Refined|Unrefined|Premium|Single Origin",
          "Olives|Avocados|Coconuts|Sesame Seeds",
          "cold pressed|first cold|single origin",
          "glass bottle|olive oil|high smoke point",
          "cooking|salad dressing|high heat",
          "", "8-48", "floz"),
    _kind(_R, "herbs, spices & seasonings",
          "Pantry Staples › Herbs, Spices & Seasonings › Mixed Spices & Seasonings|Single Spices",
          "Seasoning Blend|Garlic Powder|Smoked Paprika|Taco Seasoning|Everything Bagel Seasoning"
          "|Steak Rub",
          "Smoky|Spicy|Savory|Zesty|All Purpose|Classic",
          "Garlic|Paprika|Black Pepper|Onion|Chili",
          "salt free|no msg",
          "black pepper|garlic|sea salt",
          "grilling|meat rubs|roasted vegetables",
          "", "5-26", "oz"),
    _kind(_R, "honey", "Pantry Staples › Jams, Jellies & Sweet Spreads › Honey",
          "Raw Honey|Manuka Honey|Wildflower Honey|Honey Sticks|Clover Honey|Creamed Honey",
          "Raw|Pure|Unfiltered|Local|Golden|Creamy",
          "Wildflower|Clover|Orange Blossom|Buckwheat",
          "raw unfiltered|unpasteurized",
          "glass jar|squeeze bottle|honeycomb",
          "tea|baking|sore throat",
          "", "8-62", "oz"),
    _kind(_R, "nut & seed butters",
          "Pantry Staples › Jams, Jellies & Sweet Spreads › Nut & Seed Butters",
          "Peanut Butter|Almond Butter|Cashew Butter|Sunflower Seed Butter|Mixed Nut Butter",
          "Creamy|Crunchy|Natural|Roasted|Smooth|Salted",
          "Peanuts|Almonds|Cashews|Sunflower Seeds",
          "no sugar added|palm oil free|no stir|low sugar",
          "dry roasted peanuts|sea salt|squeeze packs",
          "smoothies|sandwiches|post workout",
          "", "6-32", "oz"),
    _kind(_R, "breakfast cereals", "Breakfast Foods › Cereals › Cold Cereals|Granola|Oatmeal",
          "Granola|Cereal|Oatmeal|Overnight Oats|Muesli|Instant Oatmeal",
          "Crunchy|Honey|Ancient Grain|Hearty|Toasted|Maple",
          "Oats|Quinoa|Almonds|Flax Seeds|Honey",
          "whole grain|high fiber|low sugar",
          "rolled oats|flax seeds|real fruit",
          "yogurt topping|kids|breakfast",
          "", "5-32", "ozpack"),
    _kind(_R, "baking flours & mixes",
          "Pantry Staples › Cooking & Baking › Flours & Meals|Baking Mixes",
          "Almond Flour|All Purpose Flour|Pancake Mix|Brownie Mix|Coconut Flour|Bread Mix",
          "Blanched|Finely Ground|Fluffy|Fudgy|Stone Ground|Easy",
          "Almonds|Wheat|Coconut|Oats|Cassava",
          "low carb|blanched|unbleached",
          "almond flour|cane sugar|real vanilla",
          "baking|pancakes|holiday baking",
          "", "5-32", "oz"),
    _kind(_R, "sparkling water",
          "Beverages › Bottled Beverages, Water & Drink Mixes › Water › Sparkling Water",
          "Sparkling Water|Flavored Sparkling Water|Seltzer Water|Mineral Water|Sparkling Juice",
          "Refreshing|Crisp|Lightly Flavored|Bubbly|Natural|Zero Calorie",
          "Lime|Grapefruit|Black Cherry|Lemon|Mango",
          "zero calorie|naturally flavored|caffeine free|sugar free|low calorie",
          "natural fruit essence|mineral water|electrolytes",
          "parties|picnics|dinner",
          "Flavor Name=Lime,Grapefruit,Black Cherry,Lemon,Mango,Variety Pack:2-4",
          "8-36", "canpack"),
    _kind(_R, "electrolyte drink mixes",
          "Beverages › Bottled Beverages, Water & Drink Mixes › Sports Drinks"
          "|Powdered Drink Mixes",
          "Electrolyte Powder|Hydration Drink Mix|Sports Drink Mix|Electrolyte Tablets"
          "|Hydration Multiplier",
          "Fast|Refreshing|Zero Sugar|Fruity|Clean|Daily",
          "Electrolytes|Vitamin C|Coconut Water|Sea Salt",
          "fast absorbing|caffeine free|sugar free",
          "electrolytes|vitamin c|coconut water",
          "hydration|post workout|hot weather|travel",
          "Flavor Name=Lemon Lime,Watermelon,Tropical Punch,Raspberry,Orange:2-4",
          "10-42", "count"),
    _kind(_R, "protein powders",
          "Beverages › Bottled Beverages, Water & Drink Mixes › Protein Drinks & Powders",
          "Whey Protein Powder|Plant Protein Powder|Collagen Powder|Protein Shake Mix"
          "|Casein Protein",
          "Unflavored|Chocolate|Vanilla|Smooth|Creamy|Grass Fed",
          "Whey Protein|Pea Protein|Collagen Peptides|Brown Rice Protein",
          "high protein|grass fed|no artificial sweeteners",
          "whey protein|collagen peptides|digestive enzymes",
          "muscle recovery|post workout|weight management",
          "Flavor Name=Chocolate,Vanilla,Unflavored,Strawberry,Cookies and Cream:2-4",
          "20-75", "lb"),
    _kind(_R, "hot cocoa", "Beverages › Coffee, Tea & Cocoa › Cocoa › Hot Cocoa|Cocoa Powder",
          "Hot Cocoa Mix|Hot Chocolate Mix|Cocoa Powder|Drinking Chocolate",
          "Rich|Creamy|Dark|Classic|Gourmet|Dutch Processed",
          "Cocoa|Dark Chocolate|Cane Sugar|Marshmallows",
          "dairy free|fair trade|rich creamy",
          "mini marshmallows|real cocoa|cane sugar",
          "winter|hot drinks|stocking stuffers",
          "", "6-32", "oz"),
    _kind(_R, "crackers", "Snack Foods › Crackers",
          "Crackers|Rice Crackers|Seed Crackers|Cheese Crackers|Graham Crackers|Water Crackers",
          "Crispy|Thin|Seeded|Artisan|Crunchy|Baked",
          "Brown Rice|Flax Seeds|Cheddar|Wheat|Almond Flour",
          "whole grain|plant based|baked",
          "flax seeds|real cheese|sea salt",
          "charcuterie board|lunch boxes|soups|healthy snack",
          "", "5-26", "ozpack"),
    _kind(_R, "popcorn", "Snack Foods › Popcorn › Popped|Microwave|Kernels",
          "Popcorn|Microwave Popcorn|Popcorn Kernels|Kettle Corn|Caramel Corn",
          "Buttery|Light|Sweet and Salty|Crunchy|White Cheddar|Classic",
          "Corn Kernels|Coconut Oil|Sea Salt|Butter",
          "whole grain|ready to eat|low calorie",
          "coconut oil|sea salt|real butter",
          "movie night|party snacks",
          "Flavor Name=Butter,Kettle Corn,White Cheddar,Sea Salt,Caramel:2-4", "6-32", "ozpack"),
    _kind(_R, "soups & broths",
          "Canned, Jarred & Packaged Foods › Soups, Stocks & Broths › Broths|Soups",
          "Bone Broth|Chicken Broth|Vegetable Soup|Lentil Soup|Ramen Noodle Soup|Tomato Soup",
          "Hearty|Savory|Homestyle|Rich|Light|Instant",
          "Chicken|Beef|Vegetables|Lentils|Tomatoes",
          "low sodium|ready to eat|high protein",
          "chicken bone broth|vegetables|noodles",
          "quick lunch|cooking|cold days",
          "", "6-36", "ozpack"),
    _kind(_R, "gourmet gifts", "Food & Beverage Gifts › Snack Gifts|Gourmet Gifts|Chocolate Gifts",
          "Snack Gift Box|Gourmet Gift Basket|Chocolate Gift Box|Cookie Tin|Snack Box",
          "Deluxe|Assorted|Festive|Premium|Holiday|Classic",
          "Cookies|Chocolates|Nuts|Crackers|Cheese",
          "individually wrapped|ready to gift",
          "gift box|assorted snacks|greeting card",
          "birthday|holiday|care package|corporate gifts",
          "", "20-95", "count"),
    _kind(_R, "rice & grains", "Pantry Staples › Dried Beans, Grains & Rice › Rice|Quinoa|Grains",
          "Jasmine Rice|Basmati Rice|Quinoa|Brown Rice|Wild Rice Blend|Arborio Rice",
          "Long Grain|Aged|Fluffy|Aromatic|Whole Grain|Quick Cooking",
          "Jasmine|Basmati|Quinoa|Brown Rice",
          "long grain|whole grain|quick cooking",
          "resealable bag|ancient grains|aged rice",
          "meal prep|stir fry|rice cooker",
          "", "6-36", "lb"),
)
# fmt: on

# Words that spaCy's small English model would not tag NOUN/PROPN inside the noun phrases (product
# nouns, materials, attribute phrases, quantities) the titles are built from.
_NOT_NOUN = frozenset(
    """
    a abs absorbent absorbing activated added adjustable aged airtight alkaline all amplified an
    analog ancient and anti apply arched aromatic articulating artificial assemble assorted at
    athletic auto backless backlit bad baked based basic behind better beveled black blanched blue
    bold borderless braided breathable bright broad brown brushed built busy buttery by calming
    cancelling carry cast casual certified chapped chewy chunky clarifying classic clean clear
    clinical clinically clogged close closed coiled cold collapsible colloidal colorful comedogenic
    comfortable comfy compact compatible composite compostable controlled convertible cooked cool
    cooling cordless covered cozy cracked creamed creamy crispy crunchy cubic curly curved
    cushioned cut cute daily dainty damaged dark darkening de dead decorative deep delicate dense
    detachable digestive digital dimmable distressed double dressy dried dry drying dual durable
    dustproof dusty dutch easy eco egyptian elastic electric elegant embroidered enabled enameled
    endurance engineered ergonomic essential ethiopian everyday everything exfoliating expandable
    extendable extra extreme fair fast fed festive fine finely firm firming first fitted five flat
    flavored flexible floating flowy fluffy flushed foaming foldable folding for forged four frayed
    free freeze french fresh friendly frizzy from full funny galvanized gentle genuine glazed
    glossy glycolic go golden gourmet graphic greasy green ground guatemalan hanging hard healthy
    hearty heavy herbal hi hidden high highly himalayan homestyle hooded hot hyaluronic hydrating
    hypoallergenic iced immersive in included individually indoor ingrown inner install instant
    insulated intensive invisible ionic itchy japanese kosher large lasting layered leave lifting
    lightly lightweight lined live local long looking loose loud low luxury magnetic matte mature
    mechanical medium micro mid mini minimalist mirrored mixed modern moisturizing mountable
    mounted multi multiple narrow native natural naturally negative neutral no non nonstick of off
    oily on one online open optical or organic original outdoor over overnight oversized packable
    padded permanent personalized pigmented pivoting plated plumping plush pointed polarized
    portable post powered powerful pre precharged premium printed private professional prone proof
    protect protective proven puffy pure quick quiet quilted radiant raised rapid raw ready real
    rear rechargeable reclaimed reclining rectangular recyclable red refillable refined refreshing
    regular reinforced relaxed remote removable repairing resealable resistant restorative retro
    reusable reversible ribbed rich ripped roasted rolled rolling rough round rugged rural rustic
    safe salted seamless semi sensitive sexy shaped sharp shatterproof sheer shockproof short
    shredded shrunk shut sided silent silky single sliding slim slow small smart smoked smoky
    smooth soft solar solid soothing sore sparkling sparkly speckled spicy sporty spun square
    stackable stainless standing stay sterling stiletto stir straight strappy stretchy striped
    strong sturdy sweet swivel synthetic tactical tagless tall telescopic tempered tested textured
    the thermal thin three tilting tinted to toxic traditional treated trendy tufted turkish twirly
    two ultra ultrawide unbleached unbreakable uneven unfiltered unflavored unpasteurized unrefined
    unsalted unscented unstructured unsweetened up upholstered vertical vibrant vintage virgin
    volumizing waisted warm washable waterproof wavy weatherproof weighted whipped white whole
    wicking wide wild windproof wireless with wooden woody woven wrapped x zero zesty
    """.split()
)
_UPPER = frozenset(
    "usb hdmi led rgb uv spf bpa gmo usda hd dpi rfid tv tvs pfoa msg ips lcd pu pvc peva pet "
    "tpu eva gan sd sls bb id g ac diy dslr ph".split()
)

_TOKEN = re.compile(r"(['\u2019])?([A-Za-z0-9]+)")


def title_tokens(title: str) -> list[str]:
    """The tokens of a title, lower-cased: runs of ASCII letters and digits; a possessive ``s``
    after an apostrophe is dropped.

    >>> title_tokens("Velora Women's Casual Maxi Dress, 8 Ounce (Pack of 2)")
    ['velora', 'women', 'casual', 'maxi', 'dress', '8', 'ounce', 'pack', 'of', '2']
    """
    return [w.lower() for a, w in _TOKEN.findall(title) if not (a and w.lower() == "s")]


_NOUN_CACHE: dict[tuple[str, int], list[str]] = {}


def _nouns(text: str, mode: int) -> list[str]:
    """The title nouns of one title part: mode 0 a brand (every word), 1 a descriptor (none),
    2 a noun phrase (every word but those in :data:`_NOT_NOUN` and numbers)."""
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
                if not any(c.isdigit() for c in t) and (mode == 0 or t not in _NOT_NOUN)
            ]
        _NOUN_CACHE[key] = found
    return found


def _title_case(phrase: str) -> str:
    """An attribute phrase as Amazon title words ("usb c" -> "USB C")."""
    return " ".join(w.upper() if w in _UPPER else w[:1].upper() + w[1:] for w in phrase.split())


# ---------------------------------------------------------------------------------------------
# Random pieces: brands, quantities, prices.
# ---------------------------------------------------------------------------------------------

_SYL1 = (
    "Vel Kor Zan Mir Tov Lun Brix Quel Oro Sav Fen Dal Tam Yor Wex Pel Jor Cav Rin Ald Bex Dun "
    "Elv Fal Gav Hal Ivo Kel Lor Mav Nol Orv Pax Rov Sel Tyr Ulm Vor Wyn Xan Yel Zor Ket Pim Sul"
).split()
_SYL2 = (
    "ora ix ena ovo ari elle indo una esk ith mont wick dale ley via ani ero ist azo umi".split()
)
_BRAND_WORD = {
    "fashion": ("Apparel", "Studio", "Threads", "Wear", "Outfitters"),
    "beauty": ("Beauty", "Labs", "Botanics", "Skin", "Naturals"),
    "garden": ("Home", "Living", "Casa", "Works", "Garden"),
    "electronics": ("Tech", "Audio", "Digital", "Labs", "Power"),
    "grocery": ("Farms", "Kitchen", "Foods", "Pantry", "Roasters"),
}
_BRANDS_PER_CATEGORY = 70
#: Syllable pairs that spell an existing brand or a well-known name.
_NOT_BRANDS = ("velvia", "savora", "halley", "lunari", "korero")


def _brands(rng: random.Random) -> dict[str, list[str]]:
    """About 70 invented brand names per category (all distinct)."""
    seen: set[str] = set()
    out: dict[str, list[str]] = {}
    for cat in CATEGORIES:
        names: list[str] = []
        while len(names) < _BRANDS_PER_CATEGORY:
            stem = rng.choice(_SYL1) + rng.choice(_SYL2)
            if stem.lower() in seen or stem.lower() in _NOT_BRANDS:
                continue
            seen.add(stem.lower())
            u = rng.random()
            if u < 0.2:
                stem = stem.upper()
            elif u < 0.4:
                stem = f"{stem} {rng.choice(_BRAND_WORD[cat])}"
            names.append(stem)
        out[cat] = names
    return out


def _qty(kind: str, rng: random.Random) -> str:
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


_ENDINGS = (0.99, 0.99, 0.99, 0.95, 0.0, 0.49, 0.89, -1.0)


def _price_value(lo: float, hi: float, rng: random.Random) -> float:
    """A price between lo and hi (log-uniform) with an Amazon-style ending."""
    v = lo * (hi / lo) ** rng.random()
    end = rng.choice(_ENDINGS)
    cents = rng.randrange(100) / 100 if end < 0 else end
    return max(int(v), 1) + cents


def _pricing(kind: _Kind, rng: random.Random) -> str:
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


# ---------------------------------------------------------------------------------------------
# Text templates.
# ---------------------------------------------------------------------------------------------

_ADJ_BULLETS = (
    "{A} {DW} - Our {a} {dw} makes the {h} a dependable pick, offering {b}.",
    "{A}: thoughtfully made {a} {h} for your everyday routine.",
    "[{A}] {Ac} {dw}, checked by hand before shipping, for {b}.",
    "{A} - The {a} {dw} keeps your {h} looking and working like new.",
)
_WITH_BULLETS = (
    "{A} - Made with {a} for {b}.",
    "Features {a} for {b} and everyday value.",
    "{A}: designed with {a} to give you {b} day after day.",
    "[With {A}] Thoughtful details like {a} set the {h} apart.",
)
_FOR_BULLETS = (
    "Perfect for {a} - a great choice whenever you need something you can count on.",
    "IDEAL FOR {A}: suitable for {a}, gifting and everyday use.",
    "Great for {a}, at home or on the go; {b} guaranteed.",
    "[Perfect for {A}] Versatile {h} for {a} and more.",
)
_SERVICE = "Customer service: 30 day hassle free returns and friendly support "
#: Extra bullets per product family (see :func:`_family`).
_EXTRA_BULLETS = {
    "apparel": (
        "Material: {comp} ",
        "Closure: {closure} ",
        "Care instructions: machine wash cold with like colors, tumble dry low ",
        "Size guide: please check the size chart in the images before ordering ",
        "Occasion: great for work, weekends, vacation, parties and everyday outfits ",
    ),
    "shoes": (
        "Material: {mat} upper, rubber outsole ",
        "Closure: {closure} ",
        "Fit: true to size; please see the size chart before ordering ",
        "Care: spot clean with a damp cloth and air dry ",
        "Occasion: great for walking, travel, work and weekends ",
    ),
    "accessories": (
        "Material: {mat} ",
        "Package includes: 1 x {h} in a gift box ",
        "Care: wipe clean with a soft dry cloth ",
        "Gift idea: a thoughtful present for birthdays, anniversaries and holidays ",
        _SERVICE,
    ),
    "beauty": (
        "Key ingredients: {mat}, {mat2} and {mat3} ",
        "How to use: apply a small amount and massage gently; use daily for best results ",
        "Package includes: {pkg} ",
        "Suitable for all skin and hair types; please patch test before first use ",
        "Our promise: made in small batches and never tested on animals ",
    ),
    "beauty tools": (
        "Material: {mat}, {mat2} ",
        "How to use: follow the included guide and clean after each use ",
        "Package includes: {pkg} ",
        "Gift idea: a thoughtful present for birthdays, holidays and self care ",
        _SERVICE,
    ),
    "furniture": (
        'Dimensions: {w}" L x {d}" W x {ht}" H ',
        "Material: {mat} ",
        "Assembly: all hardware and step by step instructions included ",
        "Care: wipe with a soft damp cloth; avoid harsh cleaners ",
        "Weight capacity: up to {cap} lbs ",
    ),
    "home": (
        "Material: {mat} ",
        "Package includes: {pkg} ",
        "Care: clean gently as the care label says to keep it looking new ",
        "Gift idea: a thoughtful housewarming, wedding or holiday gift ",
        _SERVICE,
    ),
    "electronics": (
        "What's in the box: {pkg}, user manual ",
        "Warranty: {months} month warranty and friendly customer support ",
        "Compatibility: works with most phones, tablets, laptops and TVs ",
        "Specifications: {spec} ",
        "Safety: certified components with over-current and short-circuit protection ",
    ),
    "grocery": (
        "Ingredients: {mat}, {mat2} ",
        "Net weight: {pkg} ",
        "Storage: keep in a cool, dry place and reseal after opening ",
        "Allergen note: made in a facility that also handles tree nuts, milk and soy ",
        "Satisfaction guarantee: if you don't love it, contact us for a replacement or refund ",
    ),
}
_BEAUTY_TOOLS = (
    "hair styling tools",
    "makeup brushes & tools",
    "foot, hand & nail care",
    "electric toothbrushes",
    "shave & hair removal",
    "bathing accessories",
    "hair extensions, wigs & accessories",
    "bags & cases",
)
_DESCRIPTIONS = (
    "{Brand} {d} {h}, designed for {use}.",
    "Enjoy {a1} and {b} with the {h}.",
    "Thank you for choosing {Brand}; we are happy to help with any question.",
    "Shoppers love the {d} {h} for {use}.",
    "Crafted for {b} and built to last.",
)
_DESCRIPTIONS_MAT = (*_DESCRIPTIONS, "{Brand} {h} made with {mat}.")
_CLOSURES = ("Pull On", "Zipper", "Button", "Lace Up", "Drawstring", "Hook and Eye", "Snap")


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


# ---------------------------------------------------------------------------------------------
# The generator.
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Prepared:
    """A kind with what every product of it reuses: attribute pools, extra bullets, texts."""

    kind: _Kind
    cat: _Category
    own: tuple[tuple[str, int], ...]
    common: tuple[tuple[str, int], ...]
    extras: tuple[str, ...]
    descriptions: tuple[str, ...]


def _family(kind: _Kind) -> str:
    """The product family of a kind: its common attributes and extra bullets."""
    if kind.category == "fashion":
        if kind.query in _FASHION_ACCESSORIES:
            return "accessories"
        return "shoes" if " Shoes " in kind.crumbs[0] else "apparel"
    if kind.category == "beauty":
        return "beauty tools" if kind.query in _BEAUTY_TOOLS else "beauty"
    if kind.category == "garden":
        return "furniture" if "Furniture" in kind.crumbs[0] else "home"
    return kind.category


def _sentence_case(head: str) -> str:
    """A title noun phrase as it reads in a sentence ("USB C Cable" -> "USB C cable")."""
    return " ".join(w if w.isupper() and len(w) > 1 else w.lower() for w in head.split())


def _prepare() -> dict[str, list[_Prepared]]:
    out: dict[str, list[_Prepared]] = {c: [] for c in CATEGORIES}
    for kind in _KINDS:
        cat = _CATS[kind.category]
        own_names = [a for a, _ in kind.attrs]
        family = _family(kind)
        common = tuple(
            (a, slot)
            for slot, pool in enumerate(_COMMON[family])
            for a in pool.split("|")
            if a not in own_names
        )
        extras = _EXTRA_BULLETS[family]
        if not kind.mats:
            extras = tuple(e for e in extras if "{mat" not in e)
        descriptions = _DESCRIPTIONS_MAT if kind.mats else _DESCRIPTIONS
        out[kind.category].append(_Prepared(kind, cat, kind.attrs, common, extras, descriptions))
    return out


_PREPARED = _prepare()


def _options(kind: _Kind, asin: str, rng: random.Random) -> dict[str, list[dict[str, Any]]] | str:
    """The raw ``customization_options``: "" or {name: [{"value", "image"}, ...]}."""
    if not kind.options or rng.random() >= _CATS[kind.category].p_options:
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
    kind: _Kind, attrs: list[tuple[str, int]], rng: random.Random
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
    kind: _Kind,
    brand: str,
    head: str,
    descs: list[str],
    mat: str,
    qty: str,
    shown: list[tuple[str, int]],
    rng: random.Random,
) -> tuple[str, list[str]]:
    """An Amazon-style title in one of three layouts, with its nouns (see :func:`_nouns`)."""
    r = rng.random
    sp = (" ", 1)
    parts: list[tuple[str, int]] = []  # (text, noun mode)
    if r() < 0.93:
        parts += [(brand, 0), sp]
    who = [sp, ("for " + kind.who.removesuffix("'s").removesuffix("'"), 2)] if kind.who else []
    if who and r() < 0.7:
        parts += [(kind.who, 2), sp]
        who = []
    feats = [(_title_case(a), s) for a, s in shown]
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
    return name, [n for t, mode in parts for n in _nouns(t, mode)]


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
        tpl = c((_ADJ_BULLETS, _WITH_BULLETS, _FOR_BULLETS)[s])
        bullets.append(
            tpl.format(
                A=a.upper(), Ac=_cap(a), a=a, DW=dw.upper(), dw=dw, h=head, b=c(cat.benefits)
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
        "closure": c(_CLOSURES),
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
    qty = _qty(kind.qty, rng) if kind.qty and r() < 0.6 else ""
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
        description = " ".join(_cap(t.format(**fill)) for t in sentences)

    raw = {
        "name": name,
        "full_description": description,
        "pricing": _pricing(kind, rng),
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
