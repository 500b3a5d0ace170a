package io.fragstate.it;

import static io.fragstate.it.Report.step;

import io.fragstate.generator.GeneratorConfig;
import io.fragstate.generator.KafkaEventProducer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.NavigableSet;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

/**
 * The phase of a {@link ScenarioRunner} run for one {@link TuneEvalPlan} (issue 15): while the
 * generator plays the compressed Daedalus profile, the {@link LatencyCollector} notes every
 * notification, the {@link JobSampler} the checkpoints, and the TaskManagers die by {@code kill -9}
 * at the plan's moments (started again once their subtasks run elsewhere, as a supervisor
 * would). In controller mode {@code fragstate tune} runs beside the job; in experiments mode the
 * harness itself times checkpoints ({@link CheckpointTrigger}) and runs the failure experiments.
 */
final class TuneEvalLoop implements ScenarioRunner.Phase, AutoCloseable {
    /** Longest wait for latency back to steady after an experiment's kill; beyond it the experiment is censored. */
    static final int EXPERIMENT_RECOVERY_CAP_S = 240;
    /** Checkpoints while the runner waits for the committed output after the measured part. */
    static final int DRAIN_CHECKPOINT_EVERY_S = 5;

    private final TuneEvalPlan plan;
    private final Scenario scenario;
    private final GeneratorClock clock;
    private final GeneratorConfig generatorConfig;
    private final NavigableSet<Long> windowEndsWithOutput;
    final List<RecoveryTimeline> recoveries = new ArrayList<>();
    /** Kill moments, seconds after {@link #startMs}. */
    final List<Double> killAtS = new ArrayList<>();
    /** Experiments mode: one entry per failure experiment. */
    final List<Map<String, Object>> experiments = new ArrayList<>();
    long startMs;
    List<LatencySeries.Sample> samples = List.of();
    JobSampler job;
    /** Seconds after the start at which each killed TaskManager's subtasks ran again elsewhere. */
    final List<Double> runningAgainAtS = new ArrayList<>();
    /**
     * For each kill: seconds from the trigger of the latest completed checkpoint to the kill — the
     * work it lost ({@code fragstate tune --simulate}'s {@code lost_s}); null before any checkpoint
     * or when Flink's REST API did not answer.
     */
    final List<Double> lostS = new ArrayList<>();
    private Process tune;
    private CheckpointTrigger trigger;
    /** Every completed checkpoint's end-to-end duration (ms), filled at the end. */
    List<Long> checkpointDurations = List.of();

    TuneEvalLoop(TuneEvalPlan plan, Scenario scenario, GeneratorClock clock, NavigableSet<Long> windowEndsWithOutput) {
        this.plan = plan;
        this.windowEndsWithOutput = windowEndsWithOutput;
        this.scenario = scenario;
        this.clock = clock;
        this.generatorConfig = scenario.simulation().generatorConfig();
    }

    @Override
    public String run(ServiceStack stack, String jobId, ScenarioRunner.Result result, AtomicInteger generatorSecond,
            CompletableFuture<KafkaEventProducer.Stats> generator) throws Exception {
        startMs = System.currentTimeMillis();
        FlinkRest rest = stack.rest();
        job = new JobSampler(rest, jobId);
        Disruptions disruptions = new Disruptions(scenario, stack);
        if (plan.mode().equals(TuneEvalPlan.CONTROLLER)) {
            tune = startTune(stack, jobId);
        }
        try (LatencyCollector latency = new LatencyCollector(stack.brokers(), stack.outputTopic())) {
            if (plan.mode().equals(TuneEvalPlan.EXPERIMENTS)) {
                trigger = new CheckpointTrigger(rest, jobId, plan.experimentIntervals().get(0));
                runExperiments(stack, disruptions, jobId, generatorSecond, generator, latency, trigger);
            } else {
                for (int killS : plan.killSeconds()) {
                    sleepUntil(killS, generator);
                    kill(stack, disruptions, jobId, generatorSecond);
                }
            }
            awaitGenerator(generator);
            if (tune != null) {
                saveTuneMetrics();
            }
            samples = latency.samples();
            job.sample(elapsedS() / 60, 0);
            checkpointDurations = job.allDurations();
        }
        // the measured part is over; the runner now waits for the committed output, which needs
        // checkpoints (commits): triggered every few seconds so that with a 120 s interval (or the
        // controller's choice) the check does not wait minutes for the last windows' commits
        stopTimers();
        trigger = new CheckpointTrigger(rest, jobId, DRAIN_CHECKPOINT_EVERY_S);
        return jobId;
    }

