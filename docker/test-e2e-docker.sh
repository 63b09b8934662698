#!/usr/bin/env bash
# docker/test-e2e-docker.sh — checks that docker/e2e-docker.sh fails when it must and leaves
# nothing behind, on this machine, with the private dockerd it starts (no other engine answering).
# Each case runs e2e-docker.sh for real (engine, base image from the cache in build/docker/base/,
# image build, container with the micro-VM), without the BlueZ parts; ~2-3 min each:
#
#   failing      a scenario that fails (battery-level with a wrong value expected): exit 1, and
#                the output holds the scenario's own FAIL report (step, expected, seen)
#   container    the suite's container is killed (docker kill) while the suite runs: the run
#                fails (not 0) saying the container failed
#   interrupt    the run gets SIGINT in its process group (Ctrl-C) while the suite runs: exit 130
#   terminate    `make e2e-docker` gets SIGTERM while the suite runs (make passes it on): fails
#   build        SIGINT (Ctrl-C) while `docker build` runs: exit 130
#   kill9        the run gets SIGKILL (nothing can clean up): its dockerd is left, and the next
#                run stops it and removes what it left before it starts its own
#
# After each: no dockerd, containerd, shim or QEMU of the run alive, no mount under the engine's
# folders, no /tmp/blelab-dockerd.* folder, no container or image labelled blelab.build.
#   docker/test-e2e-docker.sh [CASE…]      (default: all six); logs in build/docker-test/
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
T="$ROOT/build/docker-test"
STATE="$ROOT/build/docker"
SOCK="$STATE/engine/docker.sock"
mkdir -p "$T"
say() { printf 'test-e2e-docker: %s\n' "$*" >&2; }
failures=0
check() { if eval "$2"; then say "  ok: $1"; else say "  FAILED: $1"; failures=$((failures + 1)); fi; }

# Processes of a run: dockerd/containerd/shims on our folders, QEMU of the container's VM.
ours() {
  local p cmd
  for p in /proc/[0-9]*; do
    cmd="$( { tr '\0' ' ' < "$p/cmdline"; } 2>/dev/null)" || continue
    case "$cmd" in
      *dockerd*"$STATE/engine"*|*containerd*/tmp/blelab-dockerd.*|*qemu-system*blelab.rw=/out*) echo "${p#/proc/} $cmd" ;;
    esac
  done
}
nothing_left() {
  local procs mounts dirs
  procs="$(ours)"
  mounts="$(awk -v a="$STATE/engine" '$5 ~ "^/tmp/blelab-dockerd" || index($5, a) == 1 { print $5 }' /proc/self/mountinfo)"
  dirs="$(ls -d /tmp/blelab-dockerd.* 2>/dev/null)"
  check "no dockerd, containerd, shim or qemu of the run${procs:+: $procs}" '[ -z "$procs" ]'
  check "no mount under build/docker/engine or /tmp/blelab-dockerd.*${mounts:+: $mounts}" '[ -z "$mounts" ]'
  check "no /tmp/blelab-dockerd.* folder${dirs:+: $dirs}" '[ -z "$dirs" ]'
  check "the private engine's socket does not answer" '! docker -H "unix://$SOCK" version >/dev/null 2>&1'
  if docker version >/dev/null 2>&1; then
    check "no container or image labelled blelab.build in the engine that answers" \
      '[ -z "$(docker ps -aq --filter label=blelab.build; docker images -q --filter label=blelab.build)" ]'
  fi
}
# Start LOG COMMAND… in its own process group (job control: a background job then keeps SIGINT,
# which a shell without it would have ignored, as a terminal's foreground job does); waits until
# the suite's container runs and its controllers are ready, then 5 s more. Sets PID.
set -m
start_and_wait() {
  local log="$1"; shift
  "$@" >"$log" 2>&1 < /dev/null &
  PID=$!
  for _ in $(seq 1 900); do
    grep -q 'guest-run: controllers ready' "$log" && { sleep 5; return 0; }
    kill -0 "$PID" 2>/dev/null || { say "  the run ended before its container was up:"; tail -n 15 "$log" >&2; return 1; }
    sleep 1
  done
  say "  no container up in 15 min"; return 1
}

