# The figure of README.md: python3 plot.py (matplotlib), from the runs in this folder and the 12-01 soak beside it.
import csv, json
import matplotlib; matplotlib.use("Agg")
import matplotlib.pyplot as plt
import os
base = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..") + "/"
D = os.path.dirname(os.path.abspath(__file__)) + "/"
runs = [("7f07ebc-1", "7f07ebc (today's main), run 1", "C0", "-"), ("d7fe1bd-1", "d7fe1bd (12-01), run 1", "C1", "-"),
        ("7f07ebc-2", "7f07ebc, run 2", "C0", "--"), ("d7fe1bd-2", "d7fe1bd, run 2", "C1", "--")]
fig, ax = plt.subplots(1, 2, figsize=(11, 4))
rows = []
for d, label, c, ls in runs:
    job = list(csv.DictReader(open(D + d + "/job.csv")))
    s = json.load(open(D + d + "/summary.json"))["figures"]
    ax[0].plot([float(r["minute"]) for r in job], [int(r["objects_deleted_total"]) for r in job], c, ls=ls, label=label)
    ax[1].plot([float(r["minute"]) for r in job], [int(r["checkpoint_p50_ms"]) for r in job], c, ls=ls, label=label)
    rows.append((d, s["objectsDeletedPerMinute"], s["checkpoints"], s["checkpointP50Ms"], s["checkpointP99Ms"]))
# the same build (d7fe1bd) on 2026-12-01: the first 10 minutes of its 105-minute soak
job = [r for r in csv.DictReader(open(base + "2026-12-01-105min-final/job.csv")) if float(r["minute"]) <= 10]
ax[0].plot([float(r["minute"]) for r in job], [int(r["objects_deleted_total"]) for r in job], "k", ls=":", label="d7fe1bd on 2026-12-01 (105-min run, min 0-10)")
ax[1].plot([float(r["minute"]) for r in job if int(r["checkpoint_p50_ms"]) >= 0], [int(r["checkpoint_p50_ms"]) for r in job if int(r["checkpoint_p50_ms"]) >= 0], "k", ls=":", label="d7fe1bd on 2026-12-01")
ax[0].set_xlabel("minute"); ax[0].set_ylabel("objects deleted (cumulative)"); ax[0].legend(fontsize="small")
ax[1].set_xlabel("minute"); ax[1].set_ylabel("checkpoint duration p50 in the minute (ms)")
fig.suptitle("10-minute soaks without kills, same machine, same hour, runs interleaved")
fig.tight_layout(); fig.savefig(D + "deletes_and_checkpoints.png", dpi=90)
for r in rows: print(r)
