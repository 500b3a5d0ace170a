package io.fragstate.it;

import static io.fragstate.it.Report.step;

import io.fragstate.generator.EventSource;
import io.fragstate.generator.KafkaEventProducer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;

/**
 * Runs one {@link Scenario} end to end against real services and says what happened. The steps,
 * each in its own class: the reference computation of the expected output; the {@link
 * ServiceStack} (Kafka, the Flink cluster, standalone fragstate nodes; teardown in {@link
 * #close()}, also from a shutdown hook); the job submitted with Flink's CLI and the vehicle
 * generator started; the scenario's {@link Disruptions disruption} and the recovery timeline;
 * {@link FragstateFigures} in cluster mode; the committed output read by the {@link
 * OutputCollector} ({@code isolation.level=read_committed}) and compared exactly with the
 * reference; the {@link Report} (progress lines, {@code integration-tests/results/*.json}).
 */
public final class ScenarioRunner implements AutoCloseable {
    private static final Set<String> TERMINAL_STATES = Set.of("FAILED", "CANCELED", "FINISHED");

    private final Scenario scenario;
    private final Path repo;
    private final Path jobJar;
    private final Path runDir;
    private final ServiceStack stack;

    /** Outcome of a run. */
    public static final class Result {
        public String scenario;
        public String description;
        public String startedAt;
        public Map<String, String> flinkConfig;
        public Scenario.Simulation simulation;
        /** the running cluster's own answer (REST {@code /config}) */
        public String flinkVersion;
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

    /** A runner of {@code scenario}, which names its job jar ({@link Scenario#jobJar}). */
    public ScenarioRunner(Scenario scenario, Path repo) {
        this.scenario = scenario;
        this.repo = repo.toAbsolutePath().normalize();
        this.jobJar = scenario.jobJar(this.repo).toAbsolutePath().normalize();
        this.runDir = this.repo.resolve("integration-tests/target/it-runs")
                .resolve(scenario.id() + "-" + Report.STAMP.format(Instant.now()) + "-" + ProcessHandle.current().pid());
        this.stack = new ServiceStack(scenario, this.repo, this.jobJar, runDir);
    }

    /**
     * What happens to the running job between its submission and the output check: given the
     * started stack, the job, the result to fill, the generator's progress and the generator
     * itself; returns the id of the job that runs afterwards.
     */
    interface Phase {
        String run(ServiceStack stack, String jobId, Result result, AtomicInteger generatorSecond,
                CompletableFuture<KafkaEventProducer.Stats> generator) throws Exception;
    }

    /** Runs the scenario with its {@link Scenario.Disruption}. */
    public Result run() throws Exception {
        return run((stack, job, r, second, generator) ->
                new Disruptions(scenario, stack).disrupt(job, r.timeline, second, generator));
    }

    /** Runs the scenario with {@code phase} in place of its disruption (the soak's kills and samples). */
    Result run(Phase phase) throws Exception {
        return run(phase, s -> { });
    }

    /** {@link #run(Phase)}, and {@code onGeneratorSecond} hears each simulated second the generator has sent. */
    Result run(Phase phase, IntConsumer onGeneratorSecond) throws Exception {
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
        beginRun();

        // expected output first: a pure computation from the generator parameters
        List<String> expected = scenario.workload().expected(scenario.simulation());
        result.expectedNotifications = expected.size();
        Files.write(runDir.resolve("expected.jsonl"), expected, StandardCharsets.UTF_8);
        step("reference computation: " + expected.size() + " notifications expected");

        KafkaEventProducer producer = stack.start(flinkConfig, scenario.simulation());
        FlinkRest rest = stack.rest();
        result.flinkVersion = rest.get("/config").path("flink-version").asText();
        step("Flink " + result.flinkVersion + " cluster, job jar " + jobJar.getFileName());

        // job, submitted like a user does
        String first = stack.submitJob(scenario.parallelism(), null);
        Waits.waitFor("job " + first + " running", Duration.ofSeconds(120), () -> rest.allRunning(first));
        step("job " + first + " running");

        // generator in the background, output collector in this thread
        AtomicInteger generatorSecond = new AtomicInteger();
        CompletableFuture<KafkaEventProducer.Stats> generator = startGenerator(producer, second -> {
            generatorSecond.set(second);
            onGeneratorSecond.accept(second);
        });

        try (OutputCollector output = newOutputCollector()) {
            String jobId = phase.run(stack, first, result, generatorSecond, generator);
            if (scenario.fragstateCluster()) {
                FragstateFigures.collect(stack, result.fragstate);
            }
            result.inputEvents = generator.get().events();
            step("generator done: " + result.inputEvents + " events; waiting for " + expected.size() + " committed notifications");
            output.awaitExpected(expected.size(), rest, jobId);
            result.completedCheckpoints = rest.completedCheckpoints(jobId);
            output.compareWith(expected, result);
        }
        result.wallSeconds = (System.nanoTime() - t0) / 1e9;
        Report.writeResults(repo, result);
        return result;
    }

