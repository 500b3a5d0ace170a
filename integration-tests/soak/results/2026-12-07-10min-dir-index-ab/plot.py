# The figure of README.md: python3 plot.py (matplotlib), from the runs in this folder.
import csv, json, os
import matplotlib; matplotlib.use("Agg")
import matplotlib.pyplot as plt
D = os.path.dirname(os.path.abspath(__file__)) + "/"
runs = [("off-b5b2ebd", "index off (b5b2ebd)", "C0", "-"), ("on-b5b2ebd", "index on (b5b2ebd, the fix)", "C1", "-"),
        ("on-2c0803f-overlap", "index on, commit names while fragments finish (2c0803f)", "C2", "-"),
        ("on-a45d029-before-fix", "index on before the fix (a45d029)", "C3", "--")]
fig, ax = plt.subplots(1, 2, figsize=(11, 4))
rows = []
for d, label, c, ls in runs:
    job = [r for r in csv.DictReader(open(D + d + "/job.csv"))]
    s = json.load(open(D + d + "/summary.json"))["figures"]
    ax[0].plot([float(r["minute"]) for r in job], [int(r["objects_deleted_total"]) for r in job], c, ls=ls, label=label)
    p50 = [r for r in job if int(r["checkpoint_p50_ms"]) >= 0]
    ax[1].plot([float(r["minute"]) for r in p50], [int(r["checkpoint_p50_ms"]) for r in p50], c, ls=ls, label=label)
    rows.append((d, s["objectsDeletedPerMinute"], s["checkpoints"], s["checkpointP50Ms"], s["checkpointP99Ms"]))
ax[0].set_xlabel("minute"); ax[0].set_ylabel("objects deleted (cumulative)"); ax[0].legend(fontsize="small")
ax[1].set_xlabel("minute"); ax[1].set_ylabel("checkpoint duration p50 in the minute (ms)"); ax[1].set_ylim(bottom=0)
fig.suptitle("10-minute soaks without kills, directory index on and off, same machine")
fig.tight_layout(); fig.savefig(D + "deletes_and_checkpoints.png", dpi=90)
for r in rows: print(r)
