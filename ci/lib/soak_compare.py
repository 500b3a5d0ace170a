"""Soak runs side by side: a markdown table of their figures and one PNG.

    $(ci/lib/plot-venv.sh) ci/lib/soak_compare.py --out FIGURE.png [--title TITLE] LABEL=RUN_DIR ...

Each RUN_DIR is a folder `ci/soak.sh --out` wrote (job.csv, summary.json). The table
(objects deleted a minute, checkpoints, checkpoint p50 and p99 over the run, and the p50 of
the first and last sampled minutes, to show a trend) goes to stdout; the figure has the
cumulative deletes and each minute's checkpoint p50 against time, one line per run.
Needs matplotlib (ci/lib/plot-venv.sh installs the pinned one).
"""

import argparse
import csv
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(run_dir):
    with open(os.path.join(run_dir, "job.csv")) as f:
        job = list(csv.DictReader(f))
    with open(os.path.join(run_dir, "summary.json")) as f:
        summary = json.load(f)
    return job, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="the PNG to write")
    ap.add_argument("--title", default="soak runs side by side")
    ap.add_argument("runs", nargs="+", metavar="LABEL=RUN_DIR")
    args = ap.parse_args()
    runs = []
    for spec in args.runs:
        label, sep, run_dir = spec.partition("=")
        if not sep or not label or not os.path.isfile(os.path.join(run_dir, "job.csv")):
            sys.exit(f"soak_compare: '{spec}' is not LABEL=RUN_DIR with RUN_DIR/job.csv")
        runs.append((label, run_dir) + load(run_dir))

    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    print("| run | objects deleted / min | checkpoints | checkpoint p50 | p99 | p50 first → last minute |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for label, _, job, summary in runs:
        fig_ = summary["figures"]
        minutes = [float(r["minute"]) for r in job]
        ax[0].plot(minutes, [int(r["objects_deleted_total"]) for r in job], label=label)
        p50 = [r for r in job if int(r["checkpoint_p50_ms"]) >= 0]
        ax[1].plot([float(r["minute"]) for r in p50], [int(r["checkpoint_p50_ms"]) for r in p50], label=label)
        trend = f"{int(p50[0]['checkpoint_p50_ms']):,} → {int(p50[-1]['checkpoint_p50_ms']):,} ms" if p50 else "–"
        print(f"| {label} | {fig_['objectsDeletedPerMinute']:,.0f} | {fig_['checkpoints']:,} | "
              f"{fig_['checkpointP50Ms']:,} ms | {fig_['checkpointP99Ms']:,} ms | {trend} |")
    ax[0].set_xlabel("minute")
    ax[0].set_ylabel("objects deleted (cumulative)")
    ax[0].legend(fontsize="small")
    ax[1].set_xlabel("minute")
    ax[1].set_ylabel("checkpoint duration p50 in the minute (ms)")
    ax[1].set_ylim(bottom=0)
    fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.out, dpi=90)


if __name__ == "__main__":
    main()
