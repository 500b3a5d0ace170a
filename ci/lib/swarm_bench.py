"""Swarm runs (issue 13): N real `fragstate node` processes on loopback per membership mode.

For every mode and cluster size asked: start N storage nodes (node 0 first, every other
bootstrapping from it), time until a client sees all N, let the cluster settle, then measure an
idle window from /proc (CPU of every node, bytes each wrote to its sockets, resident memory,
established TCP connections per node), an 8 MiB put and get through the CLI, and a get right
after one holder of that object was killed with SIGKILL. Writes table.md, summary.json and
swarm.png into --out.

With --in-process, every size runs as `fragstate bench swarm` instead: all N nodes and the client
in one process (one runtime, no per-process cost) over loopback TCP or, with --transports memory,
libp2p's in-process memory transport (no two open files per connection, which cap TCP near 500
nodes here), so that sizes well past what one process per node allows on two cores can run; it
measures formation, idle CPU, membership messages and connections per node, restores (lookup
requests and time) and how long a stopped node takes to be dead at every other node, and writes
swarm-in-process.png. --time-dilation F runs every membership timing F times slower, so that one
process on two cores holds sizes that storm at the real pace; the table then gives times and rates
in protocol time (wall time ÷ F) and the idle CPU a node would need at the real pace (F × measured).
--control-nodes C runs a second cluster of C nodes in every run's process whose restores alternate
with the measured cluster's: both sizes share one process and the machine's moment, so the ratio
of their restore times is what the protocol adds with N (columns CONTROL_COLUMNS).
Usage: see ci/swarm.sh.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14 and 15 of stat)


def written_bytes(pid):
    with open(f"/proc/{pid}/io") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("wchar:"))


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS:"))


def established_inodes():
    """Inodes of every established TCP socket on this machine (/proc/net/tcp, tcp6)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    if parts[3] == "01":
                        inodes.add(parts[9])
        except FileNotFoundError:
            pass
    return inodes


