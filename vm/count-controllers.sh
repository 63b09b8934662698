#!/usr/bin/env bash
# vm/count-controllers.sh [PATH…] — how many virtual controllers the scenarios need at most:
# one for the central plus one per peripheral, for the scenario with the most peripherals (the
# entries under the top-level `peripherals:` mapping), and never fewer than 2. Scenarios whose
# `requires:` leaves out vhci (`requires: [sim]`) don't run on the vhci tier and are not counted. PATHs are scenario files or
# folders (default: scenarios). With -v, prints each file's count on stderr.
set -euo pipefail
verbose=0
[ "${1:-}" = -v ] && { verbose=1; shift; }
[ $# -gt 0 ] || set -- scenarios
max=0
while IFS= read -r -d '' f; do
  # the tiers in `requires: [a, b]` or in a block list under `requires:`; none: every tier
  tiers=$(awk '
    /^requires:/ { sub(/^requires:[[:space:]]*/, ""); line = $0; inside = (line == ""); print line; next }
    inside && /^[[:space:]]+-/ { print; next }
    /^[^[:space:]#]/ { inside = 0 }' "$f")
  if [ -n "$tiers" ] && ! printf '%s\n' "$tiers" | grep -qw vhci; then
    [ "$verbose" = 0 ] || echo "$f: requires $(echo $tiers), not counted" >&2
    continue
  fi
  n=$(awk '
    /^peripherals:[[:space:]]*$/ { inside = 1; next }
    /^[^[:space:]#]/ { inside = 0 }
    inside && /^  [^[:space:]#][^:]*:/ { count++ }
    END { print count + 0 }' "$f")
  [ "$verbose" = 0 ] || echo "$f: $n peripheral(s)" >&2
  [ "$n" -gt "$max" ] && max=$n
done < <(find "$@" -name '*.yaml' -print0 | sort -z)
need=$((max + 1))
[ "$need" -ge 2 ] || need=2
echo "$need"
