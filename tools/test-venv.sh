#!/usr/bin/env bash
# tools/test-venv.sh VENV — makes VENV (a Python venv) with tools/requirements-test.txt, once: it
# is made again only when that file changed. python3-venv is apt-installed when missing, as
# `make venv` does for the tier venv. Prints nothing when the venv is already up to date.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${1:?usage: tools/test-venv.sh VENV}"
PYTHON="${PYTHON3:-python3}"
REQUIREMENTS="$ROOT/tools/requirements-test.txt"
if [ -x "$VENV/bin/python" ] && cmp -s "$REQUIREMENTS" "$VENV/.requirements" 2>/dev/null; then exit 0; fi
"$PYTHON" -c 'import ensurepip, venv' 2>/dev/null || bash "$ROOT/tools/install-deps.sh" python3-venv
echo "test-venv: pip install -r tools/requirements-test.txt into $VENV" >&2
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQUIREMENTS"
cp "$REQUIREMENTS" "$VENV/.requirements"
