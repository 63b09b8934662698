#!/usr/bin/env bash
# vm/bluez/bluetoothd-ctl.sh — start, stop or check the bluetoothd of BLELab's micro-VM and Docker
# image. vm/guest-run.sh --bluez starts it with this script, and exports its path as
# BLELAB_BLUETOOTHD_CTL so that a command can stop bluetoothd and start it again (the "bluetoothd
# not running" case), e.g.
#     "$BLELAB_BLUETOOTHD_CTL" stop && … && "$BLELAB_BLUETOOTHD_CTL" start
#
# Usage: bluetoothd-ctl.sh start [--fresh] [ADAPTERS] | stop | restart [--fresh] [ADAPTERS] |
#                          status | wait [ADAPTERS]
#   start     start bluetoothd (`bluetoothd -n -d -f vm/bluez/main.conf --noplugin=bap,mcp,vcp`, detached into its own
#             session, its output appended to the log) unless it runs, then wait until it owns
#             org.bluez on the system bus and shows an org.bluez.Adapter1 for each of ADAPTERS
#   stop      SIGTERM, wait until the process is gone and org.bluez has no owner (SIGKILL after
#             10 s); nothing to do when it is not running
#   restart   stop, then start
#   --fresh   empty /var/lib/bluetooth before starting (adapter settings, devices seen, bonds): a
#             bluetoothd that remembers nothing of the runs before
#   status    exit 0 and print the pid when running, exit 3 when not
#   wait      only the waiting part of start
#   ADAPTERS  comma-separated controller indexes ("0,1,2") or "none" (only org.bluez's name);
#             default $BLELAB_BLUEZ_ADAPTERS, else $BLELAB_HCI. An adapter bound over the HCI user
#             channel is not BlueZ's while the bind lasts: don't wait for it.
# Environment (guest-run.sh --bluez exports all of these):
#   BLELAB_BLUEZ_RUN        where the pid file lives (default /run/blelab-bluez)
#   BLELAB_BLUEZ_LOG        bluetoothd's log file, appended to (default $BLELAB_BLUEZ_RUN/
#                           bluetoothd.log: on a tmpfs, since with -d bluetoothd writes a line per
#                           mgmt command and event, and each write over the VM's 9p costs ms)
#   BLELAB_BLUEZ_TIMEOUT    how long start waits, seconds (default 60; software emulation is slow)
#   BLELAB_BLUETOOTHD       the bluetoothd binary (default: on PATH, else /usr/libexec/bluetooth/)
#   BLELAB_BLUETOOTHD_ARGS  its arguments (default: -n -d -f <this folder>/main.conf)
#   DBUS_SYSTEM_BUS_ADDRESS the system bus (default unix:path=/run/dbus/system_bus_socket)
# Prints, on stderr, `bluetoothd-ctl: bluetoothd ready, pid P (X.XX s)`; on a timeout, the
# reason and the last lines of the log, exit 1. Exit 64 on bad usage.
set -uo pipefail

