#!/usr/bin/env python3
"""The report of ci/bench-checkpoints.sh: reads DIR/rows.jsonl (one JSON object per cluster size and
index setting, from `fragstate bench checkpoints`), writes DIR/table.md, DIR/summary.json and
DIR/checkpoints.png (requests per checkpoint against N, index on and off, log-log)."""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: checkpoints_report.py DIR")
    out = Path(sys.argv[1])
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines() if line.strip()]
    if not rows:
        sys.exit(f"{out}/rows.jsonl has no rows")
    by = {(r["nodes"], r["index"]): r for r in rows}
    sizes = sorted({r["nodes"] for r in rows})
    r0 = rows[0]
    lines = [
        f"Requests of one checkpoint (medians of {r0['checkpoints']} checkpoints; RS({r0['k']},{r0['m']}), "
        f"{r0['files']} state files of {r0['file_bytes']} B and _metadata; in-process mesh).",
        "",
        "| nodes | directory calls, index on | index off | ratio off/on | file calls, index on | index off | ms, on | ms, off |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    summary = []
    for n in sizes:
        on, off = by.get((n, True)), by.get((n, False))
        if not on or not off:
            continue
        ratio = off["directory_requests_median"] / on["directory_requests_median"]
        lines.append(
            f"| {n} | {on['directory_requests_median']:.0f} | {off['directory_requests_median']:.0f} | {ratio:.1f}x "
            f"| {on['file_requests_median']:.0f} | {off['file_requests_median']:.0f} | {on['millis_median']:.1f} | {off['millis_median']:.1f} |"
        )
        summary.append({"nodes": n, "index_on": on, "index_off": off, "directory_ratio_off_on": ratio})
    (out / "table.md").write_text("\n".join(lines) + "\n")
    (out / "summary.json").write_text(json.dumps({"rows": summary}, indent=2) + "\n")
    print("\n".join(lines))

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for index, style in ((True, "o-"), (False, "s--")):
        xs = [n for n in sizes if (n, index) in by]
        label = "index on" if index else "index off (every node asked)"
        ax.plot(xs, [by[(n, index)]["directory_requests_median"] for n in xs], style, label=f"directory calls, {label}")
        ax.plot(xs, [by[(n, index)]["file_requests_median"] for n in xs], style, alpha=0.4, label=f"file calls, {label}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("storage nodes")
    ax.set_ylabel("requests per checkpoint (median)")
    ax.set_title("One Flink checkpoint's file-system requests")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "checkpoints.png", dpi=110)


if __name__ == "__main__":
    main()
