"""RTMC signatures of the SWE env: the golden table, the spec's properties, bash classification."""

from __future__ import annotations

import hashlib
import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentenvs.swe.calls import FileChange, ToolCall
from agentenvs.swe.signature import (
    CATEGORIES,
    SignatureState,
    SWESignature,
    classify,
    classify_command,
    hash4,
    normalize_path,
    render_buckets,
    result_tag,
    view_buckets,
)

ROOT = "FLAGS(think=0,test_pass=0,test_fail=0)"
SIG = SWESignature()


def editor(command: str, path: str, result: str = "", **arguments: object) -> ToolCall:
    return ToolCall("file_editor", {"command": command, "path": path, **arguments}, result)


def bash(cmd: str, result: str = "", exit_code: int = 0, changes=()) -> ToolCall:
    return ToolCall("execute_bash", {"cmd": cmd}, result, exit_code=exit_code, fs_changes=changes)


def numbered(start: int, stop: int) -> str:
    """A file_editor view output showing lines start..stop."""
    lines = [f"{n:6d} line {n}" for n in range(start, stop + 1)]
    return "Here's the result of running `cat -n` on the file: /testbed/a.py:\n" + "\n".join(lines)


THINK = ToolCall(
    "think", {"thought": "the off-by-one is in parse"}, "Your thought has been logged."
)
FINISH = ToolCall("finish", {"command": "submit"}, "<<< Finished >>>")

# rtmc.md section 7.1: (call, action signature, state signature before the call)
GOLDEN = [
    (editor("view", "/testbed/src/core.py"), "view:full@src/core.py", ROOT),
    (
        bash('grep -n "def parse" src/core.py', "42:def parse(text):"),
        "search@src/core.py",
        f"src/core.py:Vf|{ROOT}",
    ),
    (
        editor("view", "src/core.py", numbered(120, 250), view_range="[120, 250]"),
        "view:partial[1-2]@src/core.py",
        f"src/core.py:S,Vf|{ROOT}",
    ),
    (
        editor("str_replace", "src/core.py", old_str="x = 1", new_str="x = 2"),
        "modify:replace:6d95@src/core.py",
        f"src/core.py:S,V[1],V[2],Vf|{ROOT}",
    ),
    (THINK, "think", f"src/core.py:M:6d95,S,V[1],V[2],Vf|{ROOT}"),
    (
        bash("python -m pytest tests/test_core.py", "=== 1 failed, 3 passed in 0.1s ===", 1),
        "test@tests/test_core.py:error",
        "src/core.py:M:6d95,S,V[1],V[2],Vf|FLAGS(think=1,test_pass=0,test_fail=0)",
    ),
    (
        FINISH,
        "finish",
        "src/core.py:M:6d95,S,V[1],V[2],Vf|FLAGS(think=1,test_pass=0,test_fail=1)",
    ),
]


@pytest.mark.parametrize("t", range(len(GOLDEN)))
def test_golden_table(t: int) -> None:
    history = [call for call, _, _ in GOLDEN[:t]]
    call, action, state = GOLDEN[t]
    assert SIG(history, call) == (state, action)
    assert SIG.state_signature(history) == state
    assert SIG.action_signature(call) == action


def test_golden_incremental() -> None:
    state = SignatureState(SIG)
    for call, _, expected in GOLDEN:
        assert state.key() == expected
        state.update(call)
    assert state.key() == SIG.state_signature([call for call, _, _ in GOLDEN])


def test_state_excludes_current_action() -> None:
    view = editor("view", "/testbed/a.py")
    assert SIG([], view) == (ROOT, "view:full@a.py")
    assert SIG([view], THINK)[0] == f"a.py:Vf|{ROOT}"


def test_order_invariance_and_duplicates() -> None:
    a, b = editor("view", "/testbed/a.py"), editor("view", "/testbed/b.py")
    assert SIG.state_signature([a, b]) == SIG.state_signature([b, a]) == f"a.py:Vf|b.py:Vf|{ROOT}"
    assert SIG.state_signature([a, a, b, a]) == SIG.state_signature([a, b])


