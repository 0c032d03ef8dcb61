#!/usr/bin/env bash
# Type-check agentenvs, agentenvs.wrappers and agentenvs.learners with mypy, at the strictness set
# in [tool.mypy] of pyproject.toml. Installs the pinned mypy into the active Python if it is missing;
# exits non-zero on any error.
#
# The folders wrappers/ and learners/ install as agentenvs.wrappers and agentenvs.learners through
# setuptools' package-dir, which an editable install serves with an import hook; mypy runs no import
# hooks. So the check runs on a staged tree, build/typecheck/agentenvs, made of symlinks: every
# entry of agentenvs/, plus wrappers -> wrappers/ and learners -> learners/. Error paths are mapped
# back to the repository's own paths.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# The checker and the stub packages for the typed-elsewhere libraries we import (docker, tqdm).
PINS=(mypy==2.4.1 types-docker==7.2.0.20261006 types-tqdm==4.70.0.20261106)

if ! python - "${PINS[@]}" <<'PY'
import sys
from importlib.metadata import PackageNotFoundError, version
try:
    ok = all(version(pin.split("==")[0]) == pin.split("==")[1] for pin in sys.argv[1:])
except PackageNotFoundError:
    ok = False
sys.exit(0 if ok else 1)
PY
then
  python -m pip install -q "${PINS[@]}"
fi

stage=$root/build/typecheck
rm -rf "$stage"
mkdir -p "$stage/agentenvs"
for entry in agentenvs/*; do
  case "$(basename "$entry")" in __pycache__) continue ;; esac
  ln -s "$root/$entry" "$stage/agentenvs/"
done
ln -s "$root/wrappers" "$stage/agentenvs/wrappers"
ln -s "$root/learners" "$stage/agentenvs/learners"

cd "$stage"
status=0
python -m mypy --config-file "$root/pyproject.toml" --cache-dir "$root/build/mypy-cache" \
  -p agentenvs "$@" > "$stage/report.txt" 2>&1 || status=$?
sed -e 's#^agentenvs/wrappers/#wrappers/#' -e 's#^agentenvs/learners/#learners/#' "$stage/report.txt"
exit "$status"
