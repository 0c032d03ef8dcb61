"""WebShop-v0: page flow, exact observations, rewards, the episode protocol, prompts and fuzzing.

Golden strings are docs/webshop.md's (taken from WebShop's original templates and HTML-to-text
conversion on the real sample, goal 404).
"""

from __future__ import annotations

import random

import gymnasium as gym
import pytest
from gymnasium.error import ResetNeeded

import agentenvs  # noqa: F401
from agentenvs.core.prompting import EpisodeMemory
from agentenvs.webshop.env import WebShopEnv, task_id_of
from agentenvs.webshop.pages import PageView, page_nodes, to_text
from agentenvs.webshop.prompts import WebShopPrompt
from agentenvs.webshop.shop import Shop

I = (  # noqa: E741
    "Find me women's dresses with polyester spandex for daily wear with color: black, and size: "
    "small, and price lower than 60.00 dollars"
)
HEADER = f"Instruction: [SEP] {I} [SEP] Back to Search [SEP] < Prev"
ITEM = (
    f"{HEADER} [SEP] size [SEP] x-small [SEP] small [SEP] medium [SEP] large [SEP] x-large [SEP] "
    "color [SEP] black [SEP] light blue [SEP] pink [SEP] plain black [SEP] red [SEP] white [SEP] "
    "chocolate brown [SEP] khaki [SEP] SheIn Women's Sexy One Shoulder Sleeveless Cutout Mini Club "
    "Pencil Bodycon Dress [SEP] Price: $19.99 to $27.99 [SEP] Rating: N.A. [SEP] Description [SEP] "
    "Features [SEP] Reviews [SEP] Buy Now"
)
DONE = (
    "Thank you for shopping with us! [SEP] Your code: [SEP] None [SEP] (Paste it in your MTurk "
    'interface.) [SEP] Purchased [SEP] asin [SEP] B08ZRR3DZT [SEP] options [SEP] {"color": '
    '"black", "size": "small"} [SEP] attrs [SEP] None [SEP] category [SEP] None [SEP] query '
    "[SEP] None [SEP] product category [SEP] None [SEP] Target [SEP] asin [SEP] options [SEP] attrs "
    "[SEP] price upper [SEP] instuction text [SEP] category [SEP] product category [SEP] query [SEP] "
    "Goal [SEP] None [SEP] Reward [SEP] Your score (min 0.0, max 1.0) [SEP] 1.0 [SEP] Reward "
    "Details [SEP] None"
)
DRESS_QUERY = "shein women's sexy one shoulder sleeveless cutout mini club pencil bodycon dress"


@pytest.fixture(scope="module")
def shop(webshop_fixture_dir):
    return Shop.load(webshop_fixture_dir)


@pytest.fixture
def env(webshop_fixture_dir):
    env = WebShopEnv(data_path=webshop_fixture_dir, action_format="plain")
    env.reset(options={"task_id": task_id_of(404)})
    return env


def to_item(env) -> None:
    env.step(f"search[{DRESS_QUERY}]")
    env.step("click[b08zrr3dzt]")


# -- pages -------------------------------------------------------------------------------------------
def test_search_results_item_subpages_and_done_pages(env):
    assert env.page_text() == f"WebShop [SEP] Instruction: [SEP] {I} [SEP] Search"
    assert env.session.available_actions() == {"has_search_bar": True, "clickables": ["search"]}
    obs, reward, terminated, truncated, info = env.step(f"search[{DRESS_QUERY}]")
    assert obs.startswith(
        f"Instruction: [SEP] {I} [SEP] Back to Search [SEP] Page 1 (Total results: "
    )
    assert info["page"] == "results" and "click[b08zrr3dzt]" in info["admissible_actions"]
    assert obs.split(" [SEP] ")[5] == "B08ZRR3DZT"  # the exact title ranks first
    assert info["available_actions"]["clickables"][:2] == ["back to search", "next >"]
    obs, *_, info = env.step("click[b08zrr3dzt]")
    assert obs == ITEM
    assert info["available_actions"]["clickables"] == [
        "back to search", "< prev", "description", "features", "reviews", "buy now", "x-small",
        "small", "medium", "large", "x-large", "black", "light blue", "pink", "plain black", "red",
        "white", "chocolate brown", "khaki",
    ]  # fmt: skip
    assert env.step("click[description]")[0] == HEADER
    features = env.step("click[< prev]") and env.step("click[features]")[0]
    assert features.split(" [SEP] ")[4] == (
        "One shoulder dresses for women/ Black mini dress/ Sleeveless bodycon dress/ Make for 95% "
        "Polyester, 5% Spandex"
    )
    env.step("click[< prev]")
    env.step("click[black]")
    obs, *_, info = env.step("click[small]")
    assert obs == ITEM and info["options"] == {"color": "black", "size": "small"}
    obs, reward, terminated, truncated, info = env.step("click[buy now]")
    assert obs == DONE
    assert (reward, terminated, truncated, info["won"], info["score"]) == (
        10.0,
        True,
        False,
        True,
        1.0,
    )
    assert info["score_parts"]["r_type"] == 1.0 and info["r_type_backend"] in ("spacy", "heuristic")
    with pytest.raises(ResetNeeded):
        env.step("click[back to search]")


