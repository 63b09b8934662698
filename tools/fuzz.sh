#!/usr/bin/env bash
# Runs the libFuzzer harnesses (Fuzzing/, docs/fuzzing.md), FUZZ_JOBS at a time (default: one
# per core), each on one core.
#
#   tools/fuzz.sh SECONDS [TARGET ...]     (default: every target)
#
# Needs the harnesses built (`make fuzz-build`) and the seeds written (tools/fuzz-seeds.py) under
# FUZZ_DIR (build/fuzz). Each target fuzzes for SECONDS from its seeds and the corpus it grew in
# earlier runs (FUZZ_DIR/corpus/<target>, kept); a crash, leak, timeout or out-of-memory input is
# saved under FUZZ_DIR/artifacts/<target>/ and the target is started again until its time is up.
# Prints per target, in the order given, one per line:
#
#   fuzz_<target>_execs: N          executions in this run
#   fuzz_<target>_execs_total: N    in every run so far (FUZZ_DIR/tally)
#   fuzz_<target>_crashes: N        inputs saved in this run (crash-*, leak-*, timeout-*, oom-*)
#
# Exits 1 when any target found something, else 0.
set -uo pipefail
cd "$(dirname "$0")/.."

seconds=${1:?usage: tools/fuzz.sh SECONDS [TARGET ...]}
shift
FUZZ_DIR=${FUZZ_DIR:-build/fuzz}
BIN=${FUZZ_BIN:?FUZZ_BIN: the directory of the fuzz-* executables}
ALL="h4 hci-event hci-command l2cap att-pdu gatt-client gatt-server advertising-data yaml scenario btsnoop packetlogger pcap air dbus capture-import host smp"
targets=${*:-$ALL}
tally=$FUZZ_DIR/tally
mkdir -p "$FUZZ_DIR" && touch "$tally"
# A leak is a finding (LeakSanitizer runs after each input that allocated more than it freed).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}

jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
case "$jobs" in ''|*[!0-9]*|0) echo "fuzz: FUZZ_JOBS wants a count of 1 or more, not '$jobs'" >&2; exit 2 ;; esac
for target in $targets; do
    [ -x "$BIN/fuzz-$target" ] || { echo "fuzz: $BIN/fuzz-$target is missing (make fuzz-build)" >&2; exit 2; }
done
results=$FUZZ_DIR/results
rm -rf "$results" && mkdir -p "$results"

# fuzz_one TARGET: fuzzes it for SECONDS; writes "EXECS CRASHES" to $results/TARGET.
fuzz_one() {
    local target=$1 exe=$BIN/fuzz-$1
    local corpus=$FUZZ_DIR/corpus/$target seeds=$FUZZ_DIR/seeds/$target
    local artifacts=$FUZZ_DIR/artifacts/$target logs=$FUZZ_DIR/logs
    mkdir -p "$corpus" "$seeds" "$artifacts" "$logs"
    local before execs=0 end=$((SECONDS + seconds)) run=0 log status n
    before=$(ls "$artifacts" | wc -l)
    while [ $SECONDS -lt "$end" ]; do
        run=$((run + 1))
        log=$logs/$target.$run.log
        # -timeout: one input may take 10 s at most (a hang is a finding); -rss_limit_mb: 2 GB.
        "$exe" -max_total_time=$((end - SECONDS)) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
            -artifact_prefix="$artifacts/" "$corpus" "$seeds" >"$log" 2>&1
        status=$?
        n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
        execs=$((execs + ${n:-0}))
        if [ $status -ne 0 ]; then
            # One block per finding, so that two targets' reports do not interleave.
            { echo "fuzz: $target stopped with status $status; the end of its log ($log):"
              grep -E "ERROR|SUMMARY|Test unit written|#[0-9]+ +in " "$log" | head -20; } >&2
            # A finding that saved no input (e.g. a crash while loading the corpus) still counts.
            [ "$(ls "$artifacts" | wc -l)" -gt "$before" ] || : > "$artifacts/crash-unsaved-$(date +%s)-$run"
        fi
    done
    echo "$execs $(( $(ls "$artifacts" | wc -l) - before ))" > "$results/$target"
}

running=0
for target in $targets; do
    if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
    fuzz_one "$target" &
    running=$((running + 1))
done
wait

# The tally and the figures, in the order the targets were given.
found=0
for target in $targets; do
    read -r execs crashes < "$results/$target" || { echo "fuzz: $target left no result" >&2; exit 2; }
    [ "$crashes" -eq 0 ] || found=1
    previous=$(awk -v t="$target" '$1 == t { print $2 }' "$tally")
    total=$(( ${previous:-0} + execs ))
    awk -v t="$target" '$1 != t' "$tally" > "$tally.new"
    echo "$target $total" >> "$tally.new"
    mv "$tally.new" "$tally"
    echo "fuzz_${target}_execs: $execs"
    echo "fuzz_${target}_execs_total: $total"
    echo "fuzz_${target}_crashes: $crashes"
done
exit $found
