#!/usr/bin/env python3
"""tools/soak-report.py --tests RUN.xml… --scenarios PASS.xml… — the verdict of `make soak`.

--tests: the xUnit files of the `make test` runs (one per run, in order). A test is flaky when
it failed in some runs and passed in others; failing when it failed in every run it ran in.
A run whose file is missing or unreadable (the build broke, swift test never started) counts
as a broken run.

--scenarios: blelab's JUnit files of the passes over scenarios/ with --repeat (testcases
named "NAME (run K of R, seed S)", class names from the file). A scenario+seed is a flake when
its verdict differed between the passes, when it failed or errored in any pass, or when a pass
lacks it.

Prints the names, then `flaky_tests: N`, `failing_tests: N`, `scenario_flakes: N` (the last
lines). Exit status 1 unless all three are 0 and no run is broken.
"""
import re
import sys
import xml.etree.ElementTree as ET

REPEATED = re.compile(r"^(?P<name>.*) \(run \d+ of \d+, seed (?P<seed>\d+)\)$")


def outcome(case):
    if case.find("failure") is not None or case.find("error") is not None:
        return "failed"
    if case.find("skipped") is not None:
        return "skipped"
    return "passed"


def cases(path):
    return list(ET.parse(path).getroot().iter("testcase"))


def main(argv):
    tests, scenarios, into = [], [], None
    for a in argv:
        if a == "--tests":
            into = tests
        elif a == "--scenarios":
            into = scenarios
        elif into is None:
            print("usage: soak-report.py --tests RUN.xml… --scenarios PASS.xml…", file=sys.stderr)
            return 2
        else:
            into.append(a)

    # make test runs
    broken = []
    per_test = {}  # name -> [outcome per run it appeared in]
    count = 0
    for path in tests:
        try:
            found = cases(path)
        except (FileNotFoundError, ET.ParseError) as e:
            broken.append(f"{path}: {e}")
            continue
        if not found:
            broken.append(f"{path}: no test ran")
            continue
        count = max(count, len(found))
        for c in found:
            per_test.setdefault(f"{c.get('classname')}.{c.get('name')}", []).append(outcome(c))
    flaky = sorted(n for n, o in per_test.items() if "failed" in o and "passed" in o)
    failing = sorted(n for n, o in per_test.items() if "failed" in o and "passed" not in o)
    runs = len(tests) - len(broken)
    print(f"make test: {len(tests)} runs, {runs} with results, up to {count} tests each")
    for b in broken:
        print(f"  broken run: {b}")
    for n in flaky:
        print(f"  flaky: {n} (failed in {per_test[n].count('failed')} of {len(per_test[n])} runs)")
    for n in failing:
        print(f"  failing: {n} (failed in all {len(per_test[n])} runs)")

    # scenario passes
    verdicts = {}  # (file, name, seed) -> {pass index: outcome}
    read = []  # the passes whose file could be read
    for i, path in enumerate(scenarios):
        try:
            found = cases(path)
        except (FileNotFoundError, ET.ParseError) as e:
            broken.append(f"{path}: {e}")
            print(f"  broken pass: {path}: {e}")
            continue
        read.append(i)
        for c in found:
            m = REPEATED.match(c.get("name", ""))
            name, seed = (m.group("name"), m.group("seed")) if m else (c.get("name", ""), "own")
            verdicts.setdefault((c.get("classname", ""), name, seed), {})[i] = outcome(c)
    flakes = []
    for key, by_pass in sorted(verdicts.items()):
        seen = [by_pass.get(i, "missing") for i in read]
        if len(set(seen)) > 1 or "failed" in seen or "missing" in seen:
            flakes.append((key, seen))
    print(f"scenarios: {len(scenarios)} passes, {len(read)} with results, {len(verdicts)} scenario+seed pairs")
    for (cls, name, seed), seen in flakes:
        print(f"  flake: {name} ({cls}) seed {seed}: {', '.join(seen)}")

    print(f"flaky_tests: {len(flaky)}")
    print(f"failing_tests: {len(failing)}")
    print(f"scenario_flakes: {len(flakes)}")
    return 0 if not flaky and not failing and not flakes and not broken else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
