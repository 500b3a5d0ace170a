package io.fragstate.it;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What a soak leaves in its output folder: {@code nodes.csv} (one row per node per sample),
 * {@code job.csv} (one row per sample), {@code summary.json} (plan, verdict, figures, recoveries)
 * and {@code RESULTS.md} (the same as tables). {@code ci/soak.sh} adds a PNG plot per series.
 */
final class SoakReport {
    private SoakReport() {}

    static void write(SoakPlan plan, Scenario scenario, ScenarioRunner.Result result, SoakLoop loop,
            LogScan.Findings logs, SoakVerdict verdict, BuildInfo build) throws IOException {
        Files.createDirectories(plan.out());
        List<String> nodes = new ArrayList<>(List.of(NodeSampler.NodeSample.CSV_HEADER));
        loop.nodeSamples.forEach(s -> nodes.add(s.csv()));
        Files.write(plan.out().resolve("nodes.csv"), nodes);
        List<String> job = new ArrayList<>(List.of(JobSampler.JobSample.CSV_HEADER));
        loop.jobSamples.forEach(s -> job.add(s.csv()));
        Files.write(plan.out().resolve("job.csv"), job);
        Map<String, Object> figures = figures(loop);
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("passed", verdict.passed());
        doc.put("plan", Map.of("minutes", plan.minutes(), "killEverySeconds", plan.killEvery().toSeconds(),
                "sampleEverySeconds", plan.sampleEvery().toSeconds(), "minObjectsDeleted", plan.minDeletes(),
                "parallelism", plan.parallelism(), "taskManagers", plan.taskManagers(),
                "standaloneNodes", plan.standaloneNodes()));
        doc.put("checks", verdict.checks);
        if (!Double.isNaN(verdict.baselineFrom)) {
            doc.put("growthBaselineFromMinute", verdict.baselineFrom);
        }
        doc.put("windows", verdict.windows);
        doc.put("figures", figures);
        doc.put("logs", Map.of("unexpected", logs.unexpected(), "expectedPerRule", logs.expected(),
                "filesScanned", logs.filesScanned()));
        doc.put("recoveries", loop.recoveries.stream().map(Report::timeline).toList());
        doc.put("flinkConfig", scenario.flinkConfig());
        doc.put("simulation", scenario.simulation());
        doc.put("build", build.asMap());
        doc.put("runDir", result.runDir);
        new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(plan.out().resolve("summary.json").toFile(), doc);
        Files.writeString(plan.out().resolve("RESULTS.md"), markdown(plan, scenario, loop, verdict, figures, build));
        Report.step("soak results written to " + plan.out());
    }

    /** The run's headline figures. */
    private static Map<String, Object> figures(SoakLoop loop) {
        Map<String, Object> f = new LinkedHashMap<>();
        List<JobSampler.JobSample> js = loop.jobSamples;
        JobSampler.JobSample last = js.isEmpty() ? null : js.get(js.size() - 1);
        double minutes = last == null ? 0 : last.minute();
        long deleted = last == null ? 0 : last.objectsDeletedTotal();
        f.put("objectsDeleted", deleted);
        f.put("objectsDeletedPerMinute", minutes > 0 ? Math.round(deleted / minutes) : 0);
        f.put("objectsDeletedCountedAs", "sum over the node processes of manifestsDeleted / (k + m) = " + loop.fragmentsPerObject());
        List<Long> d = loop.checkpointDurations;
        f.put("checkpoints", d.size());
        f.put("checkpointsFailed", last == null ? 0 : last.checkpointsFailedTotal());
        f.put("checkpointP50Ms", JobSampler.percentile(d, 50));
        f.put("checkpointP99Ms", JobSampler.percentile(d, 99));
        f.put("recordsPerSecondMean", js.stream().mapToDouble(JobSampler.JobSample::recordsPerSecond)
                .filter(x -> x >= 0).average().orElse(-1));
        Map<String, Object> perSeries = new LinkedHashMap<>();
        for (SoakVerdict.Series s : SoakVerdict.SERIES) {
            perSeries.put(s.name(), loop.nodeSamples.stream().mapToLong(s.value()).max().orElse(-1));
        }
        perSeries.put("fragment_fds", loop.nodeSamples.stream().mapToLong(NodeSampler.NodeSample::fragmentFds).max().orElse(-1));
        f.put("maxPerNodeOverRun", perSeries);
        return f;
    }

