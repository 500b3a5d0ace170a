"""The recovery benchmark's report (ci/bench.sh): reads the per-run JSON files RunBench wrote into
OUT_DIR and writes summary.json, RESULTS.md and PNG plots there.

    python bench_report.py OUT_DIR

Per run: kill -> failure detected -> all subtasks RUNNING -> throughput back to 95 %, the longest
restore (INITIALIZING -> RUNNING of a stateful subtask), steady-state throughput and checkpoint
duration, and the physical limit of the restore beside it: the state bytes the busiest restoring
TaskManager reads divided by its ingress link (1 Gbit/s), and for storage in the edge profile's
cloud site, all restored bytes divided by the 100 Mbit/s WAN (with region failover every subtask
restores at once). Ratios compare each system with fragstate RS(4,2) in the same profile, state
size and failure. Failures: one / two TaskManagers killed (kill -9), or job: the whole job cancelled
and submitted again from its latest checkpoint (the clock starts at the resubmission). For the -local
systems (task-local recovery) the limit counts only the bytes read remotely.
"""

import glob
import json
import os
import statistics
import sys

LINK_BYTES_PER_S = 1e9 / 8
WAN_BYTES_PER_S = 100e6 / 8
REMOTE_IN_EDGE = {"hdfs", "hdfs-local", "hdfs-ec", "s3"}
FAILURE_TITLES = {"one": "one TaskManager killed", "two": "two TaskManagers killed",
                  "job": "whole job restarted from its checkpoint"}


def load(out):
    runs = []
    for path in sorted(glob.glob(os.path.join(out, "*.json"))):
        if os.path.basename(path) == "summary.json":
            continue
        with open(path) as f:
            runs.append(json.load(f))
    return runs


def stateful(rec):
    """The stateful (non-source) subtasks of a run's recovery."""
    return [s for s in rec.get("subtasks", []) if not s["vertex"].startswith("Source")]


def limit_seconds(run):
    """The physical limit of the restore: busiest TaskManager's share over its link, or the WAN.
    With task-local recovery (-local) only what was read remotely counts: the largest remote share
    of one subtask (Flink's JobInitialization trace) over the link it crossed."""
    rec = run.get("recovery") or {}
    remote_in_edge = run["profile"] == "edge" and run["system"] in REMOTE_IN_EDGE
    if run["system"].endswith("-local"):
        remote = (rec.get("jobInitialization") or {}).get("maxRestoredStateSizeBytes.REMOTE", 0)
        return remote / (WAN_BYTES_PER_S if remote_in_edge else LINK_BYTES_PER_S)
    state = rec.get("stateBytes", 0)
    p = run.get("parallelism", 1)
    per_tm = {}
    for s in stateful(rec):
        per_tm[s["taskManager"]] = per_tm.get(s["taskManager"], 0) + 1
    busiest = max(per_tm.values()) if per_tm else 1
    limit = state * busiest / p / LINK_BYTES_PER_S
    if remote_in_edge:
        limit = max(limit, state / WAN_BYTES_PER_S)
    return limit


def restore_cpu(run):
    """Mean CPU busy fraction (all cores) from the first stateful subtask INITIALIZING after the
    kill to the last RUNNING: the restore itself, without the failure detection before it."""
    rec = run.get("recovery") or {}
    kill = rec.get("killAtMs", 0)
    restored = [s for s in stateful(rec) if s["initializingAtMs"] >= kill]
    if not restored:
        return None
    start = min(s["initializingAtMs"] for s in restored)
    end = max(s["runningAtMs"] for s in restored)
    # a sample covers the 500 ms before it
    busy = [x["cpuBusy"] for x in run.get("samples", []) if start < x["atMs"] <= end + 500]
    return round(sum(busy) / len(busy), 2) if busy else None