def test_partial_views_union() -> None:
    def part(lo: int, hi: int) -> ToolCall:
        return editor("view", "/testbed/a.py", numbered(lo, hi), view_range=[lo, hi])

    assert SIG.state_signature([part(100, 199), part(200, 299)]) == SIG.state_signature(
        [part(100, 299)]
    )


def test_view_buckets_and_rendering() -> None:
    assert view_buckets(100, 299) == (1, 2)
    assert view_buckets(200, 299) == (2,)
    assert view_buckets(1, 50) == (0,)
    assert [render_buckets(view_buckets(*r)) for r in [(100, 299), (200, 299), (1, 50)]] == [
        "[1-2]",
        "[2]",
        "[0]",
    ]
    assert view_buckets(99, 100) == (0, 1)
    assert view_buckets(1, 50, bucket_size=10) == (0, 1, 2, 3, 4, 5)
    assert view_buckets(30, 10) == (0,)  # a reversed range counts as its start line
    with pytest.raises(ValueError):
        view_buckets(1, 2, bucket_size=0)


def test_hash4() -> None:
    assert hash4("x = 1", "x = 2") == "6d95"
    assert hash4("", "new") == hashlib.md5(b"new").hexdigest()[:4]
    assert hash4("é", "") == hashlib.md5("é".encode()).hexdigest()[:4]


def test_bare_think_and_finish() -> None:
    assert SIG.action_signature(THINK) == "think"
    assert SIG.action_signature(FINISH) == "finish"
    assert SIG.state_signature([FINISH]) == ROOT
    assert SIG.state_signature([THINK, THINK]) == "FLAGS(think=2,test_pass=0,test_fail=0)"


@pytest.mark.parametrize(
    ("call", "action"),
    [
        (editor("view", "/testbed/a.py", numbered(1, 30), view_range="[1, -1]"), "view:full@a.py"),
        # the numbered output stops before the requested end: the range covers the whole file
        (editor("view", "/testbed/a.py", numbered(1, 30), view_range="[1, 80]"), "view:full@a.py"),
        (editor("view", "a.py", numbered(1, 80), view_range="[1, 80]"), "view:partial[0]@a.py"),
        (editor("view", "a.py", numbered(150, 420), view_range="[150, -1]"),
         "view:partial[1-4]@a.py"),
        (editor("view", "a.py", "ERROR: bad", view_range="[150, -1]"), "view:partial[1]@a.py"),
        (editor("view", "a.py", numbered(120, 250), view_range=["120", "250"]),
         "view:partial[1-2]@a.py"),
        (editor("view", "a.py", view_range="garbage"), "view:full@a.py"),
        (
            editor("view", "/testbed/src", "Here's the files and directories up to 2 levels deep in"
                   " /testbed/src, excluding hidden:\n", view_range="[1, 5]"),
            "view:full@src",
        ),
        (editor("create", "/testbed/test.py", file_text="x = 1\n"), "create@test.py"),
        (editor("insert", "/testbed/a.py", insert_line="3", new_str="y"),
         f"modify:insert:{hash4('', 'y')}@a.py"),
        (editor("str_replace", "a.py", old_str="gone"), f"modify:replace:{hash4('gone', '')}@a.py"),
        (ToolCall("search", {"search_term": "range", "path": "/testbed/textkit"}),
         "search@textkit"),
        (ToolCall("search", {"search_term": "range"}), "search@."),
    ],
)  # fmt: skip
def test_editor_and_search_signatures(call: ToolCall, action: str) -> None:
    assert SIG.action_signature(call) == action


def test_state_ops() -> None:
    history = [
        editor("create", "/testbed/new.py"),
        editor("insert", "/testbed/a.py", insert_line="0", new_str="import os"),
        ToolCall("search", {"search_term": "x", "path": "/testbed"}),
        bash("pytest", "6 passed"),
        bash("pip install numpy", "ok"),
        bash("python repro.py", "Traceback ...", 1),
        bash("mkdir x"),
    ]
    insert = hash4("", "import os")
    assert SIG.state_signature(history) == (
        f".:S|a.py:I:{insert}|new.py:C|FLAGS(think=0,test_pass=1,test_fail=0)"
    )