def connections(pid, established):
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:[") and target[8:-1] in established:
            n += 1
    return n


class RunFailed(Exception):
    """A run that could not finish (a node that exited, a cluster that did not form in time)."""


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else 0


class Cluster:
    def __init__(self, binary, mode, n, workdir):
        self.bin, self.mode, self.n, self.dir = binary, mode, n, workdir
        self.key = os.path.join(workdir, "cluster.key")
        subprocess.run([binary, "keygen", self.key], check=True, stdout=subprocess.DEVNULL)
        self.procs, self.addr = [], None

    def start(self):
        env = dict(os.environ, FRAGSTATE_LOG="warn")
        for i in range(self.n):
            out = open(os.path.join(self.dir, f"n{i}.out"), "w")
            err = open(os.path.join(self.dir, f"n{i}.err"), "w")
            cmd = [self.bin, "node", "--listen", "/ip4/127.0.0.1/tcp/0", "--memory", "1GiB", "--key-file", self.key,
                   "--domain", f"n{i}", "--membership", self.mode]
            if self.addr:
                cmd += ["--bootstrap", self.addr]
            self.procs.append(subprocess.Popen(cmd, stdout=out, stderr=err, env=env))
            if i == 0:
                self.addr = self.wait_listen(0)
        for i in range(1, self.n):
            self.wait_listen(i)

    def wait_listen(self, i):
        deadline = time.time() + 30
        path = os.path.join(self.dir, f"n{i}.out")
        while time.time() < deadline:
            with open(path) as f:
                for line in f:
                    if line.startswith("LISTEN "):
                        return line.split()[1]
            if self.procs[i].poll() is not None:
                raise RunFailed(f"node {i} exited with {self.procs[i].returncode}: {open(path.replace('.out', '.err')).read()[-2000:]}")
            time.sleep(0.05)
        raise RunFailed(f"node {i} printed no LISTEN line within 30 s")

    def cli(self, *args, wait_nodes, wait=120, timeout=600):
        cmd = [self.bin, *args, "--bootstrap", self.addr, "--key-file", self.key, "--membership", self.mode,
               "--wait-nodes", str(wait_nodes), "--wait-timeout", str(wait)]
        t = time.time()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=dict(os.environ, FRAGSTATE_LOG="warn"))
        if r.returncode != 0:
            raise RunFailed(f"{args[0]} failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}")
        return time.time() - t, r.stdout

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def run_one(binary, mode, n, settle, idle):
    with tempfile.TemporaryDirectory(prefix=f"swarm-{mode}-{n}-") as d:
        c = Cluster(binary, mode, n, d)
        started = time.time()
        try:
            c.start()
            log(f"{mode}, {n} nodes: {n} processes listening after {time.time() - started:.1f} s")
            formed, _ = c.cli("ls", "/", wait_nodes=n)
            log(f"{mode}, {n} nodes: a client sees all {n} after {formed:.1f} s; settling {settle} s")
            time.sleep(settle)
            pids = [p.pid for p in c.procs]
            t0, cpu0, w0 = time.time(), [cpu_ticks(p) for p in pids], [written_bytes(p) for p in pids]
            time.sleep(idle)
            t1, cpu1, w1 = time.time(), [cpu_ticks(p) for p in pids], [written_bytes(p) for p in pids]
            established = established_inodes()
            conns = [connections(p, established) for p in pids]
            rss = [rss_bytes(p) for p in pids]
            span = t1 - t0
            cpu = [(b - a) / CLK_TCK / span for a, b in zip(cpu0, cpu1)]
            wrote = [(b - a) / span for a, b in zip(w0, w1)]
            data = os.urandom(8 << 20)
            src = os.path.join(d, "obj")
            with open(src, "wb") as f:
                f.write(data)
            put_s, out = c.cli("put", src, "/swarm/obj", "--k", "4", "--m", "2", wait_nodes=n)
            holders = out.split("holders [")[1].split("]")[0].split(", ")
            dst = os.path.join(d, "back")
            get_s, _ = c.cli("get", "/swarm/obj", dst, wait_nodes=n)
            same = open(dst, "rb").read() == data
            # a holder other than the seed is killed; the next get must do without it
            victim = next(i for i in range(1, n) if any(h in open(os.path.join(d, f"n{i}.out")).read() for h in holders))
            c.procs[victim].send_signal(signal.SIGKILL)
            c.procs[victim].wait()
            os.remove(dst)
            get_killed_s, _ = c.cli("get", "/swarm/obj", dst, wait_nodes=n - 1)
            same = same and open(dst, "rb").read() == data
            if not same:
                sys.exit(f"{mode}, {n} nodes: an object read back differs")  # never a figure: a bug
        finally:
            c.stop()
    row = {
        "mode": mode, "nodes": n, "formed_s": round(formed, 2),
        "idle_cpu_all_pct": round(100 * sum(cpu), 1), "idle_cpu_per_node_pct": round(100 * sum(cpu) / n, 2),
        "idle_cpu_per_node_p99_pct": round(100 * pct(cpu, 0.99), 2),
        "idle_written_per_node_bytes_s": round(sum(wrote) / n), "connections_all": sum(conns),
        "connections_per_node_p50": pct(conns, 0.5), "connections_per_node_p99": pct(conns, 0.99),
        "connections_per_node_max": max(conns), "rss_all_mib": round(sum(rss) / 2**20, 1),
        "rss_per_node_mib": round(sum(rss) / n / 2**20, 1), "put_8mib_s": round(put_s, 2), "get_8mib_s": round(get_s, 2),
        "get_after_kill_s": round(get_killed_s, 2),
    }
    log(f"{mode}, {n} nodes: {json.dumps(row)}")
    return row


COLUMNS = [
    ("mode", "membership"), ("nodes", "nodes"), ("formed_s", "all N seen by a client (s)"),
    ("idle_cpu_all_pct", "idle CPU, all nodes (% of a core)"), ("idle_cpu_per_node_pct", "idle CPU per node (%)"),
    ("idle_written_per_node_bytes_s", "idle bytes written per node/s"),
    ("connections_per_node_p50", "TCP connections per node p50"), ("connections_per_node_p99", "p99"),
    ("rss_per_node_mib", "RSS per node (MiB)"), ("put_8mib_s", "put 8 MiB (s)"), ("get_8mib_s", "get 8 MiB (s)"),
    ("get_after_kill_s", "get after kill -9 of a holder (s)"),
]


IN_PROCESS_COLUMNS = [
    ("mode", "membership"), ("nodes", "nodes"), ("transport", "transport"), ("time_dilation", "time dilation"),
    ("formed_all_protocol_s", "formed: every node sees all (s of protocol time)"),
    ("idle_cpu_per_node_at_real_pace_pct", "idle CPU per node at the real pace (% of a core)"),
    ("membership_msgs_per_node_protocol_s", "membership messages sent per node/s"),
    ("membership_bytes_per_node_protocol_s", "membership bytes sent per node/s"),
    ("connections_opened_per_node_s", "connections opened per node/s"),
    ("connected_peers_p50", "connected peers per node p50"), ("connected_peers_p99", "p99"),
    ("rss_per_node_mib", "memory per node (MiB)"),
    ("lookup_requests_per_restore", "lookup requests per restore"),
    ("restores_settled_first_round", "restores settled in one round trip"),
    ("restore_median_ms", "restore median (ms)"), ("restore_lookup_median_ms", "its lookup, median (ms)"),
    ("restore_wall_ms_each", "restores' wall time each (ms)"), ("restore_cpu_ms_each", "the process's CPU per restore (ms)"),
    ("restore_minor_faults_each", "minor page faults per restore"),
    ("request_rtt_us", "one request's round trip to a holder, median (µs)"),
    ("holders_rtt_us", "k + m requests at once to the holders, median (µs)"), ("yield_us", "a yield in the shared runtime, median (µs)"),
    ("client_view_us", "the client's view, built (µs)"), ("client_rank_us", "k + m candidates ranked over it (µs)"),
    ("dead_p99_protocol_s", "stopped node dead at p99 of the others (s of protocol time)"),
]


