"""OpenEnv's ``AutoEnv`` finds and starts our envs (the real openenv 0.10 in the reach venv):
the ``openenv-agentenvs-*`` packages of ``deploy/openenv`` (a manifest and a typed client per
served env) are built and installed into a temporary folder, ``AutoEnv`` discovers them, connects
to a running server, and starts one through a container provider that runs the image's own
``CMD`` as a local process (docker cannot run here: the Dockerfile is linted, never built).
Servers listen on 127.0.0.1 only."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
import tomllib
import yaml

pytestmark = pytest.mark.reach
pytest.importorskip("openenv")
pytest.importorskip("uvicorn")

from openenv import AutoEnv  # noqa: E402
from openenv.auto._discovery import reset_discovery  # noqa: E402
from openenv.core.containers.runtime import ContainerProvider  # noqa: E402

import agentenvs  # noqa: E402,F401  (registers the envs)
from agentenvs.cli.main import build_parser  # noqa: E402
from agentenvs.serve.openenv import AgentEnvClient, make_remote, make_server  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy" / "openenv"
PACKAGES = sorted(p for p in DEPLOY.iterdir() if (p / "pyproject.toml").is_file())
ENV = "agentenvs/Sokoban-v0"


def manifest(package: Path) -> dict[str, Any]:
    (yaml_path,) = package.glob("*/openenv.yaml")
    return yaml.safe_load(yaml_path.read_text(encoding="utf-8"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The five packages built and installed (pip, no index, no dependencies) into a folder of
    their own; the sources are copied first so the build leaves nothing in the repository."""
    root = tmp_path_factory.mktemp("openenv")
    sources = [shutil.copytree(p, root / "src" / p.name) for p in PACKAGES]
    target = root / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(target), *map(str, sources)],
        check=True, timeout=300,
    )  # fmt: skip
    return target


@pytest.fixture()
def discovery(site, monkeypatch, tmp_path):
    """``AutoEnv``'s discovery seeing ``site`` (on ``sys.path``), with a cache of its own."""
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    reset_discovery()
    yield
    reset_discovery()
    for name in [m for m in sys.modules if m.startswith("agentenvs_")]:
        del sys.modules[name]


def test_every_served_text_env_has_a_package_with_a_manifest():
    """One package per text env OpenEnv serves; each names a registered id, an image matching
    the default ``AutoEnv`` derives, extras pyproject.toml defines, and its client's id."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    ids = set()
    for package in PACKAGES:
        key = package.name.removeprefix("agentenvs-")
        project = tomllib.loads((package / "pyproject.toml").read_text())["project"]
        assert project["name"] == f"openenv-agentenvs-{key}"
        spec = manifest(package)
        ours = spec["agentenvs"]
        assert spec["name"] == f"agentenvs_{key}" and spec["port"] == 8000
        assert ours["env_id"] in gym.registry and ours["image"] == f"agentenvs-{key}-env:latest"
        assert set(ours["extras"]) <= set(extras) and "openenv" in ours["extras"]
        client = (package / f"agentenvs_{key}" / "client.py").read_text()
        assert f'ENV_ID = "{ours["env_id"]}"' in client
        ids.add(ours["env_id"])
    assert ids == {
        "agentenvs/Sokoban-v0", "agentenvs/ALFWorld-v0", "agentenvs/WebShop-v0",
        "agentenvs/SearchQA-v0", "agentenvs/SWE-v0",
    }  # fmt: skip


def test_autoenv_discovers_each_env(discovery):
    """``AutoEnv.get_env_info`` finds each installed package by its name, with our typed client
    class, the manifest's description and the image name; a near miss gets suggestions."""
    for package in PACKAGES:
        key = package.name.removeprefix("agentenvs-")
        info = AutoEnv.get_env_info(f"agentenvs-{key}")
        assert info["package"] == f"openenv-agentenvs-{key}"
        assert info["default_image"] == manifest(package)["agentenvs"]["image"]
        assert info["action_class"] == "TextAction" and info["spec_version"] == 1
        cls = AutoEnv.get_env_class(f"agentenvs_{key}")
        assert issubclass(cls, AgentEnvClient) and cls.__name__ == info["env_class"]
    with pytest.raises(ValueError, match="agentenvs_sokoban"):
        AutoEnv.from_env("agentenvs")


def test_autoenv_connects_to_a_running_server_and_plays_like_in_process(discovery):
    """``AutoEnv.from_env("agentenvs-sokoban", base_url=url)`` against ``make_server`` (plain
    actions, the reference prompt): our typed client; an episode equals in-process, and the
    prompt rides in the metadata."""
    server = make_server(ENV, port=free_port(), prompt="reference", action_format="plain")
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        url = f"http://127.0.0.1:{server.config.port}"
        client = AutoEnv.from_env("agentenvs-sokoban", base_url=url)
        assert type(client).__name__ == "AgentenvsSokobanEnv"
        local = gym.make(ENV, action_format="plain")
        with client.sync() as env:
            result = env.reset(seed=4)
            assert result.observation.text == local.reset(seed=4)[0]
            assert "turn" in result.observation.metadata["prompt"]
            from agentenvs_sokoban import TextAction

            for move in ["up", "left", "jump", "down"]:
                result = env.step(TextAction(action=move))
                obs, reward, *_ = local.step(move)
                assert (result.observation.text, result.reward) == (obs, reward)
    finally:
        server.should_exit = True
        thread.join(10)