def test_results_page_golden_text(shop):
    products = tuple(shop.catalog[a] for a in ("B08ZRR3DZT", "B06Y3VLDFB", "B08R3XSC65"))
    view = PageView("results", I, page=1, total=3, results=products)
    assert to_text(page_nodes(view)) == (
        f"Instruction: [SEP] {I} [SEP] Back to Search [SEP] Page 1 (Total results: 3) [SEP] Next > "
        "[SEP] B08ZRR3DZT [SEP] SheIn Women's Sexy One Shoulder Sleeveless Cutout Mini Club Pencil "
        "Bodycon Dress [SEP] $19.99 to $27.99 [SEP] B06Y3VLDFB [SEP] Vhomes Lights Reclaimed Wood "
        "Console Table The Genessis Collection Sofa-Tables [SEP] $877.8 [SEP] B08R3XSC65 [SEP] "
        "Pointed Toe Pumps Shoes, Stiletto Plaid Leather High Heels, Sexy Elegant Party Wedding Work "
        "Court Shoes,Wine red,40 [SEP] $100.0"
    )


def test_attributes_page_when_shown(webshop_fixture_dir):
    env = WebShopEnv(data_path=webshop_fixture_dir, action_format="plain", show_attrs=True)
    env.reset(options={"task_id": task_id_of(404)})
    to_item(env)
    obs = env.step("click[attributes]")[0]
    assert obs == (
        f"{HEADER} [SEP] polyester spandex [SEP] daily wear [SEP] fashion [SEP] women's dresses "
        "[SEP] Clothing, Shoes & Jewelry › Women › Clothing › Dresses › Club & Night Out"
    )


def test_text_rich_marks_clicked_options_and_visited_products(webshop_fixture_dir):
    env = WebShopEnv(
        data_path=webshop_fixture_dir, action_format="plain", observation_mode="text_rich"
    )
    obs, _ = env.reset(options={"task_id": task_id_of(404)})
    assert obs == f"WebShop\nInstruction: \n{I}\n[button] Search [button_]\n"
    to_item(env)
    obs = env.step("click[black]")[0]
    assert obs.startswith(
        f"You have clicked black.\nInstruction:\n{I}\n[button] Back to Search [button_]\n"
        "[button] < Prev [button_]\nsize\n  [button] x-small [button_]\n"
    )
    assert "  [clicked button] black [clicked button_]\n  [button] light blue [button_]\n" in obs
    assert obs.endswith("Rating: N.A.\n[button] Description [button_]\n[button] Features [button_]\n"
                        "[button] Reviews [button_]\n[button] Buy Now [button_]\n")  # fmt: skip
    obs = env.step("click[< prev]")[0]
    assert "\n[clicked button] B08ZRR3DZT [clicked button_]\n" in obs


# -- navigation rules ----------------------------------------------------------------------------------
def test_navigation_edge_cases(env):
    session = env.session
    assert session.act("search[the of and]") == (True, "")  # stop words only: no hits
    assert env.page_text().endswith("Page 1 (Total results: 0) [SEP] Next >")
    assert session.act("click[next >]")[0] and session.page == 2  # no upper bound
    assert env.page_text().endswith("Page 2 (Total results: 0) [SEP] < Prev [SEP] Next >")
    to_item(env)
    session.act("click[black]")
    session.act("click[features]")
    session.act("click[< prev]")
    assert session.kind == "item" and session.options == {"color": "black"}  # kept over sub-pages
    session.act("click[< prev]")
    assert session.kind == "results" and session.options == {} and session.asin is None
    session.act("click[b08zrr3dzt]")
    session.act("click[small]")
    assert session.act("search[red shoes]")[0] and session.kind == "results"  # from an item page
    assert session.options == {}
    session.act("click[back to search]")
    assert session.kind == "search" and session.visited == set()


