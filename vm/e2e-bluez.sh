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
#   python      the Python BLE libraries users run on BlueZ (examples/bluez-python/, docs/bluez.md):
#               bleak_central.py and simpleble_central.py on hci0, each beside `blelab run
#               --central none … SCENARIO`; then bless_peripheral.py serving on hci0 under
#               `blelab run --peripheral none:bless-sensor@ADDRESS` (hci0's address). Each
#               script and each blelab run must exit 0. The venv (build/pyclients-venv,
#               tools/pyclients-venv.sh) is made on the host first and reached as BLELAB_PYCLIENTS.
#               Every ATT write PDU of those runs' captures is listed in OUT/python/write-opcodes.txt
#   failures    the scenarios of vm/bluez/failures/ (each with `expect-failure: TEXT`: blelab passes
#               it only when it fails with TEXT), per role: blelab run --central bluez:hci0 --tag
#               bluez-central … vm/bluez/failures files (--peripheral, tag bluez-peripheral) must
#               exit 0; then, with bluetoothd stopped, a run per role
#               must exit non-zero within 60 s naming bluetoothd; bluetoothd is started again.
#               Results in OUT/failures/ (blelab's NAME.junit.xml and NAME.log per run)
# Before each part after the first, and before each program of the python part, bluetoothd starts
# afresh (empty /var/lib/bluetooth) and BLELab's controllers are reset (powered on and off through
# BlueZ: a peripheral never connected keeps advertising after blelab lets go of its controller).
# bluetoothd's log for each part is OUT/<part>/bluetoothd.log (OUT/python/NAME.bluetoothd.log per
# program; the whole VM's in OUT/bluez/), and btmon's record of BlueZ's adapter
# OUT/<part>/bluez-hci0.btsnoop (OUT/python/NAME.bluez-hci0.btsnoop). Back on the host, every capture must
# open in tshark with every frame on the ATT channel (CID 4) decoded as ATT.
# Exit status: 0 when every part passed; else the first failing part's blelab status (1 a
# scenario failed, 2 bad input or usage), 1 for a failure case that did not fail as expected, or
# vm/run.sh's (124 timeout, 125 VM failure).
# Environment: SWIFT (swift), E2E_BLUEZ_DIR (build/e2e-bluez), VM_TIMEOUT (seconds, default 3600),
# E2E_BLUEZ_PARTS (central,peripheral,own-central,python,failures: which parts to run),
# PYCLIENTS_VENV (build/pyclients-venv).
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
  local parts="${E2E_BLUEZ_PARTS:-central,peripheral,own-central,python,failures}"
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
  # DIR [PREFIX]: into DIR/PREFIXbluez-hciN.btsnoop
  btmon_start() {
    command -v btmon >/dev/null || return 0
    btmon -i "hci${BLELAB_HCI%%,*}" -w "$1/${2:-}bluez-hci${BLELAB_HCI%%,*}.btsnoop" >/dev/null 2>&1 &
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

  # The Python libraries users run on BlueZ (docs/bluez.md, "Python libraries on BlueZ"): bleak and
  # SimpleBLE in the central's seat beside `blelab run --central none`, then bless serving a
  # peripheral under BLELab's central (`--peripheral none:ID@ADDRESS`). Each program gets a
  # bluetoothd of its own and reset controllers, as every part does: a program that fails leaves
  # bluetoothd holding a connection and a device object (BLELab's controllers keep their addresses
  # from run to run), which must not decide the next program's verdict.
  if [[ ",$parts," == *",python,"* ]]; then
    # the venv: the host's (BLELAB_PYCLIENTS), or the Docker image's build/pyclients-venv
    local pd="$out/python" py="${BLELAB_PYCLIENTS:-$ROOT/build/pyclients-venv}/bin/python" bz="hci${BLELAB_HCI%%,*}" ex=examples/bluez-python
    mkdir -p "$pd"
    local pt0=$EPOCHSECONDS
    if [ ! -x "$py" ]; then
      summary+=("python: no Python at $py (tools/pyclients-venv.sh makes the venv)"); note 70
    else
      # NAME: bluetoothd afresh for program NAME, its adapter powered as a desktop's is (main.conf's
      # AutoEnable = false leaves it off here).
      py_fresh() {
        fresh || return 70
        dbus-send --system --print-reply --reply-timeout=20000 --dest=org.bluez "/org/bluez/$bz" \
          org.freedesktop.DBus.Properties.Set string:org.bluez.Adapter1 string:Powered variant:boolean:true >/dev/null \
          || say "warning: could not power $bz through BlueZ"
      }
      # NAME: what bluetoothd logged while program NAME ran, beside its other files.
      py_log() { tail -n +"$LOG_FROM" "$BLELAB_BLUEZ_LOG" > "$pd/$1.bluetoothd.log"; }
      # NAME SCRIPT SCENARIO: a central script on BlueZ's adapter beside blelab with no central.
      py_central() {
        local name="$1" script="$2" scenario="$3" rc prc
        py_fresh || { summary+=("python $name: bluetoothd did not start again"); note 70; return; }
        btmon_start "$pd" "$name."
        say "[python] $name: $script $bz beside blelab run --central none --transport hci-user:$hci $scenario"
        "$py" "$script" "$bz" > "$pd/$name.log" 2>&1 &
        local pid=$!
        "$blelab" run --central none --transport "hci-user:$hci" "$scenario" \
          --junit "$pd/$name.junit.xml" --capture "$pd/captures" 2>&1 | tee "$pd/$name.output.log"
        rc=${PIPESTATUS[0]}
        wait "$pid"; prc=$?
        sed "s/^/  $name| /" "$pd/$name.log" >&2
        btmon_stop
        py_log "$name"
        summary+=("python $name: blelab exit $rc, $(basename "$script") exit $prc")
        note "$rc"; note "$prc"
      }
      py_central bleak "$ex/bleak_central.py" "$ex/bleak-target.yaml"
      py_central simpleble "$ex/simpleble_central.py" "$ex/simpleble-target.yaml"
      # bless serves on BlueZ's adapter; BLELab's central finds it at the adapter's address.
      local addr kind brc=0 bprc=0 i
      if py_fresh; then
        btmon_start "$pd" bless.
        addr="$(dbus-send --system --print-reply --dest=org.bluez "/org/bluez/$bz" org.freedesktop.DBus.Properties.Get \
          string:org.bluez.Adapter1 string:Address | sed -n 's/.*string "\(.*\)".*/\1/p')"
        kind="$(dbus-send --system --print-reply --dest=org.bluez "/org/bluez/$bz" org.freedesktop.DBus.Properties.Get \
          string:org.bluez.Adapter1 string:AddressType | sed -n 's/.*string "\(.*\)".*/\1/p')"
        say "[python] bless: $ex/bless_peripheral.py $bz (at $addr/$kind) under blelab run --peripheral none:bless-sensor@$addr/$kind"
        "$py" "$ex/bless_peripheral.py" "$bz" > "$pd/bless.log" 2>&1 &
        local bpid=$!
        for i in $(seq 1 300); do
          grep -q '^bless: advertising' "$pd/bless.log" && break
          kill -0 "$bpid" 2>/dev/null || break
          sleep 0.1
        done
        if grep -q '^bless: advertising' "$pd/bless.log"; then
          "$blelab" run --peripheral "none:bless-sensor@$addr/${kind:-public}" --transport "hci-user:$hci" "$ex/bless-sensor.yaml" \
            --junit "$pd/bless.junit.xml" --capture "$pd/captures" 2>&1 | tee "$pd/bless.output.log"
          brc=${PIPESTATUS[0]}
        else
          say "[python] bless: not advertising within 30 s"; brc=1
        fi
        wait "$bpid"; bprc=$?
        sed "s/^/  bless| /" "$pd/bless.log" >&2
        btmon_stop
        py_log bless
        summary+=("python bless: blelab exit $brc, bless_peripheral.py exit $bprc")
      else
        brc=70; summary+=("python bless: bluetoothd did not start again")
      fi
      summary+=("python: $((EPOCHSECONDS - pt0)) s")
      note "$brc"; note "$bprc"
    fi
  fi

  case ",$parts," in *",failures,"*) ;; *) printf 'e2e-bluez: %s\n' "${summary[@]}" >&2; return "$overall" ;; esac
  # The failure cases are scenarios with `expect-failure: TEXT` (blelab passes one only when it
  # fails with TEXT in its failure), tagged bluez-central or bluez-peripheral for the seat BlueZ
  # takes: one blelab run per role, which writes the JUnit.
  local fdir="$out/failures" f name flag rc t0 secs log
  mkdir -p "$fdir"
  fresh || return 70
  btmon_start "$fdir"
  record() {  # NAME MESSAGE (empty: passed)
    [ -z "$2" ] || note 1
    summary+=("failure case $1: ${2:-ok}")
  }
  # NAME FLAG -- RUN-ARGS…: one blelab run of failure cases, within 600 s, into NAME.log
  # and NAME.junit.xml; blelab's status is the verdict (0: every case failed as it expects).
  failure_run() {
    local name="$1" flag="$2"; shift 3
    log="$fdir/$name.log"
    say "[failures] $name: blelab run $flag $adapter $*"
    t0=$EPOCHSECONDS
    timeout 600 "$blelab" run "$flag" "$adapter" --transport "hci-user:$hci" "$@" \
      --junit "$fdir/$name.junit.xml" --capture "$fdir/captures" > "$log" 2>&1
    rc=$?; secs=$(( EPOCHSECONDS - t0 ))
    # BlueZ's adapter as the next run expects it: unpowered (a case may have powered it, or off)
    dbus-send --system --print-reply --reply-timeout=20000 --dest=org.bluez "/org/bluez/hci${BLELAB_HCI%%,*}" \
      org.freedesktop.DBus.Properties.Set string:org.bluez.Adapter1 string:Powered variant:boolean:false \
      >/dev/null 2>&1
    sed 's/^/  | /' "$log" | tail -n 25 >&2
    if [ "$rc" = 124 ]; then record "$name" "hung: no result within 600 s"
    elif [ "$rc" != 0 ]; then record "$name" "blelab exit $rc after $secs s: a case did not fail as it expects ($name.log, $name.junit.xml)"
    else record "$name" ""; fi
  }
  local cases=() role
  for f in vm/bluez/failures/*.yaml; do
    [ -e "$f" ] || continue
    # a case must be one: it expects a failure, and names the seat BlueZ takes
    grep -q '^expect-failure: ' "$f" || { record "$(basename "$f" .yaml)" "$f has no top-level 'expect-failure: TEXT'"; continue; }
    if ! "$blelab" list --tag bluez-central --tag bluez-peripheral "$f" > "$fdir/list.log" 2>&1; then
      record "$(basename "$f" .yaml)" "$f: not valid, or tagged neither bluez-central nor bluez-peripheral: $(head -3 "$fdir/list.log")"
      continue
    fi
    cases+=("$f")
  done
  rm -f "$fdir/list.log"
  for role in central peripheral; do
    # blelab list exits 2 when the tag selects nothing among the files: no case for this role
    if [ ${#cases[@]} -gt 0 ] && "$blelab" list --tag "bluez-$role" "${cases[@]}" >/dev/null 2>&1; then
      failure_run "$role" "--$role" -- --tag "bluez-$role" "${cases[@]}"
    fi
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
    if [ "$rc" = 124 ]; then record "$name" "hung: no result within 60 s"
    elif [ "$rc" = 0 ]; then record "$name" "exit 0 with bluetoothd stopped"
    elif ! grep -qF bluetoothd "$log"; then record "$name" "exit $rc after $secs s but the output does not name bluetoothd"
    else record "$name" ""; fi
  done
  "$ctl" start || { say "error: bluetoothd did not start again"; note 70; }
  btmon_stop
  keep_log "$fdir"
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
PARTS="${E2E_BLUEZ_PARTS:-central,peripheral,own-central,python,failures}"
compgen -G 'examples/bluez-python/*.yaml' >/dev/null && [[ ",$PARTS," == *",python,"* ]] && count_paths+=(examples/bluez-python)

# The Debian packages the build needs (libdbus-1-dev, pkg-config, dbus-daemon), when missing.
bash tools/install-deps.sh
read -ra RELEASE < tools/release-flags
say "swift build ${RELEASE[*]} --product blelab"
"$SWIFT" build "${RELEASE[@]}" --product blelab
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
# The Python libraries (bleak, SimpleBLE, bless) from PyPI, in a venv the VM sees at the same path.
if [[ ",$PARTS," == *",python,"* ]]; then
  PYCLIENTS="${PYCLIENTS_VENV:-build/pyclients-venv}"
  case "$PYCLIENTS" in /*) ;; *) PYCLIENTS="$ROOT/$PYCLIENTS" ;; esac
  if bash tools/pyclients-venv.sh "$PYCLIENTS"; then envs+=(--env "BLELAB_PYCLIENTS=$PYCLIENTS")
  else say "error: no venv of the Python libraries: the python part will fail"; fi
fi
vm/run.sh "${envs[@]}" --guest-arg --bluez --guest-arg "--bluez-log=$OUT/bluez" "$N" -- \
  "$ROOT/vm/e2e-bluez.sh" --inside "$BLELAB" "$OUT" "$@" || status=$?

# The captures the VM brought back (blelab's, and btmon's of BlueZ's adapter) must open in
# tshark, with every L2CAP frame on the ATT channel (CID 4) decoded as ATT.
ATT_CHECK_NAME=e2e-bluez "$ROOT/tools/att-check.sh" "$OUT" "$OUT"/*/captures/*.btsnoop "$OUT"/*/*bluez-hci*.btsnoop
[ $? != 1 ] || [ "$status" != 0 ] || status=1
# Which ATT write each Python library's call became, as the lab's captures hold them (the python
# part's expectations already judged them): one line per Write Request (0x12) or Write Command
# (0x52) in each capture (the peripheral's for bleak and SimpleBLE, the central's for bless), with
# the value, which names the call that wrote it.
if [ -d "$OUT/python/captures" ] && command -v tshark >/dev/null; then
  for f in "$OUT"/python/captures/*.btsnoop; do
    [ -e "$f" ] || continue
    # the ATT PDUs' bytes as sent (tshark's ATT dissector off: it guesses what a handle is)
    tshark -r "$f" --disable-protocol btatt -Y 'btl2cap.cid == 0x0004' -T fields -e btl2cap.payload 2>/dev/null \
      | python3 -c '
import sys
names = {0x12: "Write Request", 0x52: "Write Command"}
for line in sys.stdin:
    pdu = bytes.fromhex(line.strip().replace(":", ""))
    if len(pdu) < 3 or pdu[0] not in names:
        continue
    value = pdu[3:]
    shown = "\"%s\"" % value.decode() if value and all(32 <= b < 127 for b in value) else value.hex(" ")
    print("%s: 0x%02x (%s) handle 0x%04x value %s" % (sys.argv[1], pdu[0], names[pdu[0]], int.from_bytes(pdu[1:3], "little"), shown))
' "$(basename "$f" .btsnoop)"
  done > "$OUT/python/write-opcodes.txt"
  say "ATT writes in the python part's captures (${OUT#"$ROOT"/}/python/write-opcodes.txt):"
  sed 's/^/  /' "$OUT/python/write-opcodes.txt" >&2
fi
say "results in ${OUT#"$ROOT"/}/: central/, peripheral/, own-central/, python/, failures/ (junit.xml, or NAME.junit.xml per run in failures/; bluetoothd.log each), bluez/"
exit "$status"