# -- the container build file ------------------------------------------------------------------
def dockerfile() -> list[tuple[str, str]]:
    """``deploy/openenv/Dockerfile`` as (instruction, arguments), continuations joined."""
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    text = re.sub(r"\\\n", " ", text)
    lines = [
        ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")
    ]
    return [(ln.split(None, 1)[0].upper(), ln.split(None, 1)[1]) for ln in lines]


def test_the_dockerfile_lints():
    """Known instructions only; every ``COPY`` source exists; the ``ARG`` defaults name a
    registered id and real extras; the image runs as a user, not root; the ``CMD`` (exec form)
    is ``agentenvs serve`` with options our parser accepts, on port 8000 of every interface."""
    known = {"FROM", "ARG", "RUN", "WORKDIR", "COPY", "USER", "ENV", "EXPOSE", "HEALTHCHECK", "CMD"}
    steps = dockerfile()
    assert steps[0][0] == "FROM" and {i for i, _ in steps} <= known
    for instruction, args in steps:
        if instruction == "COPY":
            *sources, _ = args.split()
            assert all((ROOT / s).exists() for s in sources), args
    args = dict(a.split("=", 1) for i, a in steps if i == "ARG")
    assert args["ENV_ID"] in gym.registry
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert set(args["EXTRAS"].split(",")) <= set(extras)
    assert [a for i, a in steps if i == "USER"] == ["agent"]
    assert [a for i, a in steps if i == "EXPOSE"] == ["8000"]
    (cmd,) = [json.loads(a) for i, a in steps if i == "CMD"]
    assert cmd[:2] == ["sh", "-c"]
    argv = shlex.split(expand(cmd[2], {"AGENTENVS_ENV_ID": ENV, "AGENTENVS_ENV_KWARGS": "{}",
                                        "AGENTENVS_PROMPT": "compact"}))  # fmt: skip
    assert argv[:3] == ["exec", "agentenvs", "serve"]
    parsed = build_parser().parse_args(argv[2:])
    assert (parsed.env_id, parsed.host, parsed.port, parsed.prompt) == (
        ENV,
        "0.0.0.0",
        8000,
        "compact",
    )


def expand(command: str, environ: dict[str, str]) -> str:
    """``command`` with ``$VAR`` and ``${VAR:+word}`` expanded by ``sh`` itself (printed, not run)."""
    out = subprocess.run(["sh", "-c", f"printf '%s' \"{command.replace(chr(34), chr(92) + chr(34))}\""],
                         env={**environ, "PATH": os.environ["PATH"]}, capture_output=True,
                         text=True, check=True)  # fmt: skip
    return out.stdout


class ImageAsProcess(ContainerProvider):
    """A container provider that runs the Dockerfile's ``CMD`` as a local process instead of
    ``docker run``: the image's environment (its ``ENV`` defaults, the manifest's env id for
    the image asked, the caller's ``env_vars``), on a free port of 127.0.0.1."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def start_container(self, image: str, port: int | None = None, env_vars: dict | None = None,
                        **kwargs: Any) -> str:  # fmt: skip
        (env_id,) = [manifest(p)["agentenvs"]["env_id"] for p in PACKAGES
                     if manifest(p)["agentenvs"]["image"] == image]  # fmt: skip
        port = port or free_port()
        (cmd,) = [json.loads(a) for i, a in dockerfile() if i == "CMD"]
        script = cmd[2].replace("--host 0.0.0.0", "--host 127.0.0.1")
        script = script.replace("--port 8000", f"--port {port}")
        bindir = str(Path(sys.executable).parent)  # where the agentenvs command is installed
        environ = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}",
                   "AGENTENVS_ENV_ID": env_id, "AGENTENVS_ENV_KWARGS": "{}",
                   "AGENTENVS_PROMPT": "", **(env_vars or {})}  # fmt: skip
        environ.pop("AGENTENVS_SERVE_TOKEN", None)
        self.proc = subprocess.Popen(["sh", "-c", script], env=environ, stdout=subprocess.PIPE,
                                     text=True)  # fmt: skip
        return f"http://127.0.0.1:{port}"

    def wait_for_ready(self, base_url: str, timeout_s: float = 30.0) -> None:
        import requests

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.proc is not None and self.proc.poll() is None, "the server exited"
            try:
                if requests.get(f"{base_url}/health", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)
        raise TimeoutError(base_url)

    def stop_container(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)


def test_autoenv_starts_the_image_with_its_options(discovery):
    """``AutoEnv.from_env("agentenvs-sokoban", container_provider=..., env_vars=...)`` without a
    URL starts the env's image (its ``CMD``, here as a local process): the server prints the
    options ``env_vars`` gave it, and a client plays its plain actions with the compact prompt."""
    provider = ImageAsProcess()
    env_vars = {"AGENTENVS_ENV_KWARGS": '{"action_format": "plain"}', "AGENTENVS_PROMPT": "compact"}
    try:
        client = AutoEnv.from_env("agentenvs-sokoban", container_provider=provider,
                                  env_vars=env_vars)  # fmt: skip
        assert type(client).__name__ == "AgentenvsSokobanEnv"
        line = provider.proc.stdout.readline()
        assert 'env kwargs {"action_format": "plain"}' in line and "prompt compact" in line
        remote = make_remote(client.base_url)  # a session of the server it started
        try:
            obs, info = remote.reset(seed=1)
            assert obs == gym.make(ENV).reset(seed=1)[0]
            assert remote.step("up")[4]["action_valid"]  # plain actions
            assert remote.agent_prompt("compact").turn.startswith("Sokoban grid")
        finally:
            remote.close()
    finally:
        provider.stop_container()
