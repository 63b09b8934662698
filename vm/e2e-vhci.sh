#!/usr/bin/env bash
# vm/e2e-vhci.sh — the vhci tier (`make e2e-vhci`): every scenario on Linux virtual controllers
# (btvirt over /dev/vhci) in the micro-VM, through the HCI user channel.
#
#   vm/e2e-vhci.sh [SCENARIO_PATHS…]     (default: scenarios)
#
# Boots the VM with VHCI_JOBS groups of as many controllers as the scenarios need (`blelab list
# --controllers`: the central plus the most peripherals any scenario declares), each group made by
# a btvirt of its own (an air of its own: vm/guest-run.sh -g), and runs, inside,
#   blelab run --jobs VHCI_JOBS --transport hci-user:0,1,…/N,N+1,… PATHS \
#              --junit build/e2e-vhci/junit.xml --capture build/e2e-vhci/captures
# with blelab built by `swift build $(cat tools/release-flags) --product blelab`: a static Swift
# standard library, so it needs only the host's C libraries (glibc, libstdc++, libdbus, libcrypto…),
# which the VM sees through 9p.
# Environment: SWIFT (swift), E2E_VHCI_DIR (build/e2e-vhci), VM_TIMEOUT (seconds, default 1800),
# VHCI_JOBS (scenarios at a time, default 1).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
SWIFT="${SWIFT:-swift}"
OUT="${E2E_VHCI_DIR:-build/e2e-vhci}"
JOBS="${VHCI_JOBS:-1}"
case "$JOBS" in ''|*[!0-9]*|0) say "VHCI_JOBS wants a count of 1 or more, not '$JOBS'"; exit 64 ;; esac
export VM_TIMEOUT="${VM_TIMEOUT:-1800}"
[ $# -gt 0 ] || set -- scenarios

say() { printf 'e2e-vhci: %s\n' "$*" >&2; }

# The Debian packages the build needs (libdbus-1-dev, pkg-config, dbus-daemon), when missing.
bash tools/install-deps.sh
read -ra RELEASE < tools/release-flags
say "swift build ${RELEASE[*]} --product blelab"
"$SWIFT" build "${RELEASE[@]}" --product blelab
BLELAB="$("$SWIFT" build -c release --show-bin-path)/blelab"

N="$("$BLELAB" list --controllers "$@")"
say "the scenarios need $N controllers; $JOBS job(s), each on a group of $N (guest-run.sh -g $JOBS)"

rm -rf "$OUT" && mkdir -p "$OUT"
status=0
# The groups as guest-run made them (BLELAB_HCI_GROUPS: 0,1,…/N,N+1,…), read in the VM.
vm/run.sh --guest-arg "-g$JOBS" "$N" -- bash -c 'exec "$0" run --jobs "$1" --transport "hci-user:$BLELAB_HCI_GROUPS" "${@:2}"' \
  "$BLELAB" "$JOBS" "$@" --junit "$OUT/junit.xml" --capture "$OUT/captures" || status=$?

# The captures the VM brought back must open in tshark, with every L2CAP frame on the ATT
# channel (CID 4) decoded as ATT.
ATT_CHECK_NAME=e2e-vhci tools/att-check.sh "$OUT/captures" "$OUT"/captures/*.btsnoop
[ $? != 1 ] || status=1
exit "$status"
