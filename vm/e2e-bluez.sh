#!/usr/bin/env bash
# vm/e2e-bluez.sh — the BlueZ tier (`make e2e-bluez`): the scenarios with BlueZ (bluetoothd over
# D-Bus) in the central's seat, then in the peripheral's, on Linux virtual controllers in the
# micro-VM; BLELab's own stack plays the other devices over the HCI user channel.
#
#   vm/e2e-bluez.sh [SCENARIO_PATHS…]     (default: scenarios/seeds and scenarios/bluez)
#
# Boots the VM with `vm/guest-run.sh --bluez` (a system bus and bluetoothd, which powers nothing by
# itself) and 1 + K controllers: hci0 is BlueZ's adapter, hci1…hciK are BLELab's, K being what
# the scenarios need (`blelab list --controllers`: the central plus the most peripherals one scenario
# declares, over the paths, vm/bluez/failures/ and vm/bluez/own-central/). Inside, in this
# order, each to its end:
#   central     blelab run --central bluez:hci0 --transport hci-user:1,…,K PATHS
#                 --junit OUT/central/junit.xml --capture OUT/central/captures
#   peripheral  the same with --peripheral bluez:hci0, into OUT/peripheral/
#   own-central vm/bluez/own-central/gateway.py (a program outside the lab, on hci0) beside
#               `blelab run --central none … vm/bluez/own-central`; both must exit 0
#   failures    each vm/bluez/failures/*.yaml, with --central bluez:hci0 (--peripheral when the file
#               has a `# bluez-role: peripheral` line), must exit 1 and print the text of its
#               `# expect-failure: TEXT` line (fixed string); a `# bluez-during: SECONDS COMMAND`
#               line runs COMMAND beside it SECONDS after it starts; then, with bluetoothd stopped, a run
#               per role must exit non-zero within 60 s naming bluetoothd; bluetoothd is started
#               again. Results in OUT/failures/ (junit.xml, one log per case)
# Before each part after the first, bluetoothd starts afresh (empty /var/lib/bluetooth) and BLELab's
# controllers are reset (powered on and off through BlueZ: a peripheral never connected keeps
# advertising after blelab lets go of its controller). bluetoothd's log for each part is
# OUT/<part>/bluetoothd.log (the whole VM's in OUT/bluez/), and btmon's record of BlueZ's adapter
# OUT/<part>/bluez-hci0.btsnoop. Back on the host, every capture must
# open in tshark with every frame on the ATT channel (CID 4) decoded as ATT.
# Exit status: 0 when every part passed; else the first failing part's blelab status (1 a
# scenario failed, 2 bad input or usage), 1 for a failure case that did not fail as expected, or
# vm/run.sh's (124 timeout, 125 VM failure).
# Environment: SWIFT (swift), E2E_BLUEZ_DIR (build/e2e-bluez), VM_TIMEOUT (seconds, default 3600),
# E2E_BLUEZ_PARTS (central,peripheral,own-central,failures: which parts to run).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

say() { printf 'e2e-bluez: %s\n' "$*" >&2; }