def row(run):
    rec = run.get("recovery") or {}
    cps = run.get("steadyCheckpoints") or []
    return {
        "id": run["id"],
        "profile": run["profile"],
        "system": run["system"],
        "stateMb": run["stateMb"],
        "failure": run["failure"],
        "passed": run.get("passed", False),
        "error": run.get("error"),
        "stateBytes": rec.get("stateBytes"),
        "killToDetectedS": ms(rec.get("killToDetectedMs")),
        # restores of this failure: more than one when Flink first redeployed onto a dead TaskManager
        "restores": rec.get("restores"),
        "killToAllRunningS": ms(rec.get("killToAllRunningMs")),
        "killToThroughputBackS": ms(rec.get("killToThroughputBackMs")),
        "maxRestoreS": ms(rec.get("maxRestoreMs")),
        "restoreLimitS": round(limit_seconds(run), 2) if rec else None,
        # every subtask restores at once (region failover): the state over the longest restore
        "restoredMBps": round(rec["stateBytes"] / rec["maxRestoreMs"] / 1e3) if rec.get("maxRestoreMs", -1) > 0 else None,
        "cpuBusyDuringRestore": restore_cpu(run),
        "steadyEventsPerSecond": run.get("steadyEventsPerSecond"),
        "steadyCheckpointMedianS": ms(statistics.median([c["durationMs"] for c in cps])) if cps else None,
        "fillSeconds": run.get("fillSeconds"),
        "bytesServedDuringRecovery": run.get("bytesServedDuringRecovery"),
        "outputCheck": run.get("outputCheck"),
        # --cpu-profile: shares of perf's samples (all cores, failure -> all RUNNING) by shared object
        "cpuProfileByObject": ((rec.get("cpuProfile") or {}).get("byObject")),
    }


def ms(v):
    return None if v is None or v < 0 else round(v / 1000, 2)


def add_ratios(rows):
    base = {(r["profile"], r["stateMb"], r["failure"]): r for r in rows if r["system"] == "fragstate-rs42" and r["passed"]}
    for r in rows:
        b = base.get((r["profile"], r["stateMb"], r["failure"]))
        for key in ("killToAllRunningS", "maxRestoreS"):
            if b and r.get(key) and b.get(key):
                r[key.replace("S", "") + "VsFragstate"] = round(r[key] / b[key], 2)


def fmt(v, unit=""):
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.2f}{unit}"
    return f"{v}{unit}"


def table(rows):
    head = ("| profile | state | failure | system | passed | detected | restores | all RUNNING | restore (max subtask) | restore limit "
            "| restored MB/s | throughput back | CPU busy (restore) | steady events/s | steady checkpoint |")
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    for r in rows:
        ratio = r.get("killToAllRunningVsFragstate")
        lines.append("| {profile} | {state} MiB | {failure} | {system} | {passed} | {det} | {restores} | {run}{ratio} | {rest} | {lim} | {mbps} | {back} "
                     "| {cpu} | {eps} | {cp} |".format(
                         profile=r["profile"], state=r["stateMb"], failure=r["failure"], system=r["system"],
                         passed="yes" if r["passed"] else "**no**", det=fmt(r["killToDetectedS"], " s"), restores=fmt(r["restores"]),
                         run=fmt(r["killToAllRunningS"], " s"), ratio=f" ({ratio}×)" if ratio and r["system"] != "fragstate-rs42" else "",
                         rest=fmt(r["maxRestoreS"], " s"), lim=fmt(r["restoreLimitS"], " s"), mbps=fmt(r["restoredMBps"]),
                         back=fmt(r["killToThroughputBackS"], " s"),
                         cpu=fmt(None if r["cpuBusyDuringRestore"] is None else round(100 * r["cpuBusyDuringRestore"]), " %"),
                         eps=fmt(None if r["steadyEventsPerSecond"] is None else round(r["steadyEventsPerSecond"])),
                         cp=fmt(r["steadyCheckpointMedianS"], " s")))
    return "\n".join(lines)


