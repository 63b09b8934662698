#!/usr/bin/env bash
# tools/soak.sh — `make soak`: flakes under load, with numbers.
#
#   1. builds the tests and blelab (unloaded), then starts stress-ng with one CPU worker per
#      online core (its own process group, stopped at the end, on Ctrl-C and on errors);
#   2. runs `make test` SOAK_RUNS times in a row (default 20), each with its xUnit results in
#      SOAK_DIR/tests/run-K.xml and its output in run-K.log;
#   3. runs every scenario in scenarios/ SOAK_REPEATS times on the sim (default 1000; seeds S,
#      S+1, … as --repeat gives them), twice, so that every scenario+seed runs twice:
#      SOAK_DIR/scenarios/pass-{1,2}.xml (JUnit) and .log;
#   4. stops stress-ng and prints tools/soak-report.py's verdict: the tests that failed in some
#      runs but not all (flaky_tests), those that failed in every run (failing_tests), and the
#      scenario+seed pairs whose verdict differed between the passes or that failed
#      (scenario_flakes). Exit status 0 only when all three are 0 and every run left results.
#
# Environment: SWIFT, SWIFT_FLAGS, PYTHON3, MAKE (make), SOAK_RUNS, SOAK_REPEATS, SOAK_DIR (build/soak).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
SWIFT="${SWIFT:-swift}"
SWIFT_FLAGS="${SWIFT_FLAGS:-}"
PYTHON3="${PYTHON3:-python3}"
MAKE="${MAKE:-make}"
RUNS="${SOAK_RUNS:-20}"
REPEATS="${SOAK_REPEATS:-1000}"
DIR="${SOAK_DIR:-build/soak}"

say() { printf 'soak: %s\n' "$*"; }
die() { printf 'soak: error: %s\n' "$*" >&2; exit 2; }
case "$RUNS" in ''|*[!0-9]*|0) die "SOAK_RUNS must be a count of 1 or more, not '$RUNS'" ;; esac
case "$REPEATS" in ''|*[!0-9]*|0) die "SOAK_REPEATS must be a count of 1 or more, not '$REPEATS'" ;; esac
command -v stress-ng >/dev/null || die "stress-ng is not installed (make soak installs it: apt-get install stress-ng)"

rm -rf "$DIR"
mkdir -p "$DIR/tests" "$DIR/scenarios"

say "building the tests and blelab"
# shellcheck disable=SC2086
"$SWIFT" build --build-tests $SWIFT_FLAGS
# shellcheck disable=SC2086
BLELAB="$("$SWIFT" build --show-bin-path $SWIFT_FLAGS)/blelab"

# --- load: stress-ng on every core, in its own process group ------------------------------------
CORES="$(nproc)"
STRESS=""
stop_stress() {
  if [ -n "$STRESS" ]; then
    kill -TERM -- "-$STRESS" 2>/dev/null || true
    wait "$STRESS" 2>/dev/null || true
    STRESS=""
  fi
}
trap stop_stress EXIT
trap 'stop_stress; exit 130' INT TERM
# Not a job-control shell: the background child is no group leader, so setsid makes it one
# without forking, and $! is stress-ng's pid and process group.
setsid stress-ng --cpu "$CORES" --timeout 0 --quiet &
STRESS=$!
sleep 1
kill -0 "$STRESS" 2>/dev/null || die "stress-ng did not start"
say "stress-ng: $CORES CPU workers (process group $STRESS)"

# --- make test, SOAK_RUNS times ------------------------------------------------------------------
for i in $(seq 1 "$RUNS"); do
  start=$SECONDS
  "$MAKE" --no-print-directory test SWIFT="$SWIFT" SWIFT_FLAGS="$SWIFT_FLAGS" PYTHON3="$PYTHON3" \
    TEST_RESULTS="$DIR/tests/run-$i.xml" > "$DIR/tests/run-$i.log" 2>&1 || true
  say "make test $i/$RUNS: $(tail -1 "$DIR/tests/run-$i.log") ($((SECONDS - start)) s)"
done

# --- the scenarios, SOAK_REPEATS times, twice -----------------------------------------------------
for pass in 1 2; do
  start=$SECONDS
  "$BLELAB" run scenarios --repeat "$REPEATS" --quiet --junit "$DIR/scenarios/pass-$pass.xml" \
    > "$DIR/scenarios/pass-$pass.log" 2>&1 || true
  say "scenarios/ × $REPEATS, pass $pass: $(grep -E '^[0-9]+ passed' "$DIR/scenarios/pass-$pass.log" | tail -1) ($((SECONDS - start)) s)"
done

stop_stress
tests=()
for i in $(seq 1 "$RUNS"); do tests+=("$DIR/tests/run-$i.xml"); done
"$PYTHON3" tools/soak-report.py --tests "${tests[@]}" --scenarios "$DIR/scenarios/pass-1.xml" "$DIR/scenarios/pass-2.xml"
