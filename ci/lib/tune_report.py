"""The checkpoint-interval evaluation's report (ci/tune-eval.sh, issue 15): reads the runs RunTuneEval
wrote into OUT_DIR/<run>/ (summary.json, latency.csv, tune.jsonl) and writes OUT_DIR/summary.json,
OUT_DIR/RESULTS.md and PNG plots there.

    python tune_report.py OUT_DIR [FRAGSTATE_BINARY]

QoS violations per run: seconds whose latency is above the latency constraint (from second 60 on),
and recoveries longer than the recovery constraint (or not back to steady before the next kill or
the end). Overhead: completed checkpoints, the sum of their end-to-end durations and the bytes they
wrote. The goal (issue 15): the controller has fewer violations than every fixed interval, with
overhead no higher than the best fixed interval that also meets the constraints.

With FRAGSTATE_BINARY, the recovery predictors are compared on every kill of the fixed and controller
runs (`fragstate tune --predict`): the regression fitted to the experiments against fragstate's
figures (experiments/figures.json), each at the run's interval and the input before the kill.
"""

import csv
import glob
import json
import math
import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(out):
    runs = []
    for path in sorted(glob.glob(os.path.join(out, "*", "summary.json"))):
        with open(path) as f:
            s = json.load(f)
        d = os.path.dirname(path)
        s["dir"] = d
        s["latency"] = []
        lat = os.path.join(d, "latency.csv")
        if os.path.exists(lat):
            with open(lat) as f:
                s["latency"] = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]
        runs.append(s)
    order = {"experiments": 0, "fixed": 1, "controller": 2}
    runs.sort(key=lambda s: (order.get(s["mode"], 3), s.get("fixed_interval_s") or 0, s["name"]))
    return runs


COUNT_FROM_S = 60  # RunTuneEval.COUNT_FROM_S: the job's first windows settle


def seconds_above(s, max_latency_ms):
    return sum(1 for r in s["latency"] if r["second"] >= COUNT_FROM_S and not math.isnan(r["latency_ms"])
               and r["latency_ms"] > max_latency_ms)


def recoveries_above(s, max_recovery_s):
    return sum(1 for k in s.get("kills", []) if not k["recovered"] or k["recovery_s"] > max_recovery_s)


def violations(s, c):
    """QoS violations of run s under constraints c = (max latency ms, max recovery s)."""
    return seconds_above(s, c[0]) + recoveries_above(s, c[1])


def recoveries(s):
    return ", ".join("%.1f" % k["recovery_s"] if k["recovered"] else "not back" for k in s.get("kills", []))


def work_lost(s):
    """Seconds from the latest completed checkpoint's trigger to each kill (runs since 2026-12-05)."""
    lost = [k.get("lost_s") for k in s.get("kills", [])]
    return ", ".join("%.0f" % x if x is not None else "none yet" for x in lost) if any(k is not None for k in lost) else "-"


def constraint_sets(runs):
    """Khaos's defaults and every controller run's own constraints."""
    sets = [(1000.0, 120.0)]
    for s in runs:
        if s["mode"] == "controller":
            c = (s["plan"]["max_latency_ms"], s["plan"]["max_recovery_s"])
            if c not in sets:
                sets.append(c)
    return sets


def table(runs, c):
    lines = ["| run | checkpoints | checkpoint time (s) | checkpointed MB | mean latency (ms) | s above %d ms | recoveries (s) | work lost per kill (s) | recoveries above %d s | violations | exactly once |"
             % c,
             "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: | --- |"]
    for s in runs:
        if s["mode"] == "experiments":
            continue
        if s["mode"] == "controller" and (s["plan"]["max_latency_ms"], s["plan"]["max_recovery_s"]) != c:
            continue
        if s.get("failure"):
            lines.append("| %s | run failed: %s | | | | | | | | | |" % (s["name"], s["failure"].replace("|", "/")))
            continue
        lines.append("| %s | %s | %.1f | %.1f | %.0f | %d of %d | %s | %s | %d | %d | %s |" % (
            s["name"], s.get("checkpoints_completed", "-"), s.get("checkpoint_seconds_total", float("nan")),
            s.get("checkpointed_bytes_total", 0) / 1e6, s.get("mean_latency_ms", float("nan")),
            seconds_above(s, c[0]), s.get("seconds_counted", 0), recoveries(s) or "-", work_lost(s),
            recoveries_above(s, c[1]), violations(s, c), s.get("exactly_once", "-")))
    return lines


