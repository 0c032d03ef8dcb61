"""RayVectorEnv joins a Ray cluster by address (a head node started with ``ray start``)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")

CLIENT = """
import sys, agentenvs, ray
from agentenvs.wrappers import VectorCreditWrapper, credited_groups
envs = VectorCreditWrapper(agentenvs.make_group_vec_env(
    "agentenvs/Sokoban-v0", 1, 2, "ray", vector_kwargs={"address": sys.argv[1], "num_workers": 2},
    action_format="plain", max_steps=3), "grpo")
envs.reset(seed=0)
groups = []
while not groups:
    groups = credited_groups(envs.step(["up", "up"])[-1])
print(ray.get_runtime_context().gcs_address, len(groups[0]))
envs.close()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_a_vector_env_joins_a_cluster_by_address(tmp_path):
    port = free_port()
    ray_cli = str(Path(sys.executable).with_name("ray"))
    log = (tmp_path / "head.log").open("w")
    # A private temp dir keeps the head's address out of /tmp/ray/ray_current_cluster, which would
    # point every later plain ray.init() on this machine at this (soon dead) head.
    ray_tmp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's socket paths are limited
    head = subprocess.Popen(
        [ray_cli, "start", "--head", "--block", f"--port={port}", "--num-cpus=2",
         "--include-dashboard=false", f"--temp-dir={ray_tmp}"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        address = None
        for _ in range(120):  # the head prints the address other nodes join with
            text = (tmp_path / "head.log").read_text()
            if f":{port}'" in text:
                address = text.split("ray start --address='")[1].split("'")[0]
                break
            time.sleep(1)
        assert address, (tmp_path / "head.log").read_text()[-2000:]
        env = {**os.environ, "RAY_AUTH_MODE": "token"}  # `ray start` enables token auth
        done = subprocess.run(
            [sys.executable, "-c", CLIENT, address],
            capture_output=True, text=True, timeout=300, env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.split() == [address, "2"]
    finally:
        os.killpg(head.pid, signal.SIGTERM)
        head.wait(timeout=60)
        log.close()
        shutil.rmtree(ray_tmp, ignore_errors=True)
