#!/usr/bin/env python3
"""The module graph of docs/architecture.md, drawn from Package.swift: a Graphviz DOT of the package's
library and executable targets (and system libraries), with the edges that Package.swift declares
after transitive reduction (an edge A → C is left out when A reaches C through another target), so
the picture shows the layers and stays readable. Test targets, test-support targets (under Tests/)
and plugins (build tools, not imports) are left out; the example apps (under Examples/) are one node.
Targets sit in rows by their longest path to a target without dependencies, bottom up.

  package-graph.py --dot docs/architecture.dot --svg docs/architecture.svg   (make graph; runs dot)
  package-graph.py --check --dot docs/architecture.dot --svg docs/architecture.svg   (make check-edges)

--check fails (exit 1) when the committed DOT differs from the one Package.swift gives now, or when
the committed SVG was not rendered from that DOT. The DOT is compared as text: it is this script's
own deterministic output, while dot's SVG varies with the Graphviz version and its fonts. The SVG is
tied to the DOT by the graph's `comment` attribute (a hash of the graph), which dot copies into the
SVG, so the check needs no Graphviz. The package as SwiftPM reads it (`swift package dump-package`,
or --dump FILE with that JSON).
"""
import argparse
import hashlib
import importlib.util
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("check_package_edges", os.path.join(HERE, "check-package-edges.py"))
edges = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(edges)

EXAMPLES = "Examples"
MARK = "module graph "  # no hyphen: dot escapes "-" in SVG comments


def node_of(target):
    """The node a target is drawn as, or None when it is not drawn."""
    if target["type"] not in ("regular", "executable", "system"):
        return None  # tests, plugins, binary and macro targets
    path = target.get("path") or edges.default_path(target)
    top = path.replace("\\", "/").split("/")[0]
    if top == "Examples":
        return EXAMPLES
    if top == "Tests":
        return None
    return target["name"]


def graph(package):
    """(nodes {name: kind}, edges {(from, to)}) after grouping, before reduction."""
    nodes, arrows = {}, set()
    by_name = {t["name"]: t for t in package["targets"]}
    examples = []
    for target in package["targets"]:
        node = node_of(target)
        if node is None:
            continue
        if node == EXAMPLES:
            examples.append(target["name"])
        nodes[node] = "executable" if target["type"] == "executable" else target["type"]
        for dependency in target.get("dependencies", []):
            name = edges.dependency_name(dependency)
            if name not in by_name:
                continue  # another package's product: not drawn
            to = node_of(by_name[name])
            if to is not None and to != node:
                arrows.add((node, to))
    if examples:
        nodes[EXAMPLES] = "examples:" + ", ".join(sorted(examples))
    return nodes, arrows


def reduce(nodes, arrows):
    """The transitive reduction of the DAG, and each node's row: (kept arrows, {node: row}). An arrow
    (a, c) goes when a reaches c through another target; a node's row is the length of its longest
    path down (0: no dependencies)."""
    out = {n: sorted(b for a, b in arrows if a == n) for n in nodes}
    below, row = {}, {}

    def visit(n, stack=()):
        if n in stack:
            sys.exit(f"package-graph: a dependency cycle through {n}")
        if n not in below:
            found, longest = set(), -1
            for m in out[n]:
                visit(m, stack + (n,))
                found |= {m} | below[m]
                longest = max(longest, row[m])
            below[n], row[n] = found, longest + 1
        return below[n]

    for n in sorted(nodes):
        visit(n)
    kept = {(a, b) for a, b in arrows if not any(b in below[m] for m in out[a] if m != b)}
    return kept, row


def quote(text):
    return '"' + text.replace('"', '\\"') + '"'


