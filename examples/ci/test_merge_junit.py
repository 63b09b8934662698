#!/usr/bin/env python3
"""Tests of merge-junit.py (run by examples/ci/lint.sh, part of `make test`).

The shard files are shaped like blelab's own --junit output: <testsuites name="blelab"> holding
<testsuite name="blelab.TIER"> with one <testcase> per scenario run, <skipped>/<failure> inside.
"""
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
MERGE = os.path.join(HERE, "merge-junit.py")


def shard(cases, tier="blelab.sim"):
    """A blelab-like JUnit document: cases are (classname, name, time, outcome) with outcome
    None (passed), "skipped" or "failure"."""
    failures = sum(1 for c in cases if c[3] == "failure")
    skipped = sum(1 for c in cases if c[3] == "skipped")
    total = sum(c[2] for c in cases)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<testsuites name="blelab" tests="{len(cases)}" failures="{failures}" errors="0" '
             f'skipped="{skipped}" time="{total:.3f}">',
             f'  <testsuite name="{tier}" tests="{len(cases)}" failures="{failures}" errors="0" '
             f'skipped="{skipped}" time="{total:.3f}">']
    for classname, name, time, outcome in cases:
        if outcome is None:
            lines.append(f'    <testcase name="{name}" classname="{classname}" time="{time:.3f}"/>')
        else:
            inner = ('<skipped message="requires sim, not vhci"/>' if outcome == "skipped"
                     else '<failure message="step 3: expected u8:73, seen u8:72">report</failure>')
            lines.append(f'    <testcase name="{name}" classname="{classname}" time="{time:.3f}">{inner}</testcase>')
    lines += ['  </testsuite>', '</testsuites>']
    return "\n".join(lines) + "\n"


class MergeJUnitTests(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def merge(self, *args):
        out = os.path.join(self.dir.name, "merged.xml")
        run = subprocess.run([sys.executable, MERGE, "-o", out, *args], capture_output=True, text=True)
        return run, out

    def test_passing_shards_merge_into_one_suite_with_summed_counts(self):
        a = self.write("junit-1.xml", shard([("scenarios.seeds.a", "A", 1.5, None),
                                             ("scenarios.seeds.c", "C", 0.5, "skipped")]))
        b = self.write("junit-2.xml", shard([("scenarios.seeds.b", "B", 2.0, None)]))
        run, out = self.merge("--expect", "2", a, b)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("2 passed, 0 failed, 1 skipped (from 2 shard files)", run.stdout)
        root = ET.parse(out).getroot()
        self.assertEqual(root.tag, "testsuites")
        self.assertEqual((root.get("tests"), root.get("failures"), root.get("skipped")), ("3", "0", "1"))
        suites = root.findall("testsuite")
        self.assertEqual([s.get("name") for s in suites], ["blelab.sim"])
        self.assertEqual([c.get("name") for c in suites[0].findall("testcase")], ["A", "C", "B"])
        self.assertEqual(suites[0].get("time"), "4.000")

    def test_properties_are_kept_and_virtual_time_summed(self):
        def with_properties(text, virtual):
            suite = (f'    <properties><property name="tier" value="sim"/><property name="virtual_time" value="{virtual}"/></properties>\n'
                     '    <testcase')
            text = text.replace("    <testcase", suite, 1)
            return text.replace('time="1.500"/>', 'time="1.500"><properties><property name="seed" value="7"/></properties></testcase>')
        a = self.write("junit-1.xml", with_properties(shard([("scenarios.seeds.a", "A", 1.5, None)]), "2.250"))
        b = self.write("junit-2.xml", with_properties(shard([("scenarios.seeds.b", "B", 2.0, None)]), "0.750"))
        run, out = self.merge("--expect", "2", a, b)
        self.assertEqual(run.returncode, 0, run.stderr)
        suite = ET.parse(out).getroot().find("testsuite")
        self.assertEqual([(p.get("name"), p.get("value")) for p in suite.findall("properties/property")],
                         [("tier", "sim"), ("virtual_time", "3.000")])
        self.assertEqual(suite.find("testcase/properties/property").get("value"), "7")

    def test_a_failure_in_one_shard_fails_the_merge_and_keeps_its_report(self):
        a = self.write("junit-1.xml", shard([("scenarios.seeds.a", "A", 1.0, None)]))
        b = self.write("junit-2.xml", shard([("scenarios.seeds.b", "B", 1.0, "failure")]))
        run, out = self.merge(a, b)
        self.assertEqual(run.returncode, 1)
        self.assertIn("1 passed, 1 failed, 0 skipped", run.stdout)
        failure = ET.parse(out).getroot().find("testsuite/testcase[@name='B']/failure")
        self.assertIsNotNone(failure)
        self.assertEqual(failure.get("message"), "step 3: expected u8:73, seen u8:72")

    def test_a_missing_shard_report_is_an_error(self):
        a = self.write("junit-1.xml", shard([("scenarios.seeds.a", "A", 1.0, None)]))
        run, _ = self.merge("--expect", "2", a)
        self.assertEqual(run.returncode, 2)
        self.assertIn("1 shard file(s), expected 2", run.stderr)

    def test_overlapping_shards_are_an_error(self):
        a = self.write("junit-1.xml", shard([("scenarios.seeds.a", "A", 1.0, None)]))
        b = self.write("junit-2.xml", shard([("scenarios.seeds.a", "A", 1.0, None)]))
        run, _ = self.merge(a, b)
        self.assertEqual(run.returncode, 2)
        self.assertIn("the shards overlap", run.stderr)

    def test_an_empty_shard_counts_and_tiers_stay_apart(self):
        empty = self.write("junit-1.xml", shard([]))
        vhci = self.write("junit-2.xml", shard([("scenarios.seeds.a", "A", 1.0, None)], tier="blelab.vhci"))
        run, out = self.merge("--expect", "2", empty, vhci)
        self.assertEqual(run.returncode, 0, run.stderr)
        names = [s.get("name") for s in ET.parse(out).getroot().findall("testsuite")]
        self.assertEqual(names, ["blelab.sim", "blelab.vhci"])

    def test_a_file_that_is_not_junit_is_an_error(self):
        bad = self.write("junit-1.xml", "<html><body>502 Bad Gateway</body></html>\n")
        run, _ = self.merge(bad)
        self.assertEqual(run.returncode, 2)
        self.assertIn("not <testsuites> or <testsuite>", run.stderr)
        broken = self.write("junit-2.xml", "<testsuites><testsuite name='x'>")
        run, _ = self.merge(broken)
        self.assertEqual(run.returncode, 2)


if __name__ == "__main__":
    unittest.main(verbosity=1)
