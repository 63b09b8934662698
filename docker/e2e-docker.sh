#!/usr/bin/env bash
# docker/e2e-docker.sh — `make e2e-docker`: the vhci tier and the BlueZ tier inside a container,
# with every bit of set-up done here, from a machine that has no Docker at all.
#
#   docker/e2e-docker.sh [--bench] [SCENARIO_PATHS…]      (default: scenarios)
#
#  1. tools      docker.io (docker, dockerd, containerd, runc) when there is no docker command, or
#                no engine answers and there is no dockerd; debootstrap when a base image must be
#                made (apt-get, sudo when not root)
#  2. engine     the one `docker info` reaches, else a private dockerd of our own: socket, pid file
#                and data under build/docker/engine/, its run-time state in a mktemp folder
#                (dockerd --iptables=false --bridge=none …); stopped again at the end
#  3. base       $BLELAB_BASE_IMAGE when set; else debian:bookworm-slim when the engine has it or
#                a registry gives it; else a local one: `debootstrap --variant=minbase bookworm`
#                from the Debian mirror apt is configured with (docker/apt-sources.sh --mirror, or
#                $BLELAB_DEBIAN_MIRROR), tarred to build/docker/base/ (made once, then reused)
#                and `docker import`ed
#  4. blelab     swift build $(cat tools/release-flags) --product blelab → build/docker/blelab
#  5. image      docker build -f docker/Dockerfile, apt inside it pointed at the same mirror
#                (APT_SOURCES from docker/apt-sources.sh --list)
#  6. vhci suite every scenario of SCENARIO_PATHS on btvirt's controllers in the container (the
#                image's entrypoint: --device /dev/vhci when the host has it, else the micro-VM),
#                → build/e2e-docker/junit.xml, timeline.json, captures/
#  7. BlueZ      vm/e2e-bluez.sh's inside part (--bluez): BlueZ as central, as peripheral,
#                own-central, the Python libraries (python: bleak, SimpleBLE and bless from the
#                image's build/pyclients-venv, installed from wheels the host downloads to
#                build/docker/wheels), the failure cases → build/e2e-docker/bluez/, in one
#                container; BLUEZ_GROUPS="central,python peripheral,own-central,failures" runs two
#                at once, each its own micro-VM and bluetoothd, their lines stamped [GROUP], the
#                whole VMs' bluetoothd and dbus-daemon logs in bluez/bluez/ and bluez/bluez-2/
#                (E2E_DOCKER_BLUEZ=0 skips it; E2E_BLUEZ_PARTS: those parts in one container; not
#                with --bench)
#  8. captures   every capture must open in tshark with each ATT-channel frame decoded as ATT
#                (when tshark is installed on the host)
# Then, and also on failure, Ctrl-C or SIGTERM: removes the containers and images it made and
# stops the dockerd it started (and unmounts whatever it left), and says so.
# Prints the phases' figures, `name: value unit`: docker_install_s, docker_engine_s,
# docker_debootstrap_s, docker_base_s, docker_blelab_s, docker_image_build_s, docker_image_mb,
# docker_start_s (docker run → controllers ready), docker_suite_s (the vhci suite's docker run,
# start to exit), suite_vhci_s (the suite itself, from its JUnit), docker_bluez_s; also in
# OUT/figures.txt. --bench prints only the four
# docker_image_build_s, docker_image_mb, docker_start_s, docker_suite_s on stdout (make bench-docker)
# and writes to build/bench-docker/.
# Exit status: 0 all passed; else the vhci suite's blelab status (1 a scenario failed, 2 bad
# input), else the BlueZ part's; 1 a capture tshark cannot decode; 3 set-up failed; 130/143
# interrupted.
# Environment: SWIFT, E2E_DOCKER_DIR (build/e2e-docker), E2E_DOCKER_BLUEZ (1),
# E2E_DOCKER_WAY (auto: vhci when the host has /dev/vhci, else vm), E2E_DOCKER_KVM=1 (pass
# /dev/kvm to the micro-VM), BLELAB_BASE_IMAGE,
# BLELAB_DEBIAN_MIRROR, E2E_DOCKER_PRIVATE=1 (a private dockerd even when one answers),
# E2E_DOCKER_STORAGE (the private dockerd's --storage-driver; default: dockerd's choice),
# BLELAB_BIN (a static blelab built elsewhere, instead of step 4's swift build: CI jobs whose
# runner has Docker but no Swift), E2E_BLUEZ_PARTS, BLUEZ_GROUPS, VM_TIMEOUT, VHCI_JOBS (the vhci suite's
# scenarios at a time, each on a btvirt of its own; default 1; make passes 3).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
say() { printf 'e2e-docker: %s\n' "$*" >&2; }
fail() { say "error: $*"; exit 3; }

