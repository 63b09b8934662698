#!/usr/bin/env bash
# tools/pyclients-venv.sh VENV — makes VENV (a Python venv) with the Python BLE libraries of
# tools/requirements-pyclients.txt (bleak, bless, simplepyble), once: it is made again only when
# that file or the interpreter changed. Nothing is committed: pip fetches them from PyPI here.
# The interpreter is Debian's /usr/bin/python3 (PYTHON3 overrides): the micro-VM shares the host's
# root read-only, so a venv of it under build/ runs unchanged inside (vm/e2e-bluez.sh).
# python3-venv is apt-installed when missing. Prints one line when the venv is already up to date.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${1:?usage: tools/pyclients-venv.sh VENV}"
PYTHON="${PYTHON3:-/usr/bin/python3}"
REQUIREMENTS="$ROOT/tools/requirements-pyclients.txt"
say() { echo "pyclients-venv: $*" >&2; }
stamp() { cat "$REQUIREMENTS"; "$PYTHON" -c 'import sys; print(sys.executable, sys.version)'; }
if [ -x "$VENV/bin/python" ] && stamp 2>/dev/null | cmp -s - "$VENV/.requirements"; then
  say "up to date: $VENV"; exit 0
fi
command -v "$PYTHON" >/dev/null || { say "error: no $PYTHON (Debian: apt-get install python3), or set PYTHON3"; exit 1; }
"$PYTHON" -c 'import ensurepip, venv' 2>/dev/null || bash "$ROOT/tools/install-deps.sh" python3-venv
say "pip install -r tools/requirements-pyclients.txt into $VENV"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check --no-input -r "$REQUIREMENTS" \
  || { rm -rf "$VENV"; say "error: pip install failed (above); PyPI must be reachable"; exit 1; }
"$VENV/bin/python" -c 'import bleak, bless, simplepyble' \
  || { rm -rf "$VENV"; say "error: the libraries installed but do not import"; exit 1; }
stamp > "$VENV/.requirements"
say "ready: $VENV"