    /** Stops {@code fragstate tune} and the harness' checkpoint trigger. */
    private void stopTimers() throws InterruptedException {
        if (trigger != null) {
            trigger.close();
            trigger = null;
        }
        if (tune != null) {
            tune.destroy();
            tune.waitFor(10, TimeUnit.SECONDS);
            tune = null;
        }
    }

    @Override
    public void close() throws InterruptedException {
        stopTimers();
    }

    /** Seconds since the generator started. */
    double elapsedS() {
        return (System.currentTimeMillis() - startMs) / 1000.0;
    }

    private void kill(ServiceStack stack, Disruptions disruptions, String jobId, AtomicInteger generatorSecond) throws Exception {
        RecoveryTimeline tl = new RecoveryTimeline();
        tl.kind = Scenario.Kind.KILL_TASKMANAGERS.name();
        long lastTriggerMs = latestCompletedTriggerMs(stack.rest(), jobId);
        killAtS.add(elapsedS());
        disruptions.killAndAwaitRunning(jobId, tl, scenario.disruption(), generatorSecond);
        lostS.add(lastTriggerMs > 0 ? (tl.killAtMs - lastTriggerMs) / 1000.0 : null);
        recoveries.add(tl);
        runningAgainAtS.add(elapsedS());
        for (String tm : tl.killedTaskManagers) {
            stack.startTaskManager(tm);
        }
        step(String.format(Locale.ROOT, "kill at %.0f s: job running again after %.1f s; %s started again",
                killAtS.get(killAtS.size() - 1), (System.currentTimeMillis() - tl.killAtMs) / 1000.0, tl.killedTaskManagers));
    }

    /** When the latest completed checkpoint was triggered (epoch ms), -1 without one or an answer. */
    private static long latestCompletedTriggerMs(FlinkRest rest, String jobId) {
        try {
            return rest.checkpoints(jobId).path("latest").path("completed").path("trigger_timestamp").asLong(-1);
        } catch (IllegalStateException e) {
            step("latest checkpoint unreadable before a kill (its work lost is not reported): " + e.getMessage());
            return -1;
        }
    }

