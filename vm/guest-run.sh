#!/usr/bin/env bash
# vm/guest-run.sh — start N Linux virtual Bluetooth LE controllers (btvirt over /dev/vhci), wait
# until the kernel has set each of them up, run a command, stop the controllers, and exit with
# the command's status. The one script both vhci environments run:
#   - the micro-VM (vm/run.sh): its /init runs this script inside `chroot /host`;
#   - the Docker image (docker/Dockerfile): its entrypoint, docker/entrypoint.sh, runs it in the
#     container when the host gives it /dev/vhci (else it boots the micro-VM, which runs it).
#
# Usage: guest-run.sh [-n N] [-g G] [--ready-timeout S] [--ready-by HOW] [--bluez] [--] COMMAND [ARG…]
#   -n N               number of controllers (default: $BLELAB_CONTROLLERS, else 2); with -g, per group
#   -g G               G groups of N controllers (default: $BLELAB_GROUPS, else 1), each made by a
#                      btvirt of its own, one after the other: btvirt puts all of its controllers on
#                      one air, so each group is an air of its own, for `blelab run --jobs G
#                      --transport hci-user:$BLELAB_HCI_GROUPS` (one job per group, no cross-talk)
#   --ready-timeout S  how long to wait for the controllers (default 30 s)
#   --ready-by HOW     how to tell that the kernel has set them up: debugfs, mgmt, grace or
#                      auto (default: debugfs when mounted, else mgmt when btmgmt is there)
#   --bluez            (or BLELAB_BLUEZ=1) once the controllers are ready, start a system bus
#                      (dbus-daemon with vm/bluez/dbus-system.conf, /run/dbus/system_bus_socket) and
#                      bluetoothd (`bluetoothd -n -d -f vm/bluez/main.conf --noplugin=bap,mcp,vcp`: it powers no adapter
#                      by itself) on a tmpfs /var/lib/bluetooth when that is read-only, and wait
#                      until org.bluez shows an org.bluez.Adapter1 for every new controller
#   --bluez-log DIR    where dbus-daemon.log and bluetoothd.log are saved at exit (default:
#                      build/bluez under the current folder when writable, else /tmp/blelab-bluez);
#                      while running they are written on /run/blelab-bluez (a tmpfs in the VM)
#   --bluez-timeout S  how long to wait for the bus and bluetoothd (default 60 s)
#   COMMAND            runs with these variables set:
#     BLELAB_HCI       the new controllers' indexes, comma-separated ("0,1" for hci0 and hci1), so
#                      `blelab run --transport "hci-user:$BLELAB_HCI"` works even where real
#                      adapters already hold hci0…
#     BLELAB_CONTROLLERS  N × G
#     BLELAB_HCI_GROUPS   the groups, each comma-separated, separated by '/' ("0,1/2,3" for -n 2 -g 2)
#   and with --bluez also:
#     BLELAB_BLUEZ=1, BLELAB_DBUS_PID, BLELAB_BLUETOOTHD_PID (the first bluetoothd's),
#     DBUS_SYSTEM_BUS_ADDRESS, BLELAB_BLUEZ_LOG (bluetoothd's live log file, `-d` output),
#     BLELAB_BLUEZ_LOGDIR (where the logs are saved at exit),
#     BLELAB_BLUETOOTHD_CTL   vm/bluez/bluetoothd-ctl.sh: `"$BLELAB_BLUETOOTHD_CTL" stop`, `start`,
#                             `restart`, `status` (prints the current pid) inside the command
#     BLELAB_BLUEZ_ADAPTERS, BLELAB_BLUEZ_RUN, BLELAB_BLUEZ_TIMEOUT  (bluetoothd-ctl.sh's settings)
# Prints, on stderr, `guest-run: controllers ready: hci0 hci1 (X.XX s, by HOW)` once usable; the
# micro-VM's run.sh watches for that line to measure boot time. With --bluez, then
# `guest-run: bluetoothd ready (X.XX s): …`. Both are stopped after the command (bluetoothd first).
# Exit status: COMMAND's; 70 when the controllers could not be made (no /dev/vhci, no btvirt,
# timeout) or, with --bluez, the bus or bluetoothd did not come up; 64 on bad usage.
#
# Needs: root (or CAP_NET_ADMIN for the HCI user channel), /dev/vhci (kernel module hci_vhci), and
# btvirt (Debian package bluez-test-tools) on PATH or in /usr/bin; with --bluez, dbus-daemon and
# dbus-send (Debian dbus-daemon, dbus-bin) and bluetoothd (bluez).
set -uo pipefail

