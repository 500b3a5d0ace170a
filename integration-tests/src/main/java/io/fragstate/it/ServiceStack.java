package io.fragstate.it;

import io.fragstate.generator.KafkaEventProducer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The services of one run, each started and stopped through its {@code ci/lib} script: the KRaft
 * Kafka broker ({@code kafka.sh}), the Flink standalone cluster of separate JVMs ({@code
 * flink-cluster.sh}) with the job submitted and stopped through Flink's own CLI, and in cluster
 * mode the run's cluster key and standalone {@code fragstate node} processes ({@code
 * fragstate-nodes.sh}). Owns the run directory's service folders, and the teardown: {@link
 * #close()}, also run from a JVM shutdown hook, cancels the job and stops whatever was started;
 * {@link #stopLeftoversOfEarlierRuns()} stops what a killed earlier run left behind.
 */
final class ServiceStack implements AutoCloseable {
    private static final Pattern JOB_ID = Pattern.compile("JobID ([0-9a-f]{32})");

    private final Scenario scenario;
    private final Path repo;
    private final Path jobJar;
    private final Path runDir;
    private final Path kafkaDir;
    private final Path flinkDir;
    private final Path fragstateDir;
    private final Thread shutdownHook;
    private boolean kafkaStarted;
    private boolean flinkStarted;
    private boolean fragstateStarted;
    private Path clusterKey;
    /** Multiaddrs of the standalone fragstate nodes, comma-separated. */
    private String standaloneNodes;
    /** The job that teardown cancels: the one submitted last. */
    private String jobId;
    private FlinkRest rest;
    private String brokers;

    ServiceStack(Scenario scenario, Path repo, Path jobJar, Path runDir) {
        this.scenario = scenario;
        this.repo = repo;
        this.jobJar = jobJar;
        this.runDir = runDir;
        this.kafkaDir = runDir.resolve("kafka");
        this.flinkDir = runDir.resolve("flink");
        this.fragstateDir = runDir.resolve("fragstate");
        this.shutdownHook = new Thread(this::stopServices, "fragstate-it-teardown");
        Runtime.getRuntime().addShutdownHook(shutdownHook);
    }

    /** The topic the job commits its output to. */
    String outputTopic() {
        return scenario.workload().outputTopic();
    }

    /** The per-run Flink folder: {@code home/}, {@code log/}, {@code checkpoints/}, {@code savepoints/}. */
    Path flinkDir() {
        return flinkDir;
    }

    FlinkRest rest() {
        return rest;
    }

    String brokers() {
        return brokers;
    }

    /**
     * Kafka, the standalone fragstate nodes (cluster mode) and the Flink cluster; topics created
     * and the workload's reference data made ({@link Workload#prepare}).
     */
    KafkaEventProducer start(Map<String, String> flinkConfig, Scenario.Simulation sim) throws Exception {
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
        List<String> prepare = new ArrayList<>(List.of(scenario.stockFlinkConfig() ? "prepare-stock" : "prepare",
                flinkDir.toString(), extraConfig.toString()));
        scenario.libJars().forEach(j -> prepare.add(j.toAbsolutePath().toString()));
        flinkStarted = true;
        try {
            // the distribution of the scenario's Flink release (fetched into the cache on first use)
            Map<String, String> env = scenario.flinkVersion() == null ? Map.of() : Map.of("FLINK_VERSION", scenario.flinkVersion());
            Shell.bash(repo, env, Duration.ofMinutes(15), "ci/lib/flink-cluster.sh", prepare.toArray(String[]::new));
            startFlink();
            if (scenario.stockFlinkConfig() && scenario.fragstateCluster()) {
                Waits.waitFor("a fragstate node listening on the default port 6130 (the JobManager host's first)",
                        Duration.ofSeconds(30), () -> portOpen(6130));
            }
        } finally {
            try {
                kafka.join();
            } catch (java.util.concurrent.CompletionException e) {
                throw (RuntimeException) e.getCause();
            }
        }
        rest = new FlinkRest(Shell.bash(repo, Duration.ofSeconds(30), "ci/lib/flink-cluster.sh", "rest-url",
                flinkDir.toString()).strip());
        // one input partition per source subtask at least: a source reader without a split never
        // advances its watermark, so the event-time windows would never fire (parallelism 8, soak)
        int partitions = Math.max(4, scenario.parallelism());
        Workload workload = scenario.workload();
        KafkaEventProducer producer = new KafkaEventProducer(brokers, workload.inputTopic(), partitions, sim.speedup(), 10,
                System.out);
        producer.ensureTopic();
        new KafkaEventProducer(brokers, workload.outputTopic(), 2, 1, 10, System.out).ensureTopic();
        workload.prepare(sim, runDir, brokers);
        return producer;
    }

    private void startFlink() {
        Shell.bash(repo, Duration.ofMinutes(5), "ci/lib/flink-cluster.sh", "start", flinkDir.toString(),
                Integer.toString(scenario.taskManagers()));
    }

    /**
     * Stops every Flink JVM (SIGTERM: the JobManager suspends the job) and in cluster mode every
     * standalone fragstate node, so that fragments exist only in the disk stores.
     */
    void stopCluster() {
        Shell.bash(repo, Duration.ofMinutes(2), "ci/lib/flink-cluster.sh", "stop", flinkDir.toString());
        if (scenario.fragstateCluster()) {
            Shell.bash(repo, Duration.ofMinutes(1), "ci/lib/fragstate-nodes.sh", "stop", fragstateDir.toString());
        }
    }

    /** After {@link #stopCluster()}: the standalone nodes (on their old ports) and the Flink cluster again. */
    void startClusterAgain() {
        if (scenario.fragstateCluster()) {
            startStandaloneFragstateNodes();
        }
        startFlink();
    }

    Path fragstateBinary() {
        return Artifacts.fragstateBinary(repo);
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
        // FRAGSTATE_MEMBERSHIP, which `fragstate node` and the CLI read, sets the Flink JVMs' nodes
        // too, so that one variable runs a scenario under either membership (issue 13)
        String membership = System.getenv("FRAGSTATE_MEMBERSHIP");
        if (membership != null && !membership.isBlank()) {
            flinkConfig.put("fragstate.membership", membership.strip());
            Report.step("membership " + membership.strip() + " (FRAGSTATE_MEMBERSHIP)");
        }
        if (scenario.stockFlinkConfig()) {
            // the user's config as documented: only the key file's path is this run's; listen and
            // bootstrap stay the plugin's defaults (port 6130, /dns4/localhost/tcp/6130)
            if (portOpen(6130)) {
                throw new IllegalStateException("port 6130 on 127.0.0.1 is in use, but scenario " + scenario.id()
                        + " needs fragstate's default port for the JobManager host's node: stop what listens there"
                        + " (another fragstate node or a run of this scenario) and run it again");
            }
            flinkConfig.put("fragstate.cluster-key-file", clusterKey.toString());
            return;
        }
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
        Report.step(scenario.fragstateNodes() + " standalone fragstate nodes: " + standaloneNodes);
        return standaloneNodes;
    }

    /** True when something accepts TCP connections on 127.0.0.1:{@code port}. */
    static boolean portOpen(int port) {
        try (java.net.Socket s = new java.net.Socket()) {
            s.connect(new java.net.InetSocketAddress("127.0.0.1", port), 500);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** True when this run started standalone fragstate nodes. */
    boolean fragstateNodesStarted() {
        return fragstateStarted;
    }

    /** {@code fragstate stats} of the run's fragstate cluster, one line per storage node. */
    String fragstateStats() {
        return Shell.bash(repo, Duration.ofSeconds(60), "ci/lib/fragstate-nodes.sh", "stats",
                fragstateDir.toString(), fragstateBinary().toString(), clusterKey.toString());
    }

    /** {@code fragstate stats --json}: one JSON object per live storage node and line. */
    String fragstateStatsJson() {
        return Shell.bash(repo, Duration.ofSeconds(60), "ci/lib/fragstate-nodes.sh", "stats",
                fragstateDir.toString(), fragstateBinary().toString(), clusterKey.toString(), "--json");
    }

    /** The folder of the cluster key, the standalone nodes' stores, pid files and logs ({@code node-I.log}). */
    Path fragstateDir() {
        return fragstateDir;
    }

    /**
     * The pid of every process this run started that runs a fragstate node, by name: {@code
     * jobmanager}, {@code tm-N} (from the cluster script's pid files) and the standalone {@code
     * node-I}. A killed process keeps its pid file until it is started again.
     */
    Map<String, Long> nodeProcesses() throws IOException {
        Map<String, Long> pids = new java.util.TreeMap<>();
        readPidFiles(flinkDir.resolve("pids"), "(jobmanager|tm-\\d+)\\.pid", pids);
        readPidFiles(fragstateDir.resolve("pids"), "(node-\\d+)\\.pid", pids);
        return pids;
    }

    private static void readPidFiles(Path dir, String nameRegex, Map<String, Long> into) throws IOException {
        if (!Files.isDirectory(dir)) {
            return;
        }
        Pattern name = Pattern.compile(nameRegex);
        try (var files = Files.list(dir)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                Matcher m = name.matcher(f.getFileName().toString());
                String pid = m.matches() ? Files.readString(f).strip() : "";
                if (!pid.isEmpty()) {
                    into.put(m.group(1), Long.parseLong(pid));
                }
            }
        }
    }

    /** Starts TaskManager {@code id} (again, e.g. after it was killed), as a supervisor would. */
    void startTaskManager(String id) {
        Shell.bash(repo, Duration.ofMinutes(2), "ci/lib/flink-cluster.sh", "start-tm", flinkDir.toString(), id);
    }

    /** {@code fragstate ls dir} through the first standalone node, once {@code nodes} storage nodes are live. */
    String fragstateList(String dir, int nodes) {
        return Shell.run(repo, Map.of(), Duration.ofMinutes(2), List.of(fragstateBinary().toString(), "ls",
                "--bootstrap", standaloneNodes.split(",")[0], "--key-file", clusterKey.toString(),
                "--wait-nodes", Integer.toString(nodes), "--wait-timeout", "60", dir));
    }

    /** {@code flink run -d [-s restorePath] job.jar ...}; returns the job id, which teardown then cancels. */
    String submitJob(int parallelism, String restorePath) {
        List<String> cmd = new ArrayList<>(List.of(flinkDir.resolve("home/bin/flink").toString(), "run", "-d"));
        if (restorePath != null) {
            cmd.addAll(List.of("-s", restorePath));
        }
        Workload workload = scenario.workload();
        cmd.addAll(List.of(jobJar.toString(),
                "--brokers", brokers,
                "--input-topic", workload.inputTopic(), "--output-topic", workload.outputTopic(),
                "--parallelism", Integer.toString(parallelism),
                "--checkpoint-interval-ms", Long.toString(scenario.checkpointIntervalMs()),
                "--transactional-id-prefix", "tm-" + scenario.id(),
                "--transaction-timeout-ms", "300000"));
        cmd.addAll(workload.jobArguments(runDir));
        String out = Shell.run(repo, flinkEnv(), Duration.ofMinutes(3), cmd);
        Matcher m = JOB_ID.matcher(out);
        if (!m.find()) {
            throw new IllegalStateException("flink run printed no JobID:\n" + Shell.tail(out, 3000));
        }
        jobId = m.group(1);
        return jobId;
    }

    /** A job this stack did not see submitted (a refused {@code flink run}): teardown cancels it. */
    void adoptJob(String id) {
        jobId = id;
    }

    /** {@code flink stop --savepointPath target job}: stop with savepoint; returns what the CLI printed. */
    String stopWithSavepoint(String target, String job) {
        String flink = flinkDir.resolve("home/bin/flink").toString();
        return Shell.run(repo, flinkEnv(), Duration.ofMinutes(3), List.of(flink, "stop", "--savepointPath", target, job));
    }

    private Map<String, String> flinkEnv() {
        Map<String, String> env = new HashMap<>();
        env.put("FLINK_CONF_DIR", flinkDir.resolve("home/conf").toString());
        env.put("FLINK_LOG_DIR", flinkDir.resolve("log").toString());
        return env;
    }

    /** The pid of TaskManager {@code tm} (e.g. {@code tm-2}), from its pid file. */
    long taskManagerPid(String tm) {
        return Long.parseLong(Shell.bash(repo, Duration.ofSeconds(10), "ci/lib/flink-cluster.sh", "pid",
                flinkDir.toString(), tm).strip());
    }

    /** {@code kill -9} of the processes. */
    void kill9(List<Long> pids) {
        List<String> kill = new ArrayList<>(List.of("kill", "-9"));
        pids.forEach(p -> kill.add(Long.toString(p)));
        Shell.run(repo, Map.of(), Duration.ofSeconds(10), kill);
    }

    private static int freePort() throws IOException {
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
    void stopLeftoversOfEarlierRuns() throws IOException {
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
                    Report.step("stopping Flink processes left by an earlier run in " + d);
                    Shell.bash(repo, Duration.ofMinutes(2), "ci/lib/flink-cluster.sh", "stop", d.resolve("flink").toString());
                }
                if (hasEntries(d.resolve("fragstate/pids"))) {
                    Report.step("stopping fragstate nodes left by an earlier run in " + d);
                    Shell.bash(repo, Duration.ofMinutes(1), "ci/lib/fragstate-nodes.sh", "stop", d.resolve("fragstate").toString());
                }
                if (Files.exists(d.resolve("kafka/kafka.pid"))) {
                    Report.step("stopping a Kafka broker left by an earlier run in " + d);
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
}