    /**
     * Phase 2 of Khaos on this shadow run: experiments in the order {@link ExperimentSchedule}
     * picks (every interval at a high and at a low load, in a fixed order, skipping a pair whose
     * band does not come again in time). Each runs checkpoints at its interval for a steady
     * stretch, then a kill a seeded fraction of an interval after a completed checkpoint, aimed at
     * a second of the run in its load band, and the latency followed until it is back at the
     * steady level. Each gives one experiment: the interval, the
     * input rate before the kill (events/s, the generator's: the load the job was given), the mean
     * latency of the steady stretch and the recovery time.
     */
    private void runExperiments(ServiceStack stack, Disruptions disruptions, String jobId, AtomicInteger generatorSecond,
            CompletableFuture<?> generator, LatencyCollector latency, CheckpointTrigger trigger) throws Exception {
        Random random = new Random(plan.seed());
        List<Double> load = IntStream.range(0, plan.durationSeconds()).mapToObj(s -> inputRate(s, s + 1)).toList();
        ExperimentSchedule schedule = new ExperimentSchedule(plan.experimentIntervals(), load);
        for (int n = 0; ; n++) {
            double fraction = random.nextDouble();
            double from = elapsedS();
            // a recovery of about a minute must fit after the kill
            Optional<ExperimentSchedule.Pick> pick = schedule.next(from, fraction, plan.durationSeconds() - 60);
            if (pick.isEmpty()) {
                break;
            }
            int interval = pick.get().intervalS();
            double offset = fraction * interval;
            trigger.setInterval(interval);
            int aim = pick.get().killSecond();
            step(String.format(Locale.ROOT, "experiment %d: checkpoints every %d s from second %.0f, kill aimed at second %d (%s load: %.0f events/s before it)",
                    n + 1, interval, from, aim, pick.get().band().name(), inputRate(aim - ExperimentSchedule.THROUGHPUT_WINDOW_S, aim)));
            sleepUntil(aim - offset - ExperimentSchedule.CHECKPOINT_ALLOWANCE_S, generator);
            int before = trigger.completed();
            trigger.triggerNow();
            while (trigger.completed() == before && elapsedS() < aim + interval + 30) {
                checkAlive(generator);
                TimeUnit.MILLISECONDS.sleep(250);
            }
            double afterCheckpoint = (trigger.lastCompletedAtMs() - startMs) / 1000.0;
            sleepUntil(afterCheckpoint + offset, generator);
            long stateBytes = stack.rest().checkpoints(jobId).path("latest").path("completed").path("state_size").asLong(-1);
            kill(stack, disruptions, jobId, generatorSecond);
            double killS = killAtS.get(killAtS.size() - 1);
            LatencySeries.Recovery r = null;
            while (elapsedS() < killS + EXPERIMENT_RECOVERY_CAP_S && elapsedS() < plan.durationSeconds() - 5) {
                checkAlive(generator);
                job.poll();
                TimeUnit.SECONDS.sleep(5);
                r = LatencySeries.recovery(series(latency.samples()), killS, runningAgainAtS.get(runningAgainAtS.size() - 1),
                        (int) elapsedS());
                if (r.recovered()) {
                    break;
                }
            }
            List<LatencySeries.Second> s = series(latency.samples());
            double latencyMs = LatencySeries.meanLatency(s, (int) Math.ceil(from), (int) Math.floor(killS));
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("interval_s", interval);
            e.put("band", pick.get().band().name());
            e.put("throughput", inputRate((int) killS - ExperimentSchedule.THROUGHPUT_WINDOW_S, (int) killS));
            e.put("latency_ms", latencyMs);
            e.put("recovery_s", r != null && r.recovered() ? r.recoveryS() : elapsedS() - killS);
            e.put("recovered", r != null && r.recovered());
            RecoveryTimeline tl = recoveries.get(recoveries.size() - 1);
            e.put("kill_at_s", killS);
            e.put("detection_s", tl.detectionMs() / 1000.0);
            e.put("kill_to_running_s", tl.killToRunningMs() / 1000.0);
            e.put("window_restore_s", tl.maxInitializingMs("window") / 1000.0);
            e.put("state_bytes_per_subtask", stateBytes / scenario.parallelism());
            e.put("checkpoint_before_kill_s", afterCheckpoint);
            e.put("steady_from_s", from);
            experiments.add(e);
            step("experiment " + (n + 1) + ": " + e);
        }
        trigger.setInterval(plan.experimentIntervals().get(0));
    }

    /** The mean events/s the generator sent in seconds {@code [from, to)} of the run (its profile x scale). */
    double inputRate(int from, int to) {
        double sum = 0;
        int n = 0;
        for (int s = Math.max(0, from); s < to; s++) {
            sum += Math.round(generatorConfig.profile().count(s) * generatorConfig.scale());
            n++;
        }
        return n == 0 ? 0 : sum / n;
    }

    /** The per-second latency of the run so far. */
    List<LatencySeries.Second> series(List<LatencySeries.Sample> seen) {
        return series(seen, (int) Math.ceil(elapsedS()));
    }

    /** The per-second latency of the first {@code seconds} of the run. */
    List<LatencySeries.Second> series(List<LatencySeries.Sample> seen, int seconds) {
        return LatencySeries.perSecond(seen, windowEndsWithOutput, clock::closableAtMs, startMs, seconds);
    }

    private void sleepUntil(double second, CompletableFuture<?> generator) throws Exception {
        while (elapsedS() < second) {
            checkAlive(generator);
            job.poll();
            TimeUnit.MILLISECONDS.sleep(Math.min(2_000, Math.max(1, (long) ((second - elapsedS()) * 1000))));
        }
    }

    private void awaitGenerator(CompletableFuture<?> generator) throws Exception {
        while (!generator.isDone()) {
            checkAlive(generator);
            job.poll();
            TimeUnit.SECONDS.sleep(2);
        }
        generator.join();
    }

    /** Fails the run when the generator failed or {@code fragstate tune} exited. */
    private void checkAlive(CompletableFuture<?> generator) {
        if (generator.isCompletedExceptionally()) {
            generator.join();
        }
        if (tune != null && !tune.isAlive()) {
            throw new IllegalStateException("fragstate tune exited with " + tune.exitValue() + " during the run (see tune.log)");
        }
    }