say() { printf 'guest-run: %s\n' "$*" >&2; }
die() { printf 'guest-run: error: %s\n' "$1" >&2; exit "${2:-70}"; }

N="${BLELAB_CONTROLLERS:-2}"
G="${BLELAB_GROUPS:-1}"
READY_TIMEOUT=30
READY_BY=auto
BLUEZ="${BLELAB_BLUEZ:-0}"
BLUEZ_LOGDIR="${BLELAB_BLUEZ_LOGDIR:-}"
BLUEZ_TIMEOUT="${BLELAB_BLUEZ_TIMEOUT:-60}"
while [ $# -gt 0 ]; do
  case "$1" in
    -n) [ $# -ge 2 ] || die "-n needs a number" 64; N="$2"; shift 2 ;;
    -n*) N="${1#-n}"; shift ;;
    -g) [ $# -ge 2 ] || die "-g needs a number" 64; G="$2"; shift 2 ;;
    -g*) G="${1#-g}"; shift ;;
    --ready-timeout) [ $# -ge 2 ] || die "--ready-timeout needs seconds" 64; READY_TIMEOUT="$2"; shift 2 ;;
    --ready-timeout=*) READY_TIMEOUT="${1#*=}"; shift ;;
    --ready-by) [ $# -ge 2 ] || die "--ready-by needs debugfs, mgmt, grace or auto" 64; READY_BY="$2"; shift 2 ;;
    --ready-by=*) READY_BY="${1#*=}"; shift ;;
    --bluez) BLUEZ=1; shift ;;
    --bluez-log) [ $# -ge 2 ] || die "--bluez-log needs a folder" 64; BLUEZ_LOGDIR="$2"; shift 2 ;;
    --bluez-log=*) BLUEZ_LOGDIR="${1#*=}"; shift ;;
    --bluez-timeout) [ $# -ge 2 ] || die "--bluez-timeout needs seconds" 64; BLUEZ_TIMEOUT="$2"; shift 2 ;;
    --bluez-timeout=*) BLUEZ_TIMEOUT="${1#*=}"; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    -*) die "unknown option $1 (usage: guest-run.sh [-n N] [--ready-timeout S] [--ready-by HOW] [--bluez] -- COMMAND…)" 64 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || die "no command given (usage: guest-run.sh [-n N] [--ready-timeout S] [--ready-by HOW] [--bluez] -- COMMAND…)" 64
case "$N" in ''|*[!0-9]*) die "-n wants a number of controllers, not '$N'" 64 ;; esac
[ "$N" -ge 1 ] && [ "$N" -le 16 ] || die "-n $N: between 1 and 16 controllers" 64
case "$G" in ''|*[!0-9]*) die "-g wants a number of groups, not '$G'" 64 ;; esac
[ "$G" -ge 1 ] && [ "$G" -le 8 ] || die "-g $G: between 1 and 8 groups" 64
case "$READY_TIMEOUT" in ''|*[!0-9]*) die "--ready-timeout wants whole seconds, not '$READY_TIMEOUT'" 64 ;; esac
case "$BLUEZ" in 0|1) ;; *) die "BLELAB_BLUEZ wants 0 or 1, not '$BLUEZ'" 64 ;; esac
case "$BLUEZ_TIMEOUT" in ''|*[!0-9]*) die "--bluez-timeout wants whole seconds, not '$BLUEZ_TIMEOUT'" 64 ;; esac
case "$READY_BY" in
  auto) if [ -d /sys/kernel/debug/bluetooth ]; then READY_BY=debugfs
        elif command -v btmgmt >/dev/null; then READY_BY=mgmt; else READY_BY=grace; fi ;;
  debugfs) [ -d /sys/kernel/debug/bluetooth ] || die "--ready-by debugfs: /sys/kernel/debug/bluetooth is not there (debugfs not mounted?)" 64 ;;
  mgmt) command -v btmgmt >/dev/null || die "--ready-by mgmt: no btmgmt (Debian package bluez)" 64 ;;
  grace) ;;
  *) die "--ready-by wants debugfs, mgmt, grace or auto, not '$READY_BY'" 64 ;;