BENCH=0
[ "${1:-}" = --bench ] && { BENCH=1; shift; }
[ $# -gt 0 ] || set -- scenarios
for p in "$@"; do [ -e "$p" ] || { say "error: no such scenario path: $p"; exit 2; }; done
SWIFT="${SWIFT:-swift}"
if [ "$BENCH" = 1 ]; then OUT="$ROOT/build/bench-docker"; else OUT="${E2E_DOCKER_DIR:-build/e2e-docker}"; fi
case "$OUT" in /*) ;; *) OUT="$ROOT/$OUT" ;; esac
STATE="$ROOT/build/docker"
RUN_ID="$(date +%Y%m%d%H%M%S)-$$"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive DOCKER_BUILDKIT=0

mkdir -p "$STATE"
# (fd 9 holds the lock; every long-lived child gets it closed, so that a dockerd or docker run
# left by a run killed outright does not keep the next one out)
exec 9>"$STATE/lock"
flock -n 9 || fail "another docker/e2e-docker.sh runs in this checkout (lock $STATE/lock)"

# --- figures ---------------------------------------------------------------------------------------
declare -A FIG=()
FIG_ORDER=()
figure() { FIG[$1]="$2 $3"; FIG_ORDER+=("$1"); }
alive() { [ -n "$1" ] && [ -d "/proc/$1" ]; }
now() { printf '%s\n' "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

# --- clean-up: on every exit ------------------------------------------------------------------------
D=(docker)                 # the docker command, with -H for a private engine
DOCKERD_PID=""             # the private dockerd, when we started one
EXEC_ROOT=""               # its run-time state folder
CONTAINERS=()              # names of containers we started
MADE_IMAGES=()             # images we tagged, imported or pulled
CHILD=""                   # the long-running command in progress (run in the background)
DEBOOTSTRAP_DIR=""
cleaning=0
RUN_CONTAINERD_BEFORE=0; [ -e /run/containerd ] && RUN_CONTAINERD_BEFORE=1
our_mounts() {  # mount points under our folders, deepest first
  local dirs=("$STATE/engine") d
  [ -n "$EXEC_ROOT" ] && dirs+=("$EXEC_ROOT")
  [ -n "$DEBOOTSTRAP_DIR" ] && dirs+=("$DEBOOTSTRAP_DIR")
  for d in "${dirs[@]}"; do
    awk -v d="$d" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo
  done | sort -r | uniq
}
cleanup() {
  local code=$? c i left_docker="" left_mounts=""
  [ "$cleaning" = 0 ] || return; cleaning=1
  trap '' INT TERM HUP
  if [ -n "$CHILD" ] && kill -0 "$CHILD" 2>/dev/null; then
    kill -TERM "$CHILD" 2>/dev/null; wait "$CHILD" 2>/dev/null
  fi
  local engine=0; "${D[@]}" version >/dev/null 2>&1 && engine=1
  if [ "$engine" = 1 ]; then
    # (docker run --rm removes a container that ended; one still running is ours to remove)
    for c in "${CONTAINERS[@]}"; do
      "${D[@]}" container inspect "$c" >/dev/null 2>&1 && "${D[@]}" rm -f "$c" >/dev/null 2>&1 \
        && say "cleanup: removed container $c"
    done
    for i in "${MADE_IMAGES[@]}"; do
      "${D[@]}" image inspect "$i" >/dev/null 2>&1 && "${D[@]}" rmi -f "$i" >/dev/null 2>&1 && say "cleanup: removed image $i"
    done
    # A build cut short: the engine winds it down after its client is gone, leaving the step's
    # container and image, which carry the stages' label. Remove what has that label until
    # nothing has (the engine may still commit a step meanwhile), for up to 30 s.
    local try
    for try in $(seq 1 30); do
      for c in $("${D[@]}" ps -aq --filter "label=blelab.build=$RUN_ID" 2>/dev/null); do
        "${D[@]}" rm -f "$c" >/dev/null 2>&1 && say "cleanup: removed container $c (of the image build)"
      done
      "${D[@]}" image prune -a -f --filter "label=blelab.build=$RUN_ID" >/dev/null 2>&1
      left_docker="$("${D[@]}" ps -aq --filter "label=blelab.build=$RUN_ID"; "${D[@]}" images -q --filter "label=blelab.build=$RUN_ID")"
      [ -n "$left_docker" ] || break
      sleep 1
    done
    [ -z "$left_docker" ] || say "cleanup: WARNING: containers or images of this run remain: $(echo $left_docker)"
  fi
  if [ -n "$DOCKERD_PID" ]; then
    $SUDO kill -TERM "$DOCKERD_PID" 2>/dev/null
    for _ in $(seq 1 150); do alive "$DOCKERD_PID" || break; sleep 0.2; done
    if alive "$DOCKERD_PID"; then say "cleanup: dockerd did not stop in 30 s: KILL"; $SUDO kill -KILL "$DOCKERD_PID" 2>/dev/null; sleep 0.5; fi
    # the containerd dockerd ran for itself, if it outlived dockerd
    local cpid; cpid="$(cat "$EXEC_ROOT/containerd/containerd.pid" 2>/dev/null)"
    [ -n "$cpid" ] && alive "$cpid" && { $SUDO kill -TERM "$cpid"; sleep 1; $SUDO kill -KILL "$cpid" 2>/dev/null; }
    say "cleanup: stopped the private dockerd (pid $DOCKERD_PID)"
  fi
  for m in $(our_mounts); do $SUDO umount "$m" 2>/dev/null || $SUDO umount -l "$m" 2>/dev/null; done
  left_mounts="$(our_mounts)"
  [ -z "$left_mounts" ] || say "cleanup: WARNING: still mounted: $(echo $left_mounts)"
  if [ -n "$DOCKERD_PID" ] && [ -z "$left_mounts" ] && ! alive "$DOCKERD_PID"; then
    $SUDO rm -rf "$STATE/engine/data" "$EXEC_ROOT" "$STATE/engine/exec-root" "$STATE/engine/dockerd.pid"
  fi
  [ -z "$DEBOOTSTRAP_DIR" ] || [ -n "$left_mounts" ] || $SUDO rm -rf "$DEBOOTSTRAP_DIR"
  # containerd's shims keep their sockets in /run/containerd/s: gone, but the folders stay
  [ "$RUN_CONTAINERD_BEFORE" = 1 ] || $SUDO rmdir /run/containerd/s /run/containerd 2>/dev/null
  if [ -n "$left_docker$left_mounts" ] || alive "$DOCKERD_PID"; then
    say "cleanup: WARNING: not everything is gone (see above)"
  elif [ -n "$DOCKERD_PID" ]; then
    say "cleanup: nothing of this run is left: no container, no image, no mount, no dockerd"
  elif [ "${#CONTAINERS[@]}${#MADE_IMAGES[@]}" != 00 ]; then
    say "cleanup: nothing of this run is left in the engine: no container, no image"
  fi
  exit "$code"
}
trap cleanup EXIT
trap 'say "interrupted (SIGINT): cleaning up"; exit 130' INT
trap 'say "terminated (SIGTERM): cleaning up"; exit 143' TERM
trap 'say "hung up: cleaning up"; exit 129' HUP

# A long command in the background, waited for: a trapped signal then interrupts the wait at once
# (bash runs a trap only after a foreground command ends). Returns the command's status.
# (--out FILE: the command's output to FILE. Never a redirection on run_bg itself: it would hold
# for the whole function, and so also catch the messages of a trap that runs during its wait.)
run_bg() {
  local out=""
  [ "$1" != --out ] || { out="$2"; shift 2; }
  if [ -z "$out" ]; then "$@" 9>&- &
  else "$@" >"$out" 2>&1 9>&- &
  fi
  CHILD=$!
  wait "$CHILD"; local rc=$?
  CHILD=""
  return "$rc"
}

# --- 1, 2: tools and the engine ---------------------------------------------------------------------
t0=$(now)
engine_answers() { "${D[@]}" info >/dev/null 2>&1; }
PRIVATE="${E2E_DOCKER_PRIVATE:-0}"
install_docker() {
  say "$1: installing docker.io (Debian's docker, dockerd, containerd, runc)"
  run_bg bash tools/install-deps.sh docker.io || fail "could not install docker.io"
}
command -v docker >/dev/null || install_docker "no docker command"
if [ "$PRIVATE" != 1 ] && engine_answers; then
  say "using the Docker engine that answers ($("${D[@]}" version -f '{{.Server.Version}}' 2>/dev/null))"
else
  PRIVATE=1
  command -v dockerd >/dev/null || install_docker "no Docker engine answers and there is no dockerd"
fi
figure docker_install_s "$(since "$t0")" s

t0=$(now)
if [ "$PRIVATE" = 1 ]; then
  [ "$(id -u)" = 0 ] || sudo -n true 2>/dev/null || fail "a private dockerd needs root: run as root or with sudo rights"
  mkdir -p "$STATE/engine"
  # What a run that was killed outright (kill -9: no clean-up) left: its dockerd (which stops its
  # containers as it goes), the mounts under its folders, the folders.
  old="$(cat "$STATE/engine/dockerd.pid" 2>/dev/null)"
  if alive "$old" && grep -q dockerd "/proc/$old/comm" 2>/dev/null; then
    say "stopping the private dockerd an earlier run left (pid $old)"; $SUDO kill -TERM "$old"
    for _ in $(seq 1 150); do alive "$old" || break; sleep 0.2; done
    alive "$old" && { $SUDO kill -KILL "$old"; sleep 0.5; }
  fi
  EXEC_ROOT="$(cat "$STATE/engine/exec-root" 2>/dev/null)"
  case "$EXEC_ROOT" in /tmp/blelab-dockerd.*) ;; *) EXEC_ROOT="" ;; esac
  for m in $(our_mounts); do $SUDO umount "$m" 2>/dev/null || $SUDO umount -l "$m" 2>/dev/null; done
  [ -z "$EXEC_ROOT" ] || $SUDO rm -rf "$EXEC_ROOT"
  $SUDO rm -rf "$STATE/engine/data"
  EXEC_ROOT="$(mktemp -d /tmp/blelab-dockerd.XXXXXX)"
  printf '%s\n' "$EXEC_ROOT" > "$STATE/engine/exec-root"
  SOCK="$STATE/engine/docker.sock"
  [ "${#SOCK}" -le 100 ] || SOCK="$EXEC_ROOT/docker.sock"    # sun_path holds 108 bytes
  storage=(); [ -z "${E2E_DOCKER_STORAGE:-}" ] || storage=(--storage-driver "$E2E_DOCKER_STORAGE")
  say "starting a private dockerd: $SOCK (log $STATE/engine/dockerd.log)"
  # In a session of its own: a Ctrl-C meant for this script must not stop the engine under the
  # clean-up; the clean-up stops it.
  rm -f "$STATE/engine/dockerd.pid"
  $SUDO setsid dockerd --iptables=false --ip6tables=false --bridge=none "${storage[@]}" \
    --data-root "$STATE/engine/data" --exec-root "$EXEC_ROOT" --pidfile "$STATE/engine/dockerd.pid" \
    -H "unix://$SOCK" </dev/null >"$STATE/engine/dockerd.log" 2>&1 9>&- &
  launcher=$!
  D=($SUDO docker -H "unix://$SOCK")
  for i in $(seq 1 300); do
    [ -n "$DOCKERD_PID" ] || DOCKERD_PID="$(cat "$STATE/engine/dockerd.pid" 2>/dev/null)"
    # (the engine can answer before its pid file is there: the clean-up needs the pid, so wait)
    if engine_answers; then
      [ -n "$DOCKERD_PID" ] || DOCKERD_PID="$(cat "$STATE/engine/dockerd.pid" 2>/dev/null)"
      [ -z "$DOCKERD_PID" ] || break
    fi
    if [ -z "$DOCKERD_PID" ] && ! kill -0 "$launcher" 2>/dev/null; then
      tail -n 20 "$STATE/engine/dockerd.log" >&2; fail "dockerd exited at start"
    fi
    [ -z "$DOCKERD_PID" ] || alive "$DOCKERD_PID" || { tail -n 20 "$STATE/engine/dockerd.log" >&2; DOCKERD_PID=""; fail "dockerd exited at start"; }
    [ "$i" -lt 300 ] || { tail -n 20 "$STATE/engine/dockerd.log" >&2; fail "dockerd did not answer in 60 s"; }
    sleep 0.2
  done
  say "private dockerd $("${D[@]}" version -f '{{.Server.Version}}'), storage $("${D[@]}" info -f '{{.Driver}}'), pid $DOCKERD_PID"
fi
figure docker_engine_s "$(since "$t0")" s

# --- 3: the base image --------------------------------------------------------------------------------
t0=$(now)
has_image() { "${D[@]}" image inspect "$1" >/dev/null 2>&1; }
debootstrap_s=0
BASE="${BLELAB_BASE_IMAGE:-}"
if [ -n "$BASE" ]; then
  has_image "$BASE" || { run_bg "${D[@]}" pull "$BASE" || fail "BLELAB_BASE_IMAGE=$BASE: not in the engine and cannot be pulled"; MADE_IMAGES+=("$BASE"); }
elif has_image debian:bookworm-slim; then
  BASE=debian:bookworm-slim
elif run_bg --out /dev/null "${D[@]}" pull -q debian:bookworm-slim; then
  BASE=debian:bookworm-slim; MADE_IMAGES+=("$BASE")
  say "base: debian:bookworm-slim from the registry"
else
  say "no registry gives debian:bookworm-slim: a local base image (debootstrap)"
  TAR="$STATE/base/bookworm-minbase.tar"
  if [ -s "$TAR" ]; then
    say "base: cached $TAR ($(du -m "$TAR" | cut -f1) MB, $(cat "$TAR.mirror" 2>/dev/null))"
  else
    command -v debootstrap >/dev/null || run_bg bash tools/install-deps.sh debootstrap || fail "could not install debootstrap"
    MIRROR="${BLELAB_DEBIAN_MIRROR:-$(docker/apt-sources.sh --mirror)}" || fail "no Debian mirror: set BLELAB_DEBIAN_MIRROR"
    proxy="$(docker/apt-sources.sh --proxy)"
    mkdir -p "$STATE/base"
    DEBOOTSTRAP_DIR="$(mktemp -d "$STATE/base/rootfs.XXXXXX")"
    say "debootstrap --variant=minbase bookworm from $MIRROR (~2-3 min; log $STATE/base/debootstrap.log)"
    t1=$(now)
    run_bg --out "$STATE/base/debootstrap.log" \
      $SUDO env ${proxy:+http_proxy=$proxy} debootstrap --variant=minbase bookworm "$DEBOOTSTRAP_DIR" "$MIRROR" || { tail -n 20 "$STATE/base/debootstrap.log" >&2; fail "debootstrap failed"; }
    $SUDO rm -rf "$DEBOOTSTRAP_DIR"/var/cache/apt/archives/*.deb "$DEBOOTSTRAP_DIR"/var/lib/apt/lists/*
    run_bg $SUDO tar -C "$DEBOOTSTRAP_DIR" --numeric-owner -cf "$TAR.tmp" . || fail "tar of the base failed"
    mv "$TAR.tmp" "$TAR"; printf '%s\n' "$MIRROR" > "$TAR.mirror"
    $SUDO rm -rf "$DEBOOTSTRAP_DIR"; DEBOOTSTRAP_DIR=""
    debootstrap_s="$(since "$t1")"
    say "base: $TAR ($(du -m "$TAR" | cut -f1) MB) in $debootstrap_s s"
  fi
  BASE="blelab-base:bookworm-$RUN_ID"
  run_bg --out "$STATE/import.log" "${D[@]}" import "$TAR" "$BASE" || { cat "$STATE/import.log" >&2; fail "docker import $TAR failed"; }
  MADE_IMAGES+=("$BASE")
fi
figure docker_debootstrap_s "$debootstrap_s" s
figure docker_base_s "$(since "$t0")" s

# --- 4: blelab, on the host (or BLELAB_BIN, built elsewhere: a CI job without Swift) ----------------
t0=$(now)
if [ -n "${BLELAB_BIN:-}" ]; then
  [ -x "$BLELAB_BIN" ] || fail "BLELAB_BIN=$BLELAB_BIN is not an executable file"
  say "blelab: $BLELAB_BIN ($("$BLELAB_BIN" --version 2>/dev/null | head -1))"
  src="$BLELAB_BIN"
else
  run_bg bash tools/install-deps.sh || fail "tools/install-deps.sh failed"
  read -ra RELEASE < tools/release-flags
  say "swift build ${RELEASE[*]} --product blelab"
  run_bg "$SWIFT" build "${RELEASE[@]}" --product blelab || fail "swift build failed"
  src="$("$SWIFT" build -c release --show-bin-path)/blelab"
fi
cp "$src" "$STATE/blelab.tmp" && mv "$STATE/blelab.tmp" "$STATE/blelab" || fail "cannot copy $src to $STATE/blelab"
figure docker_blelab_s "$(since "$t0")" s
# The BlueZ part's Python libraries (tools/requirements-pyclients.txt: bleak, bless, simplepyble),
# as wheels for the image's Python (Debian 12's 3.11, as the host's /usr/bin/python3), downloaded
# by the host's venv into build/docker/wheels; the image installs them without an index.
if [ "$BENCH" = 0 ] && [ "${E2E_DOCKER_BLUEZ:-1}" != 0 ]; then
  rm -rf "$STATE/wheels"
  run_bg bash tools/pyclients-venv.sh "$ROOT/build/pyclients-venv" || fail "tools/pyclients-venv.sh failed"
  run_bg "$ROOT/build/pyclients-venv/bin/pip" download -q --disable-pip-version-check --only-binary=:all: \
    -r tools/requirements-pyclients.txt -d "$STATE/wheels" || fail "pip download of tools/requirements-pyclients.txt failed"
fi
mkdir -p "$STATE/wheels"

# --- 5: the image -------------------------------------------------------------------------------------
t0=$(now)
IMAGE="blelab-vhci:e2e-$RUN_ID"
# apt in the build: the machine's own Debian mirror; on a machine whose apt has none (Ubuntu, a
# CI runner) the base image's own sources, when it comes from a registry.
if SOURCES="$(docker/apt-sources.sh --list 2>/dev/null)"; then
  [ -z "${BLELAB_DEBIAN_MIRROR:-}" ] || SOURCES="$(printf '%s\n' "$SOURCES" | awk -v m="$BLELAB_DEBIAN_MIRROR" '$3 !~ /-security$/ { $2 = m } { print }')"
  apt_note="$(printf '%s\n' "$SOURCES" | awk '{ print $2 " " $3 }' | paste -sd, -)"
elif [ -n "${BLELAB_DEBIAN_MIRROR:-}" ]; then
  SOURCES="$(printf 'deb %s bookworm main\ndeb %s bookworm-updates main\n' "$BLELAB_DEBIAN_MIRROR" "$BLELAB_DEBIAN_MIRROR")"
  apt_note="$BLELAB_DEBIAN_MIRROR (BLELAB_DEBIAN_MIRROR)"
else
  SOURCES=""; apt_note="the base image's own sources (this machine's apt has no Debian mirror)"
fi
say "docker build -f docker/Dockerfile --build-arg BASE_IMAGE=$BASE -t $IMAGE . (apt: $apt_note)"
MADE_IMAGES+=("$IMAGE")
run_bg --out "$STATE/build.log" "${D[@]}" build --network host --force-rm -f docker/Dockerfile -t "$IMAGE" \
  --build-arg "BASE_IMAGE=$BASE" --build-arg "APT_SOURCES=$SOURCES" \
  --build-arg "APT_PROXY=$(docker/apt-sources.sh --proxy)" --build-arg "BLELAB_BUILD=$RUN_ID" . || { tail -n 30 "$STATE/build.log" >&2; fail "docker build failed (log: $STATE/build.log)"; }
figure docker_image_build_s "$(since "$t0")" s
figure docker_image_mb "$(( $("${D[@]}" image inspect -f '{{.Size}}' "$IMAGE") / 1000000 ))" MB
say "image $IMAGE: ${FIG[docker_image_mb]} in ${FIG[docker_image_build_s]}"

# --- 6, 7: the runs -----------------------------------------------------------------------------------
# The way in (docker/entrypoint.sh): the host's /dev/vhci, or the micro-VM in the container.
WAY="${E2E_DOCKER_WAY:-auto}"
[ "$WAY" != auto ] || { if [ -e /dev/vhci ]; then WAY=vhci; else WAY=vm; fi; }
case "$WAY" in
  vhci) WAY_FLAGS=(--device /dev/vhci --network host --cap-add NET_ADMIN) ;;
  # The micro-VM needs nothing from the host: no device, no capability, no network, no writable
  # root; QEMU (TCG) runs as the caller's user and writes /out as that user.
  # (--tmpfs /tmp: vm/run.sh's KVM check writes a temporary file)
  vm)   WAY_FLAGS=(--network none --cap-drop ALL --security-opt no-new-privileges --read-only
                   --tmpfs /tmp --user "$(id -u):$(id -g)") ;;
  *) fail "E2E_DOCKER_WAY wants auto, vhci or vm, not '$WAY'" ;;
esac
# E2E_DOCKER_KVM=1: the host's /dev/kvm for the micro-VM (vm/run.sh then uses KVM when it really
# runs a guest, TCG otherwise); a CI runner with KVM runs the VM many times faster.
if [ "$WAY" = vm ] && [ "${E2E_DOCKER_KVM:-0}" = 1 ]; then
  [ -r /dev/kvm ] && [ -w /dev/kvm ] || fail "E2E_DOCKER_KVM=1 but /dev/kvm is not there or not read-writable for $(id -un)"
  WAY_FLAGS+=(--device /dev/kvm)
fi
# Scenario paths outside the image's scenarios/ are mounted at the same place under /blelab.
MOUNTS=(); CPATHS=()
for p in "$@"; do
  case "$p" in
    scenarios|scenarios/*) CPATHS+=("$p") ;;
    *) abs="$(cd "$(dirname "$p")" && pwd)/$(basename "$p")"; MOUNTS+=(-v "$abs:/blelab/extra$abs:ro"); CPATHS+=("/blelab/extra$abs") ;;
  esac
done
rm -rf "$OUT" && mkdir -p "$OUT"
envs=(); [ -z "${E2E_BLUEZ_PARTS:-}" ] || envs+=(-e "E2E_BLUEZ_PARTS=$E2E_BLUEZ_PARTS")
[ -z "${VM_TIMEOUT:-}" ] || envs+=(-e "VM_TIMEOUT=$VM_TIMEOUT")

# docker run NAME ARGS…: streamed, every line stamped so that "controllers ready" is timed;
# READY_AT and RUN_S are set after, the status returned.
container() {
  local name="blelab-e2e-$RUN_ID-$1"; shift
  CONTAINERS+=("$name")
  local stamps="$OUT/.stamps-$name" start=$EPOCHREALTIME rc
  run_bg bash -c '"$@" 2>&1 | while IFS= read -r line; do
      printf "%s\n" "$line"
      case "$line" in *"guest-run: controllers ready"*) [ -s "$0" ] || printf "%s\n" "$EPOCHREALTIME" > "$0" ;; esac
    done; exit "${PIPESTATUS[0]}"' "$stamps" \
    "${D[@]}" run --rm --name "$name" --label "blelab.build=$RUN_ID" "${WAY_FLAGS[@]}" "${envs[@]}" \
    -v "$OUT:/out" "${MOUNTS[@]}" "$IMAGE" "$@"
  rc=$?
  RUN_S="$(since "$start")"
  READY_AT=""; [ -s "$stamps" ] && READY_AT="$(awk -v a="$start" '{ printf "%.1f", $1 - a }' "$stamps")"
  rm -f "$stamps"
  return "$rc"
}

N="$("$STATE/blelab" list --controllers "$@")" || fail "blelab list --controllers $*: the scenarios do not load"
# VHCI_JOBS scenarios at a time, each on a group of N controllers from a btvirt of its own.
JOBS="${VHCI_JOBS:-1}"
case "$JOBS" in ''|*[!0-9]*|0) fail "VHCI_JOBS wants a count of 1 or more, not '$JOBS'" ;; esac
say "vhci suite: ${CPATHS[*]} on $JOBS group(s) of $N controllers (--jobs $JOBS), the $WAY way (docker run ${WAY_FLAGS[*]})"
status=0
container vhci -n "$N" -g "$JOBS" -- sh -c 'exec blelab run --jobs "$0" --transport "hci-user:$BLELAB_HCI_GROUPS" "$@" --junit /out/junit.xml --json /out/timeline.json --capture /out/captures' "$JOBS" "${CPATHS[@]}" || status=$?
if [ -n "$READY_AT" ]; then figure docker_start_s "$READY_AT" s
else say "error: the container never said its controllers were ready (no docker_start_s)"; [ "$status" != 0 ] || status=1; fi
figure docker_suite_s "$RUN_S" s
# The suite's own wall time, the VM's boot left out: blelab's, from the JUnit (what `make bench-vhci`
# calls suite_vhci_s; .ci/run takes it from here rather than run the suite a second time).
suite_s="$(sed -n 's/^<testsuites [^>]* time="\([0-9.]*\)".*/\1/p' "$OUT/junit.xml" 2>/dev/null | head -1)"
[ -z "$suite_s" ] || figure suite_vhci_s "$suite_s" s
case "$status" in
  0) ;;
  1|2) say "the vhci suite failed: blelab exit $status (its report above; JUnit in ${OUT#"$ROOT"/}/junit.xml)" ;;
  *) say "the vhci suite's container failed: exit $status (125: the VM, 124: timeout, 137: killed, 70: no controllers)" ;;