    /** What every run starts with: daemons of dead earlier runs stopped, this run's directory owned by this JVM. */
    private void beginRun() throws IOException {
        stack.stopLeftoversOfEarlierRuns();
        Files.createDirectories(runDir);
        Files.writeString(runDir.resolve("owner.pid"), Long.toString(ProcessHandle.current().pid()));
        step("scenario " + scenario.id() + ": " + scenario.description() + " (run dir " + runDir + ")");
    }

    /** The committed output of the job, checked against the workload's record key. */
    private OutputCollector newOutputCollector() {
        return new OutputCollector(stack.brokers(), stack.outputTopic(), scenario.workload().keyField());
    }

    /** The workload's generator in the background; {@code second} hears each simulated second it has sent. */
    private CompletableFuture<KafkaEventProducer.Stats> startGenerator(KafkaEventProducer producer, IntConsumer second) {
        EventSource events = scenario.workload().events(scenario.simulation());
        return CompletableFuture.supplyAsync(() -> {
            try {
                return producer.run(events, second);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        });
    }

    /**
     * Scenario g: a fragstate setting the cluster cannot satisfy. Starts everything, submits the
     * job, runs the generator until the job ends or {@code observe} has passed, and reports what
     * happened: the job's state, completed checkpoints, committed output (read_committed) and the
     * log lines (JobManager and TaskManagers) that contain every one of {@code needles}. The job
     * must not run silently degraded: it fails, no checkpoint completes, nothing is committed.
     */
    public RejectedConfigResult runExpectingRejectedConfig(Duration observe, List<String> needles) throws Exception {
        beginRun();
        Map<String, String> flinkConfig = new LinkedHashMap<>(scenario.flinkConfig());
        KafkaEventProducer producer = stack.start(flinkConfig, scenario.simulation());
        FlinkRest rest = stack.rest();
        RejectedConfigResult r = new RejectedConfigResult();
        String jobId;
        try {
            jobId = stack.submitJob(scenario.parallelism(), null);
            step("job " + jobId + " submitted; observing for up to " + observe.toSeconds() + " s");
        } catch (IllegalStateException refused) {
            // `flink run -d` waits for the JobMaster to start: a job refused while it is set up
            // fails the command itself (its error went to stderr, above, and to the client log)
            r.submissionRefused = true;
            var jobs = rest.get("/jobs/overview").path("jobs");
            jobId = jobs.size() == 1 ? jobs.get(0).path("jid").asText() : null;
            stack.adoptJob(jobId);
            step("flink run failed (the job was refused at submission); job " + jobId);
        }
        String job = jobId;
        CompletableFuture<KafkaEventProducer.Stats> generator = startGenerator(producer, s -> { });
        try (OutputCollector output = newOutputCollector()) {
            Waits.pollUntil(observe, () -> job == null || TERMINAL_STATES.contains(rest.job(job).path("state").asText()),
                    () -> output.poll(Duration.ofMillis(500)));
            generator.join(); // the whole input is in Kafka: nothing was lost on the way in
            output.drain(Duration.ofSeconds(3));
            r.committedNotifications = output.count();
        }
        r.jobState = job == null ? "(no job)" : rest.job(job).path("state").asText();
        if (job != null && !"FAILED".equals(r.jobState)) {
            // a job that failed while it was set up has no checkpoint statistics at all
            r.completedCheckpoints = rest.completedCheckpoints(job);
            r.failedCheckpoints = rest.checkpoints(job).path("counts").path("failed").asLong();
        }
        r.matchingLogLines.addAll(logLinesWithAll(needles));
        step("job state " + r.jobState + (r.submissionRefused ? " (refused at submission)" : "") + ", checkpoints completed " + r.completedCheckpoints + ", failed "
                + r.failedCheckpoints + ", committed notifications " + r.committedNotifications + ", log lines naming "
                + needles + ": " + r.matchingLogLines.size()
                + (r.matchingLogLines.isEmpty() ? "" : " (first: " + Shell.tail(r.matchingLogLines.get(0), 600) + ")"));
        return r;
    }

    /** Lines of the Flink logs (JobManager, TaskManagers) that contain every one of {@code needles}, as "file: line". */
    private List<String> logLinesWithAll(List<String> needles) throws IOException {
        List<String> found = new ArrayList<>();
        try (var logs = Files.list(stack.flinkDir().resolve("log"))) {
            for (Path f : (Iterable<Path>) logs::iterator) {
                if (!f.getFileName().toString().endsWith(".log")) {
                    continue;
                }
                for (String line : Files.readAllLines(f, StandardCharsets.UTF_8)) {
                    if (needles.stream().allMatch(line::contains)) {
                        found.add(f.getFileName() + ": " + line.strip());
                    }
                }
            }
        }
        return found;
    }

    /** This run's directory (logs, Flink home, stores). */
    Path runDir() {
        return runDir;
    }

    @Override
    public void close() {
        stack.close();
    }
}
