package io.fragstate.it;

import static io.fragstate.it.Report.step;
import static io.fragstate.it.Waits.waitFor;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One run of the recovery benchmark: a Flink cluster on the emulated hosts (JobManager on {@code
 * jm}, TaskManagers on {@code tm-1..N}, 2 slots each) with one checkpoint storage ({@link
 * BenchSystem}), the state-bench job filled to the run's state size, its steady state measured,
 * then the failure ({@code kill -9} of TaskManagers running stateful subtasks), the recovery
 * timed, the killed TaskManagers started again (a replacement host, so checkpoints place their
 * fragments again), the job stopped with a savepoint and its committed output checked
 * ({@code StateBenchCheck}: nothing lost or duplicated, restored state byte-exact).
 */
final class BenchRun {
    private static final Pattern JOB_ID = Pattern.compile("JobID ([0-9a-f]{32})");
    /** Bytes of state per key: 4 KiB values, as RocksDB state of real jobs often is. */
    static final int VALUE_BYTES = 4096;
    /** Events/s while the state is filled (each creates one key). */
    static final int FILL_RATE = 40_000;
    /** The state-bench job's vertices: its source, and the keyed operator that holds the state. */
    private static final String SOURCE = "event-index";
    /** The source's task name, as the TaskManagers' metric reporters label it. */
    private static final String SOURCE_TASK = "Source: " + SOURCE;
    private static final String STATEFUL = "count-and-verify";

    private final Path repo;
    private final Path netnsRun;
    private final BenchPlan plan;
    private final BenchSystem system;
    private final int stateMb;
    private final BenchPlan.Failure failure;
    private final Path runDir;
    private final Path flinkDir;
    private final Map<String, Object> result = new LinkedHashMap<>();

    /** {@code runsDir}: the folder of this invocation's runs; this run works in {@code runsDir/<id>}. */
    BenchRun(Path repo, Path netnsRun, BenchPlan plan, BenchSystem system, int stateMb, BenchPlan.Failure failure,
            Path runsDir) {
        this.repo = repo;
        this.netnsRun = netnsRun;
        this.plan = plan;
        this.system = system;
        this.stateMb = stateMb;
        this.failure = failure;
        this.runDir = runsDir.resolve(id());
        this.flinkDir = runDir.resolve("flink");
    }

    String id() {
        return plan.profile() + "-" + system.id + "-" + stateMb + "mb-" + failure.name().toLowerCase(java.util.Locale.ROOT);
    }

    /** Runs it; the figures (and the error, if it failed) are in the returned map. */
    Map<String, Object> run() {
        result.put("id", id());
        result.put("profile", plan.profile());
        result.put("system", system.id);
        result.put("stateMb", stateMb);
        result.put("failure", failure.name().toLowerCase(java.util.Locale.ROOT));
        result.put("taskManagers", plan.taskManagers());
        result.put("parallelism", plan.parallelism());
        long started = System.currentTimeMillis();
        try (BenchStorage storage = new BenchStorage(repo, runDir.resolve("storage"), netnsRun, plan, system)) {
            step(id() + ": starting " + system.id);
            storage.start();
            try {
                runJob(storage);
                result.put("passed", true);
            } finally {
                stopFlink();
                deleteFlinkData();
            }
        } catch (Exception e) {
            result.put("passed", false);
            result.put("error", e.toString());
            step(id() + " FAILED: " + e);
            e.printStackTrace();
        }
        result.put("runSeconds", (System.currentTimeMillis() - started) / 1000.0);
        return result;
    }

