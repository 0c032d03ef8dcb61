"""The embedded WebShop catalogue generator and its shipped data: byte-identical regeneration, the
official raw formats (items_shuffle, items_ins_v2, title_nouns), distributions and invariants."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import re
import time
from collections import Counter

import pytest

from agentenvs.webshop import vocabulary
from agentenvs.webshop.generate import (
    CATEGORIES,
    CATEGORY_SHARES,
    DATA_DIR,
    DATA_FILES,
    PRODUCT_KEYS,
    generate_catalog,
    main,
    title_tokens,
    write_data,
)

_PRICE = r"\$\d{1,3}(?:,\d{3})*\.\d{2}"
_PRICING = re.compile(rf"^(?:({_PRICE})(?: - ({_PRICE}))?)?$")
_ASIN = re.compile(r"^B0[0-9A-Z]{8}$")
_OPTION_NAMES = {
    "Color",
    "Size",
    "Style",
    "Flavor Name",
    "Scent",
    "Pattern Name",
    "Item Package Quantity",
    "Size Name",
}
_ROOTS = {
    "beauty": {"Beauty & Personal Care"},
    "fashion": {"Clothing, Shoes & Jewelry"},
    "garden": {"Home & Kitchen", "Patio, Lawn & Garden", "Tools & Home Improvement"},
    "electronics": {"Electronics", "Cell Phones & Accessories"},
    "grocery": {"Grocery & Gourmet Food"},
}


def _dollars(text: str) -> float:
    return float(text.lstrip("$").replace(",", ""))


@pytest.fixture(scope="module")
def sample():
    return generate_catalog(4000, seed=1)


@pytest.fixture(scope="module")
def shipped():
    out = []
    for name in DATA_FILES:
        with gzip.open(DATA_DIR / name, "rt", encoding="utf-8") as f:
            out.append(json.load(f))
    return tuple(out)


def test_same_seed_same_bytes_and_prefix_property(tmp_path):
    a = write_data(tmp_path / "a", num_products=200, seed=7)
    b = write_data(tmp_path / "b", num_products=200, seed=7)
    c = write_data(tmp_path / "c", num_products=200, seed=8)
    assert [p.name for p in a] == list(DATA_FILES)
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]
    assert a[0].read_bytes() != c[0].read_bytes()
    # a smaller catalogue is the prefix of a larger one with the same seed
    small, big = generate_catalog(50, seed=7), generate_catalog(200, seed=7)
    assert small[0] == big[0][:50]
    assert small[1] == {k: big[1][k] for k in small[1]}


def test_shipped_files_match_a_fresh_generation_and_fit_the_budget(tmp_path):
    fresh = write_data(tmp_path)  # the defaults: 5000 products, seed 0
    for path in fresh:
        assert (DATA_DIR / path.name).read_bytes() == path.read_bytes(), path.name
    assert sum((DATA_DIR / name).stat().st_size for name in DATA_FILES) < 3_000_000


def test_check_command_passes_then_fails_on_a_changed_file(tmp_path, capsys):
    write_data(tmp_path, num_products=30, seed=2)
    main(["--out", str(tmp_path), "--num-products", "30", "--seed", "2", "--check"])
    assert "ok" in capsys.readouterr().out
    (tmp_path / DATA_FILES[1]).write_bytes(b"")
    with pytest.raises(SystemExit) as exit_info:
        main(["--out", str(tmp_path), "--num-products", "30", "--seed", "2", "--check"])
    assert "mismatch" in str(exit_info.value.code) and DATA_FILES[1] in str(exit_info.value.code)


def test_raw_products_follow_the_items_shuffle_format(sample):
    products, _, _ = sample
    asins = [p["asin"] for p in products]
    assert len(set(asins)) == len(asins)
    for p in products:
        assert tuple(p) == PRODUCT_KEYS
        assert _ASIN.match(p["asin"]) and p["asin"] != "nan"
        assert p["name"] and p["name"] == p["name"].strip()
        assert isinstance(p["full_description"], str)
        bullets = p["small_description"]
        assert 3 <= len(bullets) <= 7
        assert all(isinstance(b, str) and len(b) > 5 and b.endswith(" ") for b in bullets)
        assert p["images"] == [f"/images/{p['asin']}.svg"]
        crumbs = p["product_category"].split(" \u203a ")
        assert len(crumbs) >= 3 and crumbs[0] in _ROOTS[p["category"]]
        assert p["category"] in CATEGORIES
        assert p["query"] == p["query"].lower().strip() and p["query"]
        assert isinstance(p["page"], int) and 1 <= p["page"] <= 10


def test_pricing_strings_parse(sample, shipped):
    for products in (sample[0], shipped[0]):
        values = []
        for p in products:
            m = _PRICING.match(p["pricing"])
            assert m, p["pricing"]
            if m.group(2):
                assert _dollars(m.group(1)) < _dollars(m.group(2))
            if m.group(1):
                values.append(_dollars(m.group(1)))
        assert min(values) >= 1.0
    pricings = [p["pricing"] for p in shipped[0]]
    n = len(pricings)
    assert 0.03 < sum(x == "" for x in pricings) / n < 0.07
    assert 0.2 < sum(" - " in x for x in pricings) / n < 0.3
    assert any("," in x for x in pricings)  # thousands separators
    above = sum(_dollars(x.split(" - ")[0]) > 970 for x in pricings if x)
    assert 1 <= above <= 0.02 * n  # a few


def test_customization_options(sample):
    products, _, _ = sample
    with_options = 0
    for p in products:
        options = p["customization_options"]
        if options == "":
            continue
        with_options += 1
        assert isinstance(options, dict) and options
        assert set(options) <= _OPTION_NAMES
        for values in options.values():
            assert values and all(set(v) == {"value", "image"} for v in values)
            texts = [v["value"] for v in values]
            assert all(t and t == t.strip() for t in texts)
            # distinct as the loader processes them (lower-cased, "/" -> " | ")
            processed = [t.replace("/", " | ").lower() for t in texts]
            assert len(set(processed)) == len(processed)
            assert all(v["image"] is None or isinstance(v["image"], str) for v in values)
    assert 0.3 < with_options / len(products) < 0.6
    values = [
        v["value"]
        for p in products
        if p["customization_options"]
        for group in p["customization_options"].values()
        for v in group
    ]
    assert any("/" in v for v in values) and "X-Small" in values
    assert any(re.fullmatch(r".+ \(Pack of \d+\)", v) for v in values)


def test_category_and_query_distribution(sample):
    products, _, _ = sample
    n = len(products)
    shares = Counter(p["category"] for p in products)
    for cat, share in CATEGORY_SHARES.items():
        assert abs(shares[cat] / n - share) < 0.03, cat
    queries = Counter(p["query"] for p in products)
    per_category = Counter(
        cat for cat, _ in {(p["category"], p["query"]) for p in products}
    )  # each query belongs to one category
    assert len(per_category) == 5 and sum(per_category.values()) == len(queries)
    assert min(per_category.values()) >= 25
    assert min(queries.values()) >= 5  # several products share each query


def test_items_ins_attributes_and_instructions(sample):
    products, ins, _ = sample
    assert list(ins) == [p["asin"] for p in products]
    with_instruction = 0
    for p in products:
        entry = ins[p["asin"]]
        attrs = entry["attributes"]
        assert 2 <= len(attrs) <= 5 and len(set(attrs)) == len(attrs)
        assert all(a == a.lower().strip() and a for a in attrs)
        text = " ".join([p["name"], p["full_description"], *p["small_description"]]).lower()
        # every attribute is in the product's text, so search and the attribute reward see it
        assert all(a in text for a in attrs), (attrs, text)
        if "instruction" not in entry:
            assert set(entry) == {"attributes"}
            continue
        with_instruction += 1
        instruction, ins_attrs = entry["instruction"], entry["instruction_attributes"]
        assert ins_attrs and set(ins_attrs) <= set(attrs)
        assert instruction.startswith("Find me ") and p["query"] in instruction
        assert all(a in instruction for a in ins_attrs)
        # findable as WebShop's reward checks it: in the attributes or in the text
        assert all(a in attrs or a in text for a in ins_attrs)
        # no options and no price: the environment appends those
        assert ":" not in instruction and "$" not in instruction
        assert "price" not in instruction and "dollars" not in instruction
    assert 0.36 < with_instruction / len(products) < 0.44


def _phrase(adj: list[str], query: str, with_: list[str], for_: list[str]) -> str:
    text = "Find me " + (", ".join(adj) + " " if adj else "") + query
    text += (" with " + ", ".join(with_)) if with_ else ""
    return text + ((" for " + ", ".join(for_)) if for_ else "")


def test_instruction_phrasing_follows_webshop(sample):
    """Instructions read "Find me" + adjective attributes + the type + "with" attributes +
    "for" attributes, the instruction attributes listed in that order."""
    products, ins, _ = sample
    clauses = Counter()
    for p in products:
        entry = ins[p["asin"]]
        if "instruction" not in entry:
            continue
        a, q = entry["instruction_attributes"], p["query"]
        splits = [
            (a[:i], a[i:j], a[j:])
            for i in range(len(a) + 1)
            for j in range(i, len(a) + 1)
            if _phrase(a[:i], q, a[i:j], a[j:]) == entry["instruction"]
        ]
        assert splits, entry
        clauses.update(name for name, part in zip("awf", splits[0], strict=True) if part)
    assert min(clauses[k] for k in "awf") > 100  # all three slots are used


def test_title_nouns(sample):
    products, _, nouns = sample
    assert list(nouns) == [p["asin"] for p in products]
    for p in products:
        found = nouns[p["asin"]]
        assert found, p["name"]
        title = p["name"].lower()
        assert all(n in title for n in found)
        # in title order, duplicates kept: a subsequence of the title's tokens
        tokens = iter(title_tokens(p["name"]))
        assert all(any(t == n for t in tokens) for n in found), (found, p["name"])
        assert not any(n.isdigit() or n in ("for", "with", "of", "and") for n in found)
    # the product type's noun is a title noun (e.g. "tables" of "console tables")
    mugs = [p for p in products if p["query"] == "coffee mugs"]
    assert mugs and all({"mug", "tumbler", "cup", "set"} & set(nouns[p["asin"]]) for p in mugs)


def test_title_tokens_drop_possessive_s():
    assert title_tokens("Men's Boots, Girls' Dress - 2-Pack") == [
        "men",
        "boots",
        "girls",
        "dress",
        "2",
        "pack",
    ]


@pytest.mark.slow
def test_a_hundred_thousand_products_generate_quickly():
    start = time.perf_counter()
    products, ins, nouns = generate_catalog(100_000)
    assert time.perf_counter() - start < 30
    assert len({p["asin"] for p in products}) == len(ins) == len(nouns) == 100_000


def _canonical(value):
    """``value`` as JSON-able data that keeps its container types (frozensets sorted)."""
    if dataclasses.is_dataclass(value):
        fields = {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"__type__": type(value).__name__, **fields}
    if isinstance(value, frozenset):
        return {"__frozenset__": sorted(value)}
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return {"__tuple__": [_canonical(v) for v in value]}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def test_vocabulary_tables_equal_the_literals_they_were_moved_from():
    """The tables loaded from data/vocabulary.json hash to the digest of the Python literals they
    replaced (commit 05bbcde's vocabulary.py), types included (tuple vs list, frozenset)."""
    tables = {
        name: _canonical(getattr(vocabulary, name))
        for name in vocabulary.__all__
        if name not in ("Category", "Kind", "VOCABULARY_FILE")
    }
    blob = json.dumps(tables, sort_keys=True).encode()
    assert len(blob) == 206_835
    assert hashlib.sha256(blob).hexdigest() == (
        "641a027b3f33b013849f0fd20a394e08b427b3c1c0a3aef53254c6f5ccd63b34"
    )
