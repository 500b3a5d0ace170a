#!/usr/bin/env python3
"""Checks the layering of the Rust workspace (ARCHITECTURE.md), so that it cannot rot:

1. crates depend only downwards: core <- store <- client <- net <- node <- jni / cli;
2. fragstate-core has no I/O or runtime dependency (no tokio, libp2p, jni, clap, futures);
3. inside every crate, the modules' `use crate::...` / `crate::...` references form no cycle;
4. no Rust source file is over 550 lines (tests excepted).

Exits 1 naming every violation. Run from anywhere: python3 ci/check_layers.py
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent / "rust-core"
# Each crate may depend on the crates before it in this order, never after.
LAYERS = ["core", "store", "client", "net", "node", "tune", "sim", "jni", "cli", "fuzz"]
CORE_FORBIDDEN = {"tokio", "libp2p", "libp2p-stream", "jni", "clap", "futures", "async-trait"}
MAX_LINES = 550


def dependencies(crate):
    """Names of the [dependencies] (not dev-dependencies) of a crate's Cargo.toml."""
    deps, section = set(), None
    for line in (ROOT / crate / "Cargo.toml").read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == "[dependencies]" and line and not line.startswith("#"):
            deps.add(re.split(r"[ .=]", line, maxsplit=1)[0])
    return deps


def module_name(src, path):
    rel = path.relative_to(src).with_suffix("")
    parts = [p for p in rel.parts if p not in ("mod",)]
    return "::".join(parts) if parts not in (["lib"], ["main"]) else "crate"


def module_graph(src):
    mods = {module_name(src, p): p for p in src.rglob("*.rs")}
    graph = {}
    for name, path in mods.items():
        text = path.read_text()
        # The tests module of a file is part of it; ignore references inside line comments.
        text = "\n".join(line.split("//")[0] for line in text.splitlines())
        targets = set()
        for m in re.finditer(r"\bcrate::([a-z_][a-z0-9_]*(?:::[a-z_][a-z0-9_]*)*)", text):
            parts = m.group(1).split("::")
            # the longest prefix that names a module of this crate
            for n in range(len(parts), 0, -1):
                cand = "::".join(parts[:n])
                if cand in mods:
                    if cand != name:
                        targets.add(cand)
                    break
        graph[name] = targets
    return graph


def find_cycle(graph):
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for t in sorted(graph.get(n, ())):
            if state.get(t) == 1:
                return stack[stack.index(t):] + [t]
            if state.get(t) is None:
                c = visit(t)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if state.get(n) is None:
            c = visit(n)
            if c:
                return c
    return None


def main():
    problems = []
    crates = sorted(p.name for p in ROOT.iterdir() if (p / "Cargo.toml").exists())
    if sorted(crates) != sorted(LAYERS):
        problems.append(f"crates {crates} differ from the layers {LAYERS}: update ci/check_layers.py and ARCHITECTURE.md")
    for i, crate in enumerate(LAYERS):
        if crate not in crates:
            continue
        deps = dependencies(crate)
        for j, other in enumerate(LAYERS):
            if f"fragstate-{other}" in deps and j >= i:
                problems.append(f"fragstate-{crate} depends on fragstate-{other}, a layer at or above it")
        if crate == "core":
            for d in sorted(deps & CORE_FORBIDDEN):
                problems.append(f"fragstate-core depends on {d}: the core must stay free of I/O and runtimes")
        src = ROOT / crate / "src"
        cycle = find_cycle(module_graph(src))
        if cycle:
            problems.append(f"fragstate-{crate}: import cycle " + " -> ".join(cycle))
        for path in src.rglob("*.rs"):
            n = len(path.read_text().splitlines())
            if n > MAX_LINES and path.name != "tests.rs":
                problems.append(f"{path.relative_to(ROOT.parent)}: {n} lines (at most {MAX_LINES}); split it by concern")
    for p in problems:
        print(f"check_layers: {p}", file=sys.stderr)
    if problems:
        return 1
    print(f"check_layers: {len(crates)} crates layered {' <- '.join(LAYERS)}, no module import cycle, no source file over {MAX_LINES} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