case_failing() {
  local f="$T/failing/battery-level-wrong.yaml" log="$T/failing.log" rc=0
  mkdir -p "$T/failing"
  sed 's/^scenario: .*/scenario: Battery level expected wrong (must fail)/; s/expect: { value: u8:72 }/expect: { value: u8:73 }/' \
    scenarios/seeds/battery-level.yaml > "$f"
  grep -q 'u8:73' "$f" || { say "  could not make the failing scenario"; failures=$((failures + 1)); return; }
  E2E_DOCKER_BLUEZ=0 docker/e2e-docker.sh "$f" >"$log" 2>&1 || rc=$?
  check "exit 1 (got $rc)" '[ "$rc" = 1 ]'
  check "the scenario's own report: FAIL line" 'grep -q "^FAIL Battery level expected wrong (must fail)" "$log"'
  check "… with the step, what was expected and what was seen" \
    'grep -q "expect: { value: u8:73 }" "$log" && grep -q "^  expected:" "$log" && grep -q "^  seen:" "$log"'
  check "the JUnit file in build/e2e-docker/ records the failure" 'grep -q "<failure" build/e2e-docker/junit.xml'
}
case_container() {
  local log="$T/container.log" rc=0 id
  start_and_wait "$log" env E2E_DOCKER_BLUEZ=0 docker/e2e-docker.sh || { failures=$((failures + 1)); return; }
  id="$(docker -H "unix://$SOCK" ps -q --filter label=blelab.build)"
  say "  docker kill $id (the suite's container) mid-run"
  docker -H "unix://$SOCK" kill "$id" >/dev/null
  wait "$PID"; rc=$?
  check "the run failed (exit $rc)" '[ "$rc" != 0 ]'
  check "it says the container failed" 'grep -q "container failed: exit 137" "$log"'
}
case_interrupt() {
  local log="$T/interrupt.log" rc=0
  start_and_wait "$log" env E2E_DOCKER_BLUEZ=0 docker/e2e-docker.sh || { failures=$((failures + 1)); return; }
  say "  SIGINT to the run's process group (Ctrl-C) mid-run"
  kill -INT -- "-$PID"
  wait "$PID"; rc=$?
  check "exit 130 (got $rc)" '[ "$rc" = 130 ]'
  check "it cleaned up" 'grep -q "interrupted (SIGINT): cleaning up" "$log"'
}
case_terminate() {
  local log="$T/terminate.log" rc=0 make_pid
  start_and_wait "$log" env E2E_DOCKER_BLUEZ=0 make --no-print-directory e2e-docker || { failures=$((failures + 1)); return; }
  say "  SIGTERM to make (pid $PID) mid-run"
  kill -TERM "$PID"
  wait "$PID"; rc=$?
  check "make failed (exit $rc)" '[ "$rc" != 0 ]'
  check "it cleaned up" 'grep -q "terminated (SIGTERM): cleaning up" "$log"'
}

case_build() {
  local log="$T/build.log" rc=0
  E2E_DOCKER_BLUEZ=0 docker/e2e-docker.sh >"$log" 2>&1 < /dev/null &
  PID=$!
  for _ in $(seq 1 600); do grep -q '^e2e-docker: docker build ' "$log" && break; sleep 0.5; done
  sleep 15
  say "  SIGINT to the run's process group (Ctrl-C) during docker build"
  kill -INT -- "-$PID"
  wait "$PID"; rc=$?
  check "exit 130 (got $rc)" '[ "$rc" = 130 ]'
  check "it was building when interrupted" '! grep -q "^e2e-docker: image blelab-vhci" "$log"'
  check "it cleaned up" 'grep -q "cleanup: nothing of this run is left" "$log"'
}
case_kill9() {
  local log="$T/kill9.log" log2="$T/kill9-next.log" rc=0 left
  start_and_wait "$log" env E2E_DOCKER_BLUEZ=0 docker/e2e-docker.sh || { failures=$((failures + 1)); return; }
  say "  SIGKILL to docker/e2e-docker.sh (pid $PID) mid-run: no clean-up can run"
  kill -KILL "$PID"; wait "$PID" 2>/dev/null
  left="$(ours | grep -c dockerd)"
  check "its private dockerd is still there, as expected after kill -9 ($left)" '[ "$left" -ge 1 ]'
  say "  the next run (one scenario) must clean that up first"
  E2E_DOCKER_BLUEZ=0 docker/e2e-docker.sh scenarios/seeds/battery-level.yaml >"$log2" 2>&1 || rc=$?
  check "the next run passed (exit $rc)" '[ "$rc" = 0 ]'
  check "it stopped the dockerd the killed run left" 'grep -q "stopping the private dockerd an earlier run left" "$log2"'
}

[ $# -gt 0 ] || set -- failing container interrupt terminate build kill9
for c in "$@"; do
  say "case $c"
  start=$SECONDS
  "case_$c"
  # the run's own cleanup must have done it all: look at once
  nothing_left
  say "case $c: $((SECONDS - start)) s (log: build/docker-test/$c.log)"
done
if [ "$failures" = 0 ]; then say "all checks passed"; else say "$failures check(s) FAILED"; exit 1; fi