def meets(s, c):
    """Run s meets constraints c: every recovery within the recovery constraint, and latency within
    its constraint outside the recoveries (a kill's downtime is judged by the recovery constraint:
    no run with a failure has every second under a sub-second latency constraint)."""
    if recoveries_above(s, c[1]):
        return False
    spans = [(k["kill_at_s"], k["kill_at_s"] + k["recovery_s"]) for k in s.get("kills", [])]
    for r in s["latency"]:
        t = r["second"]
        if t >= COUNT_FROM_S and not math.isnan(r["latency_ms"]) and r["latency_ms"] > c[0] \
                and not any(a <= t <= b + 1 for a, b in spans):
            return False
    return True


def verdicts(runs, c):
    """Issue 15's goal for every controller run under constraints c, against every fixed interval."""
    fixed = [s for s in runs if s["mode"] == "fixed" and not s.get("failure")]
    ctl = [s for s in runs if s["mode"] == "controller" and not s.get("failure")
           and (s["plan"]["max_latency_ms"], s["plan"]["max_recovery_s"]) == c]
    return [verdict(x, fixed, c) for x in ctl] if fixed else []


def verdict(x, fixed, c):
    meeting = [s for s in fixed if meets(s, c)]
    best = min(meeting, key=lambda s: s.get("checkpoint_seconds_total", 0)) if meeting else None
    return {
        "constraints": {"max_latency_ms": c[0], "max_recovery_s": c[1]},
        "controller": x["name"], "controller_violations": violations(x, c),
        "fixed_violations": {s["name"]: violations(s, c) for s in fixed},
        "fewer_violations_than_every_fixed": all(violations(x, c) < violations(s, c) for s in fixed),
        "no_more_violations_than_any_fixed": all(violations(x, c) <= violations(s, c) for s in fixed),
        "controller_meets_constraints": meets(x, c),
        "fixed_meeting_constraints": [s["name"] for s in meeting],
        "best_fixed_meeting_constraints": best["name"] if best else None,
        "controller_checkpoint_seconds": x.get("checkpoint_seconds_total"),
        "best_fixed_checkpoint_seconds": best.get("checkpoint_seconds_total") if best else None,
        "overhead_no_higher_than_best_fixed_meeting_constraints":
            best is None or x.get("checkpoint_seconds_total", 0) <= best.get("checkpoint_seconds_total", 0),
    }


def plot_latency(runs, sets, out):
    shown = [s for s in runs if s["latency"]]
    fig, axes = plt.subplots(len(shown), 1, figsize=(11, 2.2 * len(shown) + 0.5), sharex=True, squeeze=False)
    for ax, s in zip(axes[:, 0], shown):
        t = [r["second"] for r in s["latency"]]
        y = [r["latency_ms"] / 1000 if not math.isnan(r["latency_ms"]) else float("nan") for r in s["latency"]]
        ax.plot(t, y, ".", ms=2.5, label="latency (a second with output or overdue)")
        for i, c in enumerate(sets):
            ax.axhline(c[0] / 1000, color="red", ls=["--", ":", "-."][i % 3], lw=0.8, label="%.0f ms" % c[0])
        for k in s.get("kills", []):
            ax.axvline(k["kill_at_s"], color="black", lw=0.6, ls=":")
        ax.set_yscale("log")
        ax.set_ylabel("s")
        ax.set_title("%s: seconds above %s; recoveries (s) %s" % (s["name"], ", ".join(
            "%.0f ms: %d" % (c[0], seconds_above(s, c[0])) for c in sets), recoveries(s) or "-"), fontsize=9)
    axes[-1, 0].set_xlabel("seconds since the start (dotted: kill -9)")
    axes[0, 0].legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "latency.png"), dpi=110)
    plt.close(fig)


