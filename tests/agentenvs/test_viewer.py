"""The HTML credit viewer (agentenvs/viewer/): a real Sokoban run directory, credited by a real
wrapper that writes the trajectory store, rendered and checked as HTML and in headless Chromium."""

from __future__ import annotations

import copy
import csv
import html
import os
import re
import threading
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from agentenvs.wrappers import VectorCreditWrapper, assign_advantages, credited_groups

import agentenvs
from agentenvs.core.store import TrajectoryStore, read_groups
from agentenvs.viewer.colors import NEGATIVE, POSITIVE, advantage_color
from agentenvs.viewer.compare import compare_methods, parse_methods
from agentenvs.viewer.graph import graph_svg, state_graph
from agentenvs.viewer.page import render_page, write_page
from agentenvs.viewer.run import NotARunError, load_run
from agentenvs.viewer.serve import make_server

N_GROUPS = 6
GROUP_SIZE = 4
INVALID = "<b>oops</b> & go"  # an LLM answer with markup: must reach the page escaped


def build_run(root: Path, n_groups: int = N_GROUPS, fmt: str = "jsonl") -> None:
    """A run directory as the learner writes it: ``trajectories/`` filled by a credit wrapper's
    store (GraphGPO on Sokoban, random moves, one answer in ten malformed) and a metrics.csv."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    moves = ["up", "down", "left", "right"]
    with TrajectoryStore(root / "trajectories", run=root.name, fmt=fmt) as store:
        envs = VectorCreditWrapper(
            agentenvs.make_group_vec_env("agentenvs/Sokoban-v0", 2, GROUP_SIZE, max_steps=8),
            "graph",
            store=store,
        )
        envs.reset(seed=0)
        done = 0
        while done < n_groups:
            actions = [
                INVALID
                if rng.random() < 0.1
                else f"<think>t</think><action>{rng.choice(moves)}</action>"
                for _ in range(envs.num_envs)
            ]
            infos = envs.step(actions)[-1]
            done += len(credited_groups(infos))
        envs.close()
    with open(root / "metrics.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["iteration", "success_rate", "eval/greedy/success_rate", "loss"])
        for i in range(1, 6):
            writer.writerow([i, 0.1 * i, "" if i % 2 else 0.1 * i, 1.0 / i])


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs") / "sokoban"
    build_run(root)
    return root


@pytest.fixture(scope="module")
def page(run_dir) -> str:
    return render_page(load_run(run_dir))


def sections(page: str) -> list[str]:
    """The HTML of each group block."""
    return page.split('<section class="group"')[1:]


def graph_nodes(trajectories) -> tuple[set, bool]:
    """The distinct state keys GraphGPO makes nodes of (every step's state, every next state but
    that of a won trajectory's last step, which is the SUCCESS node), and whether SUCCESS exists."""
    keys = {s.state_key for t in trajectories for s in t.steps}
    for t in trajectories:
        ends = t.steps[:-1] if t.success else t.steps
        keys |= {s.next_state_key for s in ends}
    return keys, any(t.success for t in trajectories)


def test_load_run_reads_the_wrappers_store_and_metrics(run_dir):
    run = load_run(run_dir)
    assert run.name == "sokoban" and run.method == "graphgpo"
    assert len(run.groups) == run.total_groups == N_GROUPS
    assert [g.time for g in run.groups] == sorted((g.time for g in run.groups), reverse=True)
    assert all(len(g.trajectories) == GROUP_SIZE for g in run.groups)
    assert all(s.advantage is not None for g in run.groups for t in g.trajectories for s in t.steps)
    # the fixture is informative: some groups have a success, some have none
    won = [any(t.success for t in g.trajectories) for g in run.groups]
    assert any(won) and not all(won)
    assert [r["iteration"] for r in run.metrics] == [1, 2, 3, 4, 5]
    assert "eval/greedy/success_rate" not in run.metrics[0]  # an empty cell is left out
    assert run.metrics[1]["eval/greedy/success_rate"] == pytest.approx(0.2)


def test_max_groups_keeps_the_newest(run_dir):
    newest = list(read_groups(run_dir / "trajectories"))[-2:][::-1]
    run = load_run(run_dir, max_groups=2)
    assert [g.group_id for g in run.groups] == [g.group_id for g in newest]
    assert run.total_groups == N_GROUPS
    with pytest.raises(ValueError, match="max_groups"):
        load_run(run_dir, max_groups=-1)


def test_page_has_one_block_per_group_and_one_cell_per_step(run_dir, page):
    run = load_run(run_dir)
    blocks = sections(page)
    assert len(blocks) == N_GROUPS
    for block, group in zip(blocks, run.groups, strict=True):
        assert f'data-task="{group.task_id}"' in block
        assert block.count('<div class="traj"') == GROUP_SIZE
        assert block.count('<div class="step') == sum(len(t.steps) for t in group.trajectories)
        assert block.count('class="badge won"') >= sum(t.success for t in group.trajectories)
    assert page.count('<div class="step') == sum(
        len(t.steps) for g in run.groups for t in g.trajectories
    )


def test_page_escapes_env_and_model_text(page):
    assert INVALID not in page and html.escape(INVALID) in page
    # actions are <think>/<action> text and observations say "no <action>...</action> block"
    assert "<think>" not in page and "</action>" not in page and "&lt;action&gt;" in page
    assert not re.search(
        r"<(?!/?(?:html|head|meta|title|style|body|header|h[123]|div|span|b|"
        r"pre|details|summary|section|label|select|option|p|table|tr|th|td|i|"
        r"small|br|svg|defs|marker|path|g|circle|text|polyline|rect|script)"
        r"[\s>/])[a-zA-Z]",
        page,
    )


def test_state_graph_nodes_are_the_groups_distinct_state_keys(run_dir, page):
    run = load_run(run_dir)
    for block, group in zip(sections(page), run.groups, strict=True):
        keys, won = graph_nodes(group.trajectories)
        assert block.count('class="node state"') == len(keys)
        assert block.count('class="node sink"') == int(won)
        graph = state_graph(group.trajectories)
        assert {k for k in graph.keys if k is not None} == keys
        steps = sum(len(t.steps) for t in group.trajectories)
        assert sum(count for _, _, count in graph.edges) == steps
        assert block.count('class="edge"') == len(graph.edges)


def test_state_graph_layers_and_distances():
    """Hand-built group: A -> B -> win, A -> C -> C (a blocked move), A -> B -> A (back)."""
    from agentenvs.core import Step, Trajectory

    def traj(path, won):
        steps = [
            Step("o", "a", 0.0, state_key=u, next_state_key=v)
            for u, v in zip(path, path[1:], strict=False)
        ]
        return Trajectory("t", "g", steps, success=won)

    g = state_graph([traj("ABW", True), traj("ACC", False), traj("ABA", False)])
    node = {k: i for i, k in enumerate(g.keys)}
    assert g.depth[node["A"]] == 0 and g.depth[node["B"]] == g.depth[node["C"]] == 1
    assert g.depth[node[None]] == 2 and g.sink == node[None]
    assert g.distance[node["A"]] == 2 and g.distance[node["B"]] == 1
    assert g.distance[node["C"]] == 3  # cannot reach SUCCESS: d_max + 1
    assert (node["B"], node["A"], 1) in g.edges and (node["C"], node["C"], 1) in g.edges
    svg = graph_svg(g, advantages=[[1.0, 2.0], [-1.0, -1.0], [1.0, -2.0]])
    assert svg.count('class="node state"') == 3 and svg.count('class="edge"') == len(g.edges)
    assert advantage_color(2.0, 2.0) in svg  # B -> SUCCESS, the group's largest |A|


def test_step_colours_scale_per_group(run_dir, page):
    run = load_run(run_dir)
    for block, group in zip(sections(page), run.groups, strict=True):
        adv = [s.advantage for t in group.trajectories for s in t.steps]
        scale = max(abs(a) for a in adv)
        colours = re.findall(r'<div class="step[^"]*" style="[^"]*background:(#[0-9a-f]{6})', block)
        assert colours == [advantage_color(a, scale) for a in adv]
        if scale > 0:  # the largest |A| of the group gets the full colour
            full = "#%02x%02x%02x" % (POSITIVE if max(adv, key=abs) > 0 else NEGATIVE)
            assert full in colours


def test_methods_view_recredits_copies_and_keeps_the_stored_advantages(run_dir, page):
    run = load_run(run_dir)
    group = run.groups[0]
    before = [[s.advantage for s in t.steps] for t in group.trajectories]
    views = compare_methods(
        group.trajectories, parse_methods("grpo,gigpo,graph,rtmc,spa"), "graphgpo"
    )
    assert [(v.method, v.source) for v in views] == [
        ("graphgpo", "stored"),
        ("grpo", "recomputed"),
        ("gigpo", "recomputed"),
        ("rtmc", "recomputed"),
        ("spa", "skipped"),
    ]
    assert views[0].advantages == before
    assert [[s.advantage for s in t.steps] for t in group.trajectories] == before  # untouched
    expected = copy.deepcopy(group.trajectories)
    assign_advantages([expected], "gigpo")
    assert views[2].advantages == [[s.advantage for s in t.steps] for t in expected]
    block = sections(page)[0]
    assert block.count('<table class="methods"') == 1
    for name in ("graphgpo", "grpo", "gigpo", "rtmc"):
        assert f"<th>{name}<br>" in block
    squares = sum(len(t.steps) for t in group.trajectories) * 4
    assert block.count('<i style="background:') == squares
    with pytest.raises(ValueError, match="unknown credit method 'nope'"):
        parse_methods("grpo,nope")


def test_a_model_method_is_shown_only_as_the_runs_own():
    from agentenvs.core import Step, Trajectory

    g = [Trajectory("t", "g", [Step("o", "a", 1.0, state_key="A", advantage=0.3)], success=True)]
    views = compare_methods(g, ["spa", "grpo"], stored_method="spa")
    assert [(v.method, v.source) for v in views] == [("spa", "stored"), ("grpo", "recomputed")]
    assert views[0].advantages == [[0.3]]


def test_learning_curves_plot_the_columns_present(page, tmp_path):
    curves = page.split("<h2>Learning curves</h2>")[1].split("<h2>Groups</h2>")[0]
    assert curves.count('<svg class="chart"') == 2  # success rate (2 series) and loss
    assert "eval/greedy/success_rate" in curves and "valid action rate" not in curves
    assert curves.count("<circle") == 5 + 2 + 5  # empty cells are not points
    (tmp_path / "metrics.csv").write_text("iteration,valid_action_rate\n1,0.5\n")
    only = render_page(load_run(tmp_path))
    assert only.count('<svg class="chart"') == 1 and "no stored groups" in only


def test_not_a_run_directory(tmp_path):
    with pytest.raises(NotARunError, match="not a run directory"):
        load_run(tmp_path)
    (tmp_path / "eval_outcomes.jsonl").write_text("{}\n")  # a stray .jsonl is not a store
    with pytest.raises(NotARunError):
        write_page(tmp_path)
    with pytest.raises(NotARunError):
        load_run(tmp_path / "missing")


def test_write_page_default_path_and_size(run_dir):
    path = write_page(run_dir)
    assert path == run_dir / "view.html" and path.read_text(encoding="utf-8").startswith(
        "<!DOCTYPE"
    )
    steps = sum(len(t.steps) for g in load_run(run_dir).groups for t in g.trajectories)
    assert path.stat().st_size < 3000 * steps  # ~1.3 KB per step with graphs and method strips


def test_parquet_store_reads_the_same(tmp_path):
    pytest.importorskip("pyarrow")
    build_run(tmp_path / "pq", n_groups=2, fmt="parquet")
    run = load_run(tmp_path / "pq")
    assert run.total_groups >= 2 and run.method == "graphgpo"
    assert render_page(run).count('<section class="group"') == run.total_groups


def test_serve_gives_the_page_and_nothing_else(run_dir):
    path = write_page(run_dir)
    server = make_server(path, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        assert urllib.request.urlopen(base + "/").read() == path.read_bytes()
        assert urllib.request.urlopen(base + "/view.html").read() == path.read_bytes()
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(base + "/metrics.csv")
        assert err.value.code == 404
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(ValueError, match="no page"):
        make_server(run_dir / "nothing.html", port=0)


def test_page_in_headless_chromium(run_dir):
    """The page loads from file://, shows every group and step, logs no console error, and the
    success filter hides the failed trajectories and the groups left without one."""
    pytest.importorskip("selenium")
    from agentenvs.viewer.screenshot import CHROMEDRIVER, CHROMIUM, open_browser

    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.skip("chromium and chromedriver are not installed")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    run = load_run(run_dir)
    path = write_page(run_dir)
    n_steps = sum(len(t.steps) for g in run.groups for t in g.trajectories)
    won_groups = sum(any(t.success for t in g.trajectories) for g in run.groups)
    won_trajs = sum(t.success for g in run.groups for t in g.trajectories)
    with open_browser(1200, 900) as driver:
        driver.get(path.resolve().as_uri())
        groups = driver.find_elements(By.CSS_SELECTOR, "section.group")
        assert len(groups) == N_GROUPS and all(g.is_displayed() for g in groups)
        assert len(driver.find_elements(By.CSS_SELECTOR, "div.step")) == n_steps
        assert len(driver.find_elements(By.CSS_SELECTOR, "svg.state-graph")) == N_GROUPS
        assert driver.find_element(By.ID, "shown").text == str(N_GROUPS)
        Select(driver.find_element(By.ID, "f-success")).select_by_value("1")
        visible = [g for g in groups if g.is_displayed()]
        assert len(visible) == won_groups < N_GROUPS
        assert driver.find_element(By.ID, "shown").text == str(won_groups)
        shown_steps = [
            s for s in driver.find_elements(By.CSS_SELECTOR, "div.step") if s.is_displayed()
        ]
        won_steps = sum(len(t.steps) for g in run.groups for t in g.trajectories if t.success)
        assert len(shown_steps) == won_steps
        heads = [h for h in driver.find_elements(By.CSS_SELECTOR, ".traj-head") if h.is_displayed()]
        assert len(heads) == won_trajs
        Select(driver.find_element(By.ID, "f-success")).select_by_value("")
        Select(driver.find_element(By.ID, "f-task")).select_by_value(run.groups[0].task_id)
        same_task = sum(g.task_id == run.groups[0].task_id for g in run.groups)
        assert sum(g.is_displayed() for g in groups) == same_task
        severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert severe == []
