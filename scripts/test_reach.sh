#!/usr/bin/env bash
# The "reach" suites: our code inside the real verl, OpenEnv, TRL, SkyRL-gym and verifiers from PyPI,
# on CPU, and every snippet of docs/integrations.md. verl pins transformers < 5.11 (ours is newer),
# so they get a venv of their own ($REACH_VENV, default .reach-venv), built from our extras alone,
# as a user installs them (no list of packages here): the frameworks' extras, the text envs' that
# the OpenEnv tests serve (ALFWorld, WebShop, SearchQA) and test (pytest, psutil). One pip
# resolution, so the extras must coexist; torch pinned (here the local CPU build), so pip never
# pulls a CUDA one. tests/test_integrations_snippets.py checks that each snippet needs no more than
# its own section's extra.
# Usage: scripts/test_reach.sh [install|test|all] (default all; CI installs while the main suite runs).
set -euo pipefail
cd "$(dirname "$0")/.."
stage=${1:-all}
venv=${REACH_VENV:-.reach-venv}
extras=verl,trl,openenv,skyrl,verifiers,alfworld,webshop,searchqa,test
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py="$venv/bin/python"
if [ "$stage" != test ]; then
  "$py" -m pip install -q --upgrade pip
  "$py" -m pip install -q torch==2.13.0 -e ".[$extras]"
fi
[ "$stage" = install ] && exit 0
"$py" -m pip install -q --no-deps -e .   # our metadata (the verl.plugins entry point) as checked out
# REACH_SLOW=1 (CI sets it) adds the minute-long cases: 100 ALFWorld and SWE episodes, the 60 s soak,
# the 40 s abuse run of the OpenEnv server.
mark="reach and not slow"; [ "${REACH_SLOW:-0}" = 1 ] && mark=reach
# Two processes, a file to each (module fixtures: Ray, servers); the server's latency-bound abuse
# run afterwards, alone, as its bound needs a machine no other test loads.
abuse=tests/agentenvs/serve/test_reach_openenv_abuse.py
"$py" -m pytest -p no:cacheprovider -n "${AGENTENVS_TEST_WORKERS:-2}" --dist loadfile -m "$mark" -rs \
  --ignore="$abuse" tests/learners/test_reach_verl*.py tests/agentenvs/serve \
  tests/agentenvs/integrations tests/test_integrations_snippets.py
"$py" -m pytest -p no:cacheprovider -m "$mark" -rs "$abuse" || [ $? -eq 5 ]   # 5: none selected
"$py" -m pytest -p no:cacheprovider -q learners/verl agentenvs/serve agentenvs/integrations   # doctests
TRL_EXPERIMENTAL_SILENCE=1 "$py" -m pytest -p no:cacheprovider -m reach -rs \
  tests/learners/test_reach_trl.py tests/test_readme.py   # TRL, and the TRL snippet of docs/learner.md
