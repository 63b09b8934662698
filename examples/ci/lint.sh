#!/usr/bin/env bash
# examples/ci/lint.sh — BLELab's own check of the CI examples (`make ci-lint`, part of `make test`):
#   1. yamllint --strict with examples/ci/.yamllint, on every *.yml here (Debian's yamllint,
#      apt-installed when missing);
#   2. each file against its CI system's JSON schema: GitHub's workflow schema for
#      github-actions*.yml, GitLab's .gitlab-ci.yml schema for gitlab-ci.yml — the schemas that
#      check-jsonschema (PyPI, pinned below) ships, so no network at check time; it is installed
#      once into a venv in build/ci-lint/;
#   3. examples/ci/test_merge_junit.py: merge-junit.py on shards shaped like blelab's reports;
#   4. the Python examples of examples/bluez-python/ parse (their libraries run only in
#      `make e2e-bluez`, which runs them against the lab).
# Fails on the first finding, naming the file and line.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
CHECK_JSONSCHEMA="check-jsonschema==0.39.0"
VENV="${CI_LINT_VENV:-build/ci-lint/venv}"
say() { printf 'ci-lint: %s\n' "$*" >&2; }

command -v yamllint >/dev/null || bash tools/install-deps.sh yamllint
say "yamllint --strict: examples/ci/*.yml ($(yamllint --version))"
yamllint --strict -c examples/ci/.yamllint examples/ci/*.yml

if [ ! -x "$VENV/bin/check-jsonschema" ] || [ "$(cat "$VENV/.pinned" 2>/dev/null)" != "$CHECK_JSONSCHEMA" ]; then
  python3 -c 'import ensurepip, venv' 2>/dev/null || bash tools/install-deps.sh python3-venv
  say "pip install $CHECK_JSONSCHEMA into $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "$CHECK_JSONSCHEMA"
  echo "$CHECK_JSONSCHEMA" > "$VENV/.pinned"
fi
say "GitHub's workflow schema: examples/ci/github-actions*.yml"
"$VENV/bin/check-jsonschema" --builtin-schema vendor.github-workflows examples/ci/github-actions*.yml
say "GitLab's CI schema: examples/ci/gitlab-ci.yml"
"$VENV/bin/check-jsonschema" --builtin-schema vendor.gitlab-ci examples/ci/gitlab-ci.yml

say "merge-junit.py"
python3 examples/ci/test_merge_junit.py

say "examples/bluez-python/*.py parse"
python3 -c 'import ast, sys
for f in sys.argv[1:]:
    ast.parse(open(f, encoding="utf-8").read(), f)' examples/bluez-python/*.py