def test_undo_edit() -> None:
    undo = editor("undo_edit", "/testbed/a.py")
    undo = ToolCall(
        undo.name, undo.arguments, fs_changes=(FileChange("a.py", "modified", "b", "a"),)
    )
    digest = hashlib.md5(b"ba").hexdigest()[:4]
    assert classify(undo) == "modify"
    assert SIG([undo], undo) == (f"a.py:U:{digest}|{ROOT}", f"modify:undo:{digest}@a.py")


@pytest.mark.parametrize(
    ("cmd", "category"),
    [
        # env-swe.md section 9 item 6
        ("cd src && pytest -x", "test"),
        ("pip install -e .", "install"),
        ("sed -n 1,20p f.py", "view"),
        ("mkdir x", "fileop"),
        ("python repro.py", "execute"),
        # the token lists of env-swe.md section 4
        ("pip3 install numpy", "install"),
        ("python -m pip install -r requirements.txt", "install"),
        ("uv pip install requests", "install"),
        ("conda install -y numpy", "install"),
        ("sudo apt-get install -y vim", "install"),
        ("py.test tests", "test"),
        ("python3 -m pytest -q tests", "test"),
        ("python -m unittest tests.test_core", "test"),
        ("tox -e py311", "test"),
        ("nox -s tests", "test"),
        ("cd a && cd b && rm -rf build", "fileop"),
        ("cp a.py b.py", "fileop"),
        ("touch x.py", "fileop"),
        ("ln -s a b", "fileop"),
        ("chmod +x run.sh", "fileop"),
        ("rmdir d", "fileop"),
        ("grep -rn foo .", "search"),
        ("git grep parse", "search"),
        ("rg -n foo src", "search"),
        ("ag foo", "search"),
        ("find . -name '*.py'", "search"),
        ("ls -la", "search"),
        ("cat a.py", "view"),
        ("head -n 20 a.py", "view"),
        ("tail a.py", "view"),
        ("less a.py", "view"),
        ("more a.py", "view"),
        ("nl -ba a.py", "view"),
        ("awk 'NR>=10 && NR<=20' a.py", "view"),
        ("git show HEAD", "view"),
        ("git diff", "view"),
        ("git status", "execute"),
        ("sed -i s/a/b/ f.py", "execute"),
        ("echo hello", "execute"),
        # precedence over segments; pipeline filters do not count
        ("grep -n x a.py && pytest tests", "test"),
        ("pytest; pip install numpy", "install"),
        ("python repro.py 2>&1 | tail -20", "execute"),
        ("python repro.py | grep Error", "execute"),
        ("grep -rn foo . | head", "search"),
        ("cat a.py | grep foo", "view"),
        ("echo y | pip install x", "install"),
        ("ls *.pyc | xargs rm", "fileop"),
        ("find src -name '*.py' | xargs grep -n foo", "search"),
        # wrappers, subshells, heredocs, comments
        ("PYTHONPATH=src timeout 60 python -m pytest", "test"),
        ("bash -c 'cd tests && pytest'", "test"),
        ("(cd src; ls)", "search"),
        ("cat > t.py << 'EOF'\npytest\npip install x\nEOF\npython t.py", "execute"),
        ("python t.py # pytest later", "execute"),
        ("cat a.py > b.py", "view"),
        ("grep '|' a.py", "search"),
    ],
)
def test_classify_command(cmd: str, category: str) -> None:
    assert classify_command(cmd) == category


