package io.fragstate.it;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The recovery benchmark of issue 11 for one network profile ({@code ci/bench.sh} runs it on the
 * emulated host {@code ctl}, once per profile): every system × state size × failure of the plan
 * as a {@link BenchRun}, one JSON file per run in the plan's output folder. Exit code 0 when
 * every run passed (recovered, output exact).
 *
 * <pre>
 * java -cp integration-tests-&lt;version&gt;-all.jar io.fragstate.it.RunBench --netns-run DIR [--repo .]
 *     [--profile dc|edge|none] [--systems fragstate-rs42,hdfs,...] [--state-mb 300,3000]
 *     [--failures one,two] [--task-managers 6] [--parallelism 6] [--steady-seconds 30] [--rate 2000] [--out DIR]
 * java ... io.fragstate.it.RunBench --hosts [--profile P] [--task-managers N]
 *     prints the worker hosts and the storage hosts (comma-separated, one line each) for ci/lib/netns.sh up
 * </pre>
 */
public final class RunBench {
    private RunBench() {}

    public static void main(String[] args) throws Exception {
        Path repo = Path.of(".").toAbsolutePath().normalize();
        Path netnsRun = null;
        boolean hosts = false;
        List<String> rest = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--repo" -> repo = Path.of(args[++i]).toAbsolutePath().normalize();
                case "--netns-run" -> netnsRun = Path.of(args[++i]).toAbsolutePath().normalize();
                case "--hosts" -> hosts = true;
                default -> rest.add(args[i]);
            }
        }
        BenchPlan plan = BenchPlan.parse(rest.toArray(String[]::new), repo);
        if (hosts) {
            System.out.println(String.join(",", plan.workerHosts()));
            System.out.println(String.join(",", plan.storageHosts()));
            return;
        }
        if (netnsRun == null) {
            throw new IllegalArgumentException("--netns-run DIR (the folder of ci/lib/netns.sh up) is required");
        }
        Files.createDirectories(plan.out());
        ObjectMapper json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        Path runs = repo.resolve("target/bench-runs").resolve(Report.STAMP.format(java.time.Instant.now()));
        boolean allPassed = true;
        List<String> lines = new ArrayList<>();
        for (int mb : plan.stateMb()) {
            for (BenchPlan.Failure f : plan.failures()) {
                for (BenchSystem s : plan.systems()) {
                    BenchRun run = new BenchRun(repo, netnsRun, plan, s, mb, f, runs);
                    Map<String, Object> r = run.run();
                    json.writeValue(plan.out().resolve(run.id() + ".json").toFile(), r);
                    allPassed &= Boolean.TRUE.equals(r.get("passed"));
                    lines.add(String.format("%-40s %s %s", run.id(), Boolean.TRUE.equals(r.get("passed")) ? "ok  " : "FAIL",
                            r.containsKey("recovery") ? r.get("recovery").toString().replaceAll(", subtasks=\\[.*", "") : r.get("error")));
                }
            }
        }
        System.out.println();
        lines.forEach(System.out::println);
        System.exit(allPassed ? 0 : 1);
    }
}
