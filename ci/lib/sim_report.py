#!/usr/bin/env python3
"""Plots of a fragstate-sim run (ci/sim.sh): each measurement against the cluster size, one line
per strategy. Reads DIR/summary.json, writes DIR/balance.png, DIR/join-moves.png, DIR/rebalance.png and
DIR/lookups.png (placement) and DIR/membership.png (SWIM), for what the run measured.

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


def plot_membership(runs, out):
    runs = sorted(runs, key=lambda r: r["nodes"])
    xs = [r["nodes"] for r in runs]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.0))
    for key, label in (("dead_p99_ms", "stopped node dead at 99 % of the others"),
                       ("dead_max_ms", "... at all of them"),
                       ("join_p99_ms", "a joining node known to 99 %")):
        left.plot(xs, [(r[key] or float("nan")) / 1000 for r in runs], marker="o", label=label)
    left.axhline(5, linestyle="--", color="red", linewidth=1, label="goal 5 s (dead at 99 %)")
    left.set_ylim(0, 6)
    left.set_ylabel("seconds")
    left.set_title("Failure detection and join spread (SWIM)")
    msgs = [r["idle_messages_per_node_s"] for r in runs]
    peers = [r["idle_peers_per_s_p99"] for r in runs]
    kib = [r["idle_bytes_per_node_s"] / 1024 for r in runs]
    right.plot(xs, msgs, marker="o", label="messages sent / s")
    right.plot(xs, peers, marker="^", label="peers talked to in a second (p99)")
    right.set_ylabel("messages / s, peers")
    right.set_ylim(0, max(msgs + peers) * 1.4)
    bytes_ax = right.twinx()
    bytes_ax.plot(xs, kib, marker="s", color="tab:green", label="KiB sent / s")
    bytes_ax.set_ylabel("KiB / node / s")
    bytes_ax.set_ylim(0, max(kib) * 1.4)
    right.set_title("Idle membership traffic per node")
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xlabel("nodes")
        ax.grid(True, alpha=0.3)
    left.legend(fontsize=8)
    right.legend(handles=right.get_lines() + bytes_ax.get_lines(), fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "membership.png", dpi=110)
    plt.close(fig)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = pathlib.Path(sys.argv[1])
    summary = json.loads((out / "summary.json").read_text())
    rows, runs = summary["rows"], summary.get("membership", [])
    if not rows and not runs:
        sys.exit(f"{out}/summary.json has no rows")
    written = []
    if rows:
        plot(rows, out, "balance.png", "Load balance (fragments per node)", "max / mean",
             lambda r: r["balance"]["max_over_mean"], floor=lambda r: r["balance"]["uniform_max_over_mean"], target=1.15)
        plot(rows, out, "join-moves.png", "Fragments moved when one node joins", "moved / (total / (N+1))",
             lambda r: r["join"]["moved_over_ideal"], target=1.0)
        plot(rows, out, "lookups.png", "Manifest lookups by path after churn: settled in one round trip",
             "share of readable objects", lambda r: r["churn"]["settled_rate"])
        plot(rows, out, "create-misses.png", "Creates after churn: existing objects none of whose holders the create's window asks",
             "share of readable objects", lambda r: r["churn"].get("create_miss_rate", 0.0))
        plot(rows, out, "rebalance.png", "Fragments the rebalancing moves per join",
             "moved / (total / (N+1))", lambda r: r["join"].get("rebalanced_over_ideal", 0.0), target=1.0)
        written += ["balance.png", "join-moves.png", "rebalance.png", "lookups.png", "create-misses.png"]
    if runs:
        plot_membership(runs, out)
        written.append("membership.png")
    print(f"plots written to {out}: {', '.join(written)}")


if __name__ == "__main__":
    main()