    private void runJob(BenchStorage storage) throws Exception {
        Map<String, String> config = commonFlinkConfig();
        config.putAll(system.flinkConfig(storage));
        result.put("flinkConfig", config);
        Files.createDirectories(flinkDir);
        Path extra = runDir.resolve("flink-extra.yaml");
        StringBuilder y = new StringBuilder();
        config.forEach((k, v) -> y.append(k).append(": ").append(v).append('\n'));
        Files.writeString(extra, y);
        Map<String, String> env = storage.flinkEnv();
        if (system.fragstate()) {
            cluster(env, "prepare", extra.toString(), Artifacts.pluginJar(repo).toString());
        } else {
            cluster(env, "prepare", extra.toString());
        }
        cluster(env, "on-hosts", netnsRun.toString());
        cluster(env, "start", Integer.toString(plan.taskManagers()));
        FlinkRest rest = new FlinkRest(cluster(env, "rest-url").strip());

        long keys = (long) stateMb * (1 << 20) / VALUE_BYTES;
        Path output = runDir.resolve("output");
        String jobId = submit(env, keys, output, null);
        result.put("jobId", jobId);
        waitFor("job " + jobId + " running", Duration.ofMinutes(2), () -> rest.allRunning(jobId));
        String source = rest.vertexId(jobId, SOURCE);
        String running = jobId; // the job to stop and check at the end: the restarted one after a JOB failure
        try (BenchSampler sampler = new BenchSampler(plan.workerHosts(), jobId, SOURCE_TASK)) {
            long t0 = System.currentTimeMillis();
            waitFor(keys + " keys created", Duration.ofMinutes(30), () -> rest.subtaskMetricSum(jobId, source, "numRecordsOut") >= keys);
            long filled = System.currentTimeMillis();
            result.put("fillSeconds", (filled - t0) / 1000.0);
            step(id() + ": " + keys + " keys (" + stateMb + " MiB) filled in " + (filled - t0) / 1000.0 + " s");
            // two checkpoints that began after the fill: the second one is incremental over a full state
            // (HDFS in the edge profile's cloud site takes ~5 minutes per 3 GB checkpoint over the WAN)
            waitFor("2 checkpoints after the fill", Duration.ofMinutes(40),
                    () -> completedSince(rest, jobId, filled).size() >= 2);
            Thread.sleep(plan.steadySeconds() * 1000L);
            long steadyEnd = System.currentTimeMillis();
            steady(rest, jobId, sampler, filled, steadyEnd);
            Map<String, Long> servedBefore = storage.bytesServed();
            double steadyRate = (double) result.get("steadyEventsPerSecond");
            if (failure == BenchPlan.Failure.JOB) {
                running = restartFromCheckpoint(rest, jobId, sampler, env, keys, output, steadyRate);
            } else {
                failAndRecover(rest, jobId, sampler, env, steadyRate);
            }
            result.put("bytesServedDuringRecovery", delta(servedBefore, storage.bytesServed()));
            if (system.fragstate()) {
                result.put("fragstateTaskManagerMetrics", FragstateFigures.taskManagerMetrics(rest));
            }
            result.put("samples", sampler.samples());
        }
        stopAndCheck(env, rest, running, output);
    }