def checkpoint_times(s):
    """When a controller run's checkpoints completed (its tune.jsonl, the decisions' clock)."""
    path = os.path.join(s["dir"], "tune.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        events = [json.loads(line) for line in f if line.strip()]
    return [e["t"] for e in events if e.get("event") == "checkpoint"]


def plot_interval(runs, out):
    ctl = [s for s in runs if s["mode"] == "controller" and s["latency"]]
    if not ctl:
        return
    fig, ax = plt.subplots(figsize=(11, 3.8))
    s = ctl[0]
    ax.plot([r["second"] for r in s["latency"]], [r["input_events_per_s"] for r in s["latency"]], color="gray", lw=0.8,
            label="input (events/s)")
    ax.set_ylabel("events/s")
    ax.set_xlabel("seconds since the start")
    ax2 = ax.twinx()
    top = max([130] + [x["interval_s"] + 10 for s in ctl for x in s.get("decisions", [])])
    for i, s in enumerate(ctl):
        d = s.get("decisions", [])
        if d:
            line, = ax2.step([x["t"] for x in d], [x["interval_s"] for x in d], where="post", label="interval chosen: " + s["name"])
            # the checkpoints it took (a checkpoint budget can hold one the interval says is due)
            taken = checkpoint_times(s)
            ax2.plot(taken, [top * (0.97 - 0.04 * i)] * len(taken), ls="none", marker="|", ms=9, color=line.get_color())
    for k in ctl[0].get("kills", []):
        ax.axvline(k["kill_at_s"], color="black", lw=0.6, ls=":")
    ax2.set_ylabel("checkpoint interval (s)")
    ax2.set_ylim(0, top)
    ax.set_title("controllers: interval chosen vs workload (ticks at the top: checkpoints taken; dotted: kill -9)", fontsize=10)
    fig.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "interval-vs-load.png"), dpi=110)
    plt.close(fig)


def plot_recovery_and_overhead(runs, sets, out):
    shown = [s for s in runs if s["mode"] != "experiments"]
    if not shown:
        return
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 3.8))
    for i, s in enumerate(shown):
        kills = s.get("kills", [])
        width = 0.8 / max(1, len(kills))
        for j, k in enumerate(kills):
            v = k["recovery_s"] if k["recovered"] else max(c[1] for c in sets) * 1.5
            a.bar(i + (j - (len(kills) - 1) / 2) * width, v, width=width * 0.9, color="tab:red" if not k["recovered"] else "tab:blue")
    for i, c in enumerate(sets):
        a.axhline(c[1], color="red", ls=["--", ":", "-."][i % 3], lw=0.8, label="%.0f s" % c[1])
    a.legend(fontsize=8)
    a.set_yscale("log")
    a.set_xticks(range(len(shown)), [s["name"] for s in shown], rotation=20, fontsize=8)
    a.set_ylabel("recovery time (s)")
    a.set_title("recovery per kill (red: not back to steady)", fontsize=9)
    b.bar(range(len(shown)), [s.get("checkpoint_seconds_total", 0) for s in shown])
    b.set_xticks(range(len(shown)), [s["name"] for s in shown], rotation=20, fontsize=8)
    b.set_ylabel("sum of checkpoint durations (s)")
    b.set_title("checkpoint overhead", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "recovery-and-overhead.png"), dpi=110)
    plt.close(fig)


def plot_experiments(runs, out):
    exp = [s for s in runs if s["mode"] == "experiments" and s.get("experiments")]
    if not exp:
        return
    e = exp[0]["experiments"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 3.6))
    sc = a.scatter([x["throughput"] for x in e], [x["recovery_s"] for x in e], c=[x["interval_s"] for x in e], cmap="viridis")
    a.set_xlabel("input before the kill (events/s)")
    a.set_ylabel("recovery time (s)")
    fig.colorbar(sc, ax=a, label="interval (s)")
    b.scatter([x["throughput"] for x in e], [x["latency_ms"] for x in e], c=[x["interval_s"] for x in e], cmap="viridis")
    b.set_xlabel("input (events/s)")
    b.set_ylabel("mean latency before the kill (ms)")
    a.set_title("failure experiments (shadow run)", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "experiments.png"), dpi=110)
    plt.close(fig)


def interval_at(s, t):
    """The interval run s checkpointed at, at second t (the controller: its last decision before t)."""
    if s["mode"] == "fixed":
        return s["fixed_interval_s"]
    chosen = [d["interval_s"] for d in s.get("decisions", []) if d["t"] <= t]
    return chosen[-1] if chosen else None


