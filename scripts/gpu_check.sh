#!/usr/bin/env bash
# The learner's GPU acceptance run (docs/learner-gpu.md, "GPU acceptance run"): one PPO update of
# random-initialised Qwen2.5 0.5B and 1.5B (LoRA and full fine-tune, bf16 + fp32 masters, gradient
# checkpointing), measured against the memory planner; then the GPU recipe ("GPU recipe": a random
# 59M-parameter Qwen2 built on the machine, demonstration warm start, then GraphGPO on Sokoban rooms
# that need 2-4 moves); then the `-m gpu` tests. Two markdown tables go to --out (default
# gpu_check.md). About 10 minutes on one H100/H200 (the recipe about 5); no network, no download.
#
#   scripts/gpu_check.sh --dry-run               # any machine: build the configs, run the planner
#   scripts/gpu_check.sh --out /tmp/gpu.md       # a CUDA machine with torch, transformers, peft
#   scripts/gpu_check.sh --no-recipe             # the one-update cases and the tests only
#   scripts/gpu_check.sh --recipe-only           # the recipe alone (no cases, no tests)
#   scripts/gpu_check.sh --smoke                 # the recipe in miniature, CPU too (no tests)
#
# Beyond such a machine's image this needs only gymnasium and Farama-Notifications, both pure
# Python. Offline, bring them as wheels into .whl/ from a machine with pip, then run this script
# there:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#       --implementation cp --platform manylinux_2_28_x86_64 -d .whl \
#       gymnasium==1.4.0 farama-notifications==0.0.4
set -uo pipefail
cd "$(dirname "$0")/.."
out=gpu_check.md
tests=1
args=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift ;;
    --dry-run|--smoke|--recipe-only) tests=0 ;;
  esac
  shift
done
if [ -d .whl ] && ! python3 -c "import gymnasium" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/agentenvs-site .whl/*.whl
  export PYTHONPATH="/tmp/agentenvs-site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
python3 scripts/gpu_check.py "${args[@]}"
status=$?
if [ "$tests" -eq 1 ]; then
  # the GPU tests (their modules skip cleanly where vLLM is missing)
  python3 -m pytest -m gpu -rs -p no:cacheprovider \
      tests/learners/llm/test_llm_trainer.py tests/learners/llm/test_llm_gpu.py tests/learners/llm/test_llm_ddp.py | tee /tmp/gpu_pytest.log
  test_status=${PIPESTATUS[0]}
  { echo; echo "\`pytest -m gpu\`: $(tail -n 1 /tmp/gpu_pytest.log | tr -d '=' | sed 's/^ *//')"; } >> "$out"
  [ "$test_status" -eq 0 ] || status=1
fi
exit "$status"
