#!/usr/bin/env bash
# docker/apt-sources.sh — the Debian mirror this machine's apt is configured with, for the image.
#
#   docker/apt-sources.sh --mirror    the main archive's URI (debootstrap's MIRROR), one line
#   docker/apt-sources.sh --list      sources.list lines for a Debian bookworm image on that mirror:
#                                       deb MIRROR bookworm main
#                                       deb MIRROR bookworm-updates main
#                                       deb SECURITY bookworm-security main   (when apt has one)
#   docker/apt-sources.sh --proxy     apt's Acquire::http::Proxy, or nothing
#
# Nothing here names a host: the URIs come from apt's own configuration (/etc/apt/sources.list and
# sources.list.d/, whatever its format), read back with `apt-get indextargets`, which also gives
# each source's Release fields. Only sources whose Release says `Origin: Debian` count (a
# third-party repository on the machine is left out: the image has no key for it); `Label:
# Debian-Security` is the security archive, `Label: Debian` the main one (the entry for the
# release itself preferred over -updates/-backports). When apt has no package lists yet, runs
# `apt-get update` once (sudo when not root). Exit 1, saying why, when no Debian source is found.
set -euo pipefail

say() { printf 'apt-sources: %s\n' "$*" >&2; }
die() { printf 'apt-sources: error: %s\n' "$*" >&2; exit 1; }

SUITE=bookworm
what="${1:-}"
case "$what" in
  --mirror|--list|--proxy) ;;
  *) die "usage: docker/apt-sources.sh --mirror | --list | --proxy" ;;
esac

if [ "$what" = --proxy ]; then
  proxy=""
  eval "$(apt-config shell proxy Acquire::http::Proxy)"
  case "$proxy" in DIRECT|false) proxy="" ;; esac
  [ -z "$proxy" ] || printf '%s\n' "$proxy"
  exit 0
fi

# REPO_URI ORIGIN LABEL CODENAME, one line per configured package index (binary, this arch).
targets() {
  apt-get indextargets --format '$(REPO_URI)|$(ORIGIN)|$(LABEL)|$(CODENAME)' 'Created-By: Packages' 2>/dev/null | sort -u
}
lines="$(targets | grep '|Debian|' || true)"
if [ -z "$lines" ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  say "no Debian package lists known to apt yet: apt-get update"
  $SUDO apt-get update -qq >&2 || die "apt-get update failed"
  lines="$(targets | grep '|Debian|' || true)"
fi
[ -n "$lines" ] || die "apt on this machine has no source with 'Origin: Debian' (apt-get indextargets): cannot tell which Debian mirror to use. Set BLELAB_DEBIAN_MIRROR to one."

# The main archive: Label Debian; the entry of a release itself (codename without a dash) first.
main="$(printf '%s\n' "$lines" | awk -F'|' '$3 == "Debian" && $4 !~ /-/ { print $1; exit }')"
[ -n "$main" ] || main="$(printf '%s\n' "$lines" | awk -F'|' '$3 == "Debian" { print $1; exit }')"
security="$(printf '%s\n' "$lines" | awk -F'|' '$3 == "Debian-Security" { print $1; exit }')"
[ -n "$main" ] || die "apt has Debian sources but none labelled 'Debian' (the main archive): $(printf '%s' "$lines" | tr '\n' ' ')"
main="${main%/}"; security="${security%/}"

case "$what" in
  --mirror) printf '%s\n' "$main" ;;
  --list)
    printf 'deb %s %s main\n' "$main" "$SUITE"
    printf 'deb %s %s-updates main\n' "$main" "$SUITE"
    [ -z "$security" ] || printf 'deb %s %s-security main\n' "$security" "$SUITE"
    ;;
esac
