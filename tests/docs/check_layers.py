#!/usr/bin/env python3
"""The programs and libraries are what docs/architecture.md says, and their
dependencies go one way (issue 33).

Usage: check_layers.py REPO_ROOT

Reads the CMake targets of every folder outside tests/ (add_library,
add_executable, target_link_libraries) and checks:

1. docs/architecture.md's layers (the first ``` block of "Programs and
   libraries": lines "N  targets  folder"): every target on one line, and
   every target it links on a lower N; and its table ("Programs and libraries": a row per
   folder, `folder/` | `targets` | what | `the project's libraries it
   links`) names every such folder, its targets and the project libraries
   its targets link directly (not counting its own), no more, no less;
2. the link graph of the project's targets has no cycle;
3. every `#include "x"` of a folder's .c and .h resolves to the folder
   itself, to a folder whose target the folder links (directly or through
   another library), or to a header the folder's own CMakeLists.txt
   generates; `sagas/v1/*.pb-c.h` is proto/'s generated code;
4. the folders' include graph so resolved has no cycle.

Prints each problem; exit 0 when there is none, 1 otherwise, 2 on a usage
error.
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_paths import repo_files  # noqa: E402 (git ls-files, or a walk)

SECTION = "## Programs and libraries"


def cmake_targets(root, files):
    """Return ({folder: [targets]}, {target: set of linked names}) for every
    CMakeLists.txt outside tests/ and the top level."""
    folders, links = {}, {}
    for f in sorted(files):
        if os.path.basename(f) != "CMakeLists.txt" or "/" not in f or f.startswith("tests/"):
            continue
        text = open(os.path.join(root, f), encoding="utf-8").read()
        text = re.sub(r"#[^\n]*", "", text)
        folder = os.path.dirname(f)
        for kind, name in re.findall(r"\badd_(library|executable)\(\s*([\w-]+)", text):
            folders.setdefault(folder, []).append(name)
            links.setdefault(name, set())
        for name, args in re.findall(r"\btarget_link_libraries\(\s*([\w-]+)([^)]*)\)", text):
            links.setdefault(name, set()).update(args.split())
    ours = set(links)
    for t in links:
        links[t] = {x for x in links[t] if x in ours}
    return folders, links


def closure(t, links):
    """Return every project target t links, directly or not."""
    seen, todo = set(), [t]
    while todo:
        for d in links.get(todo.pop(), ()):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def cycle(graph):
    """Return one cycle of graph ({node: set of nodes}) as a list, or None."""
    state = {}

    def visit(n, path):
        state[n] = 1
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return path[path.index(m):] + [m]
            if m not in state:
                c = visit(m, path + [m])
                if c:
                    return c
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            c = visit(n, [n])
            if c:
                return c
    return None


def doc_section(root):
    """Return docs/architecture.md's section SECTION, or None."""
    text = open(os.path.join(root, "docs/architecture.md"), encoding="utf-8").read()
    i = text.find(SECTION)
    return None if i < 0 else text[i:]


def doc_layers(section, targets):
    """Return {target: [layers]} from the first ``` block of section, for
    the names in targets."""
    out = {}
    block = section.split("```")[1] if section.count("```") >= 2 else ""
    for line in block.split("\n"):
        m = re.match(r"(\d+)\s+(.*)", line)
        if m:
            names = " ".join(w for w in m.group(2).split() if "/" not in w)
            for w in re.findall(r"[\w-]+", names):
                if w in targets:
                    out.setdefault(w, []).append(int(m.group(1)))
    return out


