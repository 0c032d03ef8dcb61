"""The docs site's sources: every page under docs/ is in a table of contents of docs/index.md,
every page that a table of contents names exists, and scripts/build_docs.sh installs the pins of
pyproject.toml's ``docs`` extra. The strict build itself is scripts/build_docs.sh (CI runs it)."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _toctree_entries() -> list[str]:
    text = (DOCS / "index.md").read_text(encoding="utf-8")
    entries = []
    for block in re.findall(r"```\{toctree\}\n(.*?)```", text, flags=re.S):
        entries += [
            line.strip() for line in block.splitlines() if line.strip() and not line.startswith(":")
        ]
    return entries


def test_every_page_is_in_a_toctree():
    entries = _toctree_entries()
    pages = sorted(p.stem for p in DOCS.glob("*.md") if p.stem != "index")
    assert [p for p in pages if p not in entries] == []
    assert len(entries) == len(set(entries))


def test_every_toctree_entry_exists():
    missing = [
        e
        for e in _toctree_entries()
        if not (DOCS / f"{e}.md").exists() and not (DOCS / f"{e}.rst").exists()
    ]
    assert missing == []


def test_build_script_installs_the_docs_extra_pins():
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]["docs"]
    script = (ROOT / "scripts" / "build_docs.sh").read_text(encoding="utf-8")
    installed = re.search(r"pip install -q (.*)", script).group(1).split()
    assert sorted(s.strip('"') for s in installed) == sorted(pins)
