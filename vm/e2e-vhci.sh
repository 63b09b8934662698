#!/usr/bin/env bash
# vm/e2e-vhci.sh — the vhci tier (`make e2e-vhci`): every scenario on Linux virtual controllers
# (btvirt over /dev/vhci) in the micro-VM, through the HCI user channel.
#
#   vm/e2e-vhci.sh [SCENARIO_PATHS…]     (default: scenarios)
#
# Boots the VM with as many controllers as the scenarios need (vm/count-controllers.sh: the
# central plus the most peripherals any scenario declares) and runs, inside,
#   blelab run --transport hci-user:0,1,… PATHS --junit build/e2e-vhci/junit.xml \
#              --capture build/e2e-vhci/captures
# with blelab built by `swift build -c release --static-swift-stdlib --product blelab` (then it
# needs only the host's glibc, libstdc++, libgcc and libm, which the VM sees through 9p).
# Environment: SWIFT (swift), E2E_VHCI_DIR (build/e2e-vhci), VM_TIMEOUT (seconds, default 1800).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
SWIFT="${SWIFT:-swift}"
OUT="${E2E_VHCI_DIR:-build/e2e-vhci}"
export VM_TIMEOUT="${VM_TIMEOUT:-1800}"
[ $# -gt 0 ] || set -- scenarios

say() { printf 'e2e-vhci: %s\n' "$*" >&2; }

N="$(vm/count-controllers.sh "$@")"
HCI="$(seq -s, 0 $((N - 1)))"
say "the scenarios need $N controllers: hci-user:$HCI"

say "swift build -c release --static-swift-stdlib --product blelab"
"$SWIFT" build -c release --static-swift-stdlib --product blelab
BLELAB="$("$SWIFT" build -c release --show-bin-path)/blelab"

rm -rf "$OUT" && mkdir -p "$OUT"
exec vm/run.sh "$N" -- "$BLELAB" run --transport "hci-user:$HCI" "$@" \
  --junit "$OUT/junit.xml" --capture "$OUT/captures"