# --- inside the VM (or the Docker image): `vm/e2e-bluez.sh --inside BLELAB OUT PATH…`, run by
# vm/guest-run.sh --bluez, which has started dbus-daemon and bluetoothd and exported BLELAB_HCI
# (the controllers: the first is BlueZ's adapter, the others BLELab's), BLELAB_BLUETOOTHD_CTL and
# BLELAB_BLUEZ_LOG -----------------------------------------------------------------------------
inside() {
  set +e
  local blelab="$1" out="$2"; shift 2
  case "${BLELAB_HCI:-}" in *,*) ;; *) say "error: BLELAB_HCI='${BLELAB_HCI:-}': need BlueZ's controller and at least one more"; return 70 ;; esac
  local adapter="bluez:hci${BLELAB_HCI%%,*}" hci="${BLELAB_HCI#*,}"
  local parts="${E2E_BLUEZ_PARTS:-central,peripheral,own-central,failures}"
  local overall=0 summary=() ctl="$BLELAB_BLUETOOTHD_CTL"
  [ -n "${BLELAB_BLUEZ:-}" ] && [ -x "$ctl" ] || { say "error: no bluetoothd here (run through vm/guest-run.sh --bluez)"; return 70; }

  # bluetoothd afresh (no devices or settings from the part before; the first part gets the one
  # guest-run.sh has just started), and its log from its start on.
  local ran=0 LOG_FROM=1
  fresh() {
    [ "$ran" = 1 ] || { ran=1; return 0; }
    "$ctl" stop || return 70
    LOG_FROM=$(( $(wc -l < "$BLELAB_BLUEZ_LOG") + 1 ))
    "$ctl" start --fresh || { say "error: bluetoothd did not start again"; return 70; }
    quiet_controllers
  }
  # A peripheral that was never connected keeps advertising after blelab lets go of its controller
  # (closing the user channel does not reset it): the next part's scanners would find it. Powering
  # a controller on resets it (HCI Reset first); BlueZ does that for us, then powers it off again.
  quiet_controllers() {
    local k on
    for k in ${hci//,/ }; do
      for on in true false; do
        dbus-send --system --print-reply --reply-timeout=20000 --dest=org.bluez "/org/bluez/hci$k" \
          org.freedesktop.DBus.Properties.Set string:org.bluez.Adapter1 string:Powered variant:boolean:$on \
          >/dev/null || { say "warning: could not power hci$k $on through BlueZ (it may still advertise)"; break; }
      done
    done
  }
  keep_log() { tail -n +"$LOG_FROM" "$BLELAB_BLUEZ_LOG" > "$1/bluetoothd.log"; }
  # BlueZ's side of the air: btmon's record of its adapter (HCI and mgmt), next to blelab's captures.
  local btmon_pid=""
  btmon_start() {
    command -v btmon >/dev/null || return 0
    btmon -i "hci${BLELAB_HCI%%,*}" -w "$1/bluez-hci${BLELAB_HCI%%,*}.btsnoop" >/dev/null 2>&1 &
    btmon_pid=$!
  }
  btmon_stop() { [ -z "$btmon_pid" ] || { kill -TERM "$btmon_pid" 2>/dev/null; wait "$btmon_pid" 2>/dev/null; btmon_pid=""; }; }
  note() { [ "$overall" != 0 ] || overall="$1"; }

  local role
  for role in central peripheral; do
    case ",$parts," in *",$role,"*) ;; *) continue ;; esac
    mkdir -p "$out/$role"
    fresh || return 70
    btmon_start "$out/$role"
    say "[$role] blelab run --$role $adapter --transport hci-user:$hci $*"
    "$blelab" run --"$role" "$adapter" --transport "hci-user:$hci" "$@" \
      --junit "$out/$role/junit.xml" --capture "$out/$role/captures" 2>&1 | tee "$out/$role/output.log"
    local rc=${PIPESTATUS[0]}
    btmon_stop
    keep_log "$out/$role"
    summary+=("$role: exit $rc")
    note "$rc"
  done

  # A program outside the lab in the central's seat (docs/bluez.md): vm/bluez/own-central/gateway.py
  # on BlueZ's adapter, beside `blelab run --central none` serving its peripherals.
  if [[ ",$parts," == *",own-central,"* ]] && [ -f vm/bluez/own-central/gateway.py ]; then
    local od="$out/own-central" grc
    mkdir -p "$od"
    fresh || return 70
    btmon_start "$od"
    say "[own-central] vm/bluez/own-central/gateway.py hci${BLELAB_HCI%%,*} beside blelab run --central none --transport hci-user:$hci vm/bluez/own-central"
    python3 vm/bluez/own-central/gateway.py "hci${BLELAB_HCI%%,*}" > "$od/gateway.log" 2>&1 &
    local gw=$!
    "$blelab" run --central none --transport "hci-user:$hci" vm/bluez/own-central \
      --junit "$od/junit.xml" --capture "$od/captures" 2>&1 | tee "$od/output.log"
    local rc=${PIPESTATUS[0]}
    wait "$gw"; grc=$?
    sed 's/^/  gateway| /' "$od/gateway.log" >&2
    btmon_stop
    keep_log "$od"
    summary+=("own-central: blelab exit $rc, gateway.py exit $grc")
    note "$rc"; note "$grc"
  fi

  case ",$parts," in *",failures,"*) ;; *) printf 'e2e-bluez: %s\n' "${summary[@]}" >&2; return "$overall" ;; esac
  local fdir="$out/failures" cases=() f name flag expect rc t0 secs ok log during during_pid
  mkdir -p "$fdir"
  fresh || return 70
  btmon_start "$fdir"
  # one JUnit testcase per case: name, seconds, failure message (empty: passed)
  local junit_cases=()
  xml() { local s="$1"; s="${s//&/&amp;}"; s="${s//</&lt;}"; s="${s//>/&gt;}"; s="${s//\"/&quot;}"; printf '%s' "$s"; }
  record() {  # NAME SECONDS MESSAGE
    if [ -z "$3" ]; then junit_cases+=("    <testcase classname=\"bluez.failures\" name=\"$(xml "$1")\" time=\"$2\"/>")
    else
      junit_cases+=("    <testcase classname=\"bluez.failures\" name=\"$(xml "$1")\" time=\"$2\"><failure message=\"$(xml "$3")\"/></testcase>")
      note 1
    fi
    summary+=("failure case $1: ${3:-ok}")
  }
  for f in vm/bluez/failures/*.yaml; do
    [ -e "$f" ] || continue
    name="$(basename "$f" .yaml)"
    flag=--central
    grep -q '^# bluez-role: peripheral[[:space:]]*$' "$f" && flag=--peripheral
    expect="$(sed -n 's/^# expect-failure: //p' "$f" | head -1)"
    if [ -z "$expect" ]; then record "$name" 0 "$f has no '# expect-failure: TEXT' line"; continue; fi
    log="$fdir/$name.log"
    # `# bluez-during: SECONDS COMMAND`: COMMAND (bash) runs SECONDS after blelab starts, beside
    # it (e.g. powering BlueZ's adapter off mid-scenario); its output goes to NAME.during.log.
    during="$(sed -n 's/^# bluez-during: //p' "$f" | head -1)"
    during_pid=""
    if [ -n "$during" ]; then
      case "${during%% *}" in ''|*[!0-9]*) record "$name" 0 "$f: '# bluez-during: SECONDS COMMAND' wants whole seconds first"; continue ;; esac
      [ "${during#* }" != "$during" ] || { record "$name" 0 "$f: '# bluez-during:' has no command"; continue; }
      ( sleep "${during%% *}"; echo "+ ${during#* }"; bash -c "${during#* }" ) > "$fdir/$name.during.log" 2>&1 &
      during_pid=$!
    fi
    say "[failures] $name: blelab run $flag $adapter (must fail with: $expect)${during:+; after ${during%% *} s: ${during#* }}"
    t0=$EPOCHSECONDS
    timeout 300 "$blelab" run "$flag" "$adapter" --transport "hci-user:$hci" "$f" \
      --capture "$fdir/captures" > "$log" 2>&1
    rc=$?; secs=$(( EPOCHSECONDS - t0 ))
    if [ -n "$during_pid" ]; then
      # blelab ended first: the command has not run (or runs on); don't let it touch the next case
      kill -TERM "$during_pid" 2>/dev/null; wait "$during_pid" 2>/dev/null
      sed 's/^/  during| /' "$fdir/$name.during.log" >&2
    fi
    # BlueZ's adapter as the next case expects it: unpowered (a case may have powered it, or off)
    dbus-send --system --print-reply --reply-timeout=20000 --dest=org.bluez "/org/bluez/hci${BLELAB_HCI%%,*}" \
      org.freedesktop.DBus.Properties.Set string:org.bluez.Adapter1 string:Powered variant:boolean:false \
      >/dev/null 2>&1
    sed 's/^/  | /' "$log" | tail -n 15 >&2
    if [ "$rc" = 124 ]; then record "$name" "$secs" "hung: no result within 300 s"
    elif [ "$rc" != 1 ]; then record "$name" "$secs" "exit $rc, expected 1 (a failed scenario)"
    elif ! grep -qF -- "$expect" "$log"; then record "$name" "$secs" "exit 1 but the output does not say: $expect"
    else record "$name" "$secs" ""; fi
  done

  # bluetoothd not running: a clear error naming it, quickly, for either role.
  local first
  first="$(find "$@" -name '*.yaml' 2>/dev/null | sort | head -1)"
  [ -z "$first" ] && [ -e scenarios/seeds/battery-level.yaml ] && first=scenarios/seeds/battery-level.yaml
  "$ctl" stop
  for flag in --central --peripheral; do
    name="bluetoothd-not-running${flag/--/-}"
    log="$fdir/$name.log"
    say "[failures] $name: blelab run $flag $adapter $first, bluetoothd stopped (must fail within 60 s naming bluetoothd)"
    t0=$EPOCHSECONDS
    timeout 60 "$blelab" run "$flag" "$adapter" --transport "hci-user:$hci" "$first" > "$log" 2>&1
    rc=$?; secs=$(( EPOCHSECONDS - t0 ))
    sed 's/^/  | /' "$log" | tail -n 15 >&2
    if [ "$rc" = 124 ]; then record "$name" "$secs" "hung: no result within 60 s"
    elif [ "$rc" = 0 ]; then record "$name" "$secs" "exit 0 with bluetoothd stopped"
    elif ! grep -qF bluetoothd "$log"; then record "$name" "$secs" "exit $rc but the output does not name bluetoothd"
    else record "$name" "$secs" ""; fi
  done
  "$ctl" start || { say "error: bluetoothd did not start again"; note 70; }
  btmon_stop
  keep_log "$fdir"

  local failed=0 c
  for c in "${junit_cases[@]}"; do case "$c" in *"<failure"*) failed=$((failed + 1)) ;; esac; done
  {
    echo '<?xml version="1.0" encoding="UTF-8"?>'
    echo "<testsuites><testsuite name=\"bluez failure cases\" tests=\"${#junit_cases[@]}\" failures=\"$failed\">"
    printf '%s\n' "${junit_cases[@]}"
    echo '</testsuite></testsuites>'
  } > "$fdir/junit.xml"
  printf 'e2e-bluez: %s\n' "${summary[@]}" >&2
  return "$overall"
}
if [ "${1:-}" = --inside ]; then
  shift
  [ $# -ge 3 ] || { say "usage: vm/e2e-bluez.sh --inside BLELAB OUT PATH…"; exit 64; }
  inside "$@"
  exit $?
fi

# --- on the host -------------------------------------------------------------------------------
SWIFT="${SWIFT:-swift}"
OUT="${E2E_BLUEZ_DIR:-build/e2e-bluez}"
export VM_TIMEOUT="${VM_TIMEOUT:-3600}"
if [ $# = 0 ]; then
  set -- scenarios/seeds
  if [ -d scenarios/bluez ]; then set -- "$@" scenarios/bluez
  else say "no scenarios/bluez/ yet: scenarios/seeds only"; fi
fi
for p in "$@"; do [ -e "$p" ] || { say "error: no such scenario path: $p"; exit 2; }; done
case "$OUT" in /*) ;; *) OUT="$ROOT/$OUT" ;; esac

count_paths=("$@")
compgen -G 'vm/bluez/failures/*.yaml' >/dev/null && count_paths+=(vm/bluez/failures)
compgen -G 'vm/bluez/own-central/*.yaml' >/dev/null && count_paths+=(vm/bluez/own-central)

# The Debian packages the build needs (libdbus-1-dev, pkg-config, dbus-daemon), when missing.
bash tools/install-deps.sh
say "swift build -c release --static-swift-stdlib --product blelab"
"$SWIFT" build -c release --static-swift-stdlib --product blelab
BLELAB="$("$SWIFT" build -c release --show-bin-path)/blelab"

K="$("$BLELAB" list --controllers "${count_paths[@]}")"
N=$((K + 1))
HCI="$(seq -s, 1 "$K")"
say "$N controllers: hci0 for BlueZ, hci-user:$HCI for BLELab's devices"
if ! "$BLELAB" run --help 2>&1 | grep -q -- '--central'; then
  say "note: this blelab has no --central/--peripheral bluez yet: its runs below end with a usage error"
fi

rm -rf "$OUT" && mkdir -p "$OUT"
status=0
envs=(); [ -z "${E2E_BLUEZ_PARTS:-}" ] || envs=(--env "E2E_BLUEZ_PARTS=$E2E_BLUEZ_PARTS")
vm/run.sh "${envs[@]}" --guest-arg --bluez --guest-arg "--bluez-log=$OUT/bluez" "$N" -- \
  "$ROOT/vm/e2e-bluez.sh" --inside "$BLELAB" "$OUT" "$@" || status=$?

# The captures the VM brought back (blelab's, and btmon's of BlueZ's adapter) must open in
# tshark, with every L2CAP frame on the ATT channel (CID 4) decoded as ATT.
if command -v tshark >/dev/null; then
  total=0; frames=0; bad=""
  for f in "$OUT"/*/captures/*.btsnoop "$OUT"/*/bluez-hci*.btsnoop; do
    [ -e "$f" ] || continue
    total=$((total + 1))
    if ! cid4="$(tshark -r "$f" -Y 'btl2cap.cid == 0x0004' 2>/dev/null | wc -l)" \
       || ! att="$(tshark -r "$f" -Y btatt 2>/dev/null | wc -l)"; then
      bad="$bad ${f#"$OUT"/}(unreadable)"; continue
    fi
    [ "$att" = "$cid4" ] || bad="$bad ${f#"$OUT"/}($att of $cid4)"
    frames=$((frames + att))
  done
  if [ "$total" = 0 ]; then
    say "error: no capture came back from the VM"; [ "$status" != 0 ] || status=1
  elif [ -n "$bad" ] || [ "$frames" = 0 ]; then
    say "error: tshark does not decode ATT in:${bad:- any capture}"; [ "$status" != 0 ] || status=1
  else
    say "tshark decodes all $frames ATT PDUs in the $total captures"
  fi
else
  say "tshark not installed: captures not checked"
fi
say "results in ${OUT#"$ROOT"/}/: central/, peripheral/, own-central/, failures/ (junit.xml, bluetoothd.log each), bluez/"
exit "$status"