@pytest.mark.parametrize(
    "action, reason",
    [
        ("click[search]", "type a query instead"),
        ("search[]", "unknown action"),
        ("click[]", "unknown action"),
        ("click[next >]", "not clickable on the item page"),
        ("click[b06y3vldfb]", "not clickable on the item page"),
        ("search[a [b] c]", "unknown action"),
        ("buy now", "unknown action"),
        ("", "empty action"),
    ],
)
def test_invalid_actions_change_nothing(env, action, reason):
    to_item(env)
    before = (env.page_text(), env.session.kind, dict(env.session.options), env.session.page)
    obs, reward, terminated, truncated, info = env.step(action)
    assert not info["action_valid"] and reason in info["invalid_reason"]
    assert reward == -0.1 and not terminated
    assert obs == f"{before[0]} [SEP] Invalid action: {info['invalid_reason']}."
    assert info["state_key"] == before[0]
    assert (env.page_text(), env.session.kind, env.session.options, env.session.page) == before


def test_text_after_the_last_bracket_is_ignored_and_names_are_case_insensitive(env):
    assert env.step(f"Search[{DRESS_QUERY}] please")[4]["page"] == "results"
    assert env.step("CLICK[B08ZRR3DZT]")[4]["page"] == "item"


# -- episode protocol ----------------------------------------------------------------------------------
def test_wrong_purchase_scores_without_winning(webshop_fixture_dir):
    env = WebShopEnv(data_path=webshop_fixture_dir, action_format="plain", reward="score")
    env.reset(options={"task_id": task_id_of(404)})
    to_item(env)
    env.step("click[khaki]")
    env.step("click[small]")
    obs, reward, terminated, truncated, info = env.step("click[buy now]")
    assert (reward, terminated, info["won"], info["score"], info["task_score"]) == (
        pytest.approx(0.8), True, False, pytest.approx(0.8), pytest.approx(0.8),
    )  # fmt: skip
    assert info["score_parts"]["r_option"] == 0.5


def test_truncation_at_fifteen_steps(env):
    for step in range(1, 16):
        obs, reward, terminated, truncated, info = env.step("click[search]" if step % 2 else "x")
        assert truncated == (step == 15) and not terminated
    with pytest.raises(ResetNeeded):
        env.step("search[mug]")


def test_tagged_actions_and_the_verl_compat_mode(webshop_fixture_dir):
    env = WebShopEnv(data_path=webshop_fixture_dir)
    env.reset(options={"task_id": task_id_of(404)})
    _, reward, *_, info = env.step("<think>go</think><action>search[mug]</action>")
    assert info["action_valid"] and reward == 0.0
    _, reward, *_, info = env.step("search[mug]")
    assert not info["action_valid"] and reward == -0.1
    compat = WebShopEnv(data_path=webshop_fixture_dir, compat="verl-agent")
    obs0, _ = compat.reset(options={"task_id": task_id_of(404)})
    obs, reward, *_, info = compat.step("<think>x</think><action>click[buy now]</action>")
    assert (obs, reward, info["action_valid"]) == (obs0, 0.0, True)  # a free no-op
    obs, reward, *_, info = compat.step("search[mug]")  # no tags: the last 20 characters
    assert info["page"] == "results" and not info["action_valid"] and reward == -0.1


def test_splits_task_ids_and_info(webshop_fixture_dir):
    env = WebShopEnv(data_path=webshop_fixture_dir, split="test")
    assert len(env.tasks.ids("test")) == 500 and list(env.tasks.ids("train")) == ["goal-500"]
    _, info = env.reset(seed=3)
    assert info["task_id"] in env.tasks.ids("test") and info["goal_index"] < 500
    assert info["goal"]["instruction_text"] == info["task"]
    assert info["anchor"] == "'Search'" and info["score"] == 0.0
    with pytest.raises(ValueError, match="unknown task id"):
        env.reset(options={"task_id": "goal-501"})


