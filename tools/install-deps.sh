#!/usr/bin/env bash
# tools/install-deps.sh [PACKAGE…] — installs, when missing, the Debian packages that
# `swift build` needs beyond the Swift toolchain, plus the PACKAGEs a make target names:
#   libdbus-1-dev  headers and libdbus-1 for the CDBus system-library target (the DBus module)
#   pkg-config     how SwiftPM finds dbus-1's flags (CDBus declares pkgConfig: "dbus-1")
#   dbus-daemon    the private bus that Tests/DBusTests start for each test
#   libssl-dev     headers and libcrypto for the CCrypto system-library target (BLECrypto)
# (make vm-probe-bin adds libc6-dev for a static C program, make soak stress-ng, make venv
# python3-venv.) Quiet when everything is present; uses sudo only when not root. On a machine
# without dpkg it only checks the build's four, and says what to install.
set -euo pipefail

packages=(libdbus-1-dev pkg-config dbus-daemon libssl-dev "$@")

installed() {
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

if ! command -v dpkg-query >/dev/null 2>&1; then
  if pkg-config --exists dbus-1 libcrypto 2>/dev/null && command -v dbus-daemon >/dev/null 2>&1; then
    [ $# -eq 0 ] && exit 0
    echo "install-deps: not a Debian system; make sure these (Debian names) are installed: $*" >&2
    exit 0
  fi
  echo "install-deps: not a Debian system; install libdbus-1 and OpenSSL (libcrypto) headers," \
       "pkg-config and dbus-daemon with your package manager (pkg-config must find dbus-1 and libcrypto)${*:+, and $*}" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
for p in "${missing[@]}"; do
  installed "$p" || { echo "install-deps: $p did not install" >&2; exit 1; }
done