def cpu_profiles(rows):
    """RESULTS.md lines: the shared objects that took the most CPU samples in each profiled run."""
    profiled = [r for r in rows if r.get("cpuProfileByObject")]
    if not profiled:
        return []
    lines = ["## Where the CPU went during the recovery (`--cpu-profile`)", "",
             "Shares of the busy `perf record -a` samples (every core, from the failure until every subtask ran "
             "again; idle samples left out) by shared object (`[JIT]`: compiled Java code).", ""]
    for r in profiled:
        top = sorted(r["cpuProfileByObject"].items(), key=lambda kv: -kv[1])[:8]
        lines.append(f"- `{r['id']}`: " + ", ".join(f"{obj} {share:.1f} %" for obj, share in top))
    return lines + [""]


def plots(out, runs, rows):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = sorted({(r["profile"], r["stateMb"], r["failure"]) for r in rows})
    for profile, state, failure in groups:
        sel = [r for r in rows if (r["profile"], r["stateMb"], r["failure"]) == (profile, state, failure)]
        fig, ax = plt.subplots(figsize=(8, 4))
        names = [r["system"] for r in sel]
        x = range(len(sel))
        ax.bar([i - 0.2 for i in x], [r["killToAllRunningS"] or 0 for r in sel], 0.4, label="kill → all subtasks RUNNING")
        ax.bar([i + 0.2 for i in x], [r["maxRestoreS"] or 0 for r in sel], 0.4, label="restore (longest subtask)")
        for i, r in enumerate(sel):
            if r["restoreLimitS"] is not None:
                ax.hlines(r["restoreLimitS"], i - 0.45, i + 0.45, colors="black", linestyles="dashed",
                          label="physical limit (bytes ÷ link)" if i == 0 else None)
        ax.set_xticks(list(x), names)
        ax.set_ylabel("seconds")
        save(plt, fig, ax, f"recovery, {profile}, {state} MiB of state, {FAILURE_TITLES.get(failure, failure)}",
             os.path.join(out, f"restore-{profile}-{state}mb-{failure}.png"))

        fig, ax = plt.subplots(figsize=(8, 4))
        for run in runs:
            if (run["profile"], run["stateMb"], run["failure"]) != (profile, state, failure) or not run.get("recovery"):
                continue
            kill = run["recovery"]["killAtMs"]
            rated = [s for s in run.get("samples", []) if s["eventsPerSecond"] >= 0]
            ax.plot([(s["atMs"] - kill) / 1000 for s in rated], [s["eventsPerSecond"] for s in rated],
                    label=run["system"], linewidth=1)
        what = "resubmission" if failure == "job" else "kill -9"
        ax.axvline(0, color="red", linewidth=0.8, label=what)
        ax.set_xlim(-20, 90)
        ax.set_xlabel(f"seconds after the {what}")
        ax.set_ylabel("source events/s")
        save(plt, fig, ax, f"throughput around the failure, {profile}, {state} MiB, {FAILURE_TITLES.get(failure, failure)}",
             os.path.join(out, f"throughput-{profile}-{state}mb-{failure}.png"))


def save(plt, fig, ax, title, path):
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    runs = load(out)
    if not runs:
        sys.exit(f"no run results (*.json) in {out}")
    runs.sort(key=lambda r: (r["profile"], r["stateMb"], r["failure"], r["system"]))
    rows = [row(r) for r in runs]
    add_ratios(rows)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"runs": rows}, f, indent=2)
    md = ["# Recovery benchmark results", "",
          "Written by `ci/bench.sh` (see its `--help` and the README's performance section for the setup).", "",
          table(rows), ""]
    md += cpu_profiles(rows)
    failed = [r for r in rows if not r["passed"]]
    if failed:
        md += ["## Failed runs", ""] + [f"- `{r['id']}`: {r['error']}" for r in failed] + [""]
    with open(os.path.join(out, "RESULTS.md"), "w") as f:
        f.write("\n".join(md))
    plots(out, runs, rows)
    print(table(rows))
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