    /** Settings every system shares: hosts, memory, RocksDB incremental checkpoints every 5 s, failover. */
    private Map<String, String> commonFlinkConfig() {
        Map<String, String> c = new LinkedHashMap<>();
        c.put("jobmanager.rpc.address", "jm");
        c.put("jobmanager.bind-host", "0.0.0.0");
        c.put("rest.address", "jm");
        c.put("rest.bind-address", "0.0.0.0");
        c.put("taskmanager.bind-host", "0.0.0.0");
        c.put("taskmanager.numberOfTaskSlots", "2");
        c.put("taskmanager.memory.process.size", "1536m");
        c.put("parallelism.default", Integer.toString(plan.parallelism()));
        c.put("execution.checkpointing.interval", "5 s");
        c.put("execution.checkpointing.incremental", "true");
        c.put("execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION");
        // while killed TaskManagers are not replaced yet, fragstate RS(4,2) has fewer than k + m
        // nodes to place on and fails those checkpoints (its documented policy); with Flink's
        // default of 0 each failed checkpoint would restart the job again
        c.put("execution.checkpointing.tolerable-failed-checkpoints", "1000");
        c.put("execution.checkpointing.savepoint-dir", runDir.resolve("savepoints").toUri().toString());
        // `flink stop` waits for its savepoint: 3 GB over the edge profile's WAN take ~5 minutes
        // (the default of 60 s failed HDFS-EC's stop at the edge, 300 MB)
        c.put("client.timeout", "30 min");
        // the baselines download and upload with 4 threads per subtask (Flink's default is 4 as
        // well; set so the comparison does not depend on it)
        c.put("state.backend.rocksdb.checkpoint.transfer.thread.num", "4");
        // fresh metrics for the fill wait (default: fetched from the TaskManagers every 10 s)
        c.put("metrics.fetcher.update-interval", "500 ms");
        // the throughput samples, read from each TaskManager directly (BenchSampler)
        c.put("metrics.reporter.prom.factory.class", "org.apache.flink.metrics.prometheus.PrometheusReporterFactory");
        c.put("metrics.reporter.prom.port", Integer.toString(BenchSampler.REPORTER_PORT));
        // the restore phase of every subtask, from Flink's own JobInitialization trace
        c.put("traces.reporter.slf4j.factory.class", "org.apache.flink.traces.slf4j.Slf4jTraceReporterFactory");
        return c;
    }

    /** {@code bin/flink ARGS} of this run's Flink home, with the storage's {@code env}. */
    private String flinkCli(Map<String, String> env, Duration timeout, String... args) {
        Map<String, String> e = new LinkedHashMap<>(env);
        e.put("FLINK_CONF_DIR", flinkDir.resolve("home/conf").toString());
        e.put("FLINK_LOG_DIR", flinkDir.resolve("log").toString());
        List<String> cmd = new ArrayList<>(List.of(flinkDir.resolve("home/bin/flink").toString()));
        cmd.addAll(List.of(args));
        return Shell.run(repo, e, timeout, cmd);
    }

    /** {@code flink run} of the state-bench job; {@code restorePath}: a retained checkpoint to resume from, or null. */
    private String submit(Map<String, String> env, long keys, Path output, String restorePath) {
        List<String> args = new ArrayList<>(List.of("run", "-d", "-p", Integer.toString(plan.parallelism())));
        if (restorePath != null) {
            args.addAll(List.of("-s", restorePath));
        }
        args.addAll(List.of(Artifacts.benchJobJar(repo).toString(),
                "--state-mb", Integer.toString(stateMb), "--value-bytes", Integer.toString(VALUE_BYTES),
                "--fill-rate", Integer.toString(FILL_RATE), "--rate", Integer.toString(plan.rate()),
                "--output", output.toUri().toString()));
        String out = flinkCli(env, Duration.ofMinutes(3), args.toArray(String[]::new));
        Matcher m = JOB_ID.matcher(out);
        if (!m.find()) {
            throw new IllegalStateException("flink run printed no JobID:\n" + Shell.tail(out, 3000));
        }
        step(id() + ": submitted job " + m.group(1) + " (" + keys + " keys of " + VALUE_BYTES + " bytes)");
        return m.group(1);
    }

    /** Steady-state throughput and the checkpoints after the fill: duration, full and incremental size. */
    private void steady(FlinkRest rest, String jobId, BenchSampler sampler, long from, long to) {
        result.put("steadyEventsPerSecond", sampler.medianRate(from, to));
        result.put("steadyCpuBusy", sampler.meanCpu(from, to));
        List<Map<String, Object>> cps = new ArrayList<>();
        for (JsonNode h : completedSince(rest, jobId, from)) {
            Map<String, Object> c = new LinkedHashMap<>();
            c.put("id", h.path("id").asLong());
            c.put("durationMs", h.path("end_to_end_duration").asLong());
            c.put("stateBytes", h.path("state_size").asLong());
            c.put("checkpointedBytes", h.path("checkpointed_size").asLong());
            cps.add(c);
        }
        result.put("steadyCheckpoints", cps);
        step(id() + ": steady state " + result.get("steadyEventsPerSecond") + " events/s, checkpoints " + cps);
    }