def predictions(runs, out, binary):
    """fragstate tune --predict on every recovered kill of the fixed and controller runs."""
    exp = [s for s in runs if s["mode"] == "experiments"]
    if not exp or not binary:
        return None
    exp_dir = exp[0]["dir"]
    measured = []
    for s in runs:
        for k in s.get("kills", []) if s["mode"] != "experiments" else []:
            i = interval_at(s, k["kill_at_s"])
            if k["recovered"] and i:
                measured.append({"run": s["name"], "interval_s": i, "throughput": k["input_events_per_s"], "recovery_s": k["recovery_s"]})
    if not measured:
        return None
    path = os.path.join(out, "predictions-input.json")
    with open(path, "w") as f:
        json.dump(measured, f, indent=1)
    cmd = [binary, "tune", "--experiments", os.path.join(exp_dir, "experiments.json"), "--predict", path]
    if os.path.exists(os.path.join(exp_dir, "figures.json")):
        cmd += ["--figures", os.path.join(exp_dir, "figures.json")]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        return {"error": res.stderr.strip()}
    lines = [json.loads(x) for x in res.stdout.splitlines()]
    with open(os.path.join(out, "predictions.jsonl"), "w") as f:
        f.write(res.stdout)
    points = [x for x in lines if x["event"] == "prediction"]
    for m, p in zip(measured, points):
        p["run"] = m["run"]
    return {"points": points, "errors": [x for x in lines if x["event"] == "prediction error"]}


def main(out, binary=None):
    runs = load(out)
    if not runs:
        sys.exit("no runs (*/summary.json) under %s" % out)
    # the evaluated runs' plan (the experiments run may be longer)
    plan = next((s["plan"] for s in runs if s["mode"] != "experiments"), runs[0]["plan"])
    sets = constraint_sets(runs)
    lines = ["# Checkpoint-interval evaluation (issue 15)", "",
             "Written by `ci/lib/tune_report.py` from the runs in this folder (`ci/tune-eval.sh`). "
             "Scale %s (peak %d events/s), %d min per run, the Daedalus profile compressed %dx, kills at the same seeded moments in every run."
             % (plan["scale"], round(99989 * plan["scale"]), plan["minutes"], plan["compression"]), ""]
    goals = []
    for c in sets:
        lines += ["## Constraints: latency <= %.0f ms per second (from second %d), recovery <= %.0f s" % (c[0], COUNT_FROM_S, c[1]), ""]
        lines += table(runs, c)
        for v in verdicts(runs, c):
            goals.append(v)
            lines += ["", "Goal (%s): `%s`" % (v["controller"], json.dumps(v))]
        lines.append("")
    exp = [s for s in runs if s["mode"] == "experiments"]
    if exp:
        lines += ["## Failure experiments (shadow run): %d" % len(exp[0].get("experiments", [])), "",
                  "| interval (s) | input (events/s) | latency (ms) | recovery (s) | back to steady |", "| ---: | ---: | ---: | ---: | --- |"]
        for x in exp[0].get("experiments", []):
            lines.append("| %d | %.0f | %.0f | %.1f | %s |" % (x["interval_s"], x["throughput"], x["latency_ms"], x["recovery_s"], x["recovered"]))
    pred = predictions(runs, out, binary)
    if pred and "error" in pred:
        lines += ["", "Recovery prediction failed: %s" % pred["error"]]
    elif pred:
        lines += ["", "## Recovery prediction: regression from the experiments vs fragstate's figures", "",
                  "Every recovered kill of the runs above, at the run's interval (the controller's: its last decision before the kill) "
                  "and the input of the 30 s before it (`fragstate tune --predict`, predictions.jsonl).", "",
                  "| run | interval (s) | input (events/s) | measured (s) | regression (s) | fragstate (s) |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for p in pred["points"]:
            lines.append("| %s | %.0f | %.0f | %.1f | %.1f | %s |" % (p["run"], p["interval_s"], p["throughput"], p["measured_s"],
                         p["regression_s"], "%.1f" % p["fragstate_s"] if p.get("fragstate_s") is not None else "-"))
        lines.append("")
        for e in pred["errors"]:
            lines.append("- %s: RMS error %.1f s, mean absolute error %.1f s over %d failures" % (e["predictor"], e["rms_s"], e["mean_abs_s"], e["failures"]))
    # drawn before the list below names the ones written
    plot_latency(runs, sets, out)
    plot_interval(runs, out)
    plot_recovery_and_overhead(runs, sets, out)
    plot_experiments(runs, out)
    plots = [p for p in ("latency.png", "recovery-and-overhead.png", "interval-vs-load.png", "experiments.png") if os.path.exists(os.path.join(out, p))]
    lines += ["", "Plots: " + ", ".join(plots), ""]
    with open(os.path.join(out, "RESULTS.md"), "w") as f:
        f.write("\n".join(lines))
    slim = [{k: v2 for k, v2 in s.items() if k not in ("latency", "dir")} for s in runs]
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"runs": slim, "goals": goals, "recovery_prediction": pred}, f, indent=2)
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
