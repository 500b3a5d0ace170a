package io.fragstate.it;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The soak of issue 10 from the command line ({@code ci/soak.sh}): {@link Scenario#soak} run by a
 * {@link ScenarioRunner} with the {@link SoakLoop} in place of a single disruption, then the log
 * check ({@link LogScan}), the verdict ({@link SoakVerdict}) and the output folder ({@link
 * SoakReport}). Exit code 0 only when every check passed.
 *
 * <pre>
 * java -cp integration-tests-&lt;version&gt;-all.jar io.fragstate.it.RunSoak [--repo .]
 *     [--minutes 60] [--kill-every 10] [--sample-every 60] [--min-deletes N]
 *     [--parallelism 8] [--task-managers 5] [--standalone-nodes 2] [--out DIR] [--config key=value]...
 * </pre>
 * ({@code --config}: a Flink setting on top of the soak's, e.g. for an experiment.)
 * ({@code --kill-every} in minutes, may be fractional; {@code --sample-every} in seconds.)
 */
public final class RunSoak {
    private RunSoak() {}

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Exception e) {
            // also past a failure of the harness itself: the generator's thread must not keep
            // the JVM (and ci/soak.sh) waiting after the teardown
            e.printStackTrace();
            System.out.println("soak FAILED: " + e);
            System.exit(2);
        }
    }

    private static void run(String[] args) throws Exception {
        Path repo = repo(args);
        List<String> rest = new ArrayList<>();
        Map<String, String> extra = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--config") && i + 1 < args.length) {
                String kv = args[++i];
                int eq = kv.indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException("--config expects key=value, got '" + kv + "'");
                }
                extra.put(kv.substring(0, eq).strip(), kv.substring(eq + 1).strip());
            } else {
                rest.add(args[i]);
            }
        }
        SoakPlan plan = SoakPlan.parse(rest.toArray(String[]::new), repo);
        // read before the run: a commit made during a long soak is not what it ran
        BuildInfo build = BuildInfo.of(repo);
        Scenario scenario = Scenario.soak(repo, plan);
        scenario.flinkConfig().putAll(extra);
        SoakLoop loop = new SoakLoop(plan, scenario);
        ScenarioRunner.Result result = new ScenarioRunner.Result();
        String failure = null;
        LogScan.Findings logs;
        try (ScenarioRunner runner = new ScenarioRunner(scenario, repo)) {
            try {
                result = runner.run(loop);
            } catch (Exception e) {
                failure = e.toString();
                Report.step("soak failed: " + e);
                e.printStackTrace();
            }
            // before the teardown: a cancelled job and stopped JVMs are not what the soak checks
            logs = LogScan.scan(runner.runDir(), loop.recoveries.stream().map(tl -> tl.killAtMs).toList());
        }
        SoakVerdict verdict = SoakVerdict.of(plan, result, loop, logs, failure);
        SoakReport.write(plan, scenario, result, loop, logs, verdict, build);
        System.out.println();
        verdict.checks.forEach(c -> System.out.printf("%-45s %-4s %s%n", c.name(), c.passed() ? "ok" : "FAIL", c.detail()));
        System.out.println("soak " + (verdict.passed() ? "PASSED" : "FAILED") + "; results in " + plan.out());
        System.exit(verdict.passed() ? 0 : 1);
    }

    private static Path repo(String[] args) {
        String repo = ".";
        for (int i = 0; i + 1 < args.length; i++) {
            if (args[i].equals("--repo")) {
                repo = args[i + 1];
            }
        }
        Path p = Path.of(repo).toAbsolutePath().normalize();
        if (!Files.isRegularFile(p.resolve("ci/lib/flink-cluster.sh"))) {
            throw new IllegalArgumentException(p + " is not the fragstate repository (no ci/lib/flink-cluster.sh); pass --repo");
        }
        return p;
    }
}
