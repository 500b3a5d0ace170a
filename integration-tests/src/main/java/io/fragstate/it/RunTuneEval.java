package io.fragstate.it;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.fragstate.generator.GeneratorConfig;
import io.fragstate.generator.ReferenceModel;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;

/**
 * One run of the checkpoint-interval evaluation (issue 15) from the command line ({@code
 * ci/tune-eval.sh} runs the whole evaluation): {@link Scenario#tuneEval} with the {@link
 * TuneEvalLoop}, then the figures of {@link LatencySeries} into the plan's folder:
 * {@code latency.csv} (per second), {@code summary.json} (QoS violations, recoveries,
 * checkpoint overhead, the exactly-once check, the controller's decisions) and, in experiments
 * mode, {@code experiments.json} and {@code figures.json} ({@link RecoveryFiguresEstimate}) for
 * {@code fragstate tune}. Exit code 0 when the run completed
 * with exactly-once output (and, per mode, experiments written or the controller's checkpoints
 * taken); the QoS figures are measurements, not pass/fail.
 *
 * <pre>
 * java -cp integration-tests-&lt;version&gt;-all.jar io.fragstate.it.RunTuneEval [--repo .]
 *     --mode fixed:S|controller|experiments [--minutes 10] [--scale 0.02] [--compression N] [--kills 3]
 *     [--seed 42] [--max-latency-ms 1000] [--max-recovery-s 120] [--experiments FILE]
 *     [--recovery experiments|fragstate] [--figures FILE] [--decide-every 30] [--objective time-lost|khaos]
 *     [--experiment-intervals 120,10,60,30] [--task-managers 5] [--parallelism 4] [--out DIR] [--name RUN]
 * </pre>
 */
public final class RunTuneEval {
    /** Latency is counted from here on (the job's first windows and the controller's first samples settle). */
    static final int COUNT_FROM_S = 60;

    private RunTuneEval() {}

    public static void main(String[] args) throws Exception {
        Path repo = Path.of(value(args, "--repo", ".")).toAbsolutePath().normalize();
        TuneEvalPlan plan;
        try {
            plan = TuneEvalPlan.parse(args, repo);
        } catch (IllegalArgumentException e) {
            System.err.println("RunTuneEval: " + e.getMessage());
            System.exit(2);
            return;
        }
        Scenario scenario = Scenario.tuneEval(repo, plan);
        GeneratorConfig gen = scenario.simulation().generatorConfig();
        TreeSet<Long> windowEnds = new TreeSet<>();
        for (String n : ReferenceModel.expectedNotifications(gen)) {
            long end = LatencyCollector.windowEnd(n);
            if (end >= 0) {
                windowEnds.add(end);
            }
        }
        GeneratorClock clock = new GeneratorClock(gen.startEpochMs(), gen.durationSeconds());
        TuneEvalLoop loop = new TuneEvalLoop(plan, scenario, clock, windowEnds);
        Files.createDirectories(plan.out());
        Report.step("tune evaluation run: " + plan.describe() + "; kills at seconds " + plan.killSeconds() + "; results to " + plan.out());
        ScenarioRunner.Result result = null;
        String failure = null;
        try (ScenarioRunner runner = new ScenarioRunner(scenario, repo); loop) {
            result = runner.run(loop, clock);
        } catch (Exception e) {
            failure = e.toString();
            Report.step("run failed: " + e);
            e.printStackTrace();
        }
        Map<String, Object> summary = summarize(plan, loop, result, failure);
        ObjectMapper json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        json.writeValue(plan.out().resolve("summary.json").toFile(), summary);
        if (plan.mode().equals(TuneEvalPlan.EXPERIMENTS)) {
            List<Map<String, Object>> forTune = new ArrayList<>();
            for (Map<String, Object> e : loop.experiments) {
                Map<String, Object> x = new LinkedHashMap<>();
                for (String k : List.of("interval_s", "throughput", "latency_ms", "recovery_s")) {
                    x.put(k, e.get(k));
                }
                forTune.add(x);
            }
            json.writeValue(plan.out().resolve("experiments.json").toFile(), forTune);
            Map<String, Object> figures = RecoveryFiguresEstimate.of(loop.experiments);
            if (figures != null) {
                json.writeValue(plan.out().resolve("figures.json").toFile(), figures);
            }
        }
        boolean ok = failure == null && result != null && result.exactlyOnce() && modeCheck(plan, loop, summary);
        System.out.println();
        System.out.println(String.format(Locale.ROOT, "tune evaluation %s: %s; %s seconds of latency above %.0f ms, "
                + "%s recoveries above %.0f s, %s checkpoints; results in %s", plan.mode(), ok ? "PASSED" : "FAILED",
                summary.get("seconds_above_latency"), plan.maxLatencyMs(), summary.get("recoveries_above"),
                plan.maxRecoveryS(), summary.get("checkpoints_completed"), plan.out()));
        System.exit(ok ? 0 : 1);
    }

    /** What each mode must have done besides running: experiments written, or the controller's checkpoints taken. */
    private static boolean modeCheck(TuneEvalPlan plan, TuneEvalLoop loop, Map<String, Object> summary) {
        return switch (plan.mode()) {
            case TuneEvalPlan.EXPERIMENTS -> !loop.experiments.isEmpty();
            case TuneEvalPlan.CONTROLLER -> ((Number) summary.getOrDefault("controller_checkpoints", 0)).intValue() > 0
                    && ((List<?>) summary.getOrDefault("decisions", List.of())).size() > 0;
            default -> true;
        };
    }