esac

if [ "$BENCH" = 0 ] && [ "${E2E_DOCKER_BLUEZ:-1}" != 0 ]; then
  bpaths=(scenarios/seeds); [ -d scenarios/bluez ] && bpaths+=(scenarios/bluez)
  count=("${bpaths[@]}")
  compgen -G 'vm/bluez/failures/*.yaml' >/dev/null && count+=(vm/bluez/failures)
  compgen -G 'vm/bluez/own-central/*.yaml' >/dev/null && count+=(vm/bluez/own-central)
  compgen -G 'examples/bluez-python/*.yaml' >/dev/null && count+=(examples/bluez-python)
  NB="$("$STATE/blelab" list --controllers "${count[@]}")" || fail "blelab list --controllers ${count[*]}: the scenarios do not load"
  NB=$((NB + 1))
  mkdir -p "$OUT/bluez"
  # The parts in BLUEZ_GROUPS, one container (one micro-VM: its own kernel, controllers, air,
  # dbus-daemon and bluetoothd) per group, the groups at the same time: nothing is shared between
  # them but the CPU, so BlueZ keeps one seat per bluetoothd. Default: one group, every part, one
  # after the other. Two groups on a 2-core machine ("central,python peripheral,own-central,failures")
  # save about 2.5 min, but there bleak's and SimpleBLE's connects timed out in one CI run of two
  # (CPU contention between the two emulated VMs). E2E_BLUEZ_PARTS: one group of those parts.
  if [ -n "${E2E_BLUEZ_PARTS:-}" ]; then groups=("$E2E_BLUEZ_PARTS")
  else read -ra groups <<< "${BLUEZ_GROUPS:-central,peripheral,own-central,python,failures}"; fi
  say "BlueZ parts: ${bpaths[*]} on $NB controllers (hci0 for the container's bluetoothd), in ${#groups[@]} container(s) at once: ${groups[*]}"
  t0=$(now)
  pids=(); k=0
  for g in "${groups[@]}"; do
    k=$((k + 1))
    name="blelab-e2e-$RUN_ID-bluez-$k"
    CONTAINERS+=("$name")
    # (each line stamped with its group when there are several; the docker client's status kept)
    bash -c '"$@" 2>&1 | if [ "$0" = - ]; then cat; else sed -u "s/^/[$0] /"; fi; exit "${PIPESTATUS[0]}"' \
      "$([ "${#groups[@]}" = 1 ] && echo - || echo "$g")" \
      "${D[@]}" run --rm --name "$name" --label "blelab.build=$RUN_ID" "${WAY_FLAGS[@]}" \
      -e "E2E_BLUEZ_PARTS=$g" "${envs[@]}" -v "$OUT:/out" "${MOUNTS[@]}" "$IMAGE" \
      --bluez --bluez-log "/out/bluez/bluez$([ "$k" = 1 ] || echo "-$k")" -n "$NB" -- \
      vm/e2e-bluez.sh --inside /usr/local/bin/blelab /out/bluez "${bpaths[@]}" 9>&- &
    pids+=($!)
  done
  brc=0; k=0
  for pid in "${pids[@]}"; do
    k=$((k + 1)); rc=0
    wait "$pid" || rc=$?
    [ "$rc" = 0 ] || say "the BlueZ parts ${groups[$((k - 1))]} failed: exit $rc (reports above; ${OUT#"$ROOT"/}/bluez/)"
    [ "$brc" != 0 ] || brc=$rc
  done
  figure docker_bluez_s "$(since "$t0")" s
  [ "$status" != 0 ] || status=$brc
fi

# --- 8: the captures ------------------------------------------------------------------------------------
ATT_CHECK_NAME=e2e-docker tools/att-check.sh "$OUT" "$OUT"/captures/*.btsnoop "$OUT"/bluez/*/captures/*.btsnoop \
  "$OUT"/bluez/*/*bluez-hci*.btsnoop
[ $? != 1 ] || [ "$status" != 0 ] || status=1

# --- results ----------------------------------------------------------------------------------------
junit_counts() {  # FILE → "T tests, F failed, S skipped" from the <testsuite> totals
  python3 - "$1" <<'EOF' 2>/dev/null
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
s = [r] if r.tag == "testsuite" else r.iter("testsuite")
t = f = k = 0
for x in s:
    t += int(x.get("tests", 0)); f += int(x.get("failures", 0)) + int(x.get("errors", 0)); k += int(x.get("skipped", 0))
print(f"{t - f - k} passed, {k} skipped, {f} failed")
EOF
}
[ -f "$OUT/junit.xml" ] && say "vhci suite: $(junit_counts "$OUT/junit.xml") (${OUT#"$ROOT"/}/junit.xml)"
for part in central peripheral own-central failures; do
  [ -f "$OUT/bluez/$part/junit.xml" ] && say "BlueZ $part: $(junit_counts "$OUT/bluez/$part/junit.xml")"
done
: > "$OUT/figures.txt"
for k in "${FIG_ORDER[@]}"; do
  line="$k: ${FIG[$k]}"
  printf '%s\n' "$line" >> "$OUT/figures.txt"
  if [ "$BENCH" = 1 ]; then
    case "$k" in docker_image_build_s|docker_image_mb|docker_start_s|docker_suite_s) printf '%s\n' "$line" ;; *) say "$line" ;; esac
  else
    printf '%s\n' "$line"
  fi
done
say "results in ${OUT#"$ROOT"/}/: junit.xml, timeline.json, captures/$([ -d "$OUT/bluez" ] && echo ', bluez/'), figures.txt; exit $status"
exit "$status"
