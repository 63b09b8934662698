#!/usr/bin/env bash
# Creates the Python venv of BLELab's socket tier: RootCanal 1.10.0 and Bumble, pinned in
# tools/requirements-tiers.txt, under $BUILD_DIR/venv (default build/venv; VENV overrides).
# Idempotent: when the venv already holds exactly these pins it says so and exits at once.
# Needs only Python >= 3.11 with its venv module (PYTHON overrides the interpreter) and PyPI.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$ROOT/$BUILD_DIR" ;; esac
VENV="${VENV:-$BUILD_DIR/venv}"
PYTHON="${PYTHON:-python3}"
REQUIREMENTS="$ROOT/tools/requirements-tiers.txt"
STAMP="$VENV/.blelab-requirements"

say() { echo "setup-venv: $*"; }
die() { echo "setup-venv: error: $*" >&2; exit 1; }

# Already done? The stamp is a copy of the requirements that were installed, plus the Python.
if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] \
   && { cat "$REQUIREMENTS"; "$VENV/bin/python" -c 'import sys; print(sys.version)'; } 2>/dev/null | cmp -s - "$STAMP"; then
  say "up to date: $VENV"
  exit 0
fi

command -v "$PYTHON" >/dev/null || die "no '$PYTHON' on PATH; install Python 3.11 or later (Debian: apt-get install python3 python3-venv), or set PYTHON=/path/to/python3"
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
  || die "$("$PYTHON" --version 2>&1) is too old: bumble 0.0.236 needs Python 3.11 or later; set PYTHON=/path/to/python3.11+"

start=$(date +%s)
if [ -d "$VENV" ]; then
  say "rebuilding $VENV (its pins differ from tools/requirements-tiers.txt or it is incomplete)"
  rm -rf "$VENV"
fi
mkdir -p "$(dirname "$VENV")"
if ! "$PYTHON" -m venv "$VENV" > "$BUILD_DIR/venv-create.log" 2>&1; then
  cat "$BUILD_DIR/venv-create.log" >&2
  rm -rf "$VENV"
  if grep -qi ensurepip "$BUILD_DIR/venv-create.log"; then
    die "Python's ensurepip is missing, so '$PYTHON -m venv' cannot install pip. On Debian/Ubuntu: apt-get install python3-venv (or python3.11-venv for that interpreter); elsewhere install your Python's venv/ensurepip support, then run this again"
  fi
  die "'$PYTHON -m venv $VENV' failed (log above)"
fi
rm -f "$BUILD_DIR/venv-create.log"

say "installing tools/requirements-tiers.txt into $VENV"
"$VENV/bin/python" -m pip install --disable-pip-version-check --no-input -q -r "$REQUIREMENTS" \
  || { rm -rf "$VENV"; die "pip install failed (see above); PyPI must be reachable"; }

# Check both work here: RootCanal's binary links against the system's glibc, libstdc++ and
# libcrypto.so.3 (1.10.0 needs glibc 2.34, GLIBCXX_3.4.30; 1.11+ need glibc 2.38).
RC_BIN="$("$VENV/bin/python" -c 'import rootcanal.binaries as b; print(b.get_package_binary_resource_path("rootcanal"))')" \
  || { rm -rf "$VENV"; die "rootcanal installed but its package does not import"; }
if ! "$RC_BIN" -version >/dev/null 2>"$BUILD_DIR/rootcanal-check.log"; then
  cat "$BUILD_DIR/rootcanal-check.log" >&2
  rm -rf "$VENV"
  die "RootCanal's binary $RC_BIN does not run here (missing libraries above: ldd shows which; Debian packages libc6, libstdc++6, libssl3)"
fi
rm -f "$BUILD_DIR/rootcanal-check.log"
"$VENV/bin/python" -c 'import bumble.controller, bumble.device, bumble.link, bumble.transport' \
  || { rm -rf "$VENV"; die "bumble installed but does not import"; }

{ cat "$REQUIREMENTS"; "$VENV/bin/python" -c 'import sys; print(sys.version)'; } > "$STAMP"
say "ready in $(( $(date +%s) - start )) s: $VENV (rootcanal binary: $RC_BIN)"