    private void failAndRecover(FlinkRest rest, String jobId, BenchSampler sampler, Map<String, String> env,
            double steadyRate) throws Exception {
        List<String> victims = new ArrayList<>(rest.taskManagersOf(jobId, rest.vertexId(jobId, STATEFUL))).subList(0, failure.kills);
        List<String> pids = new ArrayList<>();
        for (String tm : victims) {
            pids.add(cluster(env, "pid", tm).strip());
        }
        JsonNode latest = rest.checkpoints(jobId).path("latest").path("completed");
        long stateBytes = latest.path("state_size").asLong();
        RecoveryTimeline tl = new RecoveryTimeline();
        tl.kind = "KILL_TASKMANAGERS";
        RecoveryWatch watch = new RecoveryWatch(rest, jobId, victims);
        List<String> kill = new ArrayList<>(List.of("kill", "-9"));
        kill.addAll(pids);
        Map<String, Object> cpuProfile;
        try (RestoreProfile profile = startProfile()) {
            tl.killAtMs = System.currentTimeMillis();
            Shell.run(repo, Map.of(), Duration.ofSeconds(10), kill);
            tl.killedTaskManagers.addAll(victims);
            step(id() + ": kill -9 " + victims + " (pids " + pids + "), latest checkpoint " + latest.path("id").asLong()
                    + " holds " + stateBytes + " bytes of state");
            watch.awaitRecovered(tl, Duration.ofMinutes(15));
            cpuProfile = profile == null ? null : profile.stop(repo);
        }
        long seen = System.currentTimeMillis();
        Map<String, Object> r = recovered(tl, sampler, steadyRate, stateBytes);
        // when the harness saw the recovery through REST (the killed TaskManagers start again then)
        r.put("killToRecoverySeenMs", seen - tl.killAtMs);
        r.put("cpuProfile", cpuProfile);
        r.put("killedTaskManagers", victims);
        for (String tm : victims) {
            cluster(env, "start-tm", tm);
        }
        afterRecovery(rest, jobId, tl, r);
    }

    /**
     * The whole job restarted, no host lost: cancelled once its checkpoints hold the full state,
     * then submitted again from its latest retained checkpoint. The clock starts when the
     * resubmission does (the old job is CANCELED by then), so the figures are those of the
     * restart itself: {@code flink run} → every subtask RUNNING, the restore phase, throughput
     * back. Returns the new job's id.
     */
    private String restartFromCheckpoint(FlinkRest rest, String jobId, BenchSampler sampler, Map<String, String> env,
            long keys, Path output, double steadyRate) throws Exception {
        rest.cancel(jobId);
        waitFor("job " + jobId + " CANCELED", Duration.ofMinutes(2),
                () -> "CANCELED".equals(rest.job(jobId).path("state").asText()));
        // read after the cancel: a checkpoint may have completed between the last look and it
        JsonNode latest = rest.checkpoints(jobId).path("latest").path("completed");
        String path = latest.path("external_path").asText("");
        if (path.isEmpty()) {
            throw new IllegalStateException("job " + jobId + " has no retained checkpoint to restart from");
        }
        long stateBytes = latest.path("state_size").asLong();
        RecoveryTimeline tl = new RecoveryTimeline();
        tl.kind = "RESTART_JOB";
        step(id() + ": job " + jobId + " cancelled; submitting it again from checkpoint " + latest.path("id").asLong()
                + " (" + stateBytes + " bytes of state, " + path + ")");
        String restarted;
        Map<String, Object> cpuProfile;
        try (RestoreProfile profile = startProfile()) {
            tl.killAtMs = System.currentTimeMillis();
            restarted = submit(env, keys, output, path);
            sampler.follow(restarted);
            waitFor("job " + restarted + " restored and running", Duration.ofMinutes(15), () -> rest.allRunning(restarted)
                    && rest.checkpoints(restarted).path("counts").path("restored").asLong() > 0);
            cpuProfile = profile == null ? null : profile.stop(repo);
        }
        JsonNode cps = rest.checkpoints(restarted);
        tl.restores = cps.path("counts").path("restored").asLong();
        RecoveryWatch.recordRestore(tl, cps);
        tl.collectSubtasks(rest, restarted, java.util.Set.of());
        Map<String, Object> r = recovered(tl, sampler, steadyRate, stateBytes);
        r.put("cpuProfile", cpuProfile);
        r.put("restartedJobId", restarted);
        afterRecovery(rest, restarted, tl, r);
        return restarted;
    }