@pytest.mark.parametrize(
    ("cmd", "action"),
    [
        ("cd src && pytest -x", "test@src:ok"),
        ("pytest", "test@.:ok"),
        ("cd /testbed/src && python -m pytest -k 'a or b' t/test_x.py::test_a[1-2]",
         "test@src/t/test_x.py::test_a[1-2]:ok"),
        ("pytest tests/b.py ./tests/a.py", "test@tests/a.py,tests/b.py:ok"),
        ("python -m unittest tests.test_core", "test@tests.test_core:ok"),
        ("pip install -e .", "install@.:ok"),
        ("pip install -r requirements.txt", "install@requirements.txt:ok"),
        ("python -m pip install 'Requests_Toolbelt[socks]>=2'", "install@requests-toolbelt:ok"),
        ("pip list", "install@_:ok"),
        ("sed -n 1,20p f.py", "view:partial[0]@f.py"),
        ("sed -n '120,250p' /testbed/src/core.py", "view:partial[1-2]@src/core.py"),
        ("head -300 a.py", "view:partial[0-3]@a.py"),
        ("cat -n src/a.py", "view:full@src/a.py"),
        ("git show HEAD:src/a.py", "view:full@src/a.py"),
        ("git diff HEAD~1..HEAD", "view:full@."),
        ('grep -n "def parse" src/core.py', "search@src/core.py"),
        ("grep -rn foo src tests/", "search@tests"),
        ("grep -e foo a.py", "search@a.py"),
        ("find src -name '*.py'", "search@src"),
        ("ls /testbed/src/", "search@src"),
        ("mkdir x", "fileop:mkdir@x"),
        ("mv a.py b.py", "fileop:mv@a.py"),
        ("chmod +x run.sh", "fileop:chmod@run.sh"),
        ("python repro.py", "execute@repro.py:ok"),
        ("python /testbed/scripts/run.py --flag", "execute@scripts/run.py:ok"),
        ("python -c 'print(1)'", "execute@python:ok"),
        ("./run.sh", "execute@run.sh:ok"),
        ("echo hi && make", "execute@make:ok"),
        ("cd src", "execute@_:ok"),
        ("cat /etc/hosts", "view:full@/etc/hosts"),
        ("cat ../outside.txt", "view:full@/outside.txt"),
    ],
)  # fmt: skip
def test_bash_action_signatures(cmd: str, action: str) -> None:
    assert SIG.action_signature(bash(cmd)) == action


def test_bash_result_suffix_and_flags() -> None:
    failing = bash("python -m pytest -q tests", "2 failed, 4 passed", 1)
    passing = bash("python -m pytest -q tests", "6 passed", 0)
    assert SIG.action_signature(failing) == "test@tests:error"
    assert SIG.action_signature(passing) == "test@tests:ok"
    assert SIG.state_signature([failing, passing, passing]).endswith("test_pass=2,test_fail=1)")
    assert SIG.action_signature(bash("python r.py", "Traceback (most recent call last)")) == (
        "execute@r.py:error"
    )
    assert SIG.action_signature(bash("pip install nope", "ERROR: ...", 1)) == "install@nope:error"


def test_bash_edits_via_fs_changes() -> None:
    sed = bash("sed -i s/a/b/ f.py", changes=(FileChange("f.py", "modified", "aa", "bb"),))
    digest = hashlib.md5(b"aabb").hexdigest()[:4]
    assert classify(sed) == "modify"
    assert SIG([sed], sed) == (f"f.py:M:{digest}|{ROOT}", f"modify:bash:{digest}@f.py")

    changes = (
        FileChange("/testbed/src/b.py", "modified", "b1", "b2"),
        FileChange("src/a.py", "deleted", "a1", None),
    )
    both = bash("python fix.py", changes=changes)
    digest = hashlib.md5(b"a1b1b2").hexdigest()[:4]  # path order: src/a.py, then src/b.py
    assert SIG.action_signature(both) == f"modify:bash:{digest}@src/a.py"
    assert SIG.state_signature([both]) == f"src/a.py:M:{digest}|src/b.py:M:{digest}|{ROOT}"

    heredoc = bash(
        "cat > new.py << EOF\nx = 1\nEOF", changes=(FileChange("new.py", "created", None, "c"),)
    )
    assert classify(heredoc) == "create"
    assert SIG([heredoc], heredoc) == (f"new.py:C|{ROOT}", "create@new.py")

    moved = bash(
        "mv a.py b.py",
        changes=(
            FileChange("a.py", "deleted", "x", None),
            FileChange("b.py", "created", None, "x"),
        ),
    )
    assert classify(moved) == "modify"
    # test, install and search commands keep their category even when files changed
    cache = (FileChange("x.egg-info/PKG-INFO", "created", None, "p"),)
    assert classify(bash("pip install -e .", changes=cache)) == "install"
    assert classify(bash("pytest", "1 passed", changes=cache)) == "test"
    assert classify(bash("mkdir x")) == "fileop"  # no file changed