# With --control-nodes: the control cluster's restores, alternating with the measured cluster's in one process.
CONTROL_COLUMNS = [
    ("control_nodes", "control cluster's nodes"),
    ("control_restore_median_ms", "control cluster's restore median (ms)"),
    ("control_restore_lookup_median_ms", "control cluster's lookup, median (ms)"),
    ("restore_ratio_to_control", "restore median ÷ the control's"),
]


def run_in_process(binary, mode, n, settle, idle, objects, size, strict, transport="tcp", join_rate=0.0, timeout=300,
                   time_dilation=1, control_nodes=0):
    """One `fragstate bench swarm` run; its JSON row. With `strict`, a run whose stopped node some
    node never found dead, or whose steady-state restores needed more than k + m lookup requests,
    fails (the bytes read back are compared by the run itself). With `control_nodes`, a second
    cluster of that size restores beside it in the same process (`--control-nodes`)."""
    cmd = [binary, "bench", "swarm", "--membership", mode, "--nodes", str(n), "--settle", str(settle),
           "--idle", str(idle), "--objects", str(objects), "--size", size, "--transport", transport,
           "--join-rate", str(join_rate), "--timeout", str(timeout), "--time-dilation", str(time_dilation),
           "--control-nodes", str(control_nodes)]
    log(" ".join(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=None, text=True)
    if p.returncode != 0:
        raise RunFailed(f"fragstate bench swarm exited with {p.returncode}")
    row = json.loads(p.stdout.strip().splitlines()[-1])
    log(f"{mode}, {n} nodes in one process over {transport}: {json.dumps(row)}")
    if strict and row["dead_never"] > 0:
        raise RunFailed(f"{row['dead_never']} nodes never found the stopped node dead")
    if strict and row["lookup_requests_per_restore"] > row["k"] + row["m"]:
        raise RunFailed(f"{row['lookup_requests_per_restore']} lookup requests per restore, more than k + m")
    return row


# The columns that name a run's series (one line per series in the plots), not a measurement.
SERIES_KEYS = ("mode", "nodes", "transport", "time_dilation", "control_nodes")


def series(row):
    """The plot line of a row: its membership mode, the transport when it is not TCP, the time
    dilation when there is one, and the control cluster's size when there is one."""
    transport, dilation = row.get("transport", "tcp"), row.get("time_dilation", 1)
    name = row["mode"] if transport == "tcp" else f"{row['mode']}, {transport} transport"
    name = name if dilation == 1 else f"{name}, timings {dilation}× slower"
    control = row.get("control_nodes", 0)
    return name if not control else f"{name}, beside a control cluster of {control:,}"


def write_results(rows, out, meta, columns=None, plot="swarm.png"):
    columns = columns or COLUMNS
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"meta": meta, "runs": rows}, f, indent=1)
    lines = ["| " + " | ".join(h for _, h in columns) + " |", "|" + " ---: |" * len(columns)]
    for r in rows:
        if "failed" in r:
            lead = [r["mode"], f"{r['nodes']:,}"] + ([r.get("transport", "tcp"), str(r.get("time_dilation", 1))] if columns[2][0] == "transport" else [])
            lines.append("| " + " | ".join(lead) + f" | failed: {r['failed'][:160]} |" + " |" * (len(columns) - len(lead) - 1))
            continue
        lines.append("| " + " | ".join(f"{r[k]:,}" if isinstance(r.get(k), (int, float)) else str(r.get(k, "")) for k, _ in columns) + " |")
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib missing: no plot (ci/swarm.sh runs this with ci/lib/plot-venv.sh's python)")
        return
    metrics = [k for k, _ in columns if k not in SERIES_KEYS]
    rows_of_plots = (len(metrics) + 3) // 4
    fig, axes = plt.subplots(rows_of_plots, 4, figsize=(16, 3.4 * rows_of_plots))
    for ax, key in zip(axes.flat, metrics):
        for name in sorted({series(r) for r in rows}):
            pts = sorted((r["nodes"], r[key]) for r in rows if series(r) == name and key in r)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
        ax.set_xscale("log")
        ax.set_xlabel("storage nodes" if plot != "swarm.png" else "storage node processes")
        title = dict(columns)[key]
        ax.set_title(title if title != "p99" else dict(columns)[key.replace("p99", "p50")].replace("p50", "p99"), fontsize=9)
    for ax in list(axes.flat)[len(metrics):]:
        ax.set_visible(False)
    # One legend for the figure: the series' names are long, and every plot has the same ones.
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 3), fontsize=9)
    where = "all nodes in one process" if plot != "swarm.png" else "one process per node"
    fig.suptitle(f"fragstate swarm runs on one {os.cpu_count()}-core machine (loopback, {where}): mesh vs SWIM membership")
    fig.tight_layout(rect=(0, 0.03, 1, 0.97))
    fig.savefig(os.path.join(out, plot), dpi=80)
    log(f"written: {out}/table.md, summary.json, {plot}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--modes", default="mesh,swim")
    ap.add_argument("--nodes", default="8,16,32,64,128")
    ap.add_argument("--mesh-max", type=int, default=32, help="largest mesh run (a full mesh saturates 2 cores at 32)")
    ap.add_argument("--settle", type=float, default=10)
    ap.add_argument("--idle", type=float, default=10)
    ap.add_argument("--strict", action="store_true", help="exit 1 when a run failed (CI: no size is expected to fail)")
    ap.add_argument("--in-process", action="store_true", help="all nodes of a run in one process (fragstate bench swarm)")
    ap.add_argument("--objects", type=int, default=20, help="--in-process: objects written, then restored once each")
    ap.add_argument("--size", default="1MiB", help="--in-process: size of each object")
    ap.add_argument("--join-rate", type=float, default=0.0,
                    help="--in-process: nodes started per second (0: back to back, which saturates the process past ~100)")
    ap.add_argument("--transports", default="tcp", help="--in-process: tcp, memory or both (tcp,memory)")
    ap.add_argument("--tcp-max", type=int, default=500,
                    help="--in-process: largest TCP run (both ends of each connection hold a file in the one process)")
    ap.add_argument("--timeout", type=int, default=300,
                    help="--in-process: seconds a run waits for its cluster to form (1,000 nodes in one process need minutes)")
    ap.add_argument("--control-nodes", type=int, default=0,
                    help="--in-process: a second cluster of this many nodes in each run's process, its restores "
                         "alternating with the measured cluster's (the ratio: the protocol's growth with N; 0: none)")
    ap.add_argument("--time-dilation", type=int, default=1,
                    help="--in-process: membership timings this many times slower (1: the real pace; see fragstate bench swarm --help)")
    a = ap.parse_args()
    sizes = [int(x) for x in a.nodes.split(",")]
    if any(n < 7 for n in sizes):
        sys.exit(f"--nodes {a.nodes}: every size must be at least 7 (k + m = 6 holders besides the writer, one killed)")
    transports = a.transports.split(",") if a.in_process else ["tcp"]
    if any(t not in ("tcp", "memory") for t in transports):
        sys.exit(f"--transports {a.transports}: each must be tcp or memory")
    rows = []
    for mode in a.modes.split(","):
        if mode not in ("mesh", "swim"):
            sys.exit(f"--modes: {mode!r} is not mesh or swim")
        for transport in transports:
            for n in sizes:
                if mode == "mesh" and n > a.mesh_max:
                    log(f"mesh, {n} nodes: skipped (--mesh-max {a.mesh_max})")
                    continue
                if a.in_process and transport == "tcp" and n > a.tcp_max:
                    log(f"{mode}, {n} nodes over TCP: skipped (--tcp-max {a.tcp_max})")
                    continue
                try:
                    if a.in_process:
                        rows.append(run_in_process(a.bin, mode, n, a.settle, a.idle, a.objects, a.size, a.strict, transport,
                                                    a.join_rate, a.timeout, a.time_dilation, a.control_nodes))
                    else:
                        rows.append(run_one(a.bin, mode, n, a.settle, a.idle))
                except RunFailed as e:
                    log(f"{mode}, {n} nodes over {transport}: failed: {e}; no larger runs of it")
                    rows.append({"mode": mode, "nodes": n, "transport": transport, "time_dilation": a.time_dilation, "failed": str(e)})
                    break
    meta = {"cores": os.cpu_count(), "settle_s": a.settle, "idle_s": a.idle, "in_process": a.in_process, "join_rate": a.join_rate,
            "time_dilation": a.time_dilation, "control_nodes": a.control_nodes,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    if a.in_process:
        columns = IN_PROCESS_COLUMNS + (CONTROL_COLUMNS if a.control_nodes else [])
        write_results(rows, a.out, meta, columns, "swarm-in-process.png")
    else:
        write_results(rows, a.out, meta)
    if a.strict and any("failed" in r for r in rows):
        sys.exit("a swarm run failed (above)")


if __name__ == "__main__":
    main()
