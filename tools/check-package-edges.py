#!/usr/bin/env python3
"""Package.swift's edges equal the imports: for every Swift target of the package, each module its
sources import is a declared dependency, and each declared dependency is imported somewhere in
them. Also: every library module a stand-in for an app's test target (APP_TEST_TARGETS) depends
on is a library product, so that an app's package can depend on it. Fails (exit 1) naming each
difference; `make check-edges`, part of `make test`.

The package as SwiftPM reads it (`swift package dump-package`, or --dump FILE with that JSON).
Imports are read from every *.swift file under the target's folder: `import X`, `@testable
import X`, `import struct X.Y`, including those inside `#if` (a dependency needed on one platform
is declared on all). Modules of the toolchain and platforms (Glibc, Foundation, XCTest, …) are
not targets and not checked. Plugins (`plugins:`) are build tools, not imports.
"""
import argparse
import json
import os
import re
import subprocess
import sys

# Modules that come with the toolchain or the platform, never from this package.
PLATFORM_MODULES = {
    "Swift", "Glibc", "Musl", "Darwin", "WinSDK", "Foundation", "FoundationEssentials",
    "FoundationNetworking", "FoundationXML", "Dispatch", "XCTest", "Testing", "PackageDescription", "PackagePlugin",
    "CoreBluetooth", "Synchronization", "_Concurrency", "os",
}

IMPORT = re.compile(
    r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*import\s+(?:(?:typealias|struct|class|enum|protocol|let|var|func)\s+)?([A-Za-z_][A-Za-z0-9_]*)",
    re.MULTILINE)
BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
LINE_COMMENT = re.compile(r"//[^\n]*")
STRING_LITERAL = re.compile(r'"""[\s\S]*?"""')


def imports_of(path):
    """Modules imported by the Swift files under path: {module: first file importing it}."""
    found = {}
    for folder, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith(".swift"):
                continue
            file = os.path.join(folder, name)
            with open(file, encoding="utf-8") as f:
                text = f.read()
            text = STRING_LITERAL.sub('""', BLOCK_COMMENT.sub("", text))
            text = LINE_COMMENT.sub("", text)
            for module in IMPORT.findall(text):
                found.setdefault(module, file)
    return found


def dependency_name(dependency):
    for kind in ("byName", "target", "product"):
        if kind in dependency:
            return dependency[kind][0]
    raise ValueError(f"unknown dependency form: {dependency}")


def default_path(target):
    folder = {"test": "Tests", "plugin": "Plugins"}.get(target["type"], "Sources")
    return os.path.join(folder, target["name"])


def check(package, root):
    """The differences, one line each; empty when the edges equal the imports."""
    targets = {t["name"]: t for t in package["targets"]}
    problems = []
    for target in package["targets"]:
        if target["type"] in ("system", "plugin", "binary", "macro"):
            continue
        path = os.path.join(root, target.get("path") or default_path(target))
        if not os.path.isdir(path):
            problems.append(f"{target['name']}: no folder {os.path.relpath(path, root)}")
            continue
        declared = [dependency_name(d) for d in target.get("dependencies", [])]
        imported = imports_of(path)
        for module, file in sorted(imported.items()):
            if module in PLATFORM_MODULES or module == target["name"]:
                continue
            if module not in declared:
                known = "" if module in targets else " (not a target of this package)"
                problems.append(f"{target['name']}: imports {module} ({os.path.relpath(file, root)}) "
                                f"but does not declare it{known}")
        for module in declared:
            if module in targets and targets[module]["type"] == "system":
                # A system library is imported like a module: the same rule.
                pass
            if module not in imported:
                problems.append(f"{target['name']}: declares {module} but no file under "
                                f"{os.path.relpath(path, root)} imports it")
    return problems


# Test targets that stand for an app's own test target (docs/corebluetooth.md): each library
# module of this package they depend on must be a library product, or an app could not import it.
APP_TEST_TARGETS = {"CoreBluetoothLabTests"}


def unexported(package):
    """Modules an app-test stand-in depends on that no library product offers, one line each.
    Examples (under Examples/) and test support (under Tests/) are the package's own."""
    targets = {t["name"]: t for t in package["targets"]}
    offered = set()
    for product in package.get("products", []):
        if "library" in product.get("type", {}):
            offered.update(product.get("targets", []))
    problems = []
    for name in sorted(APP_TEST_TARGETS & set(targets)):
        for module in [dependency_name(d) for d in targets[name].get("dependencies", [])]:
            target = targets.get(module)
            if not target or target["type"] != "regular" or module in offered:
                continue
            if (target.get("path") or "").startswith(("Examples/", "Tests/")):
                continue
            problems.append(f"{name}: depends on {module}, which no library product offers "
                            f"(an app's test target could not import it)")
    return problems


def load_package(root, dump, tool):
    """The package as `swift package dump-package` gives it: read from DUMP when given, else run
    in ROOT; a failure ends TOOL with swift's own error output."""
    if dump:
        with open(dump, encoding="utf-8") as f:
            return json.load(f)
    swift = os.environ.get("SWIFT", "swift")
    result = subprocess.run([swift, "package", "dump-package"], cwd=root, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stderr)
        sys.exit(f"{tool}: {swift} package dump-package failed ({result.returncode})")
    return json.loads(result.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    parser.add_argument("--dump", help="the JSON of `swift package dump-package` (default: run it)")
    arguments = parser.parse_args()
    root = os.path.abspath(arguments.root)
    package = load_package(root, arguments.dump, "check-package-edges")
    problems = check(package, root) + unexported(package)
    for line in problems:
        print(f"check-package-edges: {line}")
    count = sum(1 for t in package["targets"] if t["type"] not in ("system", "plugin", "binary", "macro"))
    if problems:
        print(f"check-package-edges: {len(problems)} difference{'s' if len(problems) != 1 else ''} "
              f"between Package.swift and the imports")
        sys.exit(1)
    print(f"check-package-edges: {count} targets, Package.swift's edges equal their imports")


if __name__ == "__main__":
    main()
