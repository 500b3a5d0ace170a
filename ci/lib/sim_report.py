#!/usr/bin/env python3
"""Plots of a fragstate-sim run (ci/sim.sh): each measurement against the cluster size, one line
per strategy. Reads DIR/summary.json, writes DIR/balance.png, DIR/join-moves.png and
DIR/lookups.png.

Usage: sim_report.py DIR
"""
import json
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def series(rows, strategy, value):
    pts = sorted((r["nodes"], value(r)) for r in rows if r["strategy"] == strategy)
    return [p[0] for p in pts], [p[1] for p in pts]


def plot(rows, out, name, title, ylabel, value, floor=None, target=None):
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for strategy in sorted({r["strategy"] for r in rows}):
        xs, ys = series(rows, strategy, value)
        ax.plot(xs, ys, marker="o", label=strategy)
    if floor:
        xs, ys = series(rows, rows[0]["strategy"], floor)
        ax.plot(xs, ys, linestyle=":", color="grey", label="uniform hashing (statistical floor)")
    if target is not None:
        ax.axhline(target, linestyle="--", color="red", linewidth=1, label=f"goal {target}")
    ax.set_xscale("log")
    ax.set_xlabel("storage nodes")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / name, dpi=110)
    plt.close(fig)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = pathlib.Path(sys.argv[1])
    rows = json.loads((out / "summary.json").read_text())["rows"]
    if not rows:
        sys.exit(f"{out}/summary.json has no rows")
    plot(rows, out, "balance.png", "Load balance (fragments per node)", "max / mean",
         lambda r: r["balance"]["max_over_mean"], floor=lambda r: r["balance"]["uniform_max_over_mean"], target=1.15)
    plot(rows, out, "join-moves.png", "Fragments moved when one node joins", "moved / (total / (N+1))",
         lambda r: r["join"]["moved_over_ideal"], target=1.0)
    plot(rows, out, "lookups.png", "Manifest lookups by path after churn: settled in one round trip", "share of readable objects",
         lambda r: r["churn"]["settled_rate"])
    print(f"plots written to {out}: balance.png, join-moves.png, lookups.png")


if __name__ == "__main__":
    main()
