#!/usr/bin/env bash
# docker/entrypoint.sh — the BLELab image's ENTRYPOINT: N Linux virtual Bluetooth LE controllers
# (btvirt over /dev/vhci), then COMMAND with BLELAB_HCI=i,j,… naming them. One entrypoint, two
# ways in:
#
#   vhci  the container was given the host's /dev/vhci (a host kernel with Bluetooth and hci_vhci):
#         vm/guest-run.sh runs here, btvirt makes the controllers in the host's kernel.
#           docker run --rm --device /dev/vhci --network host --cap-add NET_ADMIN -v "$PWD/out:/out" IMAGE
#   vm    no /dev/vhci (a host kernel without Bluetooth, like BLELab's build machines): vm/run.sh
#         boots the micro-VM inside the container — QEMU with software emulation (TCG), Debian's
#         kernel and initramfs from the image, the container's own root shared read-only over 9p
#         and /out read-write — and the VM runs the same vm/guest-run.sh and COMMAND.
#           docker run --rm --network none -v "$PWD/out:/out" IMAGE
#         No device, no capability, no --privileged: QEMU under TCG is an ordinary process (no
#         /dev/kvm), its 9p server reads and writes files as the container's user. It also runs
#         with --cap-drop ALL --security-opt no-new-privileges --read-only --tmpfs /tmp --user
#         UID:GID (what make e2e-docker uses); --device /dev/kvm lets it use KVM where that works.
#
# Usage: IMAGE [--way auto|vhci|vm] [-n N] [-g G] [GUEST-RUN OPTIONS] [-- COMMAND [ARG…]]
#   --way       auto (default, or $BLELAB_WAY): vhci when /dev/vhci is there, else vm
#   -n N        controllers (default: what the image's scenarios need, blelab list --controllers)
#   -g G        G groups of N controllers, each from a btvirt of its own (an air of its own), named
#               in BLELAB_HCI_GROUPS (0,1/2,3) for `blelab run --jobs G --transport
#               "hci-user:$BLELAB_HCI_GROUPS"` (vm/guest-run.sh -g)
#   GUEST-RUN OPTIONS  vm/guest-run.sh's: --ready-timeout S, --ready-by HOW, --bluez,
#               --bluez-log DIR, --bluez-timeout S (in the vm way they travel as vm/run.sh --guest-arg)
#   COMMAND     default: every scenario of the image on the controllers, results in /out:
#                 blelab run --transport hci-user:$BLELAB_HCI scenarios --junit /out/junit.xml
#                   --json /out/timeline.json --capture /out/captures
# In the vm way COMMAND runs inside the VM (as root, in /blelab, with a clean environment):
# results must go under /out (the only folder the VM can write, when it is a volume; else
# /blelab/build, lost with the container), and only E2E_BLUEZ_PARTS and the BLELAB_* variables of
# the container that guest-run does not set itself reach it. The VM's settings: BLELAB_VM_MEM (MiB,
# 1024), BLELAB_VM_SMP (2), VM_TIMEOUT (seconds, boot + run, 3600), VM_ACCEL (auto: KVM when
# /dev/kvm is passed in and really runs a guest, else TCG). The console and job files are in
# /out/.blelab-vm-jobs/.
# Exit status: COMMAND's; 70 no controllers (guest-run), 124 VM timeout, 125 VM failure,
# 130/143 interrupted (docker stop), 64 bad usage.
set -uo pipefail

HERE="$(cd "$(dirname "$0")/.." && pwd)"
cd "$HERE"
say() { printf 'blelab-docker: %s\n' "$*" >&2; }
die() { printf 'blelab-docker: error: %s\n' "$1" >&2; exit "${2:-70}"; }

WAY="${BLELAB_WAY:-auto}"
N=""
GUEST=()
while [ $# -gt 0 ]; do
  case "$1" in
    --way) [ $# -ge 2 ] || die "--way needs auto, vhci or vm" 64; WAY="$2"; shift 2 ;;
    --way=*) WAY="${1#*=}"; shift ;;
    -n) [ $# -ge 2 ] || die "-n needs a number" 64; N="$2"; shift 2 ;;
    -n*) N="${1#-n}"; shift ;;
    -g) [ $# -ge 2 ] || die "-g needs a number" 64; GUEST+=("-g$2"); shift 2 ;;
    -g*) GUEST+=("$1"); shift ;;
    --bluez) GUEST+=(--bluez); shift ;;
    --ready-timeout|--ready-by|--bluez-log|--bluez-timeout)
      [ $# -ge 2 ] || die "$1 needs a value" 64; GUEST+=("$1=$2"); shift 2 ;;
    --ready-timeout=*|--ready-by=*|--bluez-log=*|--bluez-timeout=*) GUEST+=("$1"); shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    -*) die "unknown option $1 (usage: [--way auto|vhci|vm] [-n N] [--bluez …] [-- COMMAND…]; --help)" 64 ;;
    *) break ;;
  esac
