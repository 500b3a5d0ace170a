package io.fragstate.it;

import io.fragstate.traffic.CliArgs;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The parameters of one recovery-benchmark invocation ({@code ci/bench.sh} → {@link RunBench}),
 * from its command line, and the hosts its network profile needs.
 *
 * @param profile       network profile of {@code ci/lib/netns.sh}: dc, edge or none
 * @param systems       checkpoint storages to compare, in run order
 * @param stateMb       total keyed state of each run, in MiB (one run per value)
 * @param failures      what is done to the running job (one run per value)
 * @param taskManagers  TaskManager hosts (2 slots each)
 * @param parallelism   of the job
 * @param steadySeconds how long the steady state is measured before the failure
 * @param rate          events/s of the job after its state is filled
 * @param out           folder of this invocation's per-run JSON files
 * @param cpuProfile    sample every core with {@code perf} while the job recovers ({@link RestoreProfile})
 */
record BenchPlan(String profile, List<BenchSystem> systems, List<Integer> stateMb, List<Failure> failures,
        int taskManagers, int parallelism, int steadySeconds, int rate, Path out, boolean cpuProfile) {

    /** What is done to the job once its state is filled and checkpointed. */
    enum Failure {
        /** {@code kill -9} of one TaskManager that runs stateful subtasks. */
        ONE(1),
        /** {@code kill -9} of two such TaskManagers at once. */
        TWO(2),
        /**
         * No host lost: the job is cancelled and submitted again from its latest retained
         * checkpoint ({@code flink run -s}), so every TaskManager restores its share at once and
         * every fragment holder is alive (an operator's restart, an upgrade, a moved cluster).
         */
        JOB(0);

        final int kills;

        Failure(int kills) {
            this.kills = kills;
        }
    }

    static BenchPlan parse(String[] args, Path repo) {
        CliArgs a = CliArgs.parse(args, Set.of("repo", "profile", "systems", "state-mb", "failures", "task-managers",
                "parallelism", "steady-seconds", "rate", "out"), Set.of("cpu-profile"));
        String profile = a.get("profile", "dc");
        if (!Set.of("dc", "edge", "none").contains(profile)) {
            throw new IllegalArgumentException("--profile '" + profile + "': allowed are dc, edge, none");
        }
        List<BenchSystem> systems = new ArrayList<>();
        for (String s : a.get("systems", "fragstate-rs42,hdfs").split(",")) {
            systems.add(BenchSystem.named(s.strip()));
        }
        List<Integer> states = new ArrayList<>();
        for (String s : a.get("state-mb", "300").split(",")) {
            int mb = Integer.parseInt(s.strip());
            if (mb < 1 || mb > 16_384) {
                throw new IllegalArgumentException("--state-mb " + mb + ": allowed is 1 … 16384");
            }
            states.add(mb);
        }
        List<Failure> failures = new ArrayList<>();
        for (String s : a.get("failures", "one").split(",")) {
            try {
                failures.add(Failure.valueOf(s.strip().toUpperCase(java.util.Locale.ROOT)));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("--failures '" + s + "': allowed are one, two, job");
            }
        }
        int tms = a.getInt("task-managers", 6);
        int parallelism = a.getInt("parallelism", tms);
        if (tms < 3 || parallelism < 1 || parallelism > 2 * tms) {
            throw new IllegalArgumentException("--task-managers must be >= 3 and --parallelism 1 … 2 × task managers (2 slots each)");
        }
        Path out = Path.of(a.get("out", repo.resolve("integration-tests/bench/results")
                .resolve(java.time.LocalDate.now(java.time.ZoneOffset.UTC).toString()).toString()));
        return new BenchPlan(profile, systems, states, failures, tms, parallelism, a.getInt("steady-seconds", 30),
                a.getInt("rate", 2000), out.toAbsolutePath().normalize(), a.flag("cpu-profile"));
    }

    /** Worker hosts: the JobManager and the TaskManagers. */
    List<String> workerHosts() {
        List<String> h = new ArrayList<>(List.of("jm"));
        for (int i = 1; i <= taskManagers; i++) {
            h.add("tm-" + i);
        }
        return h;
    }

    /**
     * Storage-service hosts: the NameNode and the S3 server, and in {@code edge} the DataNodes too
     * (the remote "cloud" site); in {@code dc} DataNodes run on the TaskManagers' hosts.
     */
    List<String> storageHosts() {
        List<String> h = new ArrayList<>(List.of("nn", "s3"));
        if (profile.equals("edge")) {
            for (int i = 1; i <= BenchSystem.DATANODES; i++) {
                h.add("dn-" + i);
            }
        }
        return h;
    }

    /** Hosts of the HDFS DataNodes. */
    List<String> dataNodeHosts() {
        List<String> h = new ArrayList<>();
        for (int i = 1; i <= BenchSystem.DATANODES; i++) {
            h.add(profile.equals("edge") ? "dn-" + i : "tm-" + i);
        }
        return h;
    }
}