    /** The CPU profile of the recovery ({@code --cpu-profile}), or null when not asked for. */
    private RestoreProfile startProfile() throws java.io.IOException {
        return plan.cpuProfile() ? new RestoreProfile(runDir.resolve("perf")) : null;
    }

    /**
     * The figures of a recovery once every subtask runs again: timeline, longest restore of a
     * stateful subtask, CPU, and the time until the sources' throughput is back to 95 % of the
     * steady rate, at most the job's paced rate (waited for up to 2 minutes; -1 if it was not).
     * Put into the result as "recovery".
     */
    private Map<String, Object> recovered(RecoveryTimeline tl, BenchSampler sampler, double steadyRate, long stateBytes)
            throws InterruptedException {
        // The source is paced at plan.rate() on average; a steady median above it is catch-up
        // bursts after checkpoint stalls (3,706 events/s at a pace of 2,000 in CI's HDFS run of
        // 2026-12-07, whose throughput then was never "back" and the run waited 2 minutes).
        double target = 0.95 * (plan.rate() > 0 ? Math.min(steadyRate, plan.rate()) : steadyRate);
        long back = -1;
        long deadline = System.currentTimeMillis() + 120_000;
        while (back < 0 && System.currentTimeMillis() < deadline) {
            Thread.sleep(500);
            back = sampler.firstAtLeast(tl.allRunningAtMs, target);
        }
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("kind", tl.kind);
        r.put("killAtMs", tl.killAtMs);
        r.put("stateBytes", stateBytes);
        r.put("restoredCheckpointId", tl.restoredCheckpointId);
        r.put("restores", tl.restores);
        r.put("killToDetectedMs", tl.detectionMs());
        r.put("killToAllRunningMs", tl.killToRunningMs());
        r.put("killToThroughputBackMs", back < 0 ? -1 : back - tl.killAtMs);
        long maxInit = tl.maxInitializingMs(STATEFUL);
        r.put("maxRestoreMs", maxInit);
        r.put("subtasks", tl.subtasks);
        r.put("cpuBusyKillToRunning", sampler.meanCpu(tl.killAtMs, tl.allRunningAtMs));
        result.put("recovery", r);
        step(id() + ": recovered: detected after " + tl.detectionMs() + " ms, all RUNNING after " + tl.killToRunningMs()
                + " ms (restore, INITIALIZING→RUNNING, at most " + maxInit + " ms), throughput back after "
                + r.get("killToThroughputBackMs") + " ms");
        return r;
    }

    /** Waits for the first checkpoint after the recovery, then records Flink's JobInitialization trace of it. */
    private void afterRecovery(FlinkRest rest, String jobId, RecoveryTimeline tl, Map<String, Object> r) throws Exception {
        RecoveryWatch.awaitFirstCheckpoint(rest, jobId, tl, "a checkpoint after recovery", Duration.ofMinutes(5));
        // logged by the JobManager once the restored tasks report in; by now it has been
        r.put("jobInitialization", lastJobInitialization(tl.killAtMs));
        step(id() + ": JobInitialization " + r.get("jobInitialization"));
    }

