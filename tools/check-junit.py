#!/usr/bin/env python3
"""tools/check-junit.py --blelab BIN --out DIR — `make junit-check`: what `blelab run --junit`
writes, read by junitparser (PyPI; its xunit2 dialect, which has properties on test cases), as a
CI system would read it.

Runs a passing scenario, a failing one and one the sim skips into DIR/junit.xml, then checks:
the counts; each case's `time` (wall seconds) and its properties seed, tier, virtual_time and
reproduce; the suite's tier and virtual time; the failure's message; the skip's reason; and that
the failing case's reproduce line, run as written, fails again. Exits 1 naming what is wrong.
"""
import argparse
import os
import shlex
import subprocess
import sys

from junitparser import Failure, Skipped
from junitparser.xunit2 import JUnitXml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PASSING = "scenarios/seeds/hm10-serial.yaml"
FAILING = "Tests/ScenarioEngineTests/Fixtures/failing/deliberate-failure.yaml"
SKIPPED = "tools/junit-check/skipped-on-sim.yaml"

findings = []


def expect(condition, what):
    if not condition:
        findings.append(what)
    return condition


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--blelab", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "junit.xml")
    run = subprocess.run([args.blelab, "run", "--quiet", "--junit", path, PASSING, FAILING, SKIPPED], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    expect(run.returncode == 1, f"blelab run exited {run.returncode}, not 1 (a scenario failed):\n{run.stdout}")

    report = JUnitXml.fromfile(path)
    suites = list(report)
    if not expect(len(suites) == 1, f"{len(suites)} test suites, not 1"):
        return finish()
    suite = suites[0]
    expect(suite.name == "blelab.sim", f"suite name {suite.name!r}")
    expect((suite.tests, suite.failures, suite.errors, suite.skipped) == (3, 1, 0, 1),
           f"suite counts tests/failures/errors/skipped {suite.tests}/{suite.failures}/{suite.errors}/{suite.skipped}, not 3/1/0/1")
    expect(suite.time is not None and suite.time >= 0, f"suite time {suite.time!r}")
    suite_properties = {p.name: p.value for p in suite.properties()}
    expect(suite_properties.get("tier") == "sim", f"suite properties {suite_properties}")
    suite_virtual = number(suite_properties.get("virtual_time"))

    cases = {case.classname: case for case in suite}
    virtual_sum = 0.0
    for file, outcome in ((PASSING, "passed"), (FAILING, "failed"), (SKIPPED, "skipped")):
        classname = file[:-len(".yaml")].replace("/", ".")
        case = cases.get(classname)
        if not expect(case is not None, f"no test case with classname {classname} (have {sorted(cases)})"):
            continue
        expect(isinstance(case.time, float) and case.time >= 0, f"{classname}: time {case.time!r} is no number of seconds")
        properties = {p.name: p.value for p in case.properties()}
        expect(list(properties) == ["seed", "tier", "virtual_time", "reproduce"], f"{classname}: properties {list(properties)}")
        seed = properties.get("seed", "")
        expect(seed.isdigit(), f"{classname}: seed {seed!r}")
        expect(properties.get("tier") == "sim", f"{classname}: tier {properties.get('tier')!r}")
        virtual = number(properties.get("virtual_time"))
        expect(virtual is not None and virtual >= 0, f"{classname}: virtual_time {properties.get('virtual_time')!r}")
        virtual_sum += virtual or 0
        reproduce = properties.get("reproduce", "")
        expect(reproduce == f"blelab run {file} --seed {seed}", f"{classname}: reproduce {reproduce!r}")
        results = case.result
        if outcome == "passed":
            expect(case.is_passed and virtual and virtual > 0, f"{classname}: passed with a virtual time, not {results} {virtual}")
        elif outcome == "failed":
            failure = results[0] if results else None
            if expect(isinstance(failure, Failure), f"{classname}: not a failure: {results}"):
                expect(failure.message.startswith("expected a notification of FFE1"), f"{classname}: failure message {failure.message!r}")
                expect(failure.type == "expectation", f"{classname}: failure type {failure.type!r}")
            # The reproduce line, as written, with this blelab: fails again, the same way.
            words = shlex.split(reproduce)
            again = subprocess.run([args.blelab] + words[1:], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            expect(again.returncode == 1 and "expected: a notification of FFE1" in again.stdout,
                   f"{classname}: the reproduce line exited {again.returncode}:\n{again.stdout}")
        else:
            skip = results[0] if results else None
            if expect(isinstance(skip, Skipped), f"{classname}: not skipped: {results}"):
                expect(skip.message == "requires vhci, not sim", f"{classname}: skip message {skip.message!r}")
            expect(virtual == 0, f"{classname}: a skipped run with virtual time {virtual}")
    expect(suite_virtual is not None and abs(suite_virtual - virtual_sum) < 0.0015 * 3,
           f"suite virtual_time {suite_virtual} is not the cases' {virtual_sum}")
    return finish()


def finish():
    for finding in findings:
        print("junit-check: " + finding)
    print(f"junit-check: {'ok' if not findings else str(len(findings)) + ' findings'} (blelab run --junit read by junitparser)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
