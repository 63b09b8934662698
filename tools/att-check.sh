#!/usr/bin/env bash
# tools/att-check.sh BASE FILE…: every capture must open in tshark, with each L2CAP frame on the ATT
# channel (CID 4) decoded as ATT. What the vhci, BlueZ and container tiers check on the captures
# they bring back (vm/e2e-vhci.sh, vm/e2e-bluez.sh, docker/e2e-docker.sh).
#
# Files that do not exist are skipped (unmatched globs). BASE is cut from the names in messages.
# Fast path: mergecap joins all the files into one pcapng and tshark reads it once (a tshark
# start costs about half a second, and a tier brings back up to a few hundred captures). When
# that fails or the counts differ, each file is read on its own, to name the ones at fault.
# Prints one line on stderr, "tshark decodes all N ATT PDUs in the M captures" or the error.
# Exit status: 0 all decode; 1 a file is unreadable, a frame on CID 4 is not ATT, there is no ATT
# frame at all, or there is no file; 3 tshark is not installed (nothing checked).
set -uo pipefail
say() { printf '%s: %s\n' "${ATT_CHECK_NAME:-att-check}" "$*" >&2; }
[ $# -ge 1 ] || { say "usage: tools/att-check.sh BASE FILE…"; exit 3; }
base="$1"; shift
command -v tshark >/dev/null || { say "tshark not installed: captures not checked"; exit 3; }

files=()
for f in "$@"; do [ -e "$f" ] && files+=("$f"); done
if [ "${#files[@]}" = 0 ]; then say "error: no capture came back"; exit 1; fi

# counts FILE → "FRAMES_ON_CID4 ATT_FRAMES" (frame.protocols names btatt when ATT decoded the frame)
counts() {
  tshark -r "$1" -Y 'btl2cap.cid == 0x0004' -T fields -e frame.protocols 2>/dev/null \
    | awk '{ n++ } /(^|:)btatt(:|$)/ { a++ } END { printf "%d %d\n", n, a }'
}

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if command -v mergecap >/dev/null && mergecap -a -w "$tmp/all.pcapng" "${files[@]}" 2>/dev/null \
   && read -r cid4 att < <(counts "$tmp/all.pcapng") && [ "$cid4" = "$att" ] && [ "$att" -gt 0 ]; then
  say "tshark decodes all $att ATT PDUs in the ${#files[@]} captures"
  exit 0
fi

frames=0; bad=""
for f in "${files[@]}"; do
  name="${f#"$base"/}"
  if ! c="$(counts "$f")"; then bad="$bad $name(unreadable)"; continue; fi
  read -r cid4 att <<< "$c"
  [ "$att" = "$cid4" ] || bad="$bad $name($att of $cid4)"
  frames=$((frames + att))
done
if [ -n "$bad" ] || [ "$frames" = 0 ]; then
  say "error: tshark does not decode ATT in:${bad:- any capture}"
  exit 1
fi
say "tshark decodes all $frames ATT PDUs in the ${#files[@]} captures"