def doc_table(text):
    """Return {folder: (targets, deps)} from the table of section text."""
    rows = {}
    i = 0
    for line in text[i:].split("\n")[1:]:
        if line.startswith("## "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4 or not re.match(r"`[\w/]+/`\Z", cells[0]):
            continue
        rows[cells[0].strip("`").rstrip("/")] = (set(re.findall(r"`([\w-]+)`", cells[1])),
                                                 set(re.findall(r"`([\w-]+)`", cells[3])))
    return rows


def main(argv):
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    root = argv[1]
    files = repo_files(root)
    folders, links = cmake_targets(root, files)
    owner = {t: f for f, ts in folders.items() for t in ts}
    problems = []

    # 1. the layers and the table
    section = doc_section(root)
    if section is None:
        problems.append("docs/architecture.md: no section '%s'" % SECTION)
        section = ""
    layer = doc_layers(section, links)
    for t in sorted(links):
        if len(layer.get(t, [])) != 1:
            problems.append("docs/architecture.md: %s is on %d lines of the layers, not one"
                            % (t, len(layer.get(t, []))))
    for t in sorted(links):
        for d in sorted(links[t]):
            if t in layer and d in layer and layer[d][0] >= layer[t][0]:
                problems.append("docs/architecture.md: %s (layer %d) links %s (layer %d), not lower"
                                % (t, layer[t][0], d, layer[d][0]))
    rows = doc_table(section)
    for f, ts in sorted(folders.items()):
        deps = set().union(*(links[t] for t in ts)) - set(ts)
        if f not in rows:
            problems.append("docs/architecture.md: no row for %s/ (targets %s)" % (f, " ".join(ts)))
            continue
        dts, ddeps = rows[f]
        if dts != set(ts):
            problems.append("docs/architecture.md: %s/ has targets %s, the table says %s"
                            % (f, " ".join(sorted(ts)), " ".join(sorted(dts))))
        if ddeps != deps:
            problems.append("docs/architecture.md: %s/ links %s, the table says %s"
                            % (f, " ".join(sorted(deps)) or "nothing of ours",
                               " ".join(sorted(ddeps)) or "nothing"))
    for f in sorted(set(rows) - set(folders)):
        problems.append("docs/architecture.md: a row for %s/, which has no target" % f)

    # 2. the link graph
    c = cycle(links)
    if c:
        problems.append("link cycle: " + " -> ".join(c))

    # 3. includes, by folder
    may = {}
    for f, ts in folders.items():
        reach = set().union(*(closure(t, links) for t in ts))
        may[f] = {owner[t] for t in reach if t in owner} - {f}
    graph = {f: set() for f in folders}
    for src in sorted(files):
        f = os.path.dirname(src)
        if not src.endswith((".c", ".h")):
            continue
        while f and f not in folders:
            f = os.path.dirname(f)
        if not f:
            continue
        text = open(os.path.join(root, src), encoding="utf-8", errors="replace").read()
        cmake = open(os.path.join(root, f, "CMakeLists.txt"), encoding="utf-8").read()
        for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
            if os.path.normpath(os.path.join(os.path.dirname(src), inc)) in files:
                continue  # the folder's own header
            if re.match(r"sagas/v1/\w+\.pb-c\.h\Z", inc):
                homes = {"proto"}
            else:
                homes = {d for d in may[f] if os.path.join(d, inc) in files}
                if not homes:
                    if os.path.basename(inc).split(".")[0] in cmake:
                        continue  # generated by the folder's own CMakeLists.txt
                    where = sorted(os.path.dirname(x) for x in files if x.endswith("/" + inc))
                    problems.append("%s: includes \"%s\" from %s, which %s/ does not link"
                                    % (src, inc, " or ".join(where) or "nowhere", f))
                    continue
            if not homes & may[f]:
                problems.append("%s: includes \"%s\" from %s/, which %s/ does not link"
                                % (src, inc, " or ".join(sorted(homes)), f))
            if len(homes) > 1:
                problems.append("%s: \"%s\" is in several folders it links: %s"
                                % (src, inc, " ".join(sorted(homes))))
            graph[f] |= homes

    # 4. the include graph
    c = cycle(graph)
    if c:
        problems.append("include cycle between folders: " + " -> ".join(c))

    for p in problems:
        print("FAIL: " + p, file=sys.stderr)
    if problems:
        return 1
    print("%d folders, %d targets: the table matches CMake, links and includes go one way"
          % (len(folders), len(links)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