case "$0" in */*) HERE="${0%/*}" ;; *) HERE=. ;; esac
HERE="$(cd "$HERE" && pwd)"
RUN="${BLELAB_BLUEZ_RUN:-/run/blelab-bluez}"
PIDFILE="$RUN/bluetoothd.pid"
LOG="${BLELAB_BLUEZ_LOG:-$RUN/bluetoothd.log}"
TIMEOUT="${BLELAB_BLUEZ_TIMEOUT:-60}"
export DBUS_SYSTEM_BUS_ADDRESS="${DBUS_SYSTEM_BUS_ADDRESS:-unix:path=/run/dbus/system_bus_socket}"

say() { printf 'bluetoothd-ctl: %s\n' "$*" >&2; }
die() { printf 'bluetoothd-ctl: error: %s\n' "$1" >&2; exit "${2:-1}"; }
# The end of the log of the latest start (each start appends a "==== time: command" line).
log_tail() {
  [ -s "$LOG" ] || return 0
  say "last lines of $LOG:"
  tac "$LOG" | sed '/^==== /q' | tac | tail -n "${1:-25}" | sed 's/^/  | /' >&2
}

bluetoothd_bin() {
  local b="${BLELAB_BLUETOOTHD:-}"
  [ -n "$b" ] || b="$(command -v bluetoothd 2>/dev/null || true)"
  [ -n "$b" ] || { [ -x /usr/libexec/bluetooth/bluetoothd ] && b=/usr/libexec/bluetooth/bluetoothd; }
  [ -n "$b" ] || { [ -x /usr/sbin/bluetoothd ] && b=/usr/sbin/bluetoothd; }
  [ -n "$b" ] || die "bluetoothd not found: install Debian's bluez"
  printf '%s\n' "$b"
}

# The running bluetoothd's pid, or nothing. A process that has exited but not been reaped yet
# (state Z: in the VM, /init reaps orphans only now and then) counts as gone.
# (Shell builtins only: under the VM's emulation every process started costs tens of ms.)
running_pid() {
  local pid="" stat state
  [ -f "$PIDFILE" ] || return 1
  { read -r pid < "$PIDFILE"; } 2>/dev/null
  case "$pid" in ''|*[!0-9]*) return 1 ;; esac
  { read -r stat < "/proc/$pid/stat"; } 2>/dev/null || return 1
  state="${stat##*) }"; state="${state%% *}"
  case "$state" in ''|Z|X) return 1 ;; esac
  RUNNING_PID="$pid"
}

# dbus-send with a bounded wait; only the exit status matters. Each one costs ~0.5 s of emulated
# CPU in the VM, so the waits below make one call per round.
bus() { dbus-send --system --reply-timeout=2000 --print-reply "$@" >/dev/null 2>&1; }
bus_up() { bus --dest=org.freedesktop.DBus / org.freedesktop.DBus.GetId; }
bluez_owned() {
  dbus-send --system --reply-timeout=2000 --print-reply=literal --dest=org.freedesktop.DBus / \
    org.freedesktop.DBus.NameHasOwner string:org.bluez 2>/dev/null | grep -q true
}
# The indexes K of every /org/bluez/hciK that has an org.bluez.Adapter1, one a line; fails when
# org.bluez has no owner (or does not answer).
bluez_adapters() {
  local out
  out="$(dbus-send --system --reply-timeout=2000 --print-reply --dest=org.bluez / \
    org.freedesktop.DBus.ObjectManager.GetManagedObjects 2>/dev/null)" || return 1
  printf '%s\n' "$out" | awk '
    /object path "/ { path = $3; gsub(/"/, "", path) }
    /string "org.bluez.Adapter1"/ && path ~ /^\/org\/bluez\/hci[0-9]+$/ { sub(/^\/org\/bluez\/hci/, "", path); print path }'
}

adapters_arg() {
  local a="${1:-${BLELAB_BLUEZ_ADAPTERS:-${BLELAB_HCI:-}}}"
  [ "$a" = none ] && a=""
  case "$a" in *[!0-9,]*) die "adapters: comma-separated indexes (0,1,2) or none, not '$a'" 64 ;; esac
  printf '%s\n' "${a//,/ }"
}

do_wait() {
  local adapters start deadline pid missing i have
  adapters="$(adapters_arg "${1:-}")" || exit $?
  start=$EPOCHREALTIME
  deadline=$(( EPOCHSECONDS + TIMEOUT ))
  while :; do
    missing=""
    running_pid || { log_tail; die "bluetoothd exited while starting (log: $LOG)"; }; pid="$RUNNING_PID"
    if have=" $(bluez_adapters | tr '\n' ' ')"; then
      for i in $adapters; do
        case "$have" in *" $i "*) ;; *) missing="$missing org.bluez.Adapter1 /org/bluez/hci$i" ;; esac
      done
    elif bus_up; then missing="org.bluez on the system bus"
    else missing="the system bus ($DBUS_SYSTEM_BUS_ADDRESS)"
    fi
    [ -z "$missing" ] && break
    if [ "$EPOCHSECONDS" -ge "$deadline" ]; then
      log_tail
      die "bluetoothd (pid $pid) not ready after $TIMEOUT s: no$missing (log: $LOG)"
    fi
    sleep 0.1
  done
  local ms=$(( (${EPOCHREALTIME/./} - ${start/./}) / 10000 ))
  READY_S="$((ms / 100)).$(printf '%02d' $((ms % 100)))"
  local shown="none waited for"
  [ -z "$adapters" ] || shown="hci${adapters// / hci}"
  say "bluetoothd ready, pid $pid ($READY_S s; adapters: $shown)"
}

do_start() {
  local pid bin fresh=0
  [ "${1:-}" = --fresh ] && { fresh=1; shift; }
  adapters_arg "${1:-}" >/dev/null || exit $?
  if running_pid; then
    pid="$RUNNING_PID"
    [ "$fresh" = 0 ] || die "start --fresh: bluetoothd is running (pid $pid); stop it first, or use restart --fresh"
    say "bluetoothd already running, pid $pid"
  else
    local owned
    owned="$(dbus-send --system --reply-timeout=2000 --print-reply=literal --dest=org.freedesktop.DBus / \
      org.freedesktop.DBus.NameHasOwner string:org.bluez 2>/dev/null)" \
      || die "no system bus at $DBUS_SYSTEM_BUS_ADDRESS: start dbus-daemon first (vm/guest-run.sh --bluez does)"
    case "$owned" in *true*) die "org.bluez is already owned on the system bus, by a bluetoothd this script did not start" ;; esac
    bin="$(bluetoothd_bin)" || exit $?
    mkdir -p "$RUN" "$(dirname "$LOG")" || die "cannot create $RUN or $(dirname "$LOG")"
    # bluetoothd keeps its state (adapter settings, bonds, the GATT cache) in /var/lib/bluetooth.
    [ -d /var/lib/bluetooth ] && [ -w /var/lib/bluetooth ] \
      || die "/var/lib/bluetooth is missing or read-only (vm/guest-run.sh --bluez mounts a tmpfs there)"
    if [ "$fresh" = 1 ]; then
      # only a lab's own state: the VM's tmpfs, or a container's
      [ "$(stat -f -c %T /var/lib/bluetooth 2>/dev/null)" = tmpfs ] || [ -e /.dockerenv ] \
        || die "start --fresh: /var/lib/bluetooth is neither a tmpfs nor in a container: not emptying this machine's Bluetooth state"
      find /var/lib/bluetooth -mindepth 1 -delete || die "start --fresh: cannot empty /var/lib/bluetooth"
    fi
    local args
    if [ -n "${BLELAB_BLUETOOTHD_ARGS:-}" ]; then read -r -a args <<<"$BLELAB_BLUETOOTHD_ARGS"
    else args=(-n -d -f "$HERE/main.conf" --noplugin=bap,mcp,vcp); fi
    printf '\n==== %s: %s %s\n' "$(date -u +%H:%M:%S)" "$bin" "${args[*]}" >> "$LOG"
    # Its own session: a Ctrl-C or a process-group kill aimed at the caller does not reach it.
    setsid "$bin" "${args[@]}" </dev/null >>"$LOG" 2>&1 &
    echo $! > "$PIDFILE"
  fi
  do_wait "${1:-}"
}

do_stop() {
  local pid i
  running_pid || { rm -f "$PIDFILE"; say "bluetoothd is not running"; return 0; }
  pid="$RUNNING_PID"
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 1 100); do running_pid || break; sleep 0.1; done
  if running_pid; then
    say "bluetoothd (pid $pid) still running 10 s after SIGTERM: SIGKILL"
    kill -KILL "$pid" 2>/dev/null
    for i in $(seq 1 50); do running_pid || break; sleep 0.1; done
  fi
  running_pid && die "bluetoothd (pid $pid) would not stop"
  # The bus drops the name when the connection closes; wait for that, so that a caller's next
  # call to org.bluez already fails.
  for i in $(seq 1 50); do bluez_owned || break; sleep 0.1; done
  bluez_owned && die "bluetoothd (pid $pid) is gone but org.bluez still has an owner"
  rm -f "$PIDFILE"
  say "bluetoothd stopped (was pid $pid)"
}

case "${1:-}" in
  start) shift; do_start "$@" ;;
  stop) do_stop ;;
  restart) shift; do_stop && do_start "$@" ;;
  status) if running_pid; then echo "$RUNNING_PID"; exit 0; else say "bluetoothd is not running"; exit 3; fi ;;
  wait) do_wait "${2:-}" ;;
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) die "usage: bluetoothd-ctl.sh start [--fresh] [ADAPTERS] | stop | restart [--fresh] [ADAPTERS] | status | wait [ADAPTERS]" 64 ;;
esac