    private static String markdown(SoakPlan plan, Scenario scenario, SoakLoop loop, SoakVerdict v, Map<String, Object> f,
            BuildInfo build) {
        StringBuilder md = new StringBuilder();
        md.append("# Soak ").append(v.passed() ? "PASSED" : "FAILED").append("\n\n");
        md.append(String.format(Locale.ROOT, "%d min, kill -9 of a TaskManager every %d s, a sample every %d s;"
                + " %d TaskManagers + JobManager + %d standalone nodes, parallelism %d; %s; %s.%n%n", plan.minutes(),
                plan.killEvery().toSeconds(), plan.sampleEvery().toSeconds(), plan.taskManagers(),
                plan.standaloneNodes(), plan.parallelism(),
                scenario.description(), build.describe()));
        md.append("| check | result | detail |\n| --- | --- | --- |\n");
        v.checks.forEach(c -> md.append("| ").append(c.name()).append(" | ").append(c.passed() ? "pass" : "**FAIL**")
                .append(" | ").append(c.detail().replace("|", "\\|")).append(" |\n"));
        md.append("\n| figure | value |\n| --- | --- |\n");
        f.forEach((k, val) -> md.append("| ").append(k).append(" | ").append(val).append(" |\n"));
        md.append("\n## Per node: first sample / max / last sample\n\n| node | ");
        SoakVerdict.SERIES.forEach(s -> md.append(s.name()).append(" | "));
        md.append("\n| --- |").append(" --- |".repeat(SoakVerdict.SERIES.size())).append('\n');
        loop.nodeSamples.stream().map(NodeSampler.NodeSample::node).distinct().sorted().forEach(node -> {
            var rows = loop.nodeSamples.stream().filter(r -> r.node().equals(node)).toList();
            md.append("| ").append(node).append(" | ");
            for (SoakVerdict.Series s : SoakVerdict.SERIES) {
                long first = s.value().applyAsLong(rows.get(0));
                long max = rows.stream().mapToLong(s.value()).max().orElse(-1);
                long last = s.value().applyAsLong(rows.get(rows.size() - 1));
                md.append(first).append(" / ").append(max).append(" / ").append(last).append(" | ");
            }
            md.append('\n');
        });
        if (!v.windows.isEmpty()) {
            String baseline = String.format(Locale.ROOT, "minutes %.0f-%.0f", v.baselineFrom, v.baselineFrom + 10);
            md.append("\n## Growth: last 10 minutes vs ").append(baseline)
                    .append(" (after warm-up; mean of the samples, counted heap: lowest sample)\n\n")
                    .append("| node | series | ").append(baseline)
                    .append(" | last 10 | allowed | result |\n| --- | --- | --- | --- | --- | --- |\n");
            v.windows.forEach(w -> md.append(String.format(Locale.ROOT, "| %s | %s | %.0f | %.0f | %.0f | %s |%n",
                    w.node(), w.series(), w.baseline(), w.last(), w.allowed(), w.passed() ? "pass" : "**FAIL**")));
        }
        md.append("\n## Recoveries\n\n| kill at (min) | killed | detected (ms) | all running (ms) | first checkpoint after (ms) |\n"
                + "| --- | --- | --- | --- | --- |\n");
        loop.recoveries.forEach(tl -> md.append(String.format(Locale.ROOT, "| %.1f | %s | %d | %d | %d |%n",
                (tl.killAtMs - loop.startedAtMs) / 60_000.0, tl.killedTaskManagers, tl.detectionMs(), tl.killToRunningMs(),
                tl.killToFirstCheckpointMs())));
        return md.toString();
    }
}
