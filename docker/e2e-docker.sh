#!/usr/bin/env bash
# docker/e2e-docker.sh — `make e2e-docker`: the vhci tier in Docker, on a host that has a Docker
# engine and a kernel with Bluetooth (hci_vhci). Builds docker/Dockerfile and runs every scenario
# on btvirt's controllers through vm/guest-run.sh (the image's entrypoint, the same script the
# micro-VM runs); results in build/e2e-docker/. Until blelab has the hci-user transport, runs the
# C probe in the container instead and says so. Then, when blelab has `--central bluez`, the BlueZ
# tier the same way (the entrypoint with --bluez runs vm/e2e-bluez.sh's inside part: BlueZ as
# central, as peripheral, the failure cases) into build/e2e-docker/bluez/; E2E_DOCKER_BLUEZ=0
# skips it. Stop the host's bluetoothd first: the container's own manages the controllers.
# Fails at once, with the reason, where that can't work: no docker client, no engine (as on
# BLELab's build machines: use `make e2e-vhci`), no /dev/vhci.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
IMAGE="${BLELAB_DOCKER_IMAGE:-blelab-vhci}"
OUT="$ROOT/build/e2e-docker"
die() { printf 'e2e-docker: error: %s\n' "$*" >&2; exit 1; }
say() { printf 'e2e-docker: %s\n' "$*" >&2; }

command -v docker >/dev/null || die "no docker command on this machine. Use 'make e2e-vhci' (the micro-VM) instead."
if ! err="$(docker info 2>&1 >/dev/null)"; then
  die "no Docker engine: 'docker info' failed ($(printf '%s' "$err" | grep -m1 -iE 'cannot connect|error|permission' || printf '%s' "$err" | head -1)). This machine has the Docker client only; use 'make e2e-vhci', which runs the same entrypoint in a micro-VM."
fi
[ -e /dev/vhci ] || die "no /dev/vhci on this host: load the module (sudo modprobe hci_vhci); if that fails the kernel has no Bluetooth: use 'make e2e-vhci'."

N="$(vm/count-controllers.sh scenarios)"
say "docker build -f docker/Dockerfile -t $IMAGE ."
docker build -f docker/Dockerfile -t "$IMAGE" .
rm -rf "$OUT" && mkdir -p "$OUT"
RUN=(docker run --rm --network host --device /dev/vhci --cap-add NET_ADMIN -v "$OUT:/out" "$IMAGE" -n "$N" --)
help="$(docker run --rm --entrypoint blelab "$IMAGE" run --help 2>&1 || true)"
if printf '%s' "$help" | grep -q hci-user; then
  status=0
  "${RUN[@]}" sh -c 'blelab run --transport "hci-user:$BLELAB_HCI" scenarios --junit /out/junit.xml --capture /out/captures' \
    || status=$?
  if [ "${E2E_DOCKER_BLUEZ:-1}" = 0 ]; then
    say "E2E_DOCKER_BLUEZ=0: BlueZ tier skipped"
  elif ! printf '%s' "$help" | grep -q -- '--central'; then
    say "blelab has no --central bluez yet: BlueZ tier skipped"
  else
    paths=(scenarios/seeds); [ -d scenarios/bluez ] && paths+=(scenarios/bluez)
    count=("${paths[@]}"); compgen -G 'vm/bluez/failures/*.yaml' >/dev/null && count+=(vm/bluez/failures)
    NB=$(( $(vm/count-controllers.sh "${count[@]}") + 1 ))
    say "BlueZ tier: $NB controllers, the first for the container's bluetoothd"
    docker run --rm --network host --device /dev/vhci --cap-add NET_ADMIN -v "$OUT:/out" "$IMAGE" \
      --bluez --bluez-log /out/bluez/logs -n "$NB" -- \
      vm/e2e-bluez.sh --inside /usr/local/bin/blelab /out/bluez "${paths[@]}" || { rc=$?; [ "$status" != 0 ] || status=$rc; }
  fi
  exit "$status"
fi
say "blelab has no 'hci-user' transport yet: running the C probe on $N controllers instead."
"${RUN[@]}" sh -c 'hci_reset reset $(echo $BLELAB_HCI | tr , " ") && hci_reset link $(echo $BLELAB_HCI | tr , " ")'
say "NOT WIRED YET: the Swift vhci tier did not run (no hci-user transport in blelab); the probe passed."