def test_swe_golden_episode_categories() -> None:
    """env-swe.md section 8: view, search, test, modify, test, finish."""
    episode = [
        editor("view", "/testbed/textkit/core.py"),
        ToolCall("search", {"search_term": "range", "path": "/testbed/textkit"}),
        bash("python -m pytest -q tests", "2 failed, 4 passed", 1),
        editor("str_replace", "/testbed/textkit/core.py", old_str="range(1, len(seq), n)",
               new_str="range(0, len(seq), n)"),
        bash("python -m pytest -q tests", "6 passed", 0),
        ToolCall("finish", {"command": "submit"}),
    ]  # fmt: skip
    assert [classify(c) for c in episode] == ["view", "search", "test", "modify", "test", "finish"]
    assert [SIG.action_signature(c) for c in episode][2:5:2] == [
        "test@tests:error",
        "test@tests:ok",
    ]


@pytest.mark.parametrize(
    ("result", "exit_code", "tag"),
    [
        ("6 passed", 0, "ok"),
        ("0 failed, 6 passed", 0, "ok"),
        ("1 failed, 5 passed", 0, "error"),
        ("== 12 failed ==", None, "error"),
        ("fine", 2, "error"),
        ("Traceback (most recent call last):", 0, "error"),
        ("E   AssertionError: assert 1 == 2", 0, "error"),
        ("ValueError: n must be positive", 0, "error"),
        ("bash: foo: command not found", 0, "error"),
        ("ERROR: not a Python name match", None, "ok"),  # case-sensitive, like the spec's rule
        ("", None, "ok"),
    ],
)
def test_result_tag(result: str, exit_code: int | None, tag: str) -> None:
    assert result_tag(ToolCall("execute_bash", {"cmd": "x"}, result, exit_code=exit_code)) == tag


def test_invalid_calls() -> None:
    calls = [
        ToolCall("", {}, "no function call", valid=False),
        ToolCall("open_file", {"path": "a.py"}, valid=False),
        ToolCall("file_editor", {"command": "view", "path": "a.py"}, valid=False),
        ToolCall("execute_bash", {"cmd": "pytest"}, valid=False),
        ToolCall("bogus_tool", {}),  # an unknown tool is invalid even when marked valid
        ToolCall("file_editor", {"command": "delete", "path": "a.py"}),
        ToolCall("file_editor", {"command": ["view"], "path": "a.py"}),
    ]
    assert [SIG.action_signature(c) for c in calls] == ["invalid"] * len(calls)
    assert [classify(c) for c in calls] == [
        "execute", "execute", "view", "test", "execute", "execute", "execute",
    ]  # fmt: skip
    assert SIG.state_signature(calls) == ROOT


def test_aliases() -> None:
    assert SIG.action_signature(ToolCall("bash", {"command": "ls src"})) == "search@src"
    assert SIG.action_signature(ToolCall("submit", {})) == "finish"
    assert classify(ToolCall("str_replace_editor", {"command": "create", "path": "x"})) == "create"


def test_paths() -> None:
    for path in ("/testbed/src/core.py", "src/core.py", "./src/core.py", "src/./x/../core.py"):
        assert normalize_path(path) == "src/core.py"
    assert normalize_path(".") == normalize_path("/testbed") == normalize_path("") == "."
    assert normalize_path("/tmp/x.py") == "/tmp/x.py"
    assert normalize_path("/testbedx/a.py") == "/testbedx/a.py"
    assert normalize_path("/repo/a.py", repo_root="/repo/") == "a.py"
    assert SIG.action_signature(editor("view", "/etc/hosts")) == "view:full@/etc/hosts"
    other = SWESignature(repo_root="/repo")
    assert other.action_signature(editor("view", "/repo/a.py")) == "view:full@a.py"
    assert other.action_signature(editor("view", "/testbed/a.py")) == "view:full@/testbed/a.py"


def test_settings() -> None:
    sig = SWESignature(bucket_size=50, hash_len=6)
    call = editor("str_replace", "a.py", old_str="x = 1", new_str="x = 2")
    assert sig.action_signature(call) == "modify:replace:6d95bd@a.py"
    view = editor("view", "a.py", numbered(120, 250), view_range="[120, 250]")
    assert sig.action_signature(view) == "view:partial[2-5]@a.py"
    for bad in ({"bucket_size": 0}, {"hash_len": 0}, {"hash_len": 33}):
        with pytest.raises(ValueError):
            SWESignature(**bad)


