package io.fragstate.it;

import io.fragstate.traffic.CliArgs;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Runs one scenario from the command line (for ci/demo.sh and manual runs) with the same runner
 * as the integration tests, prints the timeline and the exactly-once verdict, exits 0 only when
 * the committed output equals the reference computation.
 *
 * <pre>
 * java -jar integration-tests/target/integration-tests-&lt;version&gt;-all.jar
 *     [--scenario h|plain-d|plain-e|a|b|c|d|e|f|r] [--job traffic|ysb] [--repo .] [--job-jar PATH]
 *     [--config key=value]... [--config-file FILE] [--lib-jar JAR]...
 *     [--kill N] [--during-checkpoint] [--id NAME] [--scale 0.2] [--duration-s 90] [--speedup 1.5] [--seed 42]
 * </pre>
 *
 * {@code --job ysb} runs the Yahoo Streaming Benchmark job instead of Traffic Monitoring (its own
 * default rate: {@link Workload#defaultSimulation}; {@code --scale} multiplies ad events per second).
 * {@code --config}/{@code --config-file} lines are added to the scenario's config.yaml settings
 * (e.g. the fragstate state backend), {@code --lib-jar} goes into Flink's lib/.
 */
public final class RunScenario {
    private RunScenario() {}

    public static void main(String[] args) throws Exception {
        List<String> configPairs = new ArrayList<>();
        List<String> libJars = new ArrayList<>();
        List<String> rest = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            if ((args[i].equals("--config") || args[i].equals("--lib-jar")) && i + 1 < args.length) {
                (args[i].equals("--config") ? configPairs : libJars).add(args[++i]);
            } else {
                rest.add(args[i]);
            }
        }
        CliArgs a = CliArgs.parse(rest.toArray(String[]::new),
                Set.of("scenario", "job", "repo", "job-jar", "config-file", "kill", "id", "scale", "duration-s", "speedup", "seed"),
                Set.of("during-checkpoint"));
        Path repo = Path.of(a.get("repo", ".")).toAbsolutePath().normalize();
        if (!Files.isRegularFile(repo.resolve("ci/lib/flink-cluster.sh"))) {
            throw new IllegalArgumentException(repo + " is not the fragstate repository (no ci/lib/flink-cluster.sh); pass --repo");
        }

        Scenario base;
        switch (a.get("scenario", "h")) {
            case "h": base = Scenario.plainFlinkKillOneTaskManager(); break;
            case "plain-d": base = Scenario.plainFlinkRestartCluster(); break;
            case "plain-e": base = Scenario.plainFlinkSavepointRescale(); break;
            case "d": base = Scenario.fragstateRestartCluster(repo); break;
            case "e": base = Scenario.fragstateSavepointRescale(repo); break;
            case "a": base = Scenario.fragstateKillOneTaskManager(repo); break;
            case "b": base = Scenario.fragstateKillTwoTaskManagers(repo); break;
            case "c": base = Scenario.fragstateKillDuringCheckpoint(repo); break;
            case "f": base = Scenario.fragstateRocksDbIncrementalKillOneTaskManager(repo); break;
            case "r": base = Scenario.fragstateReadmeConfigKillOneTaskManager(repo); break;
            default: throw new IllegalArgumentException("--scenario must be one of h, plain-d, plain-e, a, b, c, d, e, f, r"
                    + " (g, the refused setting, runs as FragstateClusterRecoveryIT#scenarioG)");
        }
        Workload workload = Workload.named(a.get("job", "traffic"));
        if (workload != Workload.TRAFFIC) {
            base = base.running(workload);
        }
        Map<String, String> config = new LinkedHashMap<>(base.flinkConfig());
        if (a.has("config-file")) {
            for (String line : Files.readAllLines(Path.of(a.get("config-file", "")))) {
                String t = line.strip();
                if (!t.isEmpty() && !t.startsWith("#")) {
                    int c = t.indexOf(':');
                    if (c <= 0) {
                        throw new IllegalArgumentException("--config-file: expected 'key: value', got '" + line + "'");
                    }
                    config.put(t.substring(0, c).strip(), t.substring(c + 1).strip());
                }
            }
        }
        for (String kv : configPairs) {
            int eq = kv.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("--config expects key=value, got '" + kv + "'");
            }
            config.put(kv.substring(0, eq).strip(), kv.substring(eq + 1).strip());
        }
        Scenario.Disruption d = base.disruption();
        if (a.has("kill") || a.flag("during-checkpoint")) {
            d = Scenario.Disruption.killTaskManagers(a.getInt("kill", 1),
                    a.flag("during-checkpoint") ? Scenario.Trigger.DURING_CHECKPOINT : Scenario.Trigger.AFTER_CHECKPOINTS);
        }
        Scenario.Simulation s = base.simulation();
        Scenario.Simulation sim = new Scenario.Simulation(a.getLong("seed", s.seed()), a.getDouble("scale", s.scale()),
                a.getInt("duration-s", s.durationSeconds()), a.getDouble("speedup", s.speedup()));
        Scenario scenario = new Scenario(a.get("id", base.id()), base.description() + (configPairs.isEmpty()
                && !a.has("config-file") ? "" : " + " + config), config,
                java.util.stream.Stream.concat(base.libJars().stream(), libJars.stream().map(Path::of)).toList(), base.taskManagers(), base.parallelism(),
                base.checkpointIntervalMs(), sim, d, base.fragstateNodes(), base.stockFlinkConfig(), workload,
                base.flinkVersion(), a.has("job-jar") ? Path.of(a.get("job-jar", "")) : null);

        ScenarioRunner.Result r;
        try (ScenarioRunner runner = new ScenarioRunner(scenario, repo)) {
            r = runner.run();
        }
        System.out.println();
        System.out.println("timeline: " + r.timeline.summary());
        if (r.fragstate.get("taskManagerMetrics") instanceof Map<?, ?> perTm) {
            // a TaskManager reads fragments only to restore state: its counters are the restore's
            perTm.forEach((tm, v) -> {
                if (v instanceof Map<?, ?> m && m.get("bytesFetched") instanceof Long bytes && bytes > 0) {
                    System.out.printf("restore:  %s fetched %,d bytes in %s cells of %s objects from %s peers%n",
                            tm, bytes, m.get("cellsFetched"), m.get("objectsOpened"), m.get("peersFetchedFrom"));
                }
            });
        }
        System.out.printf("output:   %d committed output lines, %d expected, %d missing, %d duplicated or wrong -> %s%n",
                r.committedNotifications, r.expectedNotifications, r.missing.size(), r.duplicatesOrUnexpected.size(),
                r.exactlyOnce() ? "EXACTLY ONCE" : "NOT EXACTLY ONCE");
        System.exit(r.exactlyOnce() ? 0 : 1);
    }
}