    static Map<String, Object> summarize(TuneEvalPlan plan, TuneEvalLoop loop, ScenarioRunner.Result result, String failure)
            throws IOException {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("mode", plan.mode());
        s.put("name", plan.out().getFileName().toString());
        s.put("fixed_interval_s", plan.mode().equals(TuneEvalPlan.FIXED) ? plan.fixedIntervalS() : null);
        Map<String, Object> planned = new LinkedHashMap<>(Map.of("minutes", plan.minutes(), "scale", plan.scale(),
                "compression", plan.compression(), "seed", plan.seed(), "max_latency_ms", plan.maxLatencyMs(),
                "max_recovery_s", plan.maxRecoveryS(), "task_managers", plan.taskManagers(), "parallelism", plan.parallelism(),
                "recovery_from", plan.recoveryFrom(), "objective", plan.objective()));
        planned.put("checkpoint_budget", plan.checkpointBudget() > 0 ? plan.checkpointBudget() : null);
        planned.put("candidates", plan.candidates().isEmpty() ? null : plan.candidates());
        s.put("plan", planned);
        s.put("failure", failure);
        int seconds = plan.durationSeconds();
        List<LatencySeries.Second> series = loop.startMs == 0 ? List.of() : loop.series(loop.samples, seconds);
        List<String> csv = new ArrayList<>();
        csv.add(LatencySeries.Second.CSV_HEADER + ",input_events_per_s");
        for (LatencySeries.Second x : series) {
            csv.add(x.csv() + String.format(Locale.ROOT, ",%.0f", loop.inputRate(x.second(), x.second() + 1)));
        }
        Files.write(plan.out().resolve("latency.csv"), csv, StandardCharsets.UTF_8);

        List<Map<String, Object>> kills = new ArrayList<>();
        int above = 0;
        for (int i = 0; i < loop.killAtS.size(); i++) {
            double at = loop.killAtS.get(i);
            int until = i + 1 < loop.killAtS.size() ? (int) Math.floor(loop.killAtS.get(i + 1)) : seconds;
            LatencySeries.Recovery r = LatencySeries.recovery(series, at,
                    i < loop.runningAgainAtS.size() ? loop.runningAgainAtS.get(i) : at, until);
            Map<String, Object> k = new LinkedHashMap<>();
            k.put("kill_at_s", at);
            k.put("recovery_s", r.recovered() ? r.recoveryS() : null);
            k.put("recovered", r.recovered());
            k.put("steady_latency_ms", r.steadyMs());
            k.put("threshold_ms", r.thresholdMs());
            k.put("input_events_per_s", loop.inputRate((int) at - 30, (int) at));
            k.put("lost_s", i < loop.lostS.size() ? loop.lostS.get(i) : null);
            if (i < loop.recoveries.size()) {
                k.put("timeline", loop.recoveries.get(i).summary());
            }
            kills.add(k);
            if (!r.recovered() || r.recoveryS() > plan.maxRecoveryS()) {
                above++;
            }
        }
        s.put("kills", kills);
        s.put("recoveries_above", above);
        s.put("seconds_above_latency", LatencySeries.secondsAbove(series, plan.maxLatencyMs(), COUNT_FROM_S, seconds));
        s.put("seconds_counted", Math.max(0, Math.min(series.size(), seconds) - COUNT_FROM_S));
        s.put("mean_latency_ms", LatencySeries.meanLatency(series, COUNT_FROM_S, seconds));
        List<Double> lat = new ArrayList<>();
        for (int i = COUNT_FROM_S; i < series.size(); i++) {
            if (!Double.isNaN(series.get(i).latencyMs())) {
                lat.add(series.get(i).latencyMs());
            }
        }
        s.put("median_latency_ms", LatencySeries.median(lat));
        if (loop.job != null) {
            List<Long> d = loop.checkpointDurations;
            s.put("checkpoints_completed", d.size());
            s.put("checkpoints_failed", loop.job.failedTotal());
            s.put("checkpoint_seconds_total", d.stream().mapToLong(Long::longValue).sum() / 1000.0);
            s.put("checkpoint_p50_ms", JobSampler.percentile(d, 50));
            s.put("checkpointed_bytes_total", loop.job.checkpointedBytes());
        }
        if (result != null) {
            s.put("exactly_once", result.exactlyOnce());
            s.put("expected_notifications", result.expectedNotifications);
            s.put("committed_notifications", result.committedNotifications);
            s.put("input_events", result.inputEvents);
        }
        s.put("experiments", loop.experiments);
        Path tune = plan.out().resolve("tune.jsonl");
        if (Files.exists(tune)) {
            List<Map<String, Object>> decisions = new ArrayList<>();
            int checkpoints = 0;
            ObjectMapper m = new ObjectMapper();
            for (String line : Files.readAllLines(tune, StandardCharsets.UTF_8)) {
                JsonNode n = m.readTree(line);
                switch (n.path("event").asText()) {
                    case "decision" -> decisions.add(Map.of("t", n.path("t").asDouble(),
                            "interval_s", n.path("decision").path("chosen").path("interval_s").asDouble(),
                            "throughput", n.path("decision").path("throughput").asDouble(),
                            "meets_constraints", n.path("decision").path("chosen").path("meets_constraints").asBoolean(),
                            // "observed" (the highest sample seen) or "forecast" (all decisions were, before the basis was logged)
                            "basis", n.path("basis").fieldNames().hasNext() ? n.path("basis").fieldNames().next() : "forecast"));
                    case "checkpoint" -> checkpoints++;
                    default -> { }
                }
            }
            s.put("decisions", decisions);
            s.put("controller_checkpoints", checkpoints);
        }
        return s;
    }

    private static String value(String[] args, String name, String def) {
        for (int i = 0; i + 1 < args.length; i++) {
            if (args[i].equals(name)) {
                return args[i + 1];
            }
        }
        return def;
    }
}
