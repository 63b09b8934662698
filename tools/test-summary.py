#!/usr/bin/env python3
"""tools/test-summary.py [--status N] XUNIT.xml [XUNIT.xml …] — the end of `make test`.

`swift test --parallel` ends with Swift Testing's "Test run with 0 tests in 0 suites passed"
(this package's tests are XCTest), which reads as if nothing ran. This prints, from the xUnit
files `swift test --xunit-output FILE` wrote (FILE for XCTest, FILE's name with
-swift-testing for Swift Testing; a missing second file counts as none), the failed tests
by name, then one line: `N passed, N failed`. A test that crashed counts as failed. swift
test's xUnit output does not mark skipped tests (XCTSkip): they count as passed.

Exit status 1 when a test failed, when no test ran at all, when the first file is missing or
unreadable, or when --status (swift test's own exit status) is not 0; else 0.
"""
import sys
import xml.etree.ElementTree as ET


def read(path):
    """(passed, failed) test names of one xUnit file."""
    passed, failed = [], []
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '?')}.{case.get('name', '?')}"
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(name)
        else:
            passed.append(name)
    return passed, failed


def main(argv):
    status = 0
    if len(argv) >= 2 and argv[0] == "--status":
        status = int(argv[1])
        argv = argv[2:]
    if not argv:
        print("usage: test-summary.py [--status N] XUNIT.xml [XUNIT.xml …]", file=sys.stderr)
        return 2
    passed, failed = [], []
    ok = True
    for i, path in enumerate(argv):
        try:
            p, f = read(path)
        except FileNotFoundError:
            if i == 0:
                print(f"test-summary: {path} is missing: swift test wrote no results (did it start?)")
                ok = False
            continue
        except ET.ParseError as e:
            print(f"test-summary: {path} is not xUnit XML ({e})")
            ok = False
            continue
        passed += p
        failed += f
    for name in sorted(failed):
        print(f"failed: {name}")
    if not passed and not failed:
        print("test-summary: no test ran")
        ok = False
    if status != 0 and not failed:
        print(f"test-summary: swift test exited with status {status} though no test failed (see above)")
    print(f"{len(passed)} passed, {len(failed)} failed")
    return 0 if ok and not failed and status == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
