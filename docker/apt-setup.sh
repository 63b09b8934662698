#!/bin/sh
# docker/apt-setup.sh PACKAGE… — docker/Dockerfile's one apt step per stage: point apt at the
# mirror the build was given, install PACKAGEs (no recommends), leave no package lists behind.
#   APT_SOURCES  sources.list lines (the build argument; docker/e2e-docker.sh derives them from the
#                building machine's own apt configuration with docker/apt-sources.sh --list).
#                Empty: the base image's own sources stay (debian:bookworm-slim: Debian's public mirror).
#   APT_PROXY    an http proxy for apt during the build only (apt-sources.sh --proxy), or empty.
set -eu
if [ -n "${APT_SOURCES:-}" ]; then
  printf '%s\n' "$APT_SOURCES" > /etc/apt/sources.list
  rm -f /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources
fi
if [ -n "${APT_PROXY:-}" ]; then
  printf 'Acquire::http::Proxy "%s";\n' "$APT_PROXY" > /etc/apt/apt.conf.d/90blelab-build-proxy
fi
echo "apt-setup: sources:" && grep -h '^deb' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | sed 's/^/  /' || true
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "$@" >/dev/null
apt-get clean
rm -rf /var/lib/apt/lists/* /etc/apt/apt.conf.d/90blelab-build-proxy
