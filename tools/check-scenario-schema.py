#!/usr/bin/env python3
"""tools/check-scenario-schema.py --blelab BIN --check-jsonschema BIN — `make schema-check`:

1. `blelab schema` prints schema/blelab-scenario.schema.json as shipped (else: run `make schema`);
2. every scenario in scenarios/ (and examples/) and every valid file in schema/tests/ validates against it with
   check-jsonschema (a file the lab accepts must never be refused in an editor), and the
   schema/tests/ files are valid to `blelab validate` too;
3. the broken fixtures listed in schema/tests/broken-fixtures.txt fail as listed: `schema` ones
   with a schema error, `yaml` ones as unparsable YAML, `validate` ones pass the schema.

Prints one line per finding and the counts; exits 1 on a finding.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = "schema/blelab-scenario.schema.json"
BROKEN = "Tests/ScenarioEngineTests/Fixtures/broken"
LIST = "schema/tests/broken-fixtures.txt"


def check_jsonschema(tool, files):
    """{file: 'ok' | 'schema' | 'yaml'} for each file, from check-jsonschema's JSON output."""
    run = subprocess.run([tool, "--schemafile", SCHEMA, "-o", "json"] + files, cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        report = json.loads(run.stdout)
    except json.JSONDecodeError:
        sys.exit("schema-check: check-jsonschema gave no report:\n" + run.stdout + run.stderr)
    verdicts = {f: "ok" for f in files}
    messages = {}
    for error in report.get("errors", []):
        verdicts[error["filename"]] = "schema"
        messages.setdefault(error["filename"], f"{error['path']}: {error['message']}")
    for error in report.get("parse_errors", []):
        verdicts[error["filename"]] = "yaml"
        messages.setdefault(error["filename"], error["message"])
    return verdicts, messages


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--blelab", required=True)
    parser.add_argument("--check-jsonschema", required=True)
    args = parser.parse_args()
    findings = []

    printed = subprocess.run([args.blelab, "schema"], cwd=ROOT, stdout=subprocess.PIPE, check=True).stdout
    with open(os.path.join(ROOT, SCHEMA), "rb") as f:
        if f.read() != printed:
            findings.append(f"{SCHEMA} is not what `blelab schema` prints: run `make schema` and commit it")

    scenarios = sorted(glob.glob("scenarios/**/*.yaml", root_dir=ROOT, recursive=True)
                       + glob.glob("examples/**/*.yaml", root_dir=ROOT, recursive=True))
    valid_fixtures = sorted(glob.glob("schema/tests/*.yaml", root_dir=ROOT))
    verdicts, messages = check_jsonschema(args.check_jsonschema, scenarios + valid_fixtures)
    for f, verdict in verdicts.items():
        if verdict != "ok":
            findings.append(f"{f}: a valid scenario that the schema refuses ({verdict}): {messages.get(f, '')}")
    validate = subprocess.run([args.blelab, "validate"] + valid_fixtures, cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    if validate.returncode != 0:
        findings.append("schema/tests/ holds a file blelab refuses (each must be valid):\n" + validate.stdout)

    listed = {}
    with open(os.path.join(ROOT, LIST), encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            kind, _, name = line.partition(" ")
            if kind not in ("schema", "yaml", "validate") or not name:
                findings.append(f"{LIST}:{number}: expected 'schema|yaml|validate NAME', not '{line}'")
                continue
            listed[name] = kind
    fixtures = sorted(glob.glob(f"{BROKEN}/*.yaml", root_dir=ROOT))
    verdicts, messages = check_jsonschema(args.check_jsonschema, fixtures)
    names = {os.path.basename(f): f for f in fixtures}
    for name, kind in sorted(listed.items()):
        if name not in names:
            findings.append(f"{LIST}: {name} is no fixture in {BROKEN}")
            continue
        got = verdicts[names[name]]
        want = "ok" if kind == "validate" else kind
        if got != want:
            said = {"ok": "passes the schema", "schema": "fails the schema", "yaml": "is not YAML"}[got]
            findings.append(f"{BROKEN}/{name}: listed as '{kind}' but {said}" + (f": {messages[names[name]]}" if got != "ok" else ""))
    unlisted = sorted(set(names) - set(listed))
    for name in unlisted:
        print(f"schema-check: {BROKEN}/{name} is not in {LIST} (the schema says: {verdicts[names[name]]})")

    for finding in findings:
        print("schema-check: " + finding)
    counts = {k: sum(1 for v in listed.values() if v == k) for k in ("schema", "yaml", "validate")}
    print(f"schema-check: {len(scenarios)} scenarios and {len(valid_fixtures)} files of schema/tests valid; broken fixtures: "
          f"{counts['schema']} refused by the schema, {counts['yaml']} not YAML, {counts['validate']} left to blelab validate"
          + (f", {len(unlisted)} not listed" if unlisted else ""))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
