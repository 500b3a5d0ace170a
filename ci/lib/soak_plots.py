"""PNG plots of a soak's samples (ci/soak.sh): one per series.

    python soak_plots.py OUT_DIR

reads OUT_DIR/nodes.csv (one row per node per sample) and OUT_DIR/job.csv (one row per sample),
writes OUT_DIR/<series>.png: one line per node for the node series, the job's series alone.
Runs in the venv ci/lib/soak-plots.sh makes (matplotlib pinned there).
"""
import csv
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

NODE_SERIES = {
    "rss_bytes": ("resident memory", "MiB", 1 / 2**20),
    "heap_bytes": ("fragstate's live heap", "MiB", 1 / 2**20),
    "fds": ("open file descriptors", "fds", 1),
    "fragment_fds": ("descriptors on fragment files", "fds", 1),
    "tombstones": ("tombstones", "entries", 1),
    "tombstone_file_bytes": ("tombstone file", "KiB", 1 / 2**10),
    "store_bytes": ("fragment bytes stored", "MiB", 1 / 2**20),
}
JOB_SERIES = {
    "checkpoint_ms": ("checkpoint duration per sample (end to end)", "ms", ["checkpoint_p50_ms", "checkpoint_p99_ms"]),
    "records_per_second": ("job input rate (poi-filter numRecordsInPerSecond, sum)", "records/s", ["records_per_second"]),
    "objects_deleted_total": ("fragstate objects deleted (cumulative)", "objects", ["objects_deleted_total"]),
}


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def save(fig, ax, out, name, title, unit):
    ax.set_title(title)
    ax.set_xlabel("minute")
    ax.set_ylabel(unit)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="best")
    fig.tight_layout()
    fig.savefig(out / f"{name}.png", dpi=110)
    plt.close(fig)


def main(out):
    nodes = read(out / "nodes.csv")
    job = read(out / "job.csv")
    for series, (title, unit, scale) in NODE_SERIES.items():
        by_node = defaultdict(list)
        for r in nodes:
            v = float(r[series])
            if v >= 0:
                by_node[r["node"]].append((float(r["minute"]), v * scale))
        fig, ax = plt.subplots(figsize=(9, 4.5))
        for node in sorted(by_node):
            xs, ys = zip(*by_node[node])
            ax.plot(xs, ys, marker=".", label=node)
        save(fig, ax, out, series, title, unit)
    for name, (title, unit, cols) in JOB_SERIES.items():
        fig, ax = plt.subplots(figsize=(9, 4.5))
        for col in cols:
            pts = [(float(r["minute"]), float(r[col])) for r in job if float(r[col]) >= 0]
            if pts:
                xs, ys = zip(*pts)
                ax.plot(xs, ys, marker=".", label=col)
        save(fig, ax, out, name, title, unit)
    print(f"plots written to {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