def test_rollouts_of_one_goal_share_state_keys(env):
    keys = []
    for _ in range(2):
        env.reset(options={"task_id": task_id_of(404)})
        keys.append(
            [env.step(a)[4]["state_key"] for a in (f"search[{DRESS_QUERY}]", "click[b08zrr3dzt]")]
        )
    assert keys[0] == keys[1] and keys[0][1] == ITEM


def test_constructor_errors():
    for kwargs, match in [
        ({"observation_mode": "pixels"}, "observation_mode"),
        ({"reward": "dense"}, "reward"),
        ({"compat": "webshop"}, "compat"),
    ]:
        with pytest.raises(ValueError, match=match):
            WebShopEnv(**kwargs)


# -- prompts -------------------------------------------------------------------------------------------
def test_reference_prompt_is_verl_agents_text(env):
    prompt = env.agent_prompt("reference")
    assert isinstance(prompt, WebShopPrompt)
    obs0, info0 = env.reset(options={"task_id": task_id_of(404)})
    text = prompt.render(EpisodeMemory(), obs0, info0)
    assert text.startswith(
        "\nYou are an expert autonomous agent operating in the WebShop e\u2011commerce environment. "
        f"\nYour task is to: {I}.\nYour current observation is: 'Search'.\nYour admissible actions "
        "of the current situation are: \n[\n'search[<your query>]',\n'click[search]',\n].\n\n"
        "Now it's your turn to take one action for the current step.\n"
    )
    memory = EpisodeMemory()
    memory.record(obs0, prompt.project("<think>.</think><action>Search[Dress]</action>"))
    obs, *_, info = env.step("search[dress]")
    text = prompt.render(memory, obs, info)
    assert "Prior to this step, you have already taken 1 step(s). Below are the most recent 1 " \
        "observations and the corresponding actions you took: [Observation 1: ''Search'', " \
        "Action 1: 'search[dress]']\nYou are now at step 2 and your current observation is: " \
        "'Back to Search' [SEP] 'Page 1 (Total results: " in text  # fmt: skip
    assert text.endswith("present it within <action> </action> tags.\n")


def test_compact_prompt_fits_a_small_model(env):
    prompt = env.agent_prompt("compact")
    to_item(env)
    text = prompt.render(
        EpisodeMemory([("x", "search[dress]")]), env.page_text(), env._info(True, "")
    )
    assert "Actions: click[back to search] | click[< prev]" in text and len(text) < 2500
    assert prompt.answer("click[buy now]") == "</think><action>click[buy now]</action>"


# -- robustness ----------------------------------------------------------------------------------------
def _fuzz_actions(rng: random.Random, env) -> str:
    pieces = [
        "click[", "search[", "]", "[", "buy now", "< prev", "next >", "\u2603", "\x00", "\U0001f600",
        "click[search]", "b08zrr3dzt", "description", "black", " ", "\n", "CLICK", "]]",
    ]  # fmt: skip
    kind = rng.random()
    if kind < 0.05:
        return "search[" + "q" * 100_000 + "]"
    if kind < 0.4 and env.unwrapped._admissible_actions():
        return rng.choice(env.unwrapped._admissible_actions()).replace("<your query>", "dress")
    return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))


def test_ten_thousand_fuzzed_actions(webshop_fixture_dir):
    env = WebShopEnv(data_path=webshop_fixture_dir, action_format="plain", max_steps=30)
    rng = random.Random(0)
    env.reset(seed=0)
    invalid = 0
    for _ in range(10_000):
        before = (env.page_text(), env.session.kind, dict(env.session.options))
        obs, reward, terminated, truncated, info = env.step(_fuzz_actions(rng, env))
        assert isinstance(obs, str) and env.observation_space.contains(obs)
        if not info["action_valid"]:
            invalid += 1
            assert (env.page_text(), env.session.kind, env.session.options) == before
        if terminated or truncated:
            env.reset()
    assert 1000 < invalid < 9000  # both kinds were exercised


def test_gym_make_and_the_embedded_catalogue():
    env = gym.make("agentenvs/WebShop-v0", action_format="plain")
    obs, info = env.reset(seed=0)
    assert obs.startswith("WebShop [SEP] Instruction: [SEP] ") and info["task_id"].startswith(
        "goal-"
    )
    shop = env.unwrapped.shop
    assert len(shop.catalog) >= 1000 and len(env.unwrapped.tasks.ids("train")) > 1000
    obs, *_, info = env.step(f"search[{info['goal']['query']}]")
    assert info["page"] == "results" and "(Total results: 50)" in obs