def dot(package):
    """The DOT text: deterministic for a given package."""
    nodes, arrows = graph(package)
    kept, level = reduce(nodes, arrows)
    body = []
    for row in range(max(level.values(), default=0), -1, -1):
        names = sorted(n for n in nodes if level[n] == row)
        if not names:
            continue
        body.append(f"  {{ rank=same; // row {row}")
        for name in names:
            kind = nodes[name]
            if kind.startswith("examples:"):
                apps = kind[len("examples:"):].split(", ")
                label = f"example apps ({len(apps)})\\n" + "\\n".join(apps)
                body.append(f"    {quote(name)} [label={quote(label)}, shape=note, style=dashed];")
            elif kind == "executable":
                body.append(f"    {quote(name)} [shape=box, style=\"rounded,bold\"];")
            elif kind == "system":
                body.append(f"    {quote(name)} [shape=box, style=dashed];")
            else:
                body.append(f"    {quote(name)};")
        body.append("  }")
    for a, b in sorted(kept):
        body.append(f"  {quote(a)} -> {quote(b)};")
    digest = hashlib.sha256("\n".join(body).encode()).hexdigest()[:16]
    head = [
        "// Generated by tools/package-graph.py from Package.swift (make graph); do not edit.",
        "// Arrows point from a target to what it imports; an arrow implied by a longer path is left out.",
        f"digraph {quote(package.get('name', 'package'))} {{",
        f"  comment={quote(MARK + digest)};",
        "  rankdir=TB; ranksep=0.45; nodesep=0.25;",
        '  node [shape=box, style=rounded, fontname="Helvetica,Arial,sans-serif", fontsize=11, height=0.3];',
        "  edge [arrowsize=0.6, color=\"#555555\"];",
    ]
    return "\n".join(head + body + ["}"]) + "\n", MARK + digest


def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.join(HERE, ".."))
    parser.add_argument("--dump", help="the JSON of `swift package dump-package` (default: run it)")
    parser.add_argument("--dot", required=True, help="the DOT file, relative to --root")
    parser.add_argument("--svg", help="the SVG file, relative to --root")
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    arguments = parser.parse_args()
    root = os.path.abspath(arguments.root)
    if arguments.dump:
        with open(arguments.dump, encoding="utf-8") as f:
            package = json.load(f)
    else:
        swift = os.environ.get("SWIFT", "swift")
        result = subprocess.run([swift, "package", "dump-package"], cwd=root, capture_output=True, text=True)
        if result.returncode != 0:
            sys.stderr.write(result.stderr)
            sys.exit(f"package-graph: {swift} package dump-package failed ({result.returncode})")
        package = json.loads(result.stdout)
    text, mark = dot(package)
    dot_path = os.path.join(root, arguments.dot)
    svg_path = os.path.join(root, arguments.svg) if arguments.svg else None

    if arguments.check:
        problems = []
        if read(dot_path) != text:
            problems.append(f"{arguments.dot} is not the graph of Package.swift")
        if svg_path is not None:
            svg = read(svg_path)
            if svg is None or f"<!-- {mark} -->" not in svg:
                problems.append(f"{arguments.svg} was not rendered from the graph of Package.swift")
        for line in problems:
            print(f"package-graph: {line}; run make graph")
        if problems:
            sys.exit(1)
        print(f"package-graph: {arguments.dot}{' and ' + arguments.svg if svg_path else ''} "
              f"show Package.swift's graph")
        return

    with open(dot_path, "w", encoding="utf-8") as f:
        f.write(text)
    if svg_path is not None:
        result = subprocess.run(["dot", "-Tsvg", "-o", svg_path, dot_path], capture_output=True, text=True)
        if result.returncode != 0:
            sys.stderr.write(result.stderr)
            sys.exit(f"package-graph: dot failed ({result.returncode})")
        if f"<!-- {mark} -->" not in read(svg_path):
            sys.exit(f"package-graph: dot did not copy the graph's comment into {arguments.svg}")
    print(f"package-graph: wrote {arguments.dot}{' and ' + arguments.svg if svg_path else ''}")


if __name__ == "__main__":
    main()
