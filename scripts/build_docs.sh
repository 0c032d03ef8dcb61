#!/usr/bin/env bash
# Build the docs site strictly: install the pinned doc tools (the `docs` extra's pins) into the
# active Python, run Sphinx with every warning an error (a broken relative link between pages or
# to a repository file, a docstring whose markup does not parse, a module that does not import),
# then check every internal link and anchor of the built HTML. External links are not checked.
# The site lands in build/docs/html. Needs agentenvs importable (scripts/test.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q "sphinx==8.1.3" "myst-parser==4.0.1" "furo==2025.12.19"
rm -rf build/docs
python -m sphinx -b html -W --keep-going -q -j auto docs build/docs/html
python scripts/check_doc_links.py build/docs/html