def test_credit_wrappers_group_webshop_episodes(webshop_fixture_dir):
    """A group of rollouts of one goal shares state keys, so the graph method merges states."""
    from agentenvs.wrappers import GraphCreditWrapper

    env = GraphCreditWrapper(
        gym.make("agentenvs/WebShop-v0", data_path=webshop_fixture_dir, action_format="plain"),
        group_size=3,
    )
    env.reset(seed=0)
    plans = [["search[dress]", "click[next >]"], ["search[dress]", "click[back to search]"]]
    credit = []
    for episode in range(3):
        for action in plans[episode % 2] + ["click[buy now]"] * 13:
            *_, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        credit += info.get("credit", [])
        env.reset()
    assert len(credit) == 3 and len({t.task_id for t in credit}) == 1
    keys = [s.state_key for t in credit for s in t.steps]
    assert len(set(keys)) < len(keys) / 4  # the same pages recur across the group
    assert all(s.advantage is not None for t in credit for s in t.steps)


def test_weighted_draws_follow_the_goal_weights(webshop_fixture_dir):
    env = WebShopEnv(data_path=webshop_fixture_dir, split="test")
    env.reset(seed=0)
    draws = [env.reset(options={"weighted": True})[1]["goal_index"] for _ in range(3000)]
    weights = [g.weight for g in env.shop.goals[:500]]
    heavy = max(range(500), key=weights.__getitem__)
    expected = weights[heavy] / sum(weights) * 3000
    assert abs(draws.count(heavy) - expected) < 4 * expected**0.5 + 2


def test_webshops_special_search_prefixes(webshop_fixture_dir):
    shop = Shop.load(webshop_fixture_dir, None, False, False, True)
    assert {p.category for p in shop.search("<c> fashion")} == {"fashion"}
    assert {p.query for p in shop.search("<q> women's dresses")} == {"women's dresses"}
    assert all("daily wear" in p.attributes for p in shop.search("<a> daily wear"))
    assert len(shop.search("<r>")) == 50
    plain = Shop.load(webshop_fixture_dir)  # off by default: BM25 over the words
    assert plain.search("<r>") == [] and len(plain.search("<q> women's dresses")) > 1


def test_the_shop_follows_webshop_data(monkeypatch, webshop_fixture_dir):
    assert len(Shop.load().catalog) == 5000  # the embedded catalogue
    monkeypatch.setenv("WEBSHOP_DATA", webshop_fixture_dir)
    assert len(Shop.load().catalog) == 100 and Shop.load() is Shop.load(webshop_fixture_dir)


# -- the expert (docs/custom-env.md, expert_action) -----------------------------------------------
def _play_expert(env: WebShopEnv, detour: list[str] = ()) -> tuple[list[str], dict]:
    for action in detour:
        env.step(action)
    commands, info = [], {}
    while (command := env.expert_action()) is not None and len(commands) < 12:
        commands.append(command)
        _, _, _, _, info = env.step(command)
        assert info["action_valid"], (command, info["invalid_reason"])
    return commands, info


def test_the_expert_buys_the_goals_product_with_its_options():
    env = WebShopEnv(action_format="plain", max_steps=30)
    for task in [task_id_of(i) for i in (*range(6), *range(500, 506))]:
        env.reset(options={"task_id": task})
        goal = env.session.goal
        commands, info = _play_expert(env)
        assert info["won"] and info["asin"] == goal.asin and commands[-1] == "click[buy now]"
        assert commands[0] == f"search[{goal.instruction_text.lower()}]"
        assert set(goal.goal_options.values()) == set(info["options"].values())


def test_the_expert_recovers_from_a_detour():
    """From any page: a wrong search, another product, a sub-page, then the expert wins."""
    env = WebShopEnv(action_format="plain", max_steps=30)
    env.reset(options={"task_id": task_id_of(3)})
    env.step("search[a wrong query about garden tools]")
    other = next(c for c in env.session.clickables() if c.startswith("b0"))
    assert other != env.session.goal.asin.lower()
    commands, info = _play_expert(env, [f"click[{other}]", "click[description]"])
    assert commands[:3] == ["click[< prev]", "click[< prev]", "click[back to search]"]
    assert info["won"]
