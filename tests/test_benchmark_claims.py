"""The speed claims of the README's results table and of docs/benchmarks.md name the comparison
their benchmark prints, under the same conditions.

Timings are not tested (benchmarks measure, tests check behaviour): these tests check that each
claimed ratio is printed by the benchmark the page cites, against the reference and in the
conditions the page states, so that a claim cannot quietly drift from what the benchmark does.
"""

import importlib.util
import inspect
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The pages that state the claims: the README's results table and the benchmarks page.
PAGES = {
    name: (ROOT / name).read_text(encoding="utf-8") for name in ("README.md", "docs/benchmarks.md")
}
sys.path.insert(0, str(ROOT))


def page_row(page: str, starts_with: str) -> str:
    """The table row of ``page`` that starts with ``starts_with``."""
    rows = [line for line in PAGES[page].splitlines() if line.startswith(starts_with)]
    assert len(rows) == 1, (page, starts_with)
    return rows[0]


def same_ratio(starts_with: str) -> str:
    """The row as the README states it; the benchmarks page states the same ratio."""
    row = page_row("README.md", starts_with)
    full = page_row("docs/benchmarks.md", starts_with)
    assert row.rstrip(" |").split("| ")[-1] == full.rstrip(" |").split("| ")[-1], (row, full)
    return full


def test_sokoban_claim_is_against_gym_sokobans_tiny_mode():
    from benchmarks import envs

    for page in PAGES:
        row = page_row(page, '| `gym.make("agentenvs/Sokoban-v0")` step')
        assert "tiny_rgb_array" in row and re.search(r"\| [\d.]+x faster \|$", row)
    same_ratio('| `gym.make("agentenvs/Sokoban-v0")` step')
    # The benchmark times the reference in that mode, in CPU time like ours, and prints the ratio.
    assert "env.step(random.randint(1, 4), observation_mode=mode)" in envs.REFERENCE_CODE
    assert '("tiny_rgb_array", "rgb_array")' in envs.REFERENCE_CODE
    assert "time.process_time()" in envs.REFERENCE_CODE
    assert "time.process_time()" in inspect.getsource(envs.per_call)
    assert "faster than tiny_rgb_array reference" in inspect.getsource(envs.sokoban)


@pytest.mark.skipif(importlib.util.find_spec("bm25s") is None, reason="needs bm25s")
def test_bm25_claim_is_against_bm25s_as_its_readme_calls_it(tmp_path):
    from benchmarks import searchqa

    for page in PAGES:
        row = page_row(page, "| BM25 query (top 3), embedded corpus")
        assert "as its README calls it" in row and "same top 3 on 300/300" in row
    same_ratio("| BM25 query (top 3), embedded corpus")
    assert "n_threads" not in inspect.getsource(searchqa.bm25s_reference).split('"""')[-1]
    # The row the benchmark prints for the same corpus: the ratio and the top-3 agreement.
    corpus = searchqa.wiki_offline_corpus()
    queries = [t.question for t in list(searchqa.embedded_tasks())[:20]]
    (printed,) = searchqa.latency_rows("embedded Wikipedia", corpus, queries, tmp_path)
    cells = [c.strip() for c in printed.strip("|").split("|")]
    assert re.fullmatch(r"[\d.]+x", cells[-2]), printed
    agree, total = map(int, cells[-1].split("/"))
    assert total == 20 and agree >= 19  # the two retrievers rank the same passages


def test_alfworld_reset_claims_state_their_condition():
    source = (ROOT / "benchmarks" / "alfworld_speed.py").read_text(encoding="utf-8")
    for text in (" ".join(page.split()) for page in PAGES.values()):  # prose wraps its lines
        assert "37x the resets/s of a game already loaded in the process" in text
        assert "a reset to a game not yet" in text
    assert "resets/s (same game)" in source
    assert "resets/s (a game not yet seen in this process: first load + reset)" in source
