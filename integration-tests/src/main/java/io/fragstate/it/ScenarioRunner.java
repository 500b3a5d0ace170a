package io.fragstate.it;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.fragstate.generator.GeneratorConfig;
import io.fragstate.generator.KafkaEventProducer;
import io.fragstate.generator.ReferenceModel;
import io.fragstate.generator.TrafficSimulator;
import io.fragstate.generator.VehicleGeneratorMain;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Runs one {@link Scenario} end to end against real services: a KRaft Kafka broker
 * ({@code ci/lib/kafka.sh}), a Flink standalone cluster of separate JVMs
 * ({@code ci/lib/flink-cluster.sh}), the vehicle generator, the Traffic Monitoring job submitted
 * with Flink's CLI, {@code kill -9} of TaskManagers that run stateful subtasks, and then the
 * committed output ({@code isolation.level=read_committed}) compared exactly with the reference
 * computation. Writes a results file under {@code integration-tests/results/}. Everything it
 * started is stopped in {@link #close()}, which also runs from a shutdown hook.
 */
public final class ScenarioRunner implements AutoCloseable {
    static final String INPUT_TOPIC = "traffic-monitoring-events";
    static final String OUTPUT_TOPIC = "traffic-monitoring-notifications";
    private static final DateTimeFormatter STAMP = DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss").withZone(ZoneOffset.UTC);
    private static final Pattern JOB_ID = Pattern.compile("JobID ([0-9a-f]{32})");

    private final Scenario scenario;
    private final Path repo;
    private final Path jobJar;
    private final Path runDir;
    private final Path kafkaDir;
    private final Path flinkDir;
    private final PrintStream log = System.out;
    private final Thread shutdownHook;
    private final Path fragstateDir;
    private boolean kafkaStarted;
    private boolean flinkStarted;
    private boolean fragstateStarted;
    private Path clusterKey;
    /** Multiaddrs of the standalone fragstate nodes, comma-separated. */
    private String standaloneNodes;
    private String jobId;
    private FlinkRest rest;
    private String brokers;
    private Path registry;

    /** Outcome of a run. */
    public static final class Result {
        public String scenario;
        public String description;
        public String startedAt;
        public Map<String, String> flinkConfig;
        public Scenario.Simulation simulation;
        public long inputEvents;
        public int expectedNotifications;
        public int committedNotifications;
        public List<String> missing = new ArrayList<>();
        public List<String> duplicatesOrUnexpected = new ArrayList<>();
        public RecoveryTimeline timeline = new RecoveryTimeline();
        public long completedCheckpoints;
        public int keyMismatches;
        public double wallSeconds;
        public String runDir;
        /** cluster mode: per TaskManager the fragstate.* metrics after recovery, and `fragstate stats` */
        public Map<String, Object> fragstate = new LinkedHashMap<>();

        public boolean exactlyOnce() {
            return missing.isEmpty() && duplicatesOrUnexpected.isEmpty() && expectedNotifications == committedNotifications
                    && keyMismatches == 0;
        }
    }

    public ScenarioRunner(Scenario scenario, Path repo, Path jobJar) {
        this.scenario = scenario;
        this.repo = repo.toAbsolutePath().normalize();
        this.jobJar = jobJar.toAbsolutePath().normalize();
        this.runDir = this.repo.resolve("integration-tests/target/it-runs")
                .resolve(scenario.id() + "-" + STAMP.format(Instant.now()) + "-" + ProcessHandle.current().pid());
        this.kafkaDir = runDir.resolve("kafka");
        this.flinkDir = runDir.resolve("flink");
        this.fragstateDir = runDir.resolve("fragstate");
        this.shutdownHook = new Thread(this::stopServices, "fragstate-it-teardown");
        Runtime.getRuntime().addShutdownHook(shutdownHook);
    }

    public Result run() throws Exception {
        long t0 = System.nanoTime();
        Result result = new Result();
        result.scenario = scenario.id();
        result.description = scenario.description();
        result.startedAt = Instant.now().toString();
        Map<String, String> flinkConfig = new LinkedHashMap<>(scenario.flinkConfig());
        result.flinkConfig = flinkConfig;
        result.simulation = scenario.simulation();
        result.runDir = runDir.toString();
        if (!Files.isRegularFile(jobJar)) {
            throw new IllegalStateException("job jar " + jobJar + " not found: build it first (mvn package)");
        }
        GeneratorConfig genConfig = beginRun();
        Scenario.Simulation sim = scenario.simulation();

        // expected output first: a pure computation from the generator parameters
        List<String> expected = ReferenceModel.expectedNotifications(genConfig);
        result.expectedNotifications = expected.size();
        Files.write(runDir.resolve("expected.jsonl"), expected, StandardCharsets.UTF_8);
        step("reference computation: " + expected.size() + " notifications expected");

        KafkaEventProducer producer = startServices(flinkConfig, sim);

        // job, submitted like a user does
        jobId = submitJob(scenario.parallelism(), null);
        waitFor("job " + jobId + " running", Duration.ofSeconds(120), () -> rest.allRunning(jobId));
        step("job " + jobId + " running");

        // generator in the background, output collector in this thread
        AtomicInteger generatorSecond = new AtomicInteger();
        CompletableFuture<KafkaEventProducer.Stats> generator = CompletableFuture.supplyAsync(() -> {
            try {
                return producer.run(genConfig, generatorSecond::set);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        });

        try (OutputCollector output = new OutputCollector(brokers, OUTPUT_TOPIC)) {
            disrupt(result.timeline, generatorSecond, generator);
            if (scenario.fragstateCluster()) {
                collectFragstateFigures(result);
            }
            result.inputEvents = generator.get().events();
            step("generator done: " + result.inputEvents + " events; waiting for " + expected.size() + " committed notifications");
            long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
            while (output.count() < expected.size() && System.nanoTime() < deadline) {
                output.poll(Duration.ofMillis(500));
            }
            // give a duplicate the chance to show up: two more checkpoints (= commits) and a final read
            long target = rest.completedCheckpoints(jobId) + 2;
            waitFor("two more checkpoints", Duration.ofSeconds(60), () -> {
                output.poll(Duration.ofMillis(200));
                return rest.completedCheckpoints(jobId) >= target;
            });
            output.drain(Duration.ofSeconds(3));
            result.completedCheckpoints = rest.completedCheckpoints(jobId);
            compare(expected, output.values(), result);
            result.keyMismatches = output.keyMismatches().size();
            if (!output.keyMismatches().isEmpty()) {
                step("records whose key is not their plate: " + output.keyMismatches().subList(0, Math.min(3, output.keyMismatches().size())));
            }
        }
        result.wallSeconds = (System.nanoTime() - t0) / 1e9;
        writeResults(result);
        return result;
    }

    /** Kafka, the standalone fragstate nodes (cluster mode) and the Flink cluster; topics created. */
    private KafkaEventProducer startServices(Map<String, String> flinkConfig, Scenario.Simulation sim) throws Exception {
        // Kafka and the Flink cluster come up side by side
        int kafkaPort = freePort();
        brokers = "127.0.0.1:" + kafkaPort;
        kafkaStarted = true; // before start: a half-started broker is stopped too
        CompletableFuture<Void> kafka = CompletableFuture.runAsync(() -> Shell.bash(repo, Duration.ofMinutes(10),
                "ci/lib/kafka.sh", "start", kafkaDir.toString(), Integer.toString(kafkaPort)));

        if (scenario.fragstateCluster()) {
            startFragstateNodes(flinkConfig);
        }
        flinkConfig.replaceAll((k, v) -> v.replace(Scenario.RUN_DIR, runDir.toString()));
        Path extraConfig = runDir.resolve("scenario-config.yaml");
        StringBuilder yaml = new StringBuilder();
        flinkConfig.forEach((k, v) -> yaml.append(k).append(": ").append(v).append('\n'));
        Files.writeString(extraConfig, yaml.toString());
        List<String> prepare = new ArrayList<>(List.of("prepare", flinkDir.toString(), extraConfig.toString()));
        scenario.libJars().forEach(j -> prepare.add(j.toAbsolutePath().toString()));
        flinkStarted = true;
        try {
            Shell.bash(repo, Duration.ofMinutes(15), "ci/lib/flink-cluster.sh", prepare.toArray(String[]::new));
            Shell.bash(repo, Duration.ofMinutes(5), "ci/lib/flink-cluster.sh", "start", flinkDir.toString(),
                    Integer.toString(scenario.taskManagers()));
        } finally {
            try {
                kafka.join();
            } catch (java.util.concurrent.CompletionException e) {
                throw (RuntimeException) e.getCause();
            }
        }
        rest = new FlinkRest(Shell.bash(repo, Duration.ofSeconds(30), "ci/lib/flink-cluster.sh", "rest-url",
                flinkDir.toString()).strip());
        KafkaEventProducer producer = new KafkaEventProducer(brokers, INPUT_TOPIC, 4, sim.speedup(), 10, log);
        producer.ensureTopic();
        new KafkaEventProducer(brokers, OUTPUT_TOPIC, 2, 1, 10, log).ensureTopic();
        return producer;
    }

    private static final Set<String> TERMINAL_STATES = Set.of("FAILED", "CANCELED", "FINISHED");

    /**
     * What every run starts with: daemons of dead earlier runs stopped, this run's directory owned
     * by this JVM, and the generator's parameters and vehicle registry (the job's reference
     * table) for the scenario's simulation.
     */
    private GeneratorConfig beginRun() throws IOException {
        stopLeftoversOfEarlierRuns();
        Files.createDirectories(runDir);
        Files.writeString(runDir.resolve("owner.pid"), Long.toString(ProcessHandle.current().pid()));
        step("scenario " + scenario.id() + ": " + scenario.description() + " (run dir " + runDir + ")");
        Scenario.Simulation sim = scenario.simulation();
        GeneratorConfig genConfig = GeneratorConfig.defaults(sim.seed(), sim.scale(), sim.durationSeconds());
        registry = runDir.resolve("vehicle-registry.csv");
        VehicleGeneratorMain.writeRegistry(TrafficSimulator.registryFor(genConfig), registry);
        return genConfig;
    }

    /**
     * Scenario g: a fragstate setting the cluster cannot satisfy. Starts everything, submits the
     * job, runs the generator until the job ends or {@code observe} has passed, and reports what
     * happened: the job's state, completed checkpoints, committed output (read_committed) and the
     * log lines (JobManager and TaskManagers) that contain every one of {@code needles}. The job
     * must not run silently degraded: it fails, no checkpoint completes, nothing is committed.
     */
    public RejectedConfigResult runExpectingRejectedConfig(Duration observe, List<String> needles) throws Exception {
        GeneratorConfig genConfig = beginRun();
        Scenario.Simulation sim = scenario.simulation();
        Map<String, String> flinkConfig = new LinkedHashMap<>(scenario.flinkConfig());
        KafkaEventProducer producer = startServices(flinkConfig, sim);
        RejectedConfigResult r = new RejectedConfigResult();
        try {
            jobId = submitJob(scenario.parallelism(), null);
            step("job " + jobId + " submitted; observing for up to " + observe.toSeconds() + " s");
        } catch (IllegalStateException refused) {
            // `flink run -d` waits for the JobMaster to start: a job refused while it is set up
            // fails the command itself (its error went to stderr, above, and to the client log)
            r.submissionRefused = true;
            JsonNode jobs = rest.get("/jobs/overview").path("jobs");
            jobId = jobs.size() == 1 ? jobs.get(0).path("jid").asText() : null;
            step("flink run failed (the job was refused at submission); job " + jobId);
        }
        CompletableFuture<KafkaEventProducer.Stats> generator = CompletableFuture.supplyAsync(() -> {
            try {
                return producer.run(genConfig, s -> { });
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        });
        try (OutputCollector output = new OutputCollector(brokers, OUTPUT_TOPIC)) {
            long until = System.nanoTime() + observe.toNanos();
            while (System.nanoTime() < until && jobId != null
                    && !TERMINAL_STATES.contains(rest.job(jobId).path("state").asText())) {
                output.poll(Duration.ofMillis(500));
            }
            generator.join(); // the whole input is in Kafka: nothing was lost on the way in
            output.drain(Duration.ofSeconds(3));
            r.committedNotifications = output.count();
        }
        r.jobState = jobId == null ? "(no job)" : rest.job(jobId).path("state").asText();
        if (jobId != null && !"FAILED".equals(r.jobState)) {
            // a job that failed while it was set up has no checkpoint statistics at all
            r.completedCheckpoints = rest.completedCheckpoints(jobId);
            r.failedCheckpoints = rest.checkpoints(jobId).path("counts").path("failed").asLong();
        }
        try (var logs = Files.list(flinkDir.resolve("log"))) {
            for (Path f : (Iterable<Path>) logs::iterator) {
                if (!f.getFileName().toString().endsWith(".log")) {
                    continue;
                }
                for (String line : Files.readAllLines(f, StandardCharsets.UTF_8)) {
                    if (needles.stream().allMatch(line::contains)) {
                        r.matchingLogLines.add(f.getFileName() + ": " + line.strip());
                    }
                }
            }
        }
        step("job state " + r.jobState + (r.submissionRefused ? " (refused at submission)" : "") + ", checkpoints completed " + r.completedCheckpoints + ", failed "
                + r.failedCheckpoints + ", committed notifications " + r.committedNotifications + ", log lines naming "
                + needles + ": " + r.matchingLogLines.size()
                + (r.matchingLogLines.isEmpty() ? "" : " (first: " + Shell.tail(r.matchingLogLines.get(0), 600) + ")"));
        return r;
    }

    /** What {@link #runExpectingRejectedConfig} saw. */
    public static final class RejectedConfigResult {
        /** {@code flink run} itself failed: the JobMaster refused the job while setting it up. */
        public boolean submissionRefused;
        public String jobState;
        public long completedCheckpoints;
        public long failedCheckpoints;
        public int committedNotifications;
        public List<String> matchingLogLines = new ArrayList<>();
    }

    private Path fragstateBinary() {
        String profile = System.getProperty("fragstate.cargoProfile", "release");
        return Path.of(System.getProperty("fragstate.bin", repo.resolve("target/" + profile + "/fragstate").toString()));
    }

    /**
     * Cluster mode: a new cluster key for this run ({@code fragstate keygen}), the scenario's
     * standalone storage nodes, and the per-run addresses in the Flink config: every Flink JVM's
     * node listens on an ephemeral loopback port and bootstraps from the standalone nodes (so two
     * runs on one machine never meet on the fixed default port 6130).
     */
    private void startFragstateNodes(Map<String, String> flinkConfig) throws IOException {
        Files.createDirectories(fragstateDir);
        clusterKey = fragstateDir.resolve("cluster.key");
        Path bin = fragstateBinary();
        Shell.bash(repo, Duration.ofSeconds(30), "ci/lib/fragstate-nodes.sh", "keygen", bin.toString(), clusterKey.toString());
        flinkConfig.putIfAbsent("fragstate.cluster-key-file", clusterKey.toString());
        flinkConfig.putIfAbsent("fragstate.listen", "/ip4/127.0.0.1/tcp/0");
        if (scenario.fragstateNodes() > 0) {
            flinkConfig.putIfAbsent("fragstate.bootstrap", startStandaloneFragstateNodes());
        }
    }

    /** Starts the scenario's standalone nodes (again on their old ports after a stop); returns their addresses. */
    private String startStandaloneFragstateNodes() {
        fragstateStarted = true;
        String addrs = Shell.bash(repo, Duration.ofMinutes(2), "ci/lib/fragstate-nodes.sh", "start",
                fragstateDir.toString(), fragstateBinary().toString(), clusterKey.toString(),
                Integer.toString(scenario.fragstateNodes())).strip();
        String[] lines = addrs.split("\\R");
        standaloneNodes = lines[lines.length - 1].strip();
        step(scenario.fragstateNodes() + " standalone fragstate nodes: " + standaloneNodes);
        return standaloneNodes;
    }

    /**
     * The fragstate figures of a cluster-mode run, taken right after the recovery: the {@code
     * fragstate.*} metrics of every TaskManager (bytes and stripes fetched for restores, live peers) and {@code fragstate stats}
     * of every storage node (fragments and bytes held, repairs).
     */
    private void collectFragstateFigures(Result result) {
        String names = String.join(",", List.of("fragstate.liveNodes", "fragstate.bytesWritten", "fragstate.objectsWritten",
                "fragstate.bytesRead", "fragstate.objectsOpened", "fragstate.bytesFetched", "fragstate.stripesReconstructed",
                "fragstate.failedRequests", "fragstate.fragmentsReplaced", "fragstate.fragmentsHeld", "fragstate.bytesHeld",
                "fragstate.objectsDegraded", "fragstate.bytesToRepair", "fragstate.cellsFetched", "fragstate.peersFetchedFrom"));
        Map<String, Object> perTm = new TreeMap<>();
        // Right after recovery (and after the first checkpoint that followed it). The TaskManager
        // gauges are cached for 1 s and the REST metric cache is refreshed every
        // metrics.fetcher.update-interval, so poll (at most 20 s) until the restore's fetches and
        // that checkpoint's writes show up; TaskManagers restarted with the cluster (d) start at 0.
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        try {
            long fetched = 0;
            long written = 0;
            while ((fetched == 0 || written == 0) && System.nanoTime() < deadline) {
                perTm.clear();
                fetched = 0;
                written = 0;
                for (String tm : rest.registeredTaskManagers()) {
                    Map<String, Long> m = new TreeMap<>();
                    for (JsonNode g : rest.get("/taskmanagers/" + tm + "/metrics?get=" + names)) {
                        m.put(g.path("id").asText().replace("fragstate.", ""), g.path("value").asLong());
                    }
                    perTm.put(tm, m);
                    fetched += m.getOrDefault("bytesFetched", 0L);
                    written += m.getOrDefault("bytesWritten", 0L);
                }
                if (fetched == 0 || written == 0) {
                    Thread.sleep(1000);
                }
            }
        } catch (RuntimeException e) {
            perTm.put("error", e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            perTm.put("error", "interrupted");
        }
        result.fragstate.put("taskManagerMetrics", perTm);
        if (fragstateStarted) {
            try {
                String stats = Shell.bash(repo, Duration.ofSeconds(60), "ci/lib/fragstate-nodes.sh", "stats",
                        fragstateDir.toString(), fragstateBinary().toString(), clusterKey.toString());
                result.fragstate.put("nodeStats", List.of(stats.strip().split("\\R")));
            } catch (RuntimeException e) {
                result.fragstate.put("nodeStats", "failed: " + e.getMessage());
            }
        }
        step("fragstate figures: " + result.fragstate);
    }

    /** {@code flink run -d [-s restorePath] job.jar ...}; returns the job id. */
    private String submitJob(int parallelism, String restorePath) {
        Map<String, String> env = flinkEnv();
        List<String> cmd = new ArrayList<>(List.of(flinkDir.resolve("home/bin/flink").toString(), "run", "-d"));
        if (restorePath != null) {
            cmd.addAll(List.of("-s", restorePath));
        }
        cmd.addAll(List.of(jobJar.toString(),
                "--brokers", brokers,
                "--input-topic", INPUT_TOPIC, "--output-topic", OUTPUT_TOPIC,
                "--parallelism", Integer.toString(parallelism),
                "--checkpoint-interval-ms", Long.toString(scenario.checkpointIntervalMs()),
                "--vehicle-registry", registry.toUri().toString(),
                "--transactional-id-prefix", "tm-" + scenario.id(),
                "--transaction-timeout-ms", "300000"));
        String out = Shell.run(repo, env, Duration.ofMinutes(3), cmd);
        Matcher m = JOB_ID.matcher(out);
        if (!m.find()) {
            throw new IllegalStateException("flink run printed no JobID:\n" + Shell.tail(out, 3000));
        }
        return m.group(1);
    }

    private void disrupt(RecoveryTimeline tl, AtomicInteger generatorSecond,
            CompletableFuture<KafkaEventProducer.Stats> generator) throws Exception {
        Scenario.Disruption plan = scenario.disruption();
        tl.kind = plan.kind().name();
        waitFor(plan.minCompletedCheckpoints() + " completed checkpoints and generator second " + plan.minGeneratorSecond(),
                Duration.ofSeconds(180), () -> {
                    if (generator.isDone()) {
                        generator.join(); // surfaces a generator failure
                        throw new IllegalStateException("the generator finished before the disruption: make the run longer");
                    }
                    return rest.completedCheckpoints(jobId) >= plan.minCompletedCheckpoints()
                            && generatorSecond.get() >= plan.minGeneratorSecond();
                });
        switch (plan.kind()) {
            case KILL_TASKMANAGERS:
                killAndRecover(tl, plan, generatorSecond);
                break;
            case RESTART_CLUSTER:
                restartClusterAndResume(tl, generatorSecond);
                break;
            case SAVEPOINT_AND_RESCALE:
                savepointAndRescale(tl, plan, generatorSecond);
                break;
            default:
                throw new IllegalStateException("unknown disruption " + plan.kind());
        }
    }

    private void killAndRecover(RecoveryTimeline tl, Scenario.Disruption plan, AtomicInteger generatorSecond)
            throws Exception {
        String windowVertex = rest.vertexId(jobId, "window");
        List<String> victims = new ArrayList<>(rest.taskManagersOf(jobId, windowVertex));
        if (victims.size() < plan.taskManagers()) {
            throw new IllegalStateException("only " + victims.size() + " TaskManagers run window subtasks; cannot kill "
                    + plan.taskManagers());
        }
        victims = victims.subList(0, plan.taskManagers());
        JsonNode before = rest.checkpoints(jobId);
        long restoredBefore = before.path("counts").path("restored").asLong();
        for (JsonNode s : rest.get("/jobs/" + jobId + "/vertices/" + windowVertex).path("subtasks")) {
            if (victims.contains(s.path("taskmanager-id").asText())) {
                tl.statefulSubtasksOnKilled.add("average-speed-window#" + s.path("subtask").asInt());
            }
        }
        attemptsBefore = attempts();
        onKilled = subtasksOn(victims);
        List<Long> pids = new ArrayList<>();
        for (String tm : victims) {
            pids.add(Long.parseLong(Shell.bash(repo, Duration.ofSeconds(10), "ci/lib/flink-cluster.sh", "pid",
                    flinkDir.toString(), tm).strip()));
        }
        if (plan.trigger() == Scenario.Trigger.DURING_CHECKPOINT) {
            // everything else is prepared: kill as soon as a checkpoint is seen in progress
            waitFor("a checkpoint in progress", Duration.ofSeconds(60),
                    () -> rest.checkpoints(jobId).path("counts").path("in_progress").asInt() > 0);
        }
        tl.killAtMs = System.currentTimeMillis();
        List<String> kill = new ArrayList<>(List.of("kill", "-9"));
        pids.forEach(p -> kill.add(Long.toString(p)));
        Shell.run(repo, Map.of(), Duration.ofSeconds(10), kill);
        tl.killedTaskManagers.addAll(victims);
        tl.killedPids.addAll(pids);
        step("kill -9 " + victims + " (pids " + pids + "), generator at second " + generatorSecond.get()
                + ", stateful subtasks lost: " + tl.statefulSubtasksOnKilled);

        // recovered = the JobManager recorded a failure after the kill, every subtask that ran on
        // a killed TaskManager runs again in a newer attempt, the dead TaskManagers are gone from
        // the cluster and every subtask is RUNNING. (REST answers come from a cache refreshed
        // every web.refresh-interval, so a stale "all RUNNING" from before the kill must not count.)
        waitFor("recovery", Duration.ofSeconds(180), () -> {
            if (firstFailureAfter(tl) < 0 || !rest.allRunning(jobId)
                    || rest.registeredTaskManagers().stream().anyMatch(tl.killedTaskManagers::contains)) {
                return false;
            }
            Map<String, Integer> now = attempts();
            for (Map.Entry<String, Integer> e : attemptsBefore.entrySet()) {
                if (onKilled.contains(e.getKey()) && now.getOrDefault(e.getKey(), -1) <= e.getValue()) {
                    return false;
                }
            }
            return rest.checkpoints(jobId).path("counts").path("restored").asLong() > restoredBefore;
        });
        JsonNode cps = rest.checkpoints(jobId);
        tl.restores = cps.path("counts").path("restored").asLong() - restoredBefore;
        tl.restoredCheckpointId = cps.path("latest").path("restored").path("id").asLong(-1);
        tl.restoreTimestampMs = cps.path("latest").path("restored").path("restore_timestamp").asLong(-1);
        firstFailureAfter(tl);
        tl.collectSubtasks(rest, jobId, Set.of("window"));
        long allRunning = tl.allRunningAtMs;
        waitFor("a checkpoint after recovery", Duration.ofSeconds(60), () -> {
            JsonNode c = rest.checkpoints(jobId).path("latest").path("completed");
            return c.path("trigger_timestamp").asLong() >= allRunning;
        });
        for (JsonNode h : rest.checkpoints(jobId).path("history")) {
            if ("COMPLETED".equals(h.path("status").asText()) && h.path("trigger_timestamp").asLong() >= allRunning
                    && (tl.firstCheckpointAfterRecoveryId < 0 || h.path("id").asLong() < tl.firstCheckpointAfterRecoveryId)) {
                tl.firstCheckpointAfterRecoveryId = h.path("id").asLong();
                tl.firstCheckpointAfterRecoveryAtMs = h.path("latest_ack_timestamp").asLong();
            }
        }
        step("recovered: " + tl.summary());
    }

    /**
     * Scenario d: the whole cluster goes down (every JVM gets SIGTERM, the JobManager suspends
     * the job; in cluster mode the standalone fragstate nodes stop too, so every fragment is only
     * on disk), comes back on the same ports, and the job is resubmitted from the latest retained
     * checkpoint, the way an operator would: for fragstate, found with {@code fragstate ls}.
     */
    private void restartClusterAndResume(RecoveryTimeline tl, AtomicInteger generatorSecond) throws Exception {
        String oldJob = jobId;
        tl.killAtMs = System.currentTimeMillis();
        step("stopping the whole cluster (generator at second " + generatorSecond.get() + ")");
        Shell.bash(repo, Duration.ofMinutes(2), "ci/lib/flink-cluster.sh", "stop", flinkDir.toString());
        if (scenario.fragstateCluster()) {
            Shell.bash(repo, Duration.ofMinutes(1), "ci/lib/fragstate-nodes.sh", "stop", fragstateDir.toString());
        }
        tl.phases.put("cluster stopped", System.currentTimeMillis() - tl.killAtMs);
        if (scenario.fragstateCluster()) {
            startStandaloneFragstateNodes();
        }
        Shell.bash(repo, Duration.ofMinutes(5), "ci/lib/flink-cluster.sh", "start", flinkDir.toString(),
                Integer.toString(scenario.taskManagers()));
        tl.phases.put("cluster started", System.currentTimeMillis() - tl.killAtMs);
        String checkpoint = scenario.fragstateCluster()
                ? latestRetainedFragstateCheckpoint(oldJob)
                : latestRetainedCheckpoint(oldJob).toUri().toString();
        tl.restoredFrom = checkpoint;
        jobId = submitJob(scenario.parallelism(), checkpoint);
        tl.phases.put("job resubmitted", System.currentTimeMillis() - tl.killAtMs);
        step("resubmitted as job " + jobId + " from " + checkpoint);
        awaitFreshJob(tl);
    }

    /**
     * Scenario e: stop the job with a savepoint, resubmit from the savepoint at another
     * parallelism. Stop-with-savepoint (not "savepoint, then cancel"): a periodic checkpoint that
     * completes between a plain savepoint and the cancel commits output beyond the savepoint,
     * and restarting from the savepoint then duplicates it (seen here: 135 duplicates).
     */
    private void savepointAndRescale(RecoveryTimeline tl, Scenario.Disruption plan, AtomicInteger generatorSecond)
            throws Exception {
        Map<String, String> env = flinkEnv();
        String flink = flinkDir.resolve("home/bin/flink").toString();
        tl.killAtMs = System.currentTimeMillis();
        step("stop with savepoint of job " + jobId + " (generator at second " + generatorSecond.get() + ")");
        String target = scenario.fragstateCluster()
                ? fragstateCheckpointDir().replaceAll("/[^/]*$", "/savepoints")
                : flinkDir.resolve("savepoints").toUri().toString();
        String out = Shell.run(repo, env, Duration.ofMinutes(3), List.of(flink, "stop", "--savepointPath", target, jobId));
        Matcher m = Pattern.compile("Path: (\\S+)").matcher(out);
        if (!m.find()) {
            throw new IllegalStateException("flink stop printed no savepoint path:\n" + Shell.tail(out, 3000));
        }
        String savepoint = m.group(1);
        tl.restoredFrom = savepoint;
        String oldJob = jobId;
        waitFor("job " + oldJob + " stopped", Duration.ofSeconds(60),
                () -> "FINISHED".equals(rest.job(oldJob).path("state").asText()));
        tl.phases.put("stopped with savepoint", System.currentTimeMillis() - tl.killAtMs);
        jobId = submitJob(plan.newParallelism(), savepoint);
        tl.phases.put("job resubmitted", System.currentTimeMillis() - tl.killAtMs);
        step("resubmitted as job " + jobId + " at parallelism " + plan.newParallelism() + " from " + savepoint);
        awaitFreshJob(tl);
    }

    /** Waits until the resubmitted job runs fully, then records its restore and startup timeline. */
    private void awaitFreshJob(RecoveryTimeline tl) throws Exception {
        waitFor("job " + jobId + " running after restore", Duration.ofSeconds(180), () -> rest.allRunning(jobId)
                && rest.checkpoints(jobId).path("latest").path("restored").path("id").asLong(-1) >= 0);
        JsonNode cps = rest.checkpoints(jobId);
        tl.restores = cps.path("counts").path("restored").asLong();
        tl.restoredCheckpointId = cps.path("latest").path("restored").path("id").asLong(-1);
        tl.restoreTimestampMs = cps.path("latest").path("restored").path("restore_timestamp").asLong(-1);
        tl.collectSubtasks(rest, jobId, Set.of("window"));
        long allRunning = tl.allRunningAtMs;
        waitFor("a checkpoint after the restart", Duration.ofSeconds(60), () ->
                rest.checkpoints(jobId).path("latest").path("completed").path("trigger_timestamp").asLong() >= allRunning);
        for (JsonNode h : rest.checkpoints(jobId).path("history")) {
            if ("COMPLETED".equals(h.path("status").asText()) && h.path("trigger_timestamp").asLong() >= allRunning
                    && (tl.firstCheckpointAfterRecoveryId < 0 || h.path("id").asLong() < tl.firstCheckpointAfterRecoveryId)) {
                tl.firstCheckpointAfterRecoveryId = h.path("id").asLong();
                tl.firstCheckpointAfterRecoveryAtMs = h.path("latest_ack_timestamp").asLong();
            }
        }
        step("running again: " + tl.summary());
    }

    /** {@code fragstate.checkpoint-dir} of this run (the plugin's default when the scenario leaves it unset). */
    private String fragstateCheckpointDir() {
        return scenario.flinkConfig().getOrDefault("fragstate.checkpoint-dir", "fragstate://flink/checkpoints");
    }

    /**
     * The newest {@code chk-N} of the job in fragstate that has its {@code _metadata}, listed with
     * {@code fragstate ls} once every storage node (JobManager, TaskManagers, standalone) is back.
     */
    private String latestRetainedFragstateCheckpoint(String job) {
        String dir = fragstateCheckpointDir() + "/" + job + "/";
        int nodes = 1 + scenario.taskManagers() + scenario.fragstateNodes();
        String listing = Shell.run(repo, Map.of(), Duration.ofMinutes(2), List.of(fragstateBinary().toString(), "ls",
                "--bootstrap", standaloneNodes.split(",")[0], "--key-file", clusterKey.toString(),
                "--wait-nodes", Integer.toString(nodes), "--wait-timeout", "60", dir));
        Matcher m = Pattern.compile(Pattern.quote(dir) + "chk-(\\d+)/_metadata$", Pattern.MULTILINE).matcher(listing);
        long best = -1;
        while (m.find()) {
            best = Math.max(best, Long.parseLong(m.group(1)));
        }
        if (best < 0) {
            throw new IllegalStateException("no retained checkpoint with _metadata under " + dir + " in:\n" + Shell.tail(listing, 3000));
        }
        return dir + "chk-" + best;
    }

    /** The newest {@code chk-N} of the job that has its {@code _metadata}. */
    private Path latestRetainedCheckpoint(String job) throws IOException {
        Path dir = flinkDir.resolve("checkpoints").resolve(job);
        Path best = null;
        long bestN = -1;
        if (Files.isDirectory(dir)) {
            try (var list = Files.list(dir)) {
                for (Path p : (Iterable<Path>) list::iterator) {
                    String name = p.getFileName().toString();
                    if (name.startsWith("chk-") && Files.exists(p.resolve("_metadata"))) {
                        long n = Long.parseLong(name.substring(4));
                        if (n > bestN) {
                            bestN = n;
                            best = p;
                        }
                    }
                }
            }
        }
        if (best == null) {
            throw new IllegalStateException("no retained checkpoint with _metadata under " + dir
                    + " (is execution.checkpointing.externalized-checkpoint-retention set to RETAIN_ON_CANCELLATION?)");
        }
        return best;
    }

    private Map<String, String> flinkEnv() {
        Map<String, String> env = new HashMap<>();
        env.put("FLINK_CONF_DIR", flinkDir.resolve("home/conf").toString());
        env.put("FLINK_LOG_DIR", flinkDir.resolve("log").toString());
        return env;
    }

    private Map<String, Integer> attemptsBefore = Map.of();
    private Set<String> onKilled = Set.of();

    /** "vertex#subtask" -> current attempt number, for every subtask of the job. */
    private Map<String, Integer> attempts() {
        Map<String, Integer> m = new HashMap<>();
        for (JsonNode v : rest.job(jobId).path("vertices")) {
            String vid = v.path("id").asText();
            for (JsonNode s : rest.get("/jobs/" + jobId + "/vertices/" + vid).path("subtasks")) {
                m.put(vid + "#" + s.path("subtask").asInt(), s.path("attempt").asInt());
            }
        }
        return m;
    }

    /** "vertex#subtask" of every subtask running on one of the TaskManagers. */
    private Set<String> subtasksOn(List<String> taskManagers) {
        Set<String> out = new java.util.HashSet<>();
        for (JsonNode v : rest.job(jobId).path("vertices")) {
            String vid = v.path("id").asText();
            for (JsonNode s : rest.get("/jobs/" + jobId + "/vertices/" + vid).path("subtasks")) {
                if (taskManagers.contains(s.path("taskmanager-id").asText())) {
                    out.add(vid + "#" + s.path("subtask").asInt());
                }
            }
        }
        return out;
    }

    /** Fills the first failure recorded at or after the kill; returns its timestamp or -1. */
    private long firstFailureAfter(RecoveryTimeline tl) {
        tl.failureDetectedAtMs = -1;
        for (JsonNode e : rest.get("/jobs/" + jobId + "/exceptions").path("exceptionHistory").path("entries")) {
            long ts = e.path("timestamp").asLong();
            if (ts >= tl.killAtMs && (tl.failureDetectedAtMs < 0 || ts < tl.failureDetectedAtMs)) {
                tl.failureDetectedAtMs = ts;
                tl.firstFailure = e.path("exceptionName").asText().replaceAll(".*\\.", "") + " in "
                        + e.path("taskName").asText() + " on " + e.path("taskManagerId").asText();
            }
        }
        return tl.failureDetectedAtMs;
    }

    private static void compare(List<String> expected, List<String> actual, Result result) {
        result.committedNotifications = actual.size();
        Map<String, Integer> diff = new TreeMap<>();
        expected.forEach(s -> diff.merge(s, 1, Integer::sum));
        actual.forEach(s -> diff.merge(s, -1, Integer::sum));
        diff.forEach((s, n) -> {
            for (int i = 0; i < Math.abs(n); i++) {
                (n > 0 ? result.missing : result.duplicatesOrUnexpected).add(s);
            }
        });
    }

    private void writeResults(Result result) throws IOException {
        Path dir = repo.resolve("integration-tests/results");
        Files.createDirectories(dir);
        ObjectMapper m = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("scenario", result.scenario);
        doc.put("description", result.description);
        doc.put("startedAt", result.startedAt);
        doc.put("exactlyOnce", result.exactlyOnce());
        doc.put("expectedNotifications", result.expectedNotifications);
        doc.put("committedNotifications", result.committedNotifications);
        doc.put("missing", result.missing.size());
        doc.put("duplicatesOrUnexpected", result.duplicatesOrUnexpected.size());
        doc.put("recordKeyNotPlate", result.keyMismatches);
        doc.put("inputEvents", result.inputEvents);
        doc.put("completedCheckpoints", result.completedCheckpoints);
        doc.put("wallSeconds", result.wallSeconds);
        RecoveryTimeline tl = result.timeline;
        Map<String, Object> t = new LinkedHashMap<>();
        t.put("disruption", tl.kind);
        t.put("killedTaskManagers", tl.killedTaskManagers);
        t.put("statefulSubtasksOnKilled", tl.statefulSubtasksOnKilled);
        t.put("killToFailureDetectedMs", tl.detectionMs());
        t.put("firstFailure", tl.firstFailure);
        t.put("restores", tl.restores);
        t.put("restoredCheckpointId", tl.restoredCheckpointId);
        t.put("killToRestoreTriggeredMs", tl.restoreTimestampMs < 0 ? -1 : tl.restoreTimestampMs - tl.killAtMs);
        t.put("killToAllRunningMs", tl.killToRunningMs());
        t.put("killToFirstCheckpointAfterRecoveryMs", tl.killToFirstCheckpointMs());
        t.put("phasesMsAfterDisruption", tl.phases);
        t.put("restoredFrom", tl.restoredFrom);
        t.put("windowSubtasksInitializingToRunningMs", Map.of("min", tl.minInitializingMs("window"), "max", tl.maxInitializingMs("window")));
        t.put("killAtMs", tl.killAtMs);
        t.put("subtasks", tl.subtasks);
        doc.put("timeline", t);
        if (!result.fragstate.isEmpty()) {
            doc.put("fragstate", result.fragstate);
        }
        doc.put("flinkConfig", result.flinkConfig);
        doc.put("simulation", result.simulation);
        doc.put("runDir", result.runDir);
        Path file = dir.resolve(result.scenario + "-" + STAMP.format(Instant.parse(result.startedAt)) + ".json");
        m.writeValue(file.toFile(), doc);
        step("results written to " + file);
    }

    private void step(String msg) {
        log.printf("[it %s] %s%n", STAMP.format(Instant.now()), msg);
    }

    interface Check {
        boolean done() throws Exception;
    }

    static void waitFor(String what, Duration timeout, Check check) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        Exception last = null;
        while (System.nanoTime() < deadline) {
            try {
                if (check.done()) {
                    return;
                }
            } catch (IllegalStateException e) {
                if (e.getMessage() != null && e.getMessage().contains("make the run longer")) {
                    throw e;
                }
                last = e; // REST briefly unavailable during failover
            }
            Thread.sleep(250);
        }
        throw new IllegalStateException("timed out after " + timeout.toSeconds() + " s waiting for " + what
                + (last == null ? "" : " (last error: " + last.getMessage() + ")"));
    }

    static int freePort() throws IOException {
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    /** A directory that exists and is not empty (a pid directory with pid files in it). */
    private static boolean hasEntries(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return false;
        }
        try (var files = Files.list(dir)) {
            return files.findAny().isPresent();
        }
    }

    /**
     * A run whose JVM was killed (no shutdown hook) leaves its daemons behind: stop them through
     * their pid files before starting new ones.
     */
    private void stopLeftoversOfEarlierRuns() throws IOException {
        Path runs = runDir.getParent();
        if (!Files.isDirectory(runs)) {
            return;
        }
        try (var dirs = Files.list(runs)) {
            for (Path d : (Iterable<Path>) dirs::iterator) {
                if (ownerAlive(d)) {
                    continue; // another harness (another Maven run) is using it right now
                }
                if (hasEntries(d.resolve("flink/pids"))) {
                    step("stopping Flink processes left by an earlier run in " + d);
                    Shell.bash(repo, Duration.ofMinutes(2), "ci/lib/flink-cluster.sh", "stop", d.resolve("flink").toString());
                }
                if (hasEntries(d.resolve("fragstate/pids"))) {
                    step("stopping fragstate nodes left by an earlier run in " + d);
                    Shell.bash(repo, Duration.ofMinutes(1), "ci/lib/fragstate-nodes.sh", "stop", d.resolve("fragstate").toString());
                }
                if (Files.exists(d.resolve("kafka/kafka.pid"))) {
                    step("stopping a Kafka broker left by an earlier run in " + d);
                    Shell.bash(repo, Duration.ofMinutes(1), "ci/lib/kafka.sh", "stop", d.resolve("kafka").toString());
                }
            }
        }
    }

    /** True when the JVM that created the run directory is still running. */
    private static boolean ownerAlive(Path dir) {
        try {
            long pid = Long.parseLong(Files.readString(dir.resolve("owner.pid")).strip());
            return ProcessHandle.of(pid).map(ph -> ph.isAlive()
                    && ph.info().command().map(c -> c.contains("java")).orElse(true)).orElse(false);
        } catch (IOException | NumberFormatException e) {
            return false;
        }
    }

    private synchronized void stopServices() {
        if (jobId != null && rest != null) {
            try {
                rest.cancel(jobId);
            } catch (RuntimeException e) {
                // the cluster may already be gone
            }
            jobId = null;
        }
        if (flinkStarted) {
            stopQuietly("Flink", "ci/lib/flink-cluster.sh", flinkDir, Duration.ofMinutes(2));
            flinkStarted = false;
        }
        if (fragstateStarted) {
            stopQuietly("fragstate nodes", "ci/lib/fragstate-nodes.sh", fragstateDir, Duration.ofMinutes(1));
            fragstateStarted = false;
        }
        if (kafkaStarted) {
            stopQuietly("Kafka", "ci/lib/kafka.sh", kafkaDir, Duration.ofMinutes(1));
            kafkaStarted = false;
        }
    }

    /** {@code script stop dir}; a failure is reported, not thrown (teardown goes on). */
    private void stopQuietly(String what, String script, Path dir, Duration timeout) {
        try {
            Shell.bash(repo, timeout, script, "stop", dir.toString());
        } catch (RuntimeException e) {
            System.err.println("stopping " + what + " failed: " + e.getMessage());
        }
    }

    @Override
    public void close() {
        stopServices();
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        } catch (IllegalStateException e) {
            // already shutting down
        }
    }

    /** read_committed consumer over all partitions of the output topic, from the beginning. */
    static final class OutputCollector implements AutoCloseable {
        private final KafkaConsumer<String, String> consumer;
        private final List<String> values = new ArrayList<>();
        private final List<String> keyMismatches = new ArrayList<>();

        OutputCollector(String brokers, String topic) {
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
            p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            consumer = new KafkaConsumer<>(p);
            List<TopicPartition> parts = new ArrayList<>();
            consumer.partitionsFor(topic).forEach(pi -> parts.add(new TopicPartition(topic, pi.partition())));
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
        }

        void poll(Duration d) {
            for (ConsumerRecord<String, String> r : consumer.poll(d)) {
                values.add(r.value());
                // the record key must be the plate of the notification
                if (r.key() == null || !r.value().contains("\"lp\":" + quote(r.key()) + ",")) {
                    keyMismatches.add(r.key() + " -> " + r.value());
                }
            }
        }

        /** Polls until nothing arrives for {@code quiet}. */
        void drain(Duration quiet) {
            long last = System.nanoTime();
            while (System.nanoTime() - last < quiet.toNanos()) {
                int before = values.size();
                poll(Duration.ofMillis(300));
                if (values.size() != before) {
                    last = System.nanoTime();
                }
            }
        }

        int count() {
            return values.size();
        }

        List<String> keyMismatches() {
            return keyMismatches;
        }

        private static String quote(String s) {
            try {
                return new ObjectMapper().writeValueAsString(s);
            } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                throw new IllegalStateException(e);
            }
        }

        List<String> values() {
            return values;
        }

        @Override
        public void close() {
            consumer.close(Duration.ofSeconds(5));
        }
    }
}