esac

BTVIRT="$(command -v btvirt || true)"
[ -n "$BTVIRT" ] || { [ -x /usr/bin/btvirt ] && BTVIRT=/usr/bin/btvirt; }
[ -n "$BTVIRT" ] || die "btvirt not found: install Debian's bluez-test-tools"
[ -e /dev/vhci ] || die "no /dev/vhci: the kernel needs Bluetooth and its hci_vhci module (modprobe hci_vhci); a container needs --device /dev/vhci"
[ -d /sys/class/bluetooth ] || die "no /sys/class/bluetooth: is sysfs mounted, and the bluetooth module loaded?"
HERE="$(cd "$(dirname "$0")" && pwd)"
BLUEZ_CTL="$HERE/bluez/bluetoothd-ctl.sh"
if [ "$BLUEZ" = 1 ]; then
  command -v dbus-daemon >/dev/null || die "--bluez: no dbus-daemon (Debian package dbus-daemon)"
  command -v dbus-send >/dev/null || die "--bluez: no dbus-send (Debian package dbus-bin)"
  command -v bluetoothd >/dev/null || [ -x /usr/libexec/bluetooth/bluetoothd ] \
    || die "--bluez: no bluetoothd (Debian package bluez)"
  [ -f "$HERE/bluez/dbus-system.conf" ] && [ -f "$HERE/bluez/main.conf" ] && [ -x "$BLUEZ_CTL" ] \
    || die "--bluez: $HERE/bluez/ lacks dbus-system.conf, main.conf or bluetoothd-ctl.sh"
fi

start=$EPOCHREALTIME
btvirt_pids=()
btvirt_logs=()
child_pid=""
dbus_pid=""
bluez_started=0
BLUEZ_RUN=/run/blelab-bluez
varlib_mounted=0

cleanup() {
  [ -n "$child_pid" ] && kill -TERM "$child_pid" 2>/dev/null
  # bluetoothd first (it is a client of the bus), then the bus, then the controllers
  [ "$bluez_started" = 1 ] && "$BLUEZ_CTL" stop 2>/dev/null
  if [ -n "$dbus_pid" ] && kill -0 "$dbus_pid" 2>/dev/null; then
    kill -TERM "$dbus_pid" 2>/dev/null
    wait "$dbus_pid" 2>/dev/null
  fi
  [ "$varlib_mounted" = 1 ] && umount /var/lib/bluetooth 2>/dev/null
  if [ "$BLUEZ" = 1 ] && [ -n "$BLUEZ_LOGDIR" ] && [ -d "$BLUEZ_RUN" ]; then
    cp "$BLUEZ_RUN/bluetoothd.log" "$BLUEZ_RUN/dbus-daemon.log" "$BLUEZ_LOGDIR/" 2>/dev/null
  fi
  local pid
  for pid in "${btvirt_pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
    fi
  done
  rm -f "${btvirt_logs[@]}"
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT
trap 'say "terminated"; exit 143' TERM

# The new controllers: hciK in /sys/class/bluetooth that were not there before btvirt started
# (btvirt numbers nothing itself; the kernel gives the lowest free indexes, in creation order).
new_controllers() {
  local d
  NEW=()
  for d in /sys/class/bluetooth/hci*; do
    [ -e "$d" ] || continue
    d="${d##*/}"
    case "$d" in *:*) continue ;; esac       # hci0:11 are connections, not controllers
    case "$existing" in *" $d "*) continue ;; esac
    NEW+=("$d")
  done
}
# A controller is usable for the HCI user channel once the kernel has finished setting it up:
# right after registration the kernel powers it on to read its features (HCI_SETUP), and a bind
# then fails with EBUSY. Evidence that setup is over (--ready-by):
#   debugfs  (mounted in the micro-VM) the setup's init creates hciK/hci_version at its end;
#   mgmt     (`btmgmt info`, e.g. in Docker) mgmt's index list leaves out controllers in setup;
#   grace    neither: wait 1 s.
set_up() {
  local h info
  case "$READY_BY" in
    debugfs)
      for h in "$@"; do [ -e "/sys/kernel/debug/bluetooth/$h/hci_version" ] || return 1; done ;;
    mgmt)
      # btmgmt stops at the end of its input, answered or not, and prints only when it exits:
      # give it half a second of open input.
      info="$(sleep 0.5 | timeout 5 btmgmt info 2>/dev/null)"
      for h in "$@"; do printf '%s\n' "$info" | grep -q "^$h:" || return 1; done ;;
    grace)
      sleep 1 ;;
  esac
}

