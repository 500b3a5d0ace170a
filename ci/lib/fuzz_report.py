"""Summarises a ci/fuzz.sh run: usage `fuzz_report.py OUT TARGET...`.

Reads each target's AFL++ `fuzzer_stats` and `plot_data` under OUT/<target>/default/ and writes
OUT/summary.json, OUT/RESULTS.md and, when matplotlib is importable (ci/lib/plot-venv.sh), OUT/edges.png
(edges found against executions, one line per target). Prints the table. Exits 1 when any target
saved a crash or a hang (listing their inputs), 2 when a target left no statistics (it did not run).
"""
import json
import os
import sys

FIELDS = ["execs_done", "execs_per_sec", "run_time", "corpus_count", "edges_found", "total_edges",
          "bitmap_cvg", "stability", "saved_crashes", "saved_hangs", "peak_rss_mb"]


def read_stats(path):
    stats = {}
    with open(path) as f:
        for line in f:
            key, _, value = line.partition(":")
            stats[key.strip()] = value.strip()
    return stats


def read_plot(path):
    """(total_execs, edges_found) rows of AFL++'s plot_data; [] when absent."""
    if not os.path.exists(path):
        return []
    rows = []
    with open(path) as f:
        header = [h.strip() for h in f.readline().lstrip("# ").split(",")]
        if "total_execs" not in header or "edges_found" not in header:
            return []
        ie, ig = header.index("total_execs"), header.index("edges_found")
        for line in f:
            cols = [c.strip() for c in line.split(",")]
            if len(cols) > max(ie, ig):
                rows.append((int(cols[ie]), int(cols[ig])))
    return rows


def main():
    out, targets = sys.argv[1], sys.argv[2:]
    summary, findings, missing, plots = {}, [], [], {}
    for t in targets:
        d = os.path.join(out, t, "default")
        stats_file = os.path.join(d, "fuzzer_stats")
        if not os.path.exists(stats_file):
            missing.append(t)
            continue
        s = read_stats(stats_file)
        summary[t] = {k: s.get(k) for k in FIELDS}
        for kind in ("crashes", "hangs"):
            kd = os.path.join(d, kind)
            if os.path.isdir(kd):
                findings += [os.path.join(kd, f) for f in sorted(os.listdir(kd)) if f.startswith("id:")]
        plots[t] = read_plot(os.path.join(d, "plot_data"))
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"targets": summary, "findings": findings, "missing": missing}, f, indent=2)

    lines = ["| target | executions | execs/s | run time (s) | corpus | edges found / instrumented | stability | crashes | hangs |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for t, s in summary.items():
        lines.append(f"| {t} | {int(s['execs_done'] or 0):,} | {float(s['execs_per_sec'] or 0):,.0f} | {s['run_time']} | "
                     f"{s['corpus_count']} | {s['edges_found']} / {s['total_edges']} | {s['stability']} | "
                     f"{s['saved_crashes']} | {s['saved_hangs']} |")
    total = sum(int(s["execs_done"] or 0) for s in summary.values())
    table = "\n".join(lines)
    with open(os.path.join(out, "RESULTS.md"), "w") as f:
        f.write("# Fuzzing run (ci/fuzz.sh)\n\n"
                "AFL++ (cargo-afl, persistent mode, one process per target). Executions and edges from each\n"
                "target's `fuzzer_stats`; edges are those of the instrumented binary, which holds every crate\n"
                "the targets link (libp2p included), so the ratio is not the decoders' own coverage.\n\n"
                + table + f"\n\n{total:,} executions in all.\n")
        if findings:
            f.write("\n## Findings\n\n" + "\n".join(f"- `{p}`" for p in findings) + "\n")
    print(table)
    print(f"{total:,} executions in all")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(8, 5))
        for t, rows in plots.items():
            if rows:
                ax.plot([r[0] for r in rows], [r[1] for r in rows], label=t)
        ax.set_xscale("log")  # AFL++ writes plot_data about once a minute; most edges come early
        ax.set_xlabel("executions (log scale)")
        ax.set_ylabel("edges found")
        ax.set_title("Coverage over executions, per fuzz target")
        ax.legend(fontsize="small")
        fig.tight_layout()
        fig.savefig(os.path.join(out, "edges.png"), dpi=100)
    except ImportError:
        print("matplotlib not importable: no edges.png (ci/lib/plot-venv.sh installs it)")

    if missing:
        print("ERROR: no statistics for " + ", ".join(missing) + " (afl-fuzz did not run; see OUT/<target>.log)",
              file=sys.stderr)
        sys.exit(2)
    if findings:
        print("ERROR: crashes or hangs found:\n  " + "\n  ".join(findings), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
