#!/usr/bin/env python3
"""Merge the JUnit files of a sharded BLELab run into one report.

    merge-junit.py [--expect N] [-o OUT.xml] SHARD.xml [SHARD.xml ...]

Each shard ran `blelab run --shard I/N ... --junit junit-I.xml`; blelab writes
<testsuites><testsuite name="blelab.TIER">testcase...</testsuite></testsuites>. The merged
file has one <testsuite> per suite name (the tier), holding every shard's testcases in order,
with tests/failures/errors/skipped/time summed (time: the sum of the shards' own times, i.e.
machine time, not the wall time of the matrix), and the same totals on <testsuites>. Each
testcase keeps its <properties> (seed, tier, virtual_time, reproduce); a merged suite keeps its
shards' suite properties, the first value of each but `virtual_time`, which is summed.

Prints `N passed, F failed, S skipped (from K shard files)` and exits
  0  every testcase passed or was skipped,
  1  some testcase failed or errored,
  2  bad input: an unreadable or non-JUnit file, fewer files than --expect (a shard whose job
     died before writing its report), or a testcase that appears in two shards (the shards
     overlap: --shard was given wrong).
Only the Python standard library: it runs on any CI image that has python3.
"""
import argparse
import sys
import xml.etree.ElementTree as ET

COUNTS = ("tests", "failures", "errors", "skipped")


def fail(message):
    print(f"merge-junit: error: {message}", file=sys.stderr)
    sys.exit(2)


def suites_of(path):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as error:
        fail(f"{path}: {error}")
    if root.tag == "testsuite":
        return [root]
    if root.tag != "testsuites":
        fail(f"{path}: the root element is <{root.tag}>, not <testsuites> or <testsuite>")
    return list(root.iter("testsuite"))


def main():
    parser = argparse.ArgumentParser(description="Merge sharded BLELab JUnit files.")
    parser.add_argument("files", nargs="+", metavar="SHARD.xml")
    parser.add_argument("-o", "--output", default="junit.xml", help="merged file (default junit.xml)")
    parser.add_argument("--expect", type=int, help="how many shard files there must be")
    parser.add_argument("--name", default="blelab", help="the <testsuites> name (default blelab)")
    args = parser.parse_args()
    if args.expect is not None and len(args.files) != args.expect:
        fail(f"{len(args.files)} shard file(s), expected {args.expect}: a shard wrote no report")

    merged = {}  # suite name -> <testsuite> element
    seen = {}    # (classname, name) -> file, to find overlapping shards
    properties = {}  # suite name -> {property name: value}, in the order first met
    for path in args.files:
        for suite in suites_of(path):
            name = suite.get("name", "blelab")
            target = merged.get(name)
            if target is None:
                target = ET.Element("testsuite", {"name": name})
                merged[name] = target
                properties[name] = {}
            for prop in suite.findall("properties/property"):
                key, value = prop.get("name", ""), prop.get("value", "")
                if key == "virtual_time" and key in properties[name]:
                    try:
                        value = f"{float(properties[name][key]) + float(value):.3f}"
                    except ValueError:
                        fail(f"{path}: virtual_time {value!r} is not a number of seconds")
                properties[name].setdefault(key, value)
                if key == "virtual_time":
                    properties[name][key] = value
            for case in suite.findall("testcase"):
                key = (case.get("classname", ""), case.get("name", ""), name)
                if key in seen and seen[key] != path:
                    fail(f"testcase {key[0]} / {key[1]} is in {seen[key]} and in {path}: the shards overlap")
                seen[key] = path
                target.append(case)

    root = ET.Element("testsuites", {"name": args.name})
    totals = dict.fromkeys(COUNTS, 0)
    total_time = 0.0
    for name, suite in merged.items():
        if properties[name]:
            element = ET.Element("properties")
            for key, value in properties[name].items():
                ET.SubElement(element, "property", {"name": key, "value": value})
            suite.insert(0, element)
        cases = suite.findall("testcase")
        counts = {
            "tests": len(cases),
            "failures": sum(1 for c in cases if c.find("failure") is not None),
            "errors": sum(1 for c in cases if c.find("error") is not None),
            "skipped": sum(1 for c in cases if c.find("skipped") is not None),
        }
        time = sum(float(c.get("time", "0") or 0) for c in cases)
        for key in COUNTS:
            suite.set(key, str(counts[key]))
            totals[key] += counts[key]
        suite.set("time", f"{time:.3f}")
        total_time += time
        root.append(suite)
    for key in COUNTS:
        root.set(key, str(totals[key]))
    root.set("time", f"{total_time:.3f}")
    ET.indent(root)
    ET.ElementTree(root).write(args.output, encoding="UTF-8", xml_declaration=True)

    bad = totals["failures"] + totals["errors"]
    passed = totals["tests"] - bad - totals["skipped"]
    print(f"{passed} passed, {bad} failed, {totals['skipped']} skipped "
          f"(from {len(args.files)} shard files) -> {args.output}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
