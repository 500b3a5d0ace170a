"""The report of ci/tune-simulate.sh (issue 15): reads the `fragstate tune --simulate` JSON lines
in OUT_DIR/*.jsonl (or *.jsonl.gz) and writes OUT_DIR/RESULTS.md, OUT_DIR/summary.json and PNG plots there.

    python tune_simulate_report.py OUT_DIR RUNS_DIR

RUNS_DIR holds the real runs the calibration replays (their summary.json and latency.csv, read with
tune_report's definitions of a violation). Every figure is over the simulated runs of one policy:
nearest-rank medians and 90th percentiles, means; "paired" compares a controller with fixed 120 s
on the same kills, seed by seed.
"""

import glob
import gzip
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tune_report  # noqa: E402

CONSTRAINTS = (1000.0, 120.0)  # Khaos's defaults, the simulations' constraints
FRONTIER_SET = "controller-committed"  # the run of every fixed interval (ci/tune-simulate.sh); the others pair with fixed 120 s


def read(out):
    """{file name without .jsonl: {"policies": [...], "runs": [...]}}"""
    sets = {}
    for path in sorted(glob.glob(os.path.join(out, "*.jsonl")) + glob.glob(os.path.join(out, "*.jsonl.gz"))):
        name = os.path.basename(path).split(".jsonl")[0]
        s = {"policies": [], "runs": []}
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
            for line in f:
                d = json.loads(line)
                if d["event"] == "simulated policy":
                    s["policies"].append(d)
                elif d["event"] == "simulated run":
                    s["runs"].append(d)
        sets[name] = s
    return sets


def measured(runs_dir):
    """Violations and checkpoint seconds of each committed real run."""
    out = {}
    for s in tune_report.load(runs_dir):
        if s["mode"] != "experiments" and not s.get("failure"):
            out[s["name"]] = {"violations": tune_report.violations(s, CONSTRAINTS),
                              "checkpoints": s.get("checkpoints_completed"),
                              "checkpoint_s": s.get("checkpoint_seconds_total")}
    return out


def calibration(sets, real):
    rows = []
    for name, s in sets.items():
        if not name.startswith("calibration-"):
            continue
        rate = float(name[len("calibration-"):])
        by = {p["policy"]: p for p in s["policies"]}
        ctl = by["controller"]
        fixed = by["fixed:120"]
        per_kill = next(r["outcome"]["seconds_above_per_kill"] for r in s["runs"] if r["policy"] == "controller")
        rows.append({"catch_up_rate": rate, "controller_violations": ctl["violations_median"],
                     "controller_seconds_above_per_kill": per_kill, "controller_checkpoints": ctl["checkpoints_median"],
                     "fixed_120_violations_median": fixed["violations_median"], "fixed_120_violations_p90": fixed["violations_p90"],
                     "fixed_120_lost_s_mean": fixed["lost_s_mean"]})
    rows.sort(key=lambda r: r["catch_up_rate"])
    return {"rates": rows, "measured": real}


def policies(sets):
    rows = []
    for name, s in sets.items():
        if name.startswith("calibration-"):
            continue
        by = {p["policy"]: p for p in s["policies"]}
        for p in s["policies"]:
            is_fixed = p["policy"].startswith("fixed:")
            if is_fixed and name != FRONTIER_SET:
                continue  # the fixed 120 s each controller is paired with; the frontier set has it too
            row = {k: v for k, v in p.items() if not k.startswith("controller_")}
            if not is_fixed and "fixed:120" in by:
                row["paired_with_fixed_120"] = {"fewer_violations_share": by["fixed:120"]["controller_fewer_violations_share"],
                                                "more_violations_share": by["fixed:120"]["controller_more_violations_share"]}
            rows.append(dict(row, set=name, figures="-" if is_fixed else name.rsplit("-", 1)[1]))
    fixed = sorted((r for r in rows if r["policy"].startswith("fixed:")), key=lambda r: float(r["policy"][6:]))
    ctl = sorted((r for r in rows if not r["policy"].startswith("fixed:")), key=lambda r: (r["figures"], r["policy"]))
    for c in ctl:
        # the cheapest fixed intervals that spend no more checkpoint time, and whether the controller beats them
        cheaper = [f for f in fixed if f["checkpoint_s_median"] <= c["checkpoint_s_median"]]
        best = min(cheaper, key=lambda f: f["violations_mean"]) if cheaper else None
        c["best_fixed_within_its_checkpoint_time"] = best["policy"] if best else None
        c["fewer_violations_than_that_fixed"] = best is not None and c["violations_mean"] < best["violations_mean"]
        c["fewer_violations_than_every_fixed"] = all(c["violations_mean"] < f["violations_mean"] for f in fixed)
    return fixed, ctl