    /** Stop with a savepoint (commits the sink's last files), then check the output. */
    private void stopAndCheck(Map<String, String> env, FlinkRest rest, String jobId, Path output) {
        flinkCli(env, Duration.ofMinutes(10), "stop", jobId);
        String check = Shell.run(repo, Map.of(), Duration.ofMinutes(10), List.of("java", "-cp",
                Artifacts.benchJobJar(repo).toString(), "io.fragstate.examples.statebench.StateBenchCheck", output.toString()));
        result.put("outputCheck", check.strip());
        step(id() + ": output check: " + check.strip());
    }

    private static final Pattern SPAN = Pattern.compile("name=JobInitialization, startTsMillis=(\\d+).*attributes=\\{(.*)\\}, children");
    private static final Pattern ATTRIBUTE = Pattern.compile("([A-Za-z._]+)=(\\d+)");

    /**
     * The numeric attributes of the last {@code JobInitialization} span that began after
     * {@code sinceMs}, from the JobManager's log (Flink's slf4j trace reporter): the longest and
     * summed download, restore and initialization durations of the subtasks, and the restored
     * bytes. Empty when none was logged.
     */
    private Map<String, Long> lastJobInitialization(long sinceMs) throws java.io.IOException {
        Map<String, Long> last = new LinkedHashMap<>();
        try (var logs = Files.list(flinkDir.resolve("log"))) {
            for (Path log : (Iterable<Path>) logs::iterator) {
                if (!log.getFileName().toString().matches(".*standalonesession.*\\.log")) {
                    continue;
                }
                for (String line : Files.readAllLines(log)) {
                    Matcher m = SPAN.matcher(line);
                    if (m.find() && Long.parseLong(m.group(1)) >= sinceMs) {
                        last.clear();
                        Matcher a = ATTRIBUTE.matcher(m.group(2));
                        while (a.find()) {
                            last.put(a.group(1), Long.parseLong(a.group(2)));
                        }
                    }
                }
            }
        }
        return last;
    }

    private static Map<String, Long> delta(Map<String, Long> before, Map<String, Long> after) {
        Map<String, Long> d = new LinkedHashMap<>();
        after.forEach((k, v) -> d.put(k, v - before.getOrDefault(k, 0L)));
        return d;
    }

    /** Completed checkpoints triggered at or after {@code fromMs}, oldest first. */
    private static List<JsonNode> completedSince(FlinkRest rest, String jobId, long fromMs) {
        List<JsonNode> out = new ArrayList<>();
        for (JsonNode h : rest.checkpoints(jobId).path("history")) {
            if ("COMPLETED".equals(h.path("status").asText()) && h.path("trigger_timestamp").asLong() >= fromMs) {
                out.add(0, h);
            }
        }
        return out;
    }

    private String cluster(Map<String, String> env, String cmd, String... args) {
        List<String> c = new ArrayList<>(List.of("bash", repo.resolve("ci/lib/flink-cluster.sh").toString(), cmd,
                flinkDir.toString()));
        c.addAll(List.of(args));
        return Shell.run(repo, env, Duration.ofMinutes(5), c);
    }

    /** Flink's state on disk (RocksDB, working dirs, checkpoints, savepoints); logs and output stay. */
    private void deleteFlinkData() {
        try {
            Shell.run(repo, Map.of(), Duration.ofMinutes(5), List.of("rm", "-rf", flinkDir.resolve("tmp").toString(),
                    flinkDir.resolve("checkpoints").toString(), runDir.resolve("savepoints").toString()));
        } catch (RuntimeException e) {
            step("deleting the data of " + id() + " failed: " + e.getMessage());
        }
    }

    private void stopFlink() {
        try {
            cluster(Map.of(), "stop");
        } catch (RuntimeException e) {
            step("stopping Flink failed: " + e.getMessage());
        }
    }
}
