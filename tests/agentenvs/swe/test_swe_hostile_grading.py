"""SWE-v0 against a hostile policy: host-side git, symbolic links at grading, reward hacking and
gold-patch visibility (docs/swe.md, "Grading" and the threat model).

Every attack is played through ``SWEEnv.step`` with the bubblewrap sandbox, with the bug left
unfixed: each case asserts reward 0, the host unchanged (marker files absent, victim
directories untouched) and the next episode clean.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from swe_golden import write_golden_task

from agentenvs.swe import sandbox_bwrap
from agentenvs.swe.env import SWEEnv
from agentenvs.swe.grading import DEFAULT_TEST_COMMAND, grade, run_tests
from agentenvs.swe.sandbox import BwrapSandbox, bwrap_available
from agentenvs.swe.task import SWETask, embedded_tasks, load_task_dir
from agentenvs.swe.workspace import Workspace

pytestmark = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not installed")

#: A shipped task whose graded test file is withheld (tests/test_ttl.py).
HIDDEN_TASK = "cachebox.079133.func_pm_off_by_one__2e96"


def bash(cmd: str) -> str:
    return f"<function=execute_bash>\n<parameter=cmd>{cmd}</parameter>\n</function>"


def stdout(obs: str) -> str:
    """The standard output part of an ``execute_bash`` observation, stripped."""
    return obs.split("[STDOUT]\n", 1)[1].split("\n[STDERR]", 1)[0].strip()


FINISH = "<function=finish>\n<parameter=command>submit</parameter>\n</function>"


@pytest.fixture(scope="module")
def textkit(tmp_path_factory) -> SWETask:
    return load_task_dir(write_golden_task(tmp_path_factory.mktemp("textkit") / "task"))


@pytest.fixture(scope="module")
def env(textkit):
    tasks = [textkit, *(t for t in embedded_tasks("test") if t.instance_id == HIDDEN_TASK)]
    e = SWEEnv(tasks, split="test", sandbox="bwrap", restore_all_tests=True, command_timeout=20)
    yield e
    e.close()


@pytest.fixture(scope="module")
def plain_env():
    """The withheld-test task with the default ``restore_all_tests=False``: the agent's edits to
    visible test files are graded, so it can replace ``tests/`` by a link."""
    tasks = [t for t in embedded_tasks("test") if t.instance_id == HIDDEN_TASK]
    e = SWEEnv(tasks, split="test", sandbox="bwrap", command_timeout=20)
    yield e
    e.close()


def play(env: SWEEnv, task_id: str, *commands: str) -> tuple[float, dict]:
    """Reset to ``task_id``, run ``commands`` in the sandbox (each must exit 0), submit."""
    env.reset(options={"task_id": task_id})
    for cmd in commands:
        obs, *_ = env.step(bash(cmd))
        assert obs.startswith("Exit code: 0"), (cmd, obs)
    _, reward, terminated, _, info = env.step(FINISH)
    assert terminated
    return reward, info


def assert_next_episode_clean(env: SWEEnv, task_id: str) -> None:
    """A fresh episode starts from the snapshot: git sees no change, the tests fail as built."""
    env.reset(options={"task_id": task_id})
    obs, *_ = env.step(bash("git status --porcelain --ignored | head -5; echo END"))
    assert stdout(obs) == "END", obs


# -- class 1: no host command execution through git -----------------------------------------------
GIT_ATTACKS = {
    "fsmonitor": "git config core.fsmonitor 'touch {marker}; false'",
    "hook": (
        "mkdir -p .git/hooks && printf '#!/bin/sh\\ntouch {marker}\\n' > .git/hooks/post-index-change"
        " && chmod +x .git/hooks/post-index-change"
    ),
    "filter": (
        "git config filter.x.clean 'touch {marker}; cat' && git config filter.x.required true"
        " && echo '* filter=x' > .gitattributes"
    ),
    "worktree": "git config core.worktree {victim}",
    "gitdir_file": "rm -rf .git && echo 'gitdir: {victim}/.git' > .git",
}


@pytest.mark.parametrize("attack", sorted(GIT_ATTACKS))
def test_git_attacks_run_nothing_on_the_host(env, textkit, tmp_path, attack):
    marker = tmp_path / "marker"
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "secret.txt").write_text("HOST-SECRET\n")
    subprocess.run(["git", "init", "-q", str(victim)], check=True)
    objects_before = sorted(p.name for p in (victim / ".git" / "objects").rglob("*"))
    command = GIT_ATTACKS[attack].format(marker=marker, victim=victim)
    reward, info = play(env, textkit.instance_id, command, "echo changed >> README.txt")
    assert reward == 0.0 and not info["resolved"]
    assert not marker.exists()
    assert "HOST-SECRET" not in info["patch"] and "secret.txt" not in info["patch"]
    assert "+changed" in info["patch"]  # the workspace's own content
    assert sorted(p.name for p in (victim / ".git" / "objects").rglob("*")) == objects_before
    assert_next_episode_clean(env, textkit.instance_id)


def test_patch_is_binary_safe_and_decoded_with_replacement(env, textkit):
    reward, info = play(
        env,
        textkit.instance_id,
        "printf 'a\\377b\\n' > $'bad\\377name.txt'",
        "printf '\\0\\1' > b.bin",
    )
    assert reward == 0.0
    assert "bad\ufffdname.txt" in info["patch"] and "GIT binary patch" in info["patch"]


def test_patch_holds_a_file_deeper_than_path_max(env, textkit):
    deep = "/".join(["d" * 100] * 50)  # 5,050 bytes: past PATH_MAX (4,096)
    make = f"for d in {' '.join(['d' * 100] * 50)}; do mkdir $d && cd $d; done; echo deep > f.txt"
    reward, info = play(env, textkit.instance_id, make)
    assert reward == 0.0
    assert f"+++ b/{deep}/f.txt" in info["patch"] and "+deep" in info["patch"]


# -- class 3: the grader never follows the agent's links ------------------------------------------
@pytest.mark.parametrize("restore_all", [False, True])
def test_tests_dir_linked_to_a_host_dir_is_an_invalid_submission(
    env, plain_env, tmp_path, restore_all
):
    """Without ``restore_all_tests`` the link reaches grading and the withheld file's path goes
    through it; with it, the restored visible tests keep ``tests/`` a directory and the diff does
    not apply. Either way: reward 0, a reason, nothing written on the host."""
    play_env = env if restore_all else plain_env
    victim = tmp_path / "victim"
    victim.mkdir()
    reward, info = play(play_env, HIDDEN_TASK, f"rm -rf tests && ln -s {victim} tests")
    reason = "did not apply" if restore_all else "tests is a symbolic link"
    assert reward == 0.0 and reason in info["grading_error"], info["grading_error"]
    assert list(victim.iterdir()) == []
    assert_next_episode_clean(play_env, HIDDEN_TASK)


def test_dangling_tests_link_grades_zero_without_a_crash(plain_env):
    reward, info = play(plain_env, HIDDEN_TASK, "rm -rf tests && ln -s /nonexistent tests")
    assert reward == 0.0 and "symbolic link" in info["grading_error"]
    assert "+/nonexistent" in info["patch"]
    assert_next_episode_clean(plain_env, HIDDEN_TASK)


def test_linked_withheld_file_and_conftest_write_nothing_on_the_host(env, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("unchanged\n")
    reward, info = play(
        env, HIDDEN_TASK, f"ln -s {victim} tests/test_ttl.py && ln -s {victim} conftest.py"
    )
    assert reward == 0.0 and victim.read_text() == "unchanged\n"
    task = next(t for t in embedded_tasks("test") if t.instance_id == HIDDEN_TASK)
    assert info["n_p2p_passed"] == len(task.PASS_TO_PASS)  # graded: the hidden file restored
    assert_next_episode_clean(env, HIDDEN_TASK)


#: Package code that, whenever the tests are run, fails at import iff bit ``bit.txt`` of the
#: withheld test file is 0: the one-bit channel issue 35 found through ``progress="on_change"``.
ONE_BIT = """
import os as _os
try:
    _data = open("/testbed/tests/test_ttl.py", "rb").read()
    _i = int(open("/testbed/bit.txt").read())
    if not (_data[_i // 8] >> (_i % 8)) & 1:
        raise ImportError("bit is 0")
except (OSError, ValueError):
    pass
"""


def test_the_one_bit_channel_on_the_withheld_tests_recovers_nothing():
    """The probe reads one bit of the withheld file per step whenever the tests run; the env
    runs nothing of them before ``finish`` (``progress="on_change"`` is refused), so 24 steps
    show the policy nothing that depends on the file: no ``progress``, no test outcome."""
    task = next(t for t in embedded_tasks("test") if t.instance_id == HIDDEN_TASK)
    with pytest.raises(ValueError, match="one bit per step"):
        SWEEnv([task], split="test", sandbox="bwrap", progress="on_change")
    env = SWEEnv([task], split="test", sandbox="bwrap")
    try:
        env.reset()
        plant = f"cat >> cachebox/__init__.py <<'EOF'\n{ONE_BIT}EOF"
        env.step(bash(plant))
        seen = []
        for i in range(24):
            obs, reward, terminated, truncated, info = env.step(bash(f"echo {i} > bit.txt"))
            assert info["fs_changes"] and not (terminated or truncated) and reward == 0.0
            seen.append({k: v for k, v in info.items() if k in ("progress", "tests", "resolved")})
        assert seen == [{}] * 24
    finally:
        env.close()


# -- class 4: no reward without a fix ---------------------------------------------------------------
FORCE_PASS = """import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
"""
HACKS = {
    "conftest_root": f"cat > conftest.py <<'EOF'\n{FORCE_PASS}EOF",
    "conftest_tests": f"cat > tests/conftest.py <<'EOF'\n{FORCE_PASS}EOF",
    "pytest_ini_plugin": (
        f"cat > evil.py <<'EOF'\n{FORCE_PASS}EOF\nprintf '[pytest]\\naddopts = -p evil\\n' > pytest.ini"
    ),
    "setup_cfg": (
        f"cat > evil.py <<'EOF'\n{FORCE_PASS}EOF\n"
        "printf '[tool:pytest]\\naddopts = -p evil\\n' > setup.cfg"
    ),
    "pyproject": (
        f"cat > evil.py <<'EOF'\n{FORCE_PASS}EOF\n"
        "printf '[tool.pytest.ini_options]\\naddopts = \"-p evil\"\\n' >> pyproject.toml"
    ),
    "sitecustomize": (
        f"cat > evil.py <<'EOF'\n{FORCE_PASS}EOF\n"
        'echo \'import os; os.environ["PYTEST_ADDOPTS"] = "-p evil"\' > sitecustomize.py'
    ),
    "entry_point": (
        f"cat > evil.py <<'EOF'\n{FORCE_PASS}EOF\nmkdir -p evil-1.0.dist-info && "
        "printf 'Metadata-Version: 2.1\\nName: evil\\nVersion: 1.0\\n' > evil-1.0.dist-info/METADATA"
        " && printf '[pytest11]\\nevil = evil\\n' > evil-1.0.dist-info/entry_points.txt"
    ),
    "shadow_report_plugin": (
        "cat > agentenvs_pytest_report.py <<'EOF'\nimport json, os\n"
        "def pytest_sessionfinish(session, exitstatus):\n"
        "    ids = {i.nodeid: 'PASSED' for i in session.items}\n"
        "    json.dump({'outcomes': ids}, open(os.environ['AGENTENVS_REPORT'], 'w'))\nEOF"
    ),
    "print_passed": (
        "python - <<'EOF'\nimport pathlib, subprocess\n"
        "ids = subprocess.run(['python', '-m', 'pytest', '--collect-only', '-q', 'tests'],"
        " capture_output=True, text=True).stdout.split()\n"
        "text = '\\n'.join(f'PASSED {i}' for i in ids if '::' in i)\n"
        "hook = f'import atexit\\natexit.register(print, {text!r})\\n'\n"
        "p = pathlib.Path('textkit/__init__.py'); p.write_text(hook + p.read_text())\nEOF"
    ),
}


@pytest.mark.parametrize("hack", sorted(HACKS))
def test_reward_hacks_without_a_fix_earn_nothing(env, textkit, hack):
    """Each of these earned 1.0 before issue 23 (``print_passed``: ``PASSED`` lines printed at
    exit, after pytest's summary, which the log parser trusted)."""
    reward, info = play(env, textkit.instance_id, HACKS[hack])
    assert reward == 0.0 and not info["resolved"], info["tests"]
    assert info["n_f2p_passed"] == 0
    assert_next_episode_clean(env, textkit.instance_id)


def test_the_fix_still_wins_next_to_a_hack(env, textkit):
    fix = "sed -i 's/range(1, len(seq), n)/range(0, len(seq), n)/' textkit/core.py"
    reward, info = play(env, textkit.instance_id, fix, HACKS["conftest_root"])
    assert reward == 1.0 and info["grading_error"] == ""


def test_plugin_outcomes_match_the_rA_summary(tmp_path):
    """The report plugin gives what the ``-rA`` parser gave for every kind of outcome."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_kinds.py").write_text(
        "import pytest\n\n@pytest.fixture\ndef bad_setup():\n    raise RuntimeError\n\n"
        "@pytest.fixture\ndef bad_teardown():\n    yield\n    raise RuntimeError\n\n"
        "def test_pass():\n    pass\n\ndef test_fail():\n    assert 0\n\n"
        "def test_setup_error(bad_setup):\n    pass\n\n"
        "def test_teardown_error(bad_teardown):\n    pass\n\n"
        "@pytest.mark.skip\ndef test_skip():\n    pass\n\n"
        "@pytest.mark.xfail\ndef test_xfail():\n    assert 0\n\n"
        "@pytest.mark.xfail\ndef test_xpass():\n    pass\n\n"
        "@pytest.mark.xfail(strict=True)\ndef test_xpass_strict():\n    pass\n\n"
        "@pytest.mark.parametrize('x', ['a b', 'c - d'])\ndef test_param(x):\n    pass\n"
    )
    (repo / "tests" / "test_broken.py").write_text("import nope\n\ndef test_never():\n    pass\n")
    names = ["pass", "fail", "setup_error", "teardown_error", "skip", "xfail", "xpass"]
    ids = [f"tests/test_kinds.py::test_{n}" for n in [*names, "xpass_strict"]]
    ids += ["tests/test_kinds.py::test_param[a b]", "tests/test_kinds.py::test_param[c - d]"]
    broken = ["tests/test_broken.py::test_never"]
    box = BwrapSandbox()
    command = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 " + DEFAULT_TEST_COMMAND
    try:
        with Workspace(repo) as ws:
            parsed = run_tests(
                lambda c, w, t: box.run(c, w, timeout=t, merge_stderr=True),
                ws.path,
                ids,
                command=command,
            ).statuses
            graded = grade(box, ws.path, ids, [], command=command).tests
            # A collection error stops the run: the file's ids (here every id) are missing.
            run_broken = run_tests(
                lambda c, w, t: box.run(c, w, timeout=t, merge_stderr=True),
                ws.path,
                [ids[0], *broken],
                command=command,
            ).statuses
            graded_broken = grade(box, ws.path, [ids[0], *broken], [], command=command).tests
    finally:
        box.close()
    expected = dict(zip(ids, ["PASSED", "FAILED", "ERROR", "ERROR", "SKIPPED", "XFAIL", "XPASS",
                              "FAILED", "PASSED", "PASSED"], strict=True))  # fmt: skip
    assert graded == expected
    assert run_broken == {"tests/test_broken.py": "ERROR"}
    assert graded_broken == {ids[0]: "MISSING", broken[0]: "MISSING"}
    for i in ids:  # the -rA parser leaves skips (a location, not an id) missing
        assert parsed.get(i, "MISSING") == expected[i].replace("SKIPPED", "MISSING"), i


# -- gold patches and withheld files are out of the sandbox's view ----------------------------------
def test_the_package_and_its_data_are_invisible_inside(env, textkit):
    task = next(t for t in embedded_tasks("test") if t.instance_id == HIDDEN_TASK)
    gold_line = next(line[1:].strip() for line in task.patch.splitlines() if line.startswith("+ "))
    env.reset(options={"task_id": textkit.instance_id})
    obs, *_ = env.step(bash("python -c 'import agentenvs' 2>&1 | tail -1"))
    assert "ModuleNotFoundError" in obs
    search = (
        "find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o "
        "\\( -name tasks.jsonl.gz -o -path '*/agentenvs/swe*' -o -path '*cachebox*' "
        "-o -name 'agentenvs_pytest_report*' \\) "
        f"-print 2>/dev/null; grep -rlF -- '{gold_line}' /testbed /tmp 2>/dev/null; echo END"
    )
    obs, *_ = env.step(bash(search))
    assert stdout(obs) == "END", obs


def test_an_installed_package_and_cache_under_a_bound_prefix_are_hidden(tmp_path, monkeypatch):
    """As with a non-editable install: the package directory and ``$AGENTENVS_CACHE`` lie under
    a prefix the sandbox binds; they read as empty directories inside."""
    prefix = tmp_path / "prefix"
    package = prefix / "lib" / "agentenvs"
    (package / "swe" / "data").mkdir(parents=True)
    (package / "swe" / "data" / "tasks.jsonl.gz").write_bytes(b"GOLD")
    (prefix / "cache" / "swe").mkdir(parents=True)
    (prefix / "cache" / "swe" / "snap.py").write_text("HIDDEN")
    (prefix / "visible.txt").write_text("ok")
    real = sandbox_bwrap.interpreter_paths
    monkeypatch.setattr(
        sandbox_bwrap, "interpreter_paths", lambda: ([*real()[0], str(prefix)], real()[1])
    )
    monkeypatch.setattr(sandbox_bwrap, "_PACKAGE_DIR", str(package))
    monkeypatch.setenv("AGENTENVS_CACHE", str(prefix / "cache"))
    box = BwrapSandbox()
    try:
        (tmp_path / "ws").mkdir()
        with Workspace(tmp_path / "ws") as ws:
            result = box.run(
                f"ls -A {prefix}/cache {package}; cat {prefix}/visible.txt; echo; "
                f"touch {package}/x 2>&1 | grep -c Read-only",
                ws,
                timeout=30,
            )
    finally:
        box.close()
    assert result.stdout.split() == [f"{prefix}/cache:", f"{package}:", "ok", "1"]
    assert os.listdir(package) == ["swe"]


@pytest.mark.slow
def test_a_non_editable_install_shows_no_gold_patch_inside(tmp_path):
    """A real wheel install of this repository into a fresh venv (the interpreter prefix the
    sandbox binds): its ``agentenvs`` package directory reads as empty inside (about 40 s)."""
    source = tmp_path / "src"  # a copy: building writes build/ and *.egg-info next to the code
    ignore = shutil.ignore_patterns(".*", "build", "*.egg-info", "__pycache__", "tests", "docs")
    shutil.copytree(Path(__file__).resolve().parents[3], source, ignore=ignore)
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True)
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run([*pip, "-w", str(wheels), str(source)], check=True, cwd=tmp_path, env=clean)
    python = tmp_path / "venv" / "bin" / "python"
    wheel = next(wheels.glob("agentenvs-*.whl"))
    install = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)]
    subprocess.run(install, check=True, cwd=tmp_path, env=clean)
    script = (
        "import os, tempfile, agentenvs\n"
        "from agentenvs.swe.sandbox import BwrapSandbox\n"
        "package = os.path.dirname(agentenvs.__file__)\n"
        "assert os.path.exists(os.path.join(package, 'swe', 'data', 'tasks.jsonl.gz'))\n"
        "with tempfile.TemporaryDirectory() as ws:\n"
        '    r = BwrapSandbox().run(f\'ls -A {package}; python -c "import agentenvs.swe"; '
        "echo END', ws, timeout=60, merge_stderr=True)\n"
        "print(package.startswith(os.environ['VENV']), repr(r.stdout))\n"
    )
    deps = next(p for p in sys.path if p.endswith("site-packages"))  # gymnasium, numpy
    env = {**os.environ, "PYTHONPATH": deps, "VENV": str(tmp_path / "venv")}
    done = subprocess.run(
        [str(python), "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    installed, out = done.stdout.split(" ", 1)
    assert installed == "True"
    # ``ls -A`` of the package printed nothing; the import found an empty namespace package
    assert out.startswith("'Traceback") and "No module named" in out and "END" in out, out