done
if [ $# = 0 ]; then
  set -- sh -c 'mkdir -p /out && exec blelab run --transport "hci-user:$BLELAB_HCI" scenarios --junit /out/junit.xml --json /out/timeline.json --capture /out/captures'
fi
[ -n "$N" ] || N="${BLELAB_CONTROLLERS:-$(blelab list --controllers scenarios)}"
case "$N" in ''|*[!0-9]*) die "-n wants a number of controllers, not '$N'" 64 ;; esac

case "$WAY" in
  auto) if [ -e /dev/vhci ]; then WAY=vhci; else WAY=vm; fi ;;
  vhci|vm) ;;
  *) die "--way wants auto, vhci or vm, not '$WAY'" 64 ;;
esac

if [ "$WAY" = vhci ]; then
  [ -e /dev/vhci ] || die "--way vhci: no /dev/vhci in the container: run with --device /dev/vhci (the host needs 'modprobe hci_vhci'), or leave it out for the micro-VM"
  [ -r /dev/vhci ] && [ -w /dev/vhci ] || die "/dev/vhci is there but not readable and writable: pass it with --device /dev/vhci (rw)"
  # The kernel's Bluetooth sockets exist only in the host's first network namespace.
  python3 -c 'import socket; socket.socket(socket.AF_BLUETOOTH, socket.SOCK_RAW, socket.BTPROTO_HCI).close()' 2>/dev/null \
    || die "no Bluetooth sockets in this container's network namespace (socket(AF_BLUETOOTH) fails): run with --network host"
  # The HCI user channel needs CAP_NET_ADMIN (bit 12 of the effective set).
  cap="$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)"
  (( (16#${cap:-0} >> 12) & 1 )) || die "no CAP_NET_ADMIN in this container: the HCI user channel needs it: run with --cap-add NET_ADMIN"
  say "way in: vhci (the host's /dev/vhci; btvirt in the container), $N controllers"
  exec vm/guest-run.sh -n "$N" "${GUEST[@]}" -- "$@"
fi

# --- the micro-VM ----------------------------------------------------------------------------------
RW=/out
if [ -d "$RW" ] && ! [ -w "$RW" ]; then
  die "/out is not writable for uid $(id -u): give the host folder to that user, or run as its owner (docker run --user UID:GID)" 64
fi
if ! mkdir -p "$RW" 2>/dev/null; then
  RW="$HERE/build"
  mkdir -p "$RW" 2>/dev/null && [ -w "$RW" ] || die "nowhere to write results (a read-only root and no /out): docker run -v HOST_DIR:/out" 64
fi
grep -q " $RW " /proc/self/mountinfo || say "note: $RW is not a volume: the results stay in the container (docker run -v HOST_DIR:/out)"
ENVS=()
while IFS= read -r name; do
  case "$name" in
    BLELAB_HCI|BLELAB_HCI_GROUPS|BLELAB_CONTROLLERS|BLELAB_VM|BLELAB_WAY|BLELAB_VM_*|BLELAB_BLUEZ*|BLELAB_DBUS_PID|BLELAB_BLUETOOTHD*) continue ;;
    BLELAB_*|E2E_BLUEZ_PARTS) ENVS+=(--env "$name=${!name}") ;;
  esac
done < <(compgen -e)
ARGS=(--rw "$RW" --mem "${BLELAB_VM_MEM:-1024}" --smp "${BLELAB_VM_SMP:-2}")
for g in "${GUEST[@]}"; do ARGS+=(--guest-arg "$g"); done
say "way in: vm (no /dev/vhci: the micro-VM in the container, $(cat build/vm/kernel-version 2>/dev/null || echo '?')), $N controllers, results under $RW"
export VM_PREBUILT=1 VM_TIMEOUT="${VM_TIMEOUT:-3600}"
exec vm/run.sh "${ARGS[@]}" "${ENVS[@]}" "$N" -- "$@"