def table(fixed, ctl):
    lines = ["| policy | figures | violations: median | p90 | mean | checkpoints (median) | checkpoint time (s, median) | work lost per kill (s, mean) | paired with fixed 120 s: fewer / more violations |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in fixed + ctl:
        paired = "-"
        if "paired_with_fixed_120" in r:
            p = r["paired_with_fixed_120"]
            paired = "%.0f %% / %.0f %%" % (100 * p["fewer_violations_share"], 100 * p["more_violations_share"])
        lines.append("| %s | %s | %g | %g | %.1f | %g | %.1f | %.0f | %s |" % (
            r["policy"], r["figures"], r["violations_median"], r["violations_p90"], r["violations_mean"],
            r["checkpoints_median"], r["checkpoint_s_median"], r["lost_s_mean"], paired))
    return lines


def save(fig, ax, xlabel, ylabel, title, path):
    """Both plots: a log x axis, labels, grid and legend, written to path."""
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_frontier(fixed, ctl, out):
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.plot([f["checkpoint_s_median"] for f in fixed], [f["violations_mean"] for f in fixed], "o-", color="grey",
            label="Flink's periodic trigger (fixed)")
    for f in fixed:
        ax.annotate(f["policy"][6:] + " s", (f["checkpoint_s_median"], f["violations_mean"]), textcoords="offset points",
                    xytext=(4, 4), fontsize=8, color="grey")
    markers = {"committed": ("s", "tab:red"), "corrected": ("^", "tab:blue")}
    for c in ctl:
        m, color = markers.get(c["figures"], ("x", "black"))
        ax.plot(c["checkpoint_s_median"], c["violations_mean"], m, color=color)
        ax.annotate(c["policy"].replace("controller-budget:", "budget "), (c["checkpoint_s_median"], c["violations_mean"]),
                    textcoords="offset points", xytext=(4, -10), fontsize=8, color=color)
    for name, (m, color) in markers.items():
        ax.plot([], [], m, color=color, label="controller, %s figures" % name)
    save(fig, ax, "checkpoint time per run (s, median; log scale)", "QoS violations per run (mean)",
         "Policies over the same draws of the kills", os.path.join(out, "frontier.png"))


def plot_calibration(cal, out):
    rows = cal["rates"]
    if not rows:
        return False
    fig, ax = plt.subplots(figsize=(8, 4.5))
    x = [r["catch_up_rate"] for r in rows]
    ax.plot(x, [r["controller_violations"] for r in rows], "s-", color="tab:red", label="controller (time lost), simulated")
    ax.plot(x, [r["fixed_120_violations_median"] for r in rows], "o-", color="grey", label="fixed 120 s, simulated median")
    ax.fill_between(x, [0] * len(x), [r["fixed_120_violations_p90"] for r in rows], color="grey", alpha=0.15,
                    label="fixed 120 s, simulated up to p90")
    styles = {"controller": "tab:red", "fixed-120s": "black"}
    for name, m in cal["measured"].items():
        if name in styles:
            ax.axhline(m["violations"], color=styles[name], ls="--", lw=1, label="%s, measured" % name)
    save(fig, ax, "the simulated job's catch-up rate (records/s; log scale)", "QoS violations in the run",
         "Calibration: the committed eight-kill runs replayed", os.path.join(out, "calibration.png"))
    return True


def main():
    out, runs_dir = sys.argv[1], sys.argv[2]
    sets = read(out)
    cal = calibration(sets, measured(runs_dir))
    fixed, ctl = policies(sets)
    plots = []
    if fixed:
        plot_frontier(fixed, ctl, out)
        plots.append("frontier.png")
    if plot_calibration(cal, out):
        plots.append("calibration.png")
    runs = sum(len(s["runs"]) for s in sets.values())
    summary = {"simulated_runs": runs, "calibration": cal, "fixed": fixed, "controllers": ctl, "plots": plots}
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    lines = ["# Checkpoint-interval policies, simulated (`ci/tune-simulate.sh`)", "",
             "%d simulated runs. Violations: seconds above %d ms plus recoveries above %d s (Khaos's defaults)." % (runs, CONSTRAINTS[0], CONSTRAINTS[1]),
             "", "## Calibration: the committed runs' kills replayed", "",
             "| catch-up rate (records/s) | controller: violations (per kill) | checkpoints | fixed 120 s: violations median / p90 | work lost per kill (mean, s) |",
             "| ---: | --- | ---: | --- | ---: |"]
    for r in cal["rates"]:
        lines.append("| %g | %g (%s) | %g | %g / %g | %.0f |" % (
            r["catch_up_rate"], r["controller_violations"], ", ".join(str(v) for v in r["controller_seconds_above_per_kill"]),
            r["controller_checkpoints"], r["fixed_120_violations_median"], r["fixed_120_violations_p90"], r["fixed_120_lost_s_mean"]))
    lines += ["", "Measured in those runs: " + "; ".join("%s %d violations, %s checkpoints" % (n, m["violations"], m["checkpoints"])
                                                    for n, m in sorted(cal["measured"].items())), ""]
    lines += ["## Policies over the same draws of the kills", ""] + table(fixed, ctl) + [""]
    for c in ctl:
        lines.append("- %s (%s figures): fewer violations (mean) than the best fixed interval within its checkpoint time (%s): %s; than every fixed interval: %s"
                     % (c["policy"], c["figures"], c["best_fixed_within_its_checkpoint_time"], c["fewer_violations_than_that_fixed"],
                        c["fewer_violations_than_every_fixed"]))
    lines += [""] + ["![%s](%s)" % (p, p) for p in plots]
    with open(os.path.join(out, "RESULTS.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