def test_copy_is_independent() -> None:
    state = SignatureState()
    state.update(editor("view", "a.py"))
    twin = state.copy()
    twin.update(editor("view", "b.py"))
    twin.update(THINK)
    assert state.key() == f"a.py:Vf|{ROOT}"
    assert twin.key() == f"a.py:Vf|b.py:Vf|{ROOT.replace('think=0', 'think=1')}"


# ----------------------------------------------------------------------------- random histories

POOL = [call for call, _, _ in GOLDEN] + [
    editor("view", "/testbed/b.py", numbered(1, 300), view_range=[1, 300]),
    editor("view", "b.py", numbered(300, 320), view_range="[300, 320]"),
    editor("create", "/testbed/tests/test_new.py"),
    editor("insert", "b.py", insert_line="2", new_str="z"),
    ToolCall("search", {"search_term": "q", "path": "/testbed/src"}),
    bash("pytest tests", "3 passed"),
    bash("cd src && grep -rn x", "x"),
    bash("sed -i s/x/y/ b.py", changes=(FileChange("b.py", "modified", "1", "2"),)),
    bash("pip install numpy"),
    ToolCall("", valid=False),
]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(POOL), max_size=25), st.randoms(use_true_random=False))
def test_incremental_equals_batch_and_order_free(history: list[ToolCall], rng: random.Random):
    state = SignatureState(SIG)
    for t, call in enumerate(history):
        assert state.key() == SIG.state_signature(history[:t])
        state.update(call)
    assert state.key() == SIG.state_signature(history)
    shuffled = history[:]
    rng.shuffle(shuffled)
    assert SIG.state_signature(shuffled) == state.key()


def test_incremental_equals_batch_permutations() -> None:
    for perm in itertools.permutations(GOLDEN[:5]):
        assert SIG.state_signature([c for c, _, _ in perm]) == SIG.state_signature(
            [c for c, _, _ in GOLDEN[:5]]
        )


# ----------------------------------------------------------------------------- robustness

SHELL_ALPHABET = " \t\n'\"\\$`()|&;<>#*?~=-./:[]{}!" + "abcpytesgrn0123456789"
WORDS = (
    "cd pytest pip install grep -n sed 1,2p cat << EOF bash -c python -m find -exec git diff && |"
)
WORDS_LIST = [*WORDS.split(), "2>&1", "'", '"', ";", "\n", "(", ")"]


def test_fuzz_commands_never_raise() -> None:
    rng = random.Random(0)
    for i in range(2000):
        if i % 2:
            cmd = "".join(rng.choice(SHELL_ALPHABET) for _ in range(rng.randint(0, 40)))
        else:
            cmd = " ".join(rng.choice(WORDS_LIST) for _ in range(rng.randint(0, 12)))
        assert classify_command(cmd) in CATEGORIES
        call = bash(cmd, rng.choice(["", "1 failed", "ok"]), rng.choice([0, 1, None]))
        action = SIG.action_signature(call)
        assert isinstance(action, str) and action
        SignatureState(SIG).update(call)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_any_text_is_classified(cmd: str) -> None:
    assert classify_command(cmd) in CATEGORIES
    assert SIG.action_signature(bash(cmd))


@pytest.mark.parametrize(
    "arguments",
    [{}, {"cmd": None}, {"cmd": 3}, {"command": ["ls"]}, {"path": None, "command": "view"},
     {"command": "view", "path": "a.py", "view_range": {"a": 1}},
     {"command": "view", "path": "a.py", "view_range": [1, "x"]},
     {"command": "str_replace", "path": 5, "old_str": None, "new_str": 7}],
)  # fmt: skip
@pytest.mark.parametrize("name", ["file_editor", "execute_bash", "search", "think", "finish"])
def test_odd_arguments_never_raise(name: str, arguments: dict) -> None:
    call = ToolCall(name, arguments)
    assert classify(call) in CATEGORIES
    assert SIG.action_signature(call)
    assert SIG.state_signature([call, call]).endswith(")")
