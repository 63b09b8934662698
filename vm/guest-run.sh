#!/usr/bin/env bash
# vm/guest-run.sh — start N Linux virtual Bluetooth LE controllers (btvirt over /dev/vhci), wait
# until the kernel has set each of them up, run a command, stop the controllers, and exit with
# the command's status. The one script both vhci environments run:
#   - the micro-VM (vm/run.sh): its /init runs this script inside `chroot /host`;
#   - the Docker image (docker/Dockerfile): it is the image's ENTRYPOINT.
#
# Usage: guest-run.sh [-n N] [--ready-timeout S] [--ready-by HOW] [--] COMMAND [ARG…]
#   -n N               number of controllers (default: $BLELAB_CONTROLLERS, else 2)
#   --ready-timeout S  how long to wait for the controllers (default 30 s)
#   --ready-by HOW     how to tell that the kernel has set them up: debugfs, mgmt, grace or
#                      auto (default: debugfs when mounted, else mgmt when btmgmt is there)
#   COMMAND            runs with these variables set:
#     BLELAB_HCI       the new controllers' indexes, comma-separated ("0,1" for hci0 and hci1), so
#                      `blelab run --transport "hci-user:$BLELAB_HCI"` works even where real
#                      adapters already hold hci0…
#     BLELAB_CONTROLLERS  N
# Prints, on stderr, `guest-run: controllers ready: hci0 hci1 (X.XX s, by HOW)` once usable; the
# micro-VM's run.sh watches for that line to measure boot time.
# Exit status: COMMAND's; 70 when the controllers could not be made (no /dev/vhci, no btvirt,
# timeout), 64 on bad usage.
#
# Needs: root (or CAP_NET_ADMIN for the HCI user channel), /dev/vhci (kernel module hci_vhci), and
# btvirt (Debian package bluez-test-tools) on PATH or in /usr/bin.
set -uo pipefail

say() { printf 'guest-run: %s\n' "$*" >&2; }
die() { printf 'guest-run: error: %s\n' "$1" >&2; exit "${2:-70}"; }

N="${BLELAB_CONTROLLERS:-2}"
READY_TIMEOUT=30
READY_BY=auto
while [ $# -gt 0 ]; do
  case "$1" in
    -n) [ $# -ge 2 ] || die "-n needs a number" 64; N="$2"; shift 2 ;;
    -n*) N="${1#-n}"; shift ;;
    --ready-timeout) [ $# -ge 2 ] || die "--ready-timeout needs seconds" 64; READY_TIMEOUT="$2"; shift 2 ;;
    --ready-timeout=*) READY_TIMEOUT="${1#*=}"; shift ;;
    --ready-by) [ $# -ge 2 ] || die "--ready-by needs debugfs, mgmt, grace or auto" 64; READY_BY="$2"; shift 2 ;;
    --ready-by=*) READY_BY="${1#*=}"; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    -*) die "unknown option $1 (usage: guest-run.sh [-n N] [--ready-timeout S] [--ready-by HOW] -- COMMAND…)" 64 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || die "no command given (usage: guest-run.sh [-n N] [--ready-timeout S] [--ready-by HOW] -- COMMAND…)" 64
case "$N" in ''|*[!0-9]*) die "-n wants a number of controllers, not '$N'" 64 ;; esac
[ "$N" -ge 1 ] && [ "$N" -le 16 ] || die "-n $N: between 1 and 16 controllers" 64
case "$READY_TIMEOUT" in ''|*[!0-9]*) die "--ready-timeout wants whole seconds, not '$READY_TIMEOUT'" 64 ;; esac
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

start=$EPOCHREALTIME
existing=" "
for d in /sys/class/bluetooth/hci*; do
  [ -e "$d" ] && existing="$existing${d##*/} "
done

BTVIRT_LOG="$(mktemp -t btvirt.XXXXXX.log 2>/dev/null || echo /tmp/btvirt.$$.log)"
"$BTVIRT" -l"$N" -L >"$BTVIRT_LOG" 2>&1 &
btvirt_pid=$!
child_pid=""

cleanup() {
  [ -n "$child_pid" ] && kill -TERM "$child_pid" 2>/dev/null
  if kill -0 "$btvirt_pid" 2>/dev/null; then
    kill -TERM "$btvirt_pid" 2>/dev/null
    wait "$btvirt_pid" 2>/dev/null
  fi
  rm -f "$BTVIRT_LOG"
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

deadline=$(( ${EPOCHSECONDS} + READY_TIMEOUT ))
while :; do
  if ! kill -0 "$btvirt_pid" 2>/dev/null; then
    cat "$BTVIRT_LOG" >&2
    die "btvirt exited before making $N controllers"
  fi
  new_controllers
  if [ "${#NEW[@]}" -ge "$N" ]; then
    NEW=($(printf '%s\n' "${NEW[@]}" | sort -V | head -n "$N"))
    set_up "${NEW[@]}" && break
  fi
  if [ "$EPOCHSECONDS" -ge "$deadline" ]; then
    cat "$BTVIRT_LOG" >&2
    die "only ${#NEW[@]} of $N controllers ready after ${READY_TIMEOUT} s (have: ${NEW[*]:-none})"
  fi
  sleep 0.02
done
BLELAB_HCI="$(IFS=,; echo "${NEW[*]//hci/}")"
export BLELAB_HCI BLELAB_CONTROLLERS="$N"
elapsed=$(( (${EPOCHREALTIME/./} - ${start/./}) / 10000 ))
say "controllers ready: ${NEW[*]} ($((elapsed / 100)).$(printf '%02d' $((elapsed % 100))) s, by $READY_BY)"

# In the background so that a TERM or INT stops it at once (traps wait for foreground commands;
# in Docker this shell is PID 1), with stdin kept (a background command's default is /dev/null).
"$@" <&0 &
child_pid=$!
wait "$child_pid"
status=$?
child_pid=""
exit "$status"
