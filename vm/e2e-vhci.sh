#!/usr/bin/env bash
# vm/e2e-vhci.sh — the vhci tier (`make e2e-vhci`): every scenario on Linux virtual controllers
# (btvirt over /dev/vhci) in the micro-VM, through the HCI user channel.
#
#   vm/e2e-vhci.sh [SCENARIO_PATHS…]     (default: scenarios)
#
# Boots the VM with as many controllers as the scenarios need (`blelab list --controllers`: the
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

# The Debian packages the build needs (libdbus-1-dev, pkg-config, dbus-daemon), when missing.
bash tools/install-deps.sh
say "swift build -c release --static-swift-stdlib --product blelab"
"$SWIFT" build -c release --static-swift-stdlib --product blelab
BLELAB="$("$SWIFT" build -c release --show-bin-path)/blelab"

N="$("$BLELAB" list --controllers "$@")"
HCI="$(seq -s, 0 $((N - 1)))"
say "the scenarios need $N controllers: hci-user:$HCI"

rm -rf "$OUT" && mkdir -p "$OUT"
status=0
vm/run.sh "$N" -- "$BLELAB" run --transport "hci-user:$HCI" "$@" \
  --junit "$OUT/junit.xml" --capture "$OUT/captures" || status=$?

# The captures the VM brought back must open in tshark, with every L2CAP frame on the ATT
# channel (CID 4) decoded as ATT.
if command -v tshark >/dev/null; then
  total=0; frames=0; bad=""
  for f in "$OUT"/captures/*.btsnoop; do
    [ -e "$f" ] || continue
    total=$((total + 1))
    if ! cid4="$(tshark -r "$f" -Y 'btl2cap.cid == 0x0004' 2>/dev/null | wc -l)" \
       || ! att="$(tshark -r "$f" -Y btatt 2>/dev/null | wc -l)"; then
      bad="$bad $(basename "$f")(unreadable)"; continue
    fi
    [ "$att" = "$cid4" ] || bad="$bad $(basename "$f")($att of $cid4)"
    frames=$((frames + att))
  done
  if [ "$total" = 0 ]; then
    say "error: no capture came back from the VM"; status=1
  elif [ -n "$bad" ] || [ "$frames" = 0 ]; then
    say "error: tshark does not decode ATT in:${bad:- any capture}"; status=1
  else
    say "tshark decodes all $frames ATT PDUs in the $total captures"
  fi
else
  say "tshark not installed: captures not checked"
fi
exit "$status"