    /**
     * The controller's Prometheus metrics at the end of the measured part, to metrics.txt; a
     * controller that triggered no checkpoint fails the run.
     */
    private void saveTuneMetrics() throws IOException, InterruptedException {
        String text = TuneMetricsScrape.scrape(plan.out().resolve("tune.jsonl"));
        Files.writeString(plan.out().resolve("metrics.txt"), text);
        double triggered = TuneMetricsScrape.value(text, "fragstate_tune_checkpoints_triggered_total");
        step(String.format(Locale.ROOT, "fragstate tune's metrics: %.0f decisions, %.0f checkpoints triggered, interval %.0f s",
                TuneMetricsScrape.value(text, "fragstate_tune_decisions_total"), triggered,
                TuneMetricsScrape.value(text, "fragstate_tune_interval_seconds")));
        if (!(triggered > 0)) {
            throw new IllegalStateException("fragstate tune triggered no checkpoint in the run (see metrics.txt and tune.jsonl)");
        }
    }

    /**
     * Seconds of this run per sample of the load profile: the experiments run sampled every second
     * of a profile compressed its own number of times (its summary.json), this run plays it
     * compressed {@link TuneEvalPlan#compression()} times.
     */
    static double loadProfilePeriodS(TuneEvalPlan plan) throws IOException {
        Path summary = plan.experiments().resolveSibling("summary.json");
        com.fasterxml.jackson.databind.JsonNode compression = new com.fasterxml.jackson.databind.ObjectMapper()
                .readTree(summary.toFile()).path("plan").path("compression");
        if (!compression.isNumber() || compression.asDouble() <= 0) {
            throw new IOException("no plan.compression in " + summary + " (written by an experiments run)");
        }
        return compression.asDouble() / plan.compression();
    }

    /** The input_events_per_s column of a run's latency.csv as a JSON array (fragstate tune --load-profile). */
    static String loadProfileJson(Path latencyCsv) throws IOException {
        List<String> lines = Files.readAllLines(latencyCsv);
        String header = lines.isEmpty() ? "" : lines.get(0);
        List<String> columns = List.of(header.split(","));
        int column = columns.indexOf("input_events_per_s");
        if (column < 0 || lines.size() < 2) {
            throw new IOException("no input_events_per_s samples in " + latencyCsv + " (written by an experiments run)");
        }
        return lines.stream().skip(1).map(l -> l.split(",")[column]).collect(java.util.stream.Collectors.joining(",", "[", "]"));
    }

    /** {@code fragstate tune} beside the job: decisions and checkpoints to tune.jsonl, its errors to tune.log. */
    private Process startTune(ServiceStack stack, String jobId) throws IOException {
        Files.createDirectories(plan.out());
        List<String> cmd = new ArrayList<>(List.of(stack.fragstateBinary().toString(), "tune",
                "--flink", stack.rest().baseUrl(), "--job", jobId,
                "--experiments", plan.experiments().toString(),
                "--recovery", plan.recoveryFrom(),
                "--max-latency-ms", Double.toString(plan.maxLatencyMs()),
                "--max-recovery-s", Double.toString(plan.maxRecoveryS()),
                "--decide-every", Integer.toString(plan.decideEveryS()),
                "--metrics-listen", "127.0.0.1:0"));
        if (plan.figures() != null) {
            cmd.addAll(List.of("--figures", plan.figures().toString()));
        }
        plan.mtbfS().ifPresent(s -> cmd.addAll(List.of("--mtbf", Integer.toString(s))));
        if (!plan.candidates().isEmpty()) {
            cmd.addAll(List.of("--candidates", plan.candidates()));
        }
        if (plan.checkpointBudget() > 0) {
            Path profile = plan.out().resolve("load-profile.json");
            Files.writeString(profile, loadProfileJson(plan.loadProfile()));
            cmd.addAll(List.of("--checkpoint-budget", Double.toString(plan.checkpointBudget()), "--load-profile", profile.toString(),
                    "--load-profile-period", Double.toString(loadProfilePeriodS(plan))));
        }
        Path out = plan.out().resolve("tune.jsonl");
        Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(plan.out().resolve("tune.log").toFile()).start();
        step("fragstate tune started (pid " + p.pid() + "): " + String.join(" ", cmd) + " > " + out);
        return p;
    }
}