# One group: a btvirt making N controllers, waited for until the kernel has set them all up; the
# next group starts only then, so that each group's indexes are its own (the kernel gives the
# lowest free ones, in creation order).
ALL=()
GROUPS_TEXT=""
for g in $(seq 1 "$G"); do
  existing=" "
  for d in /sys/class/bluetooth/hci*; do
    [ -e "$d" ] && existing="$existing${d##*/} "
  done
  BTVIRT_LOG="$(mktemp -t btvirt.XXXXXX.log 2>/dev/null || echo /tmp/btvirt.$$.$g.log)"
  btvirt_logs+=("$BTVIRT_LOG")
  "$BTVIRT" -l"$N" -L >"$BTVIRT_LOG" 2>&1 &
  btvirt_pid=$!
  btvirt_pids+=("$btvirt_pid")
  deadline=$(( ${EPOCHSECONDS} + READY_TIMEOUT ))
  while :; do
    if ! kill -0 "$btvirt_pid" 2>/dev/null; then
      cat "$BTVIRT_LOG" >&2
      die "btvirt exited before making $N controllers (group $g of $G)"
    fi
    new_controllers
    if [ "${#NEW[@]}" -ge "$N" ]; then
      NEW=($(printf '%s\n' "${NEW[@]}" | sort -V | head -n "$N"))
      set_up "${NEW[@]}" && break
    fi
    if [ "$EPOCHSECONDS" -ge "$deadline" ]; then
      cat "$BTVIRT_LOG" >&2
      die "only ${#NEW[@]} of $N controllers ready after ${READY_TIMEOUT} s (group $g of $G; have: ${NEW[*]:-none})"
    fi
    sleep 0.02
  done
  ALL+=("${NEW[@]}")
  GROUPS_TEXT="$GROUPS_TEXT${GROUPS_TEXT:+/}$(IFS=,; echo "${NEW[*]//hci/}")"
done
NEW=("${ALL[@]}")
BLELAB_HCI="$(IFS=,; echo "${NEW[*]//hci/}")"
BLELAB_HCI_GROUPS="$GROUPS_TEXT"
export BLELAB_HCI BLELAB_HCI_GROUPS BLELAB_CONTROLLERS="$(( N * G ))"
elapsed=$(( (${EPOCHREALTIME/./} - ${start/./}) / 10000 ))
say "controllers ready: ${NEW[*]}$([ "$G" -gt 1 ] && echo " in $G groups: $BLELAB_HCI_GROUPS") ($((elapsed / 100)).$(printf '%02d' $((elapsed % 100))) s, by $READY_BY)"

# --- BlueZ: a system bus and bluetoothd, for `blelab run --central bluez` / `--peripheral bluez` --
bluez_die() {
  [ -s "$BLUEZ_RUN/dbus-daemon.log" ] && { say "dbus-daemon's log:"; tail -n 15 "$BLUEZ_RUN/dbus-daemon.log" | sed 's/^/  | /' >&2; }
  die "$1"
}
start_bluez() {
  local t0=$EPOCHREALTIME sock=/run/dbus/system_bus_socket i
  export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$sock"
  if [ -z "$BLUEZ_LOGDIR" ]; then
    if [ -d build ] && [ -w build ]; then BLUEZ_LOGDIR="$PWD/build/bluez"; else BLUEZ_LOGDIR="${TMPDIR:-/tmp}/blelab-bluez"; fi
  fi
  mkdir -p "$BLUEZ_LOGDIR" || die "--bluez: cannot create the log folder $BLUEZ_LOGDIR"
  BLUEZ_LOGDIR="$(cd "$BLUEZ_LOGDIR" && pwd)"
  rm -f "$BLUEZ_LOGDIR/dbus-daemon.log" "$BLUEZ_LOGDIR/bluetoothd.log"
  # The live logs on a tmpfs: bluetoothd -d writes a line per mgmt command and event, and every
  # write over the VM's 9p share costs milliseconds of a single-threaded bluetoothd.
  mkdir -p "$BLUEZ_RUN" || die "--bluez: cannot create $BLUEZ_RUN"
  : > "$BLUEZ_RUN/dbus-daemon.log"; : > "$BLUEZ_RUN/bluetoothd.log"
  say "bluez logs: $BLUEZ_RUN/bluetoothd.log and dbus-daemon.log, saved to $BLUEZ_LOGDIR/ at exit"

  # The system bus. Ours alone: refuse to start next to one that answers (a host's, bind-mounted).
  mkdir -p /run/dbus || die "--bluez: cannot create /run/dbus"
  if [ -S "$sock" ]; then
    dbus-send --system --reply-timeout=2000 --print-reply --dest=org.freedesktop.DBus / \
      org.freedesktop.DBus.GetId >/dev/null 2>&1 \
      && die "--bluez: a system bus already answers at $sock; this script starts its own (and its own bluetoothd)"
    rm -f "$sock"
  fi
  dbus-daemon --config-file="$HERE/bluez/dbus-system.conf" --nofork --nopidfile \
    </dev/null >>"$BLUEZ_RUN/dbus-daemon.log" 2>&1 &
  dbus_pid=$!
  for i in $(seq 1 $((BLUEZ_TIMEOUT * 10))); do
    kill -0 "$dbus_pid" 2>/dev/null || bluez_die "--bluez: dbus-daemon exited at start"
    dbus-send --system --reply-timeout=2000 --print-reply --dest=org.freedesktop.DBus / \
      org.freedesktop.DBus.GetId >/dev/null 2>&1 && break
    [ "$i" -lt $((BLUEZ_TIMEOUT * 10)) ] || bluez_die "--bluez: the system bus did not answer at $sock within $BLUEZ_TIMEOUT s"
    sleep 0.1
  done
  local bus_ms=$(( (${EPOCHREALTIME/./} - ${t0/./}) / 10000 ))

  # bluetoothd's state folder: a tmpfs where it is read-only (the VM's host root is a read-only 9p).
  [ -d /var/lib/bluetooth ] || mkdir -p /var/lib/bluetooth 2>/dev/null \
    || die "--bluez: /var/lib/bluetooth is missing and cannot be created"
  if [ ! -w /var/lib/bluetooth ]; then
    mount -t tmpfs -o mode=0700 tmpfs /var/lib/bluetooth \
      || die "--bluez: /var/lib/bluetooth is read-only and a tmpfs cannot be mounted there"
    varlib_mounted=1
  fi

  export BLELAB_BLUEZ=1 BLELAB_BLUEZ_LOG="$BLUEZ_RUN/bluetoothd.log" BLELAB_BLUEZ_LOGDIR="$BLUEZ_LOGDIR" \
    BLELAB_BLUEZ_RUN="$BLUEZ_RUN" BLELAB_BLUEZ_TIMEOUT="$BLUEZ_TIMEOUT" \
    BLELAB_BLUEZ_ADAPTERS="$BLELAB_HCI" BLELAB_BLUETOOTHD_CTL="$BLUEZ_CTL" BLELAB_DBUS_PID="$dbus_pid"
  bluez_started=1
  "$BLUEZ_CTL" start || die "--bluez: bluetoothd did not come up (its log: $BLUEZ_LOGDIR/bluetoothd.log)"
  BLELAB_BLUETOOTHD_PID="$(cat "$BLUEZ_RUN/bluetoothd.pid" 2>/dev/null)" || die "--bluez: bluetoothd exited right after starting (its log: $BLUEZ_LOGDIR/bluetoothd.log)"
  export BLELAB_BLUETOOTHD_PID
  local ms=$(( (${EPOCHREALTIME/./} - ${t0/./}) / 10000 ))
  say "bluetoothd ready ($((ms / 100)).$(printf '%02d' $((ms % 100))) s, the bus after $((bus_ms / 100)).$(printf '%02d' $((bus_ms % 100))) s): pid $BLELAB_BLUETOOTHD_PID, org.bluez.Adapter1 on ${NEW[*]}; dbus-daemon pid $dbus_pid"
}
[ "$BLUEZ" = 1 ] && start_bluez

# In the background so that a TERM or INT stops it at once (traps wait for foreground commands;
# in Docker this shell is PID 1), with stdin kept (a background command's default is /dev/null).
"$@" <&0 &
child_pid=$!
wait "$child_pid"
status=$?
child_pid=""
exit "$status"
